/* What start-up knows about memory: the stack's high-water mark and the SRAM in use. */
#ifndef FW_STARTUP_H
#define FW_STARTUP_H

#include <stdint.h>

/* Bytes of stack ever used (the painted stack's untouched words counted from its bottom). */
uint32_t fw_stack_high_water(void);
uint32_t fw_stack_size(void);
/* Bytes of SRAM the program reserves: .data, .bss and the stack. */
uint32_t fw_sram_used(void);
/* Reports a fault (main.c); the run then exits with code 3. */
void fw_print_fault(void);

#endif
