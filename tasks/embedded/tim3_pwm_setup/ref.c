#include <stdint.h>

#include "stm32f4.h"

#define TIM_CLK_HZ 16000000u
#define TICK_HZ 1000000u
#define OCM_PWM1 6u

static uint32_t compare(uint32_t period, uint32_t duty_pct) {
  if (duty_pct > 100u) {
    duty_pct = 100u;
  }
  return period * duty_pct / 100u;
}

void pwm_setup(uint32_t freq_hz, uint32_t duty1_pct, uint32_t duty2_pct) {
  RCC->APB1ENR |= RCC_APB1ENR_TIM3EN;
  TIM3->CR1 = 0;
  uint32_t period = TICK_HZ / freq_hz; /* counter ticks per PWM period */
  TIM3->PSC = TIM_CLK_HZ / TICK_HZ - 1u;
  TIM3->ARR = period - 1u;
  TIM3->CCR1 = compare(period, duty1_pct);
  TIM3->CCR2 = compare(period, duty2_pct);
  TIM3->CCMR1 = (OCM_PWM1 << TIM_CCMR1_OC1M_Pos) | TIM_CCMR1_OC1PE |
                (OCM_PWM1 << TIM_CCMR1_OC2M_Pos) | TIM_CCMR1_OC2PE;
  TIM3->CCER = TIM_CCER_CC1E | TIM_CCER_CC2E;
  TIM3->EGR = TIM_EGR_UG;
  TIM3->CR1 = TIM_CR1_ARPE | TIM_CR1_CEN;
}
