#include <stdint.h>

#include "stm32f4.h"

#define TIM_CLK_HZ 16000000u
#define TICK_HZ 1000000u

static volatile uint32_t done;
static volatile uint32_t irq_count;

void TIM4_IRQHandler(void) {
  if (TIM4->SR & TIM_SR_UIF) {
    TIM4->SR = ~TIM_SR_UIF;
    TIM4->CR1 &= ~TIM_CR1_CEN;
    irq_count++;
    done = 1;
  }
}

void pulse_init(void) {
  RCC->APB1ENR |= RCC_APB1ENR_TIM4EN;
  TIM4->CR1 = TIM_CR1_OPM | TIM_CR1_URS;
  TIM4->PSC = TIM_CLK_HZ / TICK_HZ - 1u;
  TIM4->DIER = TIM_DIER_UIE;
  TIM4->SR = 0;
  done = 0;
  irq_count = 0;
  NVIC_EnableIRQ(TIM4_IRQn);
}

void start_pulse(uint32_t width_us) {
  done = 0;
  TIM4->ARR = width_us - 1u;
  TIM4->CNT = 0;
  TIM4->EGR = TIM_EGR_UG;
  TIM4->SR = 0;
  TIM4->CR1 = TIM_CR1_OPM | TIM_CR1_URS | TIM_CR1_CEN;
}

int pulse_done(void) { return done != 0u; }

int wait_pulse(uint32_t max_spins) {
  while (max_spins--) {
    if (done) {
      return 1;
    }
  }
  return 0;
}

uint32_t pulse_irq_count(void) { return irq_count; }
