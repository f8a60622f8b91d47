#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

void systick_init(void);
uint32_t millis(void);
void delay_ms(uint32_t ms);

int crucible_test_main(void) {
  systick_init();
  crucible_report("load", SysTick->LOAD);
  crucible_report("ctrl", SysTick->CTRL & 0x7u);
  crucible_report("shp_systick", SCB->SHP[11]);
  uint32_t t0 = millis();
  crucible_report_dec("t0_small", t0 <= 1u);
  delay_ms(5);
  uint32_t d = millis() - t0;
  crucible_report_dec("delay5_ok", d >= 5u && d <= 6u);
  uint32_t t1 = millis();
  delay_ms(0);
  crucible_report_dec("delay0_ok", millis() - t1 <= 1u);
  /* the counter keeps counting without delay_ms: wait for 3 more ticks */
  uint32_t t2 = millis();
  uint32_t spins = 0;
  while (millis() - t2 < 3u && spins < 2000000u) {
    spins++;
  }
  crucible_report_dec("counts", millis() - t2 >= 3u);
  /* started right after a tick, delay_ms(5) ends right after the 5th one: exactly 5 */
  uint32_t edge = millis();
  for (spins = 0; millis() == edge && spins < 2000000u; spins++) {
  }
  uint32_t t3 = millis();
  delay_ms(5);
  crucible_report_dec("delay5_exact", (int32_t)(millis() - t3));
  delay_ms(1);
  delay_ms(2);
  /* re-init resets the counter */
  systick_init();
  crucible_report_dec("reinit_small", millis() <= 1u);
  SysTick->CTRL = 0;
  return 0;
}
