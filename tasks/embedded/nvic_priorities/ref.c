#include <stdint.h>

#include "stm32f4.h"

#define PRIO_FIELD(p) ((uint8_t)((p) << (8u - __NVIC_PRIO_BITS)))

void irq_priorities_init(void) {
  NVIC->IP[TIM2_IRQn] = PRIO_FIELD(1u);
  NVIC->IP[USART1_IRQn] = PRIO_FIELD(3u);
  NVIC->IP[EXTI0_IRQn] = PRIO_FIELD(0u);
  SCB->SHP[15u - 4u] = PRIO_FIELD(15u); /* SysTick: exception 15 */
  NVIC_EnableIRQ(TIM2_IRQn);
  NVIC_EnableIRQ(USART1_IRQn);
  NVIC_EnableIRQ(EXTI0_IRQn);
}
