#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

void reg_modify(volatile uint32_t *reg, uint32_t clear, uint32_t set);
void tim3_configure(void);
void tim3_update_now(void);
void tim3_enable(int on);

static const uint32_t cases[][3] = {
    {0xF0F0F0F0u, 0x0000FF00u, 0x00001200u}, {0xF0F0F0F0u, 0, 0},
    {0xF0F0F0F0u, 0xFFFFFFFFu, 5},            {0xF0F0F0F0u, 0x0000000Fu, 0x000000F0u},
    {0x00000000u, 0, 0x80000000u},
};

int crucible_test_main(void) {
  static volatile uint32_t ram;
  char key[5] = {'r', 'a', 'm', '0', 0};
  for (uint32_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ram = cases[i][0];
    reg_modify(&ram, cases[i][1], cases[i][2]);
    key[3] = (char)('0' + i);
    crucible_report(key, ram);
  }

  /* a timer left by other code: CKD = 10, CMS = 11, DIR, OPM, UDIS; TIE and CC1IE on */
  TIM3->PSC = 15;
  TIM3->ARR = 999;
  TIM3->CR1 = 0x27A;
  TIM3->DIER = 0x42;
  tim3_configure();
  crucible_report("cr1_a", TIM3->CR1);
  crucible_report("dier_a", TIM3->DIER);

  /* already running (CEN) with CKD = 01: both kept */
  TIM3->CR1 = 0x101;
  TIM3->DIER = 0;
  tim3_configure();
  crucible_report("cr1_b", TIM3->CR1);
  crucible_report("dier_b", TIM3->DIER);
  TIM3->CR1 = 0;

  TIM3->EGR = 0;
  tim3_update_now();
  crucible_report("egr", TIM3->EGR);

  TIM3->CR1 = 0x27A;
  TIM3->DIER = 0x42;
  tim3_configure();
  tim3_enable(1);
  crucible_report("cr1_on", TIM3->CR1);
  tim3_enable(0);
  crucible_report("cr1_off", TIM3->CR1);
  tim3_enable(0);
  crucible_report("cr1_off2", TIM3->CR1);
  crucible_report("dier_end", TIM3->DIER);
  return 0;
}
