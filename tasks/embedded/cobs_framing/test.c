#include <stdint.h>

#include "harness.h"

uint32_t cobs_encode(const uint8_t *in, uint32_t len, uint8_t *out);
int32_t cobs_decode(const uint8_t *in, uint32_t len, uint8_t *out);

static uint8_t src[300], enc[310 + 32], dec[310 + 32];

/* encode, report the encoding, decode it back and report whether the round trip holds; the
   bytes past what each call may write (len + len / 254 + 1 for the encoding, the input's
   length for the decoding) are a red zone checked after it */
static void trip(const char *key, const uint32_t n) {
  crucible_zone_fill(enc, sizeof enc, 0xE5u);
  uint32_t e = cobs_encode(src, n, enc);
  crucible_zone_check(enc, n + n / 254u + 1u, sizeof enc, 0xE5u);
  crucible_report_mem(key, enc, e);
  crucible_zone_fill(dec, sizeof dec, 0xE5u);
  int32_t d = cobs_decode(enc, e, dec);
  crucible_zone_check(dec, e, sizeof dec, 0xE5u);
  int same = d == (int32_t)n;
  for (uint32_t i = 0; same && i < n; i++) {
    same = dec[i] == src[i];
  }
  crucible_report_dec("len", (int32_t)e);
  crucible_report_dec("back", same);
}

static void bad(const char *key, const uint8_t *in, uint32_t n) {
  crucible_report_dec(key, cobs_decode(in, n, dec));
}

int crucible_test_main(void) {
  trip("empty", 0);
  src[0] = 0;
  trip("z1", 1);
  src[1] = 0;
  trip("z2", 2);
  src[0] = 0x11, src[1] = 0x22, src[2] = 0x00, src[3] = 0x33;
  trip("mix", 4);
  src[0] = 0x11, src[1] = 0x22, src[2] = 0x33, src[3] = 0x44, src[4] = 0x00;
  trip("tail0", 5);
  for (uint32_t i = 0; i < 300u; i++) {
    src[i] = (uint8_t)(i % 255u + 1u); /* 1..255, 1.. : never 0 */
  }
  trip("run253", 253);
  trip("run254", 254);
  trip("run255", 255);
  src[254] = 0; /* 254 non-zero bytes then a zero */
  trip("run254z", 255);
  src[0] = 0; /* 00 then 01.. */
  trip("z_run", 256);
  static const uint8_t zero_inside[] = {0x03, 0x11, 0x00, 0x02, 0x33};
  static const uint8_t past_end[] = {0x05, 0x11, 0x22};
  static const uint8_t ok[] = {0x01, 0x01, 0x01};
  static const uint8_t lead0[] = {0x00};
  bad("bad_zero", zero_inside, 5);
  bad("bad_past_end", past_end, 3);
  bad("bad_empty", ok, 0);
  bad("bad_lead0", lead0, 1);
  crucible_report_dec("ok_010101", cobs_decode(ok, 3, dec));
  crucible_report_mem("ok_bytes", dec, 2);
  return 0;
}
