#include <stdint.h>

#include "stm32f4.h"

static volatile uint32_t events;

void EXTI0_IRQHandler(void) {
  EXTI->PR = EXTI_LINE(0);
  events++;
}

void exti0_init(void) {
  RCC->APB2ENR |= RCC_APB2ENR_SYSCFGEN;
  SYSCFG->EXTICR[0] &= ~0xFu; /* EXTI0 <- PA0 */
  EXTI->IMR |= EXTI_LINE(0);
  EXTI->RTSR |= EXTI_LINE(0);
  EXTI->FTSR &= ~EXTI_LINE(0);
  EXTI->PR = EXTI_LINE(0);
  events = 0;
  NVIC_EnableIRQ(EXTI0_IRQn);
}

void exti0_trigger_soft(void) { EXTI->SWIER = EXTI_LINE(0); }

uint32_t exti0_count(void) { return events; }
