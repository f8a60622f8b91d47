#include <stdint.h>

#include "stm32f4.h"

#define TIM_CLK_HZ 16000000u
#define TICK_HZ 1000000u

static volatile uint32_t events;
static volatile uint32_t target;

void TIM2_IRQHandler(void) {
  if (TIM2->SR & TIM_SR_UIF) {
    TIM2->SR = ~TIM_SR_UIF;
    if (++events >= target) {
      TIM2->CR1 &= ~TIM_CR1_CEN;
    }
  }
}

void tim2_start(uint32_t period_us, uint32_t n_events) {
  RCC->APB1ENR |= RCC_APB1ENR_TIM2EN;
  TIM2->CR1 = 0;
  events = 0;
  target = n_events;
  TIM2->PSC = TIM_CLK_HZ / TICK_HZ - 1u;
  TIM2->ARR = period_us - 1u;
  TIM2->CNT = 0;
  TIM2->EGR = TIM_EGR_UG;
  TIM2->SR = 0;
  TIM2->DIER = TIM_DIER_UIE;
  NVIC_EnableIRQ(TIM2_IRQn);
  TIM2->CR1 = TIM_CR1_CEN;
}

uint32_t tim2_events(void) { return events; }
