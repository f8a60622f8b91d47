#include <stdint.h>

#include "stm32f4.h"

#define AF_USART2 7u

void usart2_pins_init(void) {
  RCC->AHB1ENR |= RCC_AHB1ENR_GPIOAEN;
  RCC->APB1ENR |= RCC_APB1ENR_USART2EN;

  /* AF first, then the mode: the pins switch straight to USART2 */
  GPIOA->AFR[0] = (GPIOA->AFR[0] & ~((0xFu << (4u * 2u)) | (0xFu << (4u * 3u)))) |
                  (AF_USART2 << (4u * 2u)) | (AF_USART2 << (4u * 3u));
  GPIOA->MODER = (GPIOA->MODER & ~((3u << 4) | (3u << 6))) |
                 (GPIO_MODER_AF << 4) | (GPIO_MODER_AF << 6);
  GPIOA->OSPEEDR = (GPIOA->OSPEEDR & ~((3u << 4) | (3u << 6))) | (2u << 4) | (2u << 6);
  GPIOA->PUPDR = (GPIOA->PUPDR & ~((3u << 4) | (3u << 6))) | (1u << 6);
}
