#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

void uart_rx_init(void);
uint32_t rx_available(void);
int rx_read(void);
uint32_t rx_dropped(void);

#define BURST_LEN 12u /* "ABCDEF\xc3\xa9IJKL" (UTF-8 of "ABCDEF\u00e9IJKL"): arrives while
                         nobody reads; two bytes with bit 7 set */
#define CR1_WAKE (1u << 11) /* set before uart_rx_init: its read-modify-write keeps it */
#define PATIENCE 5000000u

static uint32_t polls;

static void stuck(const char *what) {
  crucible_print("\n!stuck ");
  crucible_print(what);
  crucible_print("\n");
  crucible_exit(CRUCIBLE_EXIT_WAIT);
}

int crucible_test_main(void) {
  USART1->CR1 = CR1_WAKE;
  uart_rx_init();
  crucible_report("cr1", USART1->CR1);
  crucible_rx_ready(); /* the receiver is on: the input is sent now */

  /* the burst: wait until every byte was either stored or dropped */
  while (rx_available() + rx_dropped() < BURST_LEN) {
    (void)USART1->SR; /* an I/O access: lets the emulator deliver input meanwhile */
    if (++polls == PATIENCE) {
      stuck("burst");
    }
  }
  crucible_report_dec("available", (int32_t)rx_available());
  crucible_report_dec("dropped", (int32_t)rx_dropped());
  uint8_t burst[BURST_LEN];
  uint32_t n = 0;
  for (int c = rx_read(); c >= 0 && n < BURST_LEN; c = rx_read()) {
    burst[n++] = (uint8_t)c;
  }
  crucible_report_mem("burst", burst, n); /* in hex */
  crucible_report_dec("empty_read", rx_read());
  crucible_report_dec("available", (int32_t)rx_available());
  NVIC_SetPendingIRQ(USART1_IRQn); /* a spurious interrupt: RXNE is clear */
  crucible_report_dec("after_spurious", (int32_t)rx_available());
  crucible_report_dec("dropped", (int32_t)rx_dropped());
  /* one more byte after the ring was emptied (its indices no longer 0): QEMU's SR takes a
     written RXNE, and DR still holds the burst's last byte, 'L' */
  USART1->SR = USART_SR_RXNE | USART_SR_TC;
  NVIC_SetPendingIRQ(USART1_IRQn);
  crucible_report_dec("late_available", (int32_t)rx_available());
  crucible_report_dec("late_read", rx_read());
  crucible_report_dec("dropped", (int32_t)rx_dropped());
  return 0;
}
