#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

void uart2_init(uint32_t baud);

int crucible_test_main(void) {
  static const uint32_t bauds[] = {115200, 9600, 57600, 460800, 1000000, 1200, 256000, 251000};
  /* left over from an earlier configuration: 9 bits + parity + interrupts, 2 stop bits */
  USART2->CR1 = USART_CR1_M | USART_CR1_PCE | USART_CR1_RXNEIE | USART_CR1_TE;
  USART2->CR2 = 2u << USART_CR2_STOP_Pos;
  USART2->CR3 = 0x1; /* EIE */
  for (uint32_t i = 0; i < sizeof bauds / sizeof bauds[0]; i++) {
    uart2_init(bauds[i]);
    crucible_report_dec("baud", (int32_t)bauds[i]);
    crucible_report("brr", USART2->BRR);
    crucible_report("cr1", USART2->CR1);
    crucible_report("cr2", USART2->CR2);
    crucible_report("cr3", USART2->CR3);
    USART2->CR2 = 3u << USART_CR2_STOP_Pos; /* dirty again for the next call */
    USART2->CR1 |= USART_CR1_OVER8 | USART_CR1_TXEIE;
  }
  crucible_report("usart1_cr1", USART1->CR1);
  crucible_report("usart1_brr", USART1->BRR);
  return 0;
}
