/* The board-support interface: everything the training runtime asks of a board. A port to
   a real board (an nRF52840 or an STM32 with an SD card over SPI) implements these
   functions; bsp_semihost.c implements them on QEMU through ARM semihosting.
   Every function returning int returns 0 on success and a negative value on failure. */
#ifndef FW_BSP_H
#define FW_BSP_H

#include <stdint.h>

/* Secondary storage for paged tensors, in blocks of BSP_BLOCK_BYTES (an SD card's sector).
   Reads and writes move whole blocks; a block must be erased before it is written again
   (a no-op on an SD card, which erases inside; needed for raw NOR/NAND flash). */
#define BSP_BLOCK_BYTES 512u
int bsp_storage_erase(uint32_t first_block, uint32_t blocks);
int bsp_storage_write(uint32_t first_block, const void *data, uint32_t blocks);
int bsp_storage_read(uint32_t first_block, void *data, uint32_t blocks);

/* The data: read `bytes` at byte `offset` of stream `stream` (training or test samples;
   on a board, files on the SD card or a sensor's buffer). */
enum bsp_stream { BSP_TRAIN_DATA, BSP_TEST_DATA };
int bsp_data_read(enum bsp_stream stream, uint32_t offset, void *data, uint32_t bytes);

/* Results: append `bytes` to the result file (the trained weights). */
int bsp_result_write(const void *data, uint32_t bytes);

/* Text output (a UART on a board). */
void bsp_output(const char *text, uint32_t length);

/* Milliseconds since start-up (wraps after 49 days). */
uint32_t bsp_clock_ms(void);

/* The run's arguments, "key=value" words (empty if the board has none); NUL-terminated. */
const char *bsp_arguments(void);

/* Ends the program with `code` (0 success); never returns. */
__attribute__((noreturn)) void bsp_exit(int code);

#endif
