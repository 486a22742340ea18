/* ARM semihosting (the "Semihosting for AArch32 and AArch64" specification): requests to
   the debugger or emulator through `bkpt 0xAB`, as QEMU's -semihosting implements them. */
#ifndef FW_SEMIHOST_H
#define FW_SEMIHOST_H

#include <stdint.h>

enum {
  SH_SYS_OPEN = 0x01,
  SH_SYS_CLOSE = 0x02,
  SH_SYS_WRITE = 0x05,
  SH_SYS_READ = 0x06,
  SH_SYS_SEEK = 0x0A,
  SH_SYS_CLOCK = 0x10,
  SH_SYS_GET_CMDLINE = 0x15,
  SH_SYS_EXIT_EXTENDED = 0x20
};

/* Modes of SYS_OPEN (fopen's, in the specification's order). */
enum { SH_OPEN_RB = 1, SH_OPEN_WB = 5, SH_OPEN_WPLUSB = 7 };

/* The special file name of the console. */
#define SH_CONSOLE ":tt"

uint32_t semihost_call(uint32_t op, const void *args);

#endif
