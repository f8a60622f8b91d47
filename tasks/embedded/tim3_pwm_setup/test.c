#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

void pwm_setup(uint32_t freq_hz, uint32_t duty1_pct, uint32_t duty2_pct);

static void check(uint32_t f, uint32_t d1, uint32_t d2) {
  pwm_setup(f, d1, d2);
  crucible_report_dec("freq", (int32_t)f);
  crucible_report("psc", TIM3->PSC);
  crucible_report("arr", TIM3->ARR);
  crucible_report("ccr1", TIM3->CCR1);
  crucible_report("ccr2", TIM3->CCR2);
  crucible_report("ccmr1", TIM3->CCMR1);
  crucible_report("ccer", TIM3->CCER);
  crucible_report("cr1", TIM3->CR1);
}

int crucible_test_main(void) {
  /* leftovers a whole-register write must clear: input capture on CH1, inverted CH2 */
  TIM3->CCMR1 = 0x0101u;
  TIM3->CCER = 0x0022u;
  TIM3->CR1 = TIM_CR1_DIR;
  check(1000, 25, 75);
  check(50, 0, 100);
  check(20000, 33, 50);
  check(16, 1, 99);
  check(3000, 150, 10);
  check(500000, 50, 100);
  TIM3->CR1 = 0;
  return 0;
}
