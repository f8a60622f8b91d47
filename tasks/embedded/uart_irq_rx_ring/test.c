#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

void uart_rx_init(void);
uint32_t rx_available(void);
int rx_read(void);
uint32_t rx_dropped(void);

#define BURST_LEN 12u /* "ABCDEFGHIJKL": arrives while nobody reads */
#define PATIENCE 5000000u

static uint32_t polls;

static void stuck(const char *what) {
  crucible_print("\n!stuck ");
  crucible_print(what);
  crucible_print("\n");
  crucible_exit(CRUCIBLE_EXIT_WAIT);
}

int crucible_test_main(void) {
  uart_rx_init();
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
  char burst[BURST_LEN + 1];
  uint32_t n = 0;
  for (int c = rx_read(); c >= 0 && n < BURST_LEN; c = rx_read()) {
    burst[n++] = (char)c;
  }
  burst[n] = 0;
  crucible_print("@burst=");
  crucible_print(burst);
  crucible_print("\n");
  crucible_report_dec("empty_read", rx_read());
  crucible_report_dec("available", (int32_t)rx_available());
  NVIC_SetPendingIRQ(USART1_IRQn); /* a spurious interrupt: RXNE is clear */
  crucible_report_dec("after_spurious", (int32_t)rx_available());
  crucible_report_dec("dropped", (int32_t)rx_dropped());
  return 0;
}
