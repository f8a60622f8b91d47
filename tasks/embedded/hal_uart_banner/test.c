#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

void banner(void);

int crucible_test_main(void) {
  banner();
  crucible_report("brr", USART1->BRR);
  crucible_report("cr1", USART1->CR1);
  return 0;
}
