/* The board-support interface on QEMU (mps2-an386) through semihosting: host files stand
   in for the SD card (pages.bin), the data (train.bin, test.bin, in the current folder) and
   the results (weights.bin); the console is the UART. */
#include "bsp.h"

#include "libc.h"
#include "semihost.h"

static int32_t page_file = -1, result_file = -1;
static int32_t data_files[2] = {-1, -1};
static const char *const data_names[2] = {"train.bin", "test.bin"};

static int32_t open_file(const char *name, uint32_t mode) {
  const uint32_t args[3] = {(uint32_t)name, mode, (uint32_t)fw_strlen(name)};
  return (int32_t)semihost_call(SH_SYS_OPEN, args);
}

static int seek(int32_t file, uint32_t offset) {
  const uint32_t args[2] = {(uint32_t)file, offset};
  return semihost_call(SH_SYS_SEEK, args) == 0 ? 0 : -1;
}

/* SYS_READ and SYS_WRITE return the bytes they did not move. */
static int read_at(int32_t file, uint32_t offset, void *data, uint32_t bytes) {
  if (file < 0 || seek(file, offset) != 0) return -1;
  const uint32_t args[3] = {(uint32_t)file, (uint32_t)data, bytes};
  return semihost_call(SH_SYS_READ, args) == 0 ? 0 : -1;
}

static int write_at(int32_t file, uint32_t offset, const void *data, uint32_t bytes) {
  if (file < 0 || seek(file, offset) != 0) return -1;
  const uint32_t args[3] = {(uint32_t)file, (uint32_t)data, bytes};
  return semihost_call(SH_SYS_WRITE, args) == 0 ? 0 : -1;
}

static int32_t pages(void) {
  if (page_file < 0) page_file = open_file("pages.bin", SH_OPEN_WPLUSB);
  return page_file;
}

int bsp_storage_erase(uint32_t first_block, uint32_t blocks) {
  (void)first_block;
  (void)blocks;
  return 0; /* an SD card erases inside */
}

int bsp_storage_write(uint32_t first_block, const void *data, uint32_t blocks) {
  return write_at(pages(), first_block * BSP_BLOCK_BYTES, data, blocks * BSP_BLOCK_BYTES);
}

int bsp_storage_read(uint32_t first_block, void *data, uint32_t blocks) {
  return read_at(pages(), first_block * BSP_BLOCK_BYTES, data, blocks * BSP_BLOCK_BYTES);
}

int bsp_data_read(enum bsp_stream stream, uint32_t offset, void *data, uint32_t bytes) {
  if (data_files[stream] < 0) data_files[stream] = open_file(data_names[stream], SH_OPEN_RB);
  return read_at(data_files[stream], offset, data, bytes);
}

int bsp_result_write(const void *data, uint32_t bytes) {
  if (result_file < 0) result_file = open_file("weights.bin", SH_OPEN_WB);
  if (result_file < 0) return -1;
  const uint32_t args[3] = {(uint32_t)result_file, (uint32_t)data, bytes};
  return semihost_call(SH_SYS_WRITE, args) == 0 ? 0 : -1;
}

void bsp_output(const char *text, uint32_t length) {
  static int32_t console = -1;
  if (console < 0) console = open_file(SH_CONSOLE, SH_OPEN_WB);
  const uint32_t args[3] = {(uint32_t)console, (uint32_t)text, length};
  semihost_call(SH_SYS_WRITE, args);
}

uint32_t bsp_clock_ms(void) { return semihost_call(SH_SYS_CLOCK, 0) * 10u; /* centiseconds */ }

const char *bsp_arguments(void) {
  static char line[256];
  uint32_t args[2] = {(uint32_t)line, sizeof line};
  if (semihost_call(SH_SYS_GET_CMDLINE, args) != 0) line[0] = '\0';
  return line;
}

void bsp_exit(int code) {
  const uint32_t args[2] = {0x20026u /* ADP_Stopped_ApplicationExit */, (uint32_t)code};
  semihost_call(SH_SYS_EXIT_EXTENDED, args);
  for (;;) {
  }
}
