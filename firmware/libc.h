/* The little of a C library the firmware needs, written here: it links no libc. The
   compiler may call memcpy, memset and memmove itself (struct copies, loops it recognises). */
#ifndef FW_LIBC_H
#define FW_LIBC_H

#include <stddef.h>
#include <stdint.h>

void *memcpy(void *restrict to, const void *restrict from, size_t n);
void *memmove(void *to, const void *from, size_t n);
void *memset(void *to, int value, size_t n);
size_t fw_strlen(const char *s);
/* The value of "key=<digits>" in a line of space-separated words, or `fallback`. */
uint32_t fw_argument(const char *line, const char *key, uint32_t fallback);

/* log in fp32, within 2 ulp (logf.c; the reported loss, no libm here). The softmax's exp is the
   host's (host_double.h). */
float fw_logf(float x);

/* Text output through bsp_output. Floats print in fixed point with `decimals` digits. */
void fw_print(const char *s);
void fw_print_u32(uint32_t v);
void fw_print_i32(int32_t v);
void fw_print_float(float v, int decimals);

#endif
