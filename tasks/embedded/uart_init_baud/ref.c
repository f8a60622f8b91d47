#include <stdint.h>

#include "stm32f4.h"

#define USART2_CLOCK_HZ 16000000u

void uart2_init(uint32_t baud) {
  RCC->APB1ENR |= RCC_APB1ENR_USART2EN;
  USART2->CR1 = 0; /* UE off while reconfiguring */
  /* 16 * USARTDIV, rounded: mantissa in 15:4, fraction in sixteenths in 3:0 */
  USART2->BRR = (USART2_CLOCK_HZ + baud / 2u) / baud;
  USART2->CR2 = 0;
  USART2->CR3 = 0;
  USART2->CR1 = USART_CR1_UE | USART_CR1_TE | USART_CR1_RE;
}
