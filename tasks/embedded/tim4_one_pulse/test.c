#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

void pulse_init(void);
void start_pulse(uint32_t width_us);
int pulse_done(void);
int wait_pulse(uint32_t max_spins);
uint32_t pulse_irq_count(void);

static void pulse(uint32_t width) {
  start_pulse(width);
  crucible_report_dec("width", (int32_t)width);
  crucible_report("arr", TIM4->ARR);
  if (width >= 1000u) { /* still running right after the start */
    crucible_report("cr1_running", TIM4->CR1);
  }
  crucible_report_dec("waited", wait_pulse(2000000u));
  /* time for several more periods: a timer that did not stop would interrupt again */
  for (volatile uint32_t i = 0; i < 4u * width + 20000u; i++) {
  }
  crucible_report_dec("done", pulse_done());
  crucible_report_dec("irqs", (int32_t)pulse_irq_count());
  crucible_report("cr1_after", TIM4->CR1);
  crucible_report("sr_after", TIM4->SR); /* the handler cleared UIF */
}

int crucible_test_main(void) {
  pulse_init();
  crucible_report("cr1_init", TIM4->CR1);
  crucible_report("psc", TIM4->PSC);
  crucible_report("dier", TIM4->DIER);
  crucible_report_dec("iser_tim4", (NVIC->ISER[0] >> TIM4_IRQn) & 1u);
  crucible_report_dec("done_init", pulse_done());
  pulse(5000);
  pulse(20);
  pulse(65536);
  pulse(2);
  NVIC_SetPendingIRQ(TIM4_IRQn); /* a spurious interrupt: UIF is clear, nothing happens */
  crucible_report_dec("irqs_spurious", (int32_t)pulse_irq_count());
  crucible_report_dec("done_spurious", pulse_done());
  return 0;
}
