#include "harness.h"

void ports_init(void);

int crucible_test_main(void) {
  ports_init();
  crucible_print("@ports=configured\n");
  return 0;
}
