#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

void tim2_start(uint32_t period_us, uint32_t n_events);
uint32_t tim2_events(void);

static void burst(uint32_t period_us, uint32_t n) {
  tim2_start(period_us, n);
  crucible_report("psc", TIM2->PSC);
  crucible_report("arr", TIM2->ARR);
  crucible_report("dier", TIM2->DIER);
  crucible_report_dec("iser_tim2", (NVIC->ISER[0] >> TIM2_IRQn) & 1u);
  uint32_t spins = 0;
  while (tim2_events() < n && spins < 2000000u) {
    spins++;
  }
  /* give a counter that did not stop time for many more periods */
  for (volatile uint32_t i = 0; i < 20000u + period_us * 4u && i < 60000u; i++) {
  }
  crucible_report_dec("events", (int32_t)tim2_events());
  crucible_report("cr1", TIM2->CR1); /* CEN cleared, the other bits kept */
  crucible_report_dec("uif", (int32_t)(TIM2->SR & TIM_SR_UIF));
}

int crucible_test_main(void) {
  burst(100, 5);
  burst(250, 3);
  burst(10, 4);
  burst(66000, 1);
  NVIC_SetPendingIRQ(TIM2_IRQn); /* a spurious interrupt: UIF is clear, nothing is counted */
  crucible_report_dec("events_spurious", (int32_t)tim2_events());
  return 0;
}
