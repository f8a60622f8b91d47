#include "harness.h"
#include "stm32f4.h"

#define CR1_WAKE (1u << 11) /* set before echo_init: its read-modify-write keeps it */

void echo_init(void);
int echo_lines(void);

int crucible_test_main(void) {
  USART1->CR1 = CR1_WAKE;
  echo_init();
  crucible_report("cr1", USART1->CR1);
  crucible_rx_ready(); /* the receiver is on: the input is sent now */
  int n = echo_lines();
  crucible_report_dec("lines", n);
  return 0;
}
