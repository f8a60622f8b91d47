#include <stdint.h>

#include "harness.h"

void bus_init(void);
void bus_write(uint32_t value);

int crucible_test_main(void) {
  static const uint32_t values[] = {0x00, 0xFF, 0xA5, 0x1A5, 0x01, 0x80, 0x3C};
  bus_init();
  for (uint32_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    bus_write(values[i]);
  }
  crucible_report_dec("bus_writes", (int32_t)(sizeof values / sizeof values[0]));
  return 0;
}
