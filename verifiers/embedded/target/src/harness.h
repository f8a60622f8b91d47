/* The test harness's API: what a task's test main (test.c) calls. Not part of any task's
   allowed API: a candidate that calls these is refused at the link gate.

   Reports go out on USART1 (QEMU's first serial port, the run's stdout) as lines of their
   own; the run ends through semihosting SYS_EXIT_EXTENDED with the test main's result. */
#ifndef CRUCIBLE_HARNESS_H
#define CRUCIBLE_HARNESS_H

#include <stdint.h>

#define CRUCIBLE_EXIT_FAULT 250         /* a fault handler ran */
#define CRUCIBLE_EXIT_UNHANDLED_IRQ 251 /* an interrupt reached Default_Handler */
#define CRUCIBLE_EXIT_WAIT 252          /* crucible_wait gave up */
#define CRUCIBLE_EXIT_OOB 253           /* painted RAM outside every object was written */
#define CRUCIBLE_EXIT_PERIPH 249        /* a peripheral access the register model cannot serve */

void crucible_print(const char *text);             /* raw text on the report port */
void crucible_report(const char *key, uint32_t v); /* "@key=0x0000002a\n" */
void crucible_report_dec(const char *key, int32_t v); /* "@key=-42\n" */
void crucible_report_mem(const char *key, const void *p, uint32_t n); /* "@key=0a1b..\n" */
/* spin until *flag == value, at most `loops` polls: a firmware that never gets there exits
   with CRUCIBLE_EXIT_WAIT (its interrupt never came) instead of hanging */
void crucible_wait(volatile uint32_t *flag, uint32_t value, uint32_t loops);
void __attribute__((noreturn)) crucible_exit(int code);
/* red zones for a test main's buffers: crucible_zone_fill writes `pattern` over
   buf[0..size) before a call; crucible_zone_check, after it, wants buf[from..size) still
   that pattern (the bytes past what the call may write). A changed byte is reported as a
   write outside the buffer's bounds and the run ends (CRUCIBLE_EXIT_OOB). */
/* sizes across a requirement's whole range, for a test main's sweep: every one to 64, powers
   of two from 128 and their neighbours, the round decimals 100..10000, `randoms` drawn
   log-uniformly from *rng, all up to `max`, and `max` itself; returns how many it wrote
   (at most `cap`). crucible_rand: xorshift32 on *rng (seed it with CRUCIBLE_SEED, which
   the verifier defines per task and verifier version). */
uint32_t crucible_rand(uint32_t *rng);
uint32_t crucible_sweep_sizes(uint32_t *sizes, uint32_t cap, uint32_t max, uint32_t randoms,
                              uint32_t *rng);
void crucible_zone_fill(void *buf, uint32_t size, uint8_t pattern);
void crucible_zone_check(const void *buf, uint32_t from, uint32_t size, uint8_t pattern);
/* the receiver is on: the run's UART input (harness.uart_input) is sent now, never earlier
   (QEMU drops bytes that arrive before the firmware enables the receiver) */
void crucible_rx_ready(void);

/* used by startup.c */
void crucible_fault_report(const char *name, uint32_t cfsr, uint32_t hfsr, uint32_t mmfar,
                           uint32_t bfar, uint32_t pc, uint32_t lr);
void crucible_unhandled_report(int32_t irq);
void crucible_oob_report(const char *kind, uint32_t first, uint32_t last, uint32_t lo,
                         uint32_t hi);
void crucible_state_report(void);
/* periph.c */
void crucible_periph_init(void);
void __attribute__((noreturn)) crucible_periph_unsupported(uint32_t pc, uint32_t addr);

#endif
