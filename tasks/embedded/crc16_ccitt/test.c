#include <stdint.h>

#include "harness.h"

uint16_t crc16_bitwise(const uint8_t *data, uint32_t len);
uint16_t crc16_table(const uint8_t *data, uint32_t len);

static uint8_t buf[260];

static void both(const char *kb, const char *kt, const uint8_t *d, uint32_t n) {
  crucible_report(kb, crc16_bitwise(d, n));
  crucible_report(kt, crc16_table(d, n));
}

int crucible_test_main(void) {
  static const uint8_t check[] = "123456789";
  static const uint8_t one_a[] = {'A'};
  static const uint8_t one_0[] = {0x00};
  static const uint8_t one_ff[] = {0xFF};
  both("check_bit", "check_tab", check, 9);
  both("empty_bit", "empty_tab", (const uint8_t *)0, 0);
  both("a_bit", "a_tab", one_a, 1);
  both("zero_bit", "zero_tab", one_0, 1);
  both("ff_bit", "ff_tab", one_ff, 1);
  for (uint32_t i = 0; i < 256u; i++) {
    buf[i + 1] = (uint8_t)i; /* odd address: any alignment */
  }
  both("ramp_bit", "ramp_tab", buf + 1, 256);
  /* every single byte: the two implementations agree */
  uint32_t agree = 0;
  for (uint32_t i = 0; i < 256u; i++) {
    uint8_t b = (uint8_t)i;
    agree += crc16_bitwise(&b, 1) == crc16_table(&b, 1);
  }
  crucible_report_dec("agree", (int32_t)agree);
  return 0;
}
