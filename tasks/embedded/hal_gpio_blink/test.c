#include <stdint.h>

#include "harness.h"

void blink(uint32_t rounds);

int crucible_test_main(void) {
  blink(3);
  crucible_print("done\n");
  return 0;
}
