#include <stdint.h>

#include "harness.h"

uint16_t load_be16(const uint8_t *p);
uint32_t load_be32(const uint8_t *p);
uint16_t load_le16(const uint8_t *p);
uint32_t load_le32(const uint8_t *p);
void store_be32(uint8_t *p, uint32_t v);
void store_le32(uint8_t *p, uint32_t v);
uint16_t bswap16(uint16_t v);
uint32_t bswap32(uint32_t v);
int32_t sign_extend(uint32_t v, uint32_t bits);

static const uint32_t sx_cases[][2] = {
    {0x7FF, 12}, {0x800, 12}, {0xFFF, 12}, {0x1FFF, 12}, {0x12345, 12},
    {0x80000000u, 32}, {1, 1}, {0, 1}, {0x7FFFFFFF, 32}, {0xFF80, 8},
};

int crucible_test_main(void) {
  static const uint8_t in[8] = {0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC, 0xDE, 0xF0};
  crucible_report("be16_0", load_be16(in));
  crucible_report("be16_1", load_be16(in + 1)); /* odd addresses: unaligned */
  crucible_report("be32_1", load_be32(in + 1));
  crucible_report("be32_4", load_be32(in + 4));
  crucible_report("le16_6", load_le16(in + 6));
  crucible_report("le32_0", load_le32(in));
  crucible_report("le32_3", load_le32(in + 3));

  uint8_t out[8] = {0};
  store_be32(out + 1, 0xCAFEF00Du);
  crucible_report_mem("store_be", out, sizeof out);
  uint8_t out2[8] = {0};
  store_le32(out2 + 3, 0x01020304u);
  crucible_report_mem("store_le", out2, sizeof out2);

  crucible_report("bswap16", bswap16(0xA1B2));
  crucible_report("bswap32", bswap32(0x11223344u));

  char key[4] = {'s', 'x', '0', 0};
  for (uint32_t i = 0; i < sizeof sx_cases / sizeof sx_cases[0]; i++) {
    key[2] = (char)('0' + i);
    crucible_report_dec(key, sign_extend(sx_cases[i][0], sx_cases[i][1]));
  }
  return 0;
}
