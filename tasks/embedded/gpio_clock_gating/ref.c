#include <stdint.h>

#include "stm32f4.h"

#define RCC_APB1RSTR_TIM3RST (1u << 1)

void clocks_enable(void) {
  RCC->AHB1ENR |= RCC_AHB1ENR_GPIOAEN | RCC_AHB1ENR_GPIOCEN | RCC_AHB1ENR_GPIOEEN |
                  RCC_AHB1ENR_DMA2EN;
  RCC->APB1ENR |= RCC_APB1ENR_USART2EN | RCC_APB1ENR_TIM3EN;
}

void gpioc_clock_disable(void) { RCC->AHB1ENR &= ~RCC_AHB1ENR_GPIOCEN; }

void tim3_reset(void) {
  RCC->APB1RSTR |= RCC_APB1RSTR_TIM3RST;
  RCC->APB1RSTR &= ~RCC_APB1RSTR_TIM3RST;
}
