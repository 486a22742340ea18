/* Reset: the vector table, the FPU switched on, .data copied from flash, .bss zeroed, the
   stack painted (for its high-water mark), then main; its return value is the exit code. */
#include <stdint.h>

#include "bsp.h"
#include "startup.h"

extern uint32_t __data_start[], __data_end[], __data_load[], __bss_start[], __bss_end[];
extern uint32_t __stack_bottom[], __stack_top[];
int main(void);

#define FW_STACK_PAINT 0x5AA5C33Cu

__attribute__((noreturn)) void fw_reset(void);
static void fw_fault(void) {
  fw_print_fault();
  bsp_exit(3);
}

/* Initial stack pointer, then the handlers: reset, NMI, hard fault, memory management,
   bus and usage faults. A fault ends the run with exit code 3. */
__attribute__((section(".vectors"), used)) static const void *const vectors[] = {
    __stack_top, (const void *)fw_reset, (const void *)fw_fault, (const void *)fw_fault,
    (const void *)fw_fault, (const void *)fw_fault, (const void *)fw_fault,
};

/* Everything after the FPU is on: the compiler may use FP registers from here. */
__attribute__((noinline, noreturn)) static void fw_start(void) {
  for (uint32_t *d = __data_start, *s = __data_load; d < __data_end;) *d++ = *s++;
  for (uint32_t *d = __bss_start; d < __bss_end;) *d++ = 0;
  uint32_t *sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  for (uint32_t *p = __stack_bottom; p < sp - 64; ++p) *p = FW_STACK_PAINT;
  bsp_exit(main());
}

void fw_reset(void) {
  /* CPACR: full access to coprocessors 10 and 11 (the FPU), before any FP instruction. */
  *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
  __asm__ volatile("dsb\n\tisb" ::: "memory");
  fw_start();
}

uint32_t fw_stack_high_water(void) {
  const uint32_t *p = __stack_bottom;
  while (p < __stack_top && *p == FW_STACK_PAINT) ++p;
  return (uint32_t)((const char *)__stack_top - (const char *)p);
}

uint32_t fw_stack_size(void) { return (uint32_t)((const char *)__stack_top - (const char *)__stack_bottom); }

uint32_t fw_sram_used(void) {
  extern char __ram_start[];
  return (uint32_t)((const char *)__stack_top - __ram_start);
}
