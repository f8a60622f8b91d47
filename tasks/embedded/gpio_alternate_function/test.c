#include "harness.h"
#include "stm32f4.h"

void usart2_pins_init(void);

int crucible_test_main(void) {
  usart2_pins_init();
  /* pins only: USART2 itself stays unconfigured */
  crucible_report("usart2_cr1", USART2->CR1);
  crucible_report("usart2_brr", USART2->BRR);
  return 0;
}
