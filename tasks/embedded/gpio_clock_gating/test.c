#include "harness.h"

void clocks_enable(void);
void gpioc_clock_disable(void);
void tim3_reset(void);

int crucible_test_main(void) {
  clocks_enable();
  crucible_print("@clocks=on\n");
  gpioc_clock_disable();
  crucible_print("@gpioc=off\n");
  tim3_reset();
  crucible_print("@tim3=reset\n");
  clocks_enable(); /* again: GPIOC back on */
  crucible_print("@clocks=on\n");
  return 0;
}
