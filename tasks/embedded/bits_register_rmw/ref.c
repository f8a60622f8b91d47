#include <stdint.h>

#include "stm32f4.h"

#define TIM_CR1_CMS_Msk (3u << 5)

void reg_modify(volatile uint32_t *reg, uint32_t clear, uint32_t set) {
  *reg = (*reg & ~clear) | set;
}

void tim3_configure(void) {
  reg_modify(&TIM3->CR1, TIM_CR1_DIR | TIM_CR1_OPM | TIM_CR1_UDIS | TIM_CR1_CMS_Msk,
             TIM_CR1_ARPE | TIM_CR1_URS);
  reg_modify(&TIM3->DIER, TIM_DIER_CC1IE, TIM_DIER_UIE);
}

void tim3_update_now(void) { TIM3->EGR = TIM_EGR_UG; }

void tim3_enable(int on) {
  if (on) {
    reg_modify(&TIM3->CR1, 0u, TIM_CR1_CEN);
  } else {
    reg_modify(&TIM3->CR1, TIM_CR1_CEN, 0u);
  }
}
