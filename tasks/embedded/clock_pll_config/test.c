#include <stdint.h>

#include "harness.h"

uint32_t pllcfgr_encode(uint32_t m, uint32_t n, uint32_t p, uint32_t q, int hse);
void clock_setup_168mhz(void);

static const uint32_t cases[][5] = {
    {8, 336, 2, 7, 1}, {16, 336, 4, 7, 0}, {4, 168, 2, 7, 1}, {25, 336, 2, 7, 1}, {8, 432, 8, 9, 1},
};

int crucible_test_main(void) {
  char key[5] = {'p', 'l', 'l', '0', 0};
  for (uint32_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const uint32_t *c = cases[i];
    key[3] = (char)('0' + i);
    crucible_report(key, pllcfgr_encode(c[0], c[1], c[2], c[3], (int)c[4]));
  }
  clock_setup_168mhz();
  crucible_print("@clock=168MHz\n");
  return 0;
}
