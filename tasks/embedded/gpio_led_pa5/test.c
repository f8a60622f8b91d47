#include "harness.h"

void led_init(void);
void led_on(void);
void led_off(void);

int crucible_test_main(void) {
  led_init();
  crucible_print("@led=init\n");
  led_on();
  led_off();
  led_off(); /* off twice: still one reset write each */
  led_on();
  led_off();
  crucible_print("@led=blink x2\n");
  return 0;
}
