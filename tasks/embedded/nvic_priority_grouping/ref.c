#include <stdint.h>

#include "stm32f4.h"

#define PRIGROUP 5u
#define PREEMPT_BITS 2u
#define SUB_BITS 2u

void set_priority_grouping(void) {
  SCB->AIRCR = SCB_AIRCR_VECTKEY | (PRIGROUP << SCB_AIRCR_PRIGROUP_Pos);
}

uint32_t encode_priority(uint32_t preempt, uint32_t sub) {
  return ((preempt & ((1u << PREEMPT_BITS) - 1u)) << SUB_BITS) | (sub & ((1u << SUB_BITS) - 1u));
}

static void set_level(IRQn_Type irq, uint32_t level) {
  NVIC->IP[(uint32_t)irq] = (uint8_t)(level << (8u - __NVIC_PRIO_BITS));
}

void apply_priorities(void) {
  set_level(TIM3_IRQn, encode_priority(1, 2));
  set_level(USART2_IRQn, encode_priority(3, 0));
  set_level(EXTI1_IRQn, encode_priority(0, 3));
}
