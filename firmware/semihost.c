#include "semihost.h"

uint32_t semihost_call(uint32_t op, const void *args) {
  register uint32_t r0 __asm__("r0") = op;
  register const void *r1 __asm__("r1") = args;
  /* The emulator reads the block r1 points to and may write it: memory is clobbered. */
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}
