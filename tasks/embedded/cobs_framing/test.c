#include <stdint.h>

#include "harness.h"

uint32_t cobs_encode(const uint8_t *in, uint32_t len, uint8_t *out);
int32_t cobs_decode(const uint8_t *in, uint32_t len, uint8_t *out);

static uint8_t src[300], enc[310 + 32], dec[310 + 32];

/* the verifier defines CRUCIBLE_SEED per task and verifier version (verifier.py) */
#ifndef CRUCIBLE_SEED
#define CRUCIBLE_SEED 1u
#endif
#define MAX_LEN 4096u /* the sweep's largest input */
static uint8_t sin_[MAX_LEN], senc[MAX_LEN + MAX_LEN / 254u + 1u + 32u], sdec[sizeof senc];
static uint32_t rng = CRUCIBLE_SEED;

/* the test's own encoder, the requirement's algorithm as written */
static uint32_t truth_encode(const uint8_t *in, uint32_t len, uint8_t *out) {
  uint32_t code_at = 0, o = 1;
  uint8_t code = 1;
  for (uint32_t i = 0; i < len; i++) {
    if (in[i] == 0u) {
      out[code_at] = code;
      code_at = o++;
      code = 1;
      continue;
    }
    out[o++] = in[i];
    if (++code == 0xFFu) {
      out[code_at] = code;
      code = 1;
      if (i + 1u == len) {
        return o;
      }
      code_at = o++;
    }
  }
  out[code_at] = code;
  return o;
}

/* random inputs across the whole range of lengths (harness.h crucible_sweep_sizes), some
   without zeros (long groups), some with many: the candidate's encoding equals the test's,
   its decoding gives the input back, and neither writes past what it may */
static int sweep(void) {
  static uint32_t lens[160];
  static uint8_t want[sizeof senc];
  uint32_t count = crucible_sweep_sizes(lens, 160u, MAX_LEN, 24u, &rng);
  for (uint32_t c = 0; c < count; c++) {
    uint32_t n = lens[c], zeros = crucible_rand(&rng) % 4u; /* 0: none, else 1 in 2^(2z) */
    for (uint32_t i = 0; i < n; i++) {
      uint32_t r = crucible_rand(&rng);
      sin_[i] = zeros && (r >> 24) % (1u << (2u * zeros)) == 0u ? 0u : (uint8_t)(r % 255u + 1u);
    }
    uint32_t w = truth_encode(sin_, n, want);
    crucible_zone_fill(senc, sizeof senc, 0xE5u);
    uint32_t e = cobs_encode(sin_, n, senc);
    crucible_zone_check(senc, n + n / 254u + 1u, sizeof senc, 0xE5u);
    int same = e == w;
    for (uint32_t i = 0; same && i < e; i++) {
      same = senc[i] == want[i];
    }
    crucible_zone_fill(sdec, sizeof sdec, 0xE5u);
    int32_t d = same ? cobs_decode(want, w, sdec) : -2;
    if (same) {
      crucible_zone_check(sdec, w, sizeof sdec, 0xE5u);
    }
    int back = d == (int32_t)n;
    for (uint32_t i = 0; back && i < n; i++) {
      back = sdec[i] == sin_[i];
    }
    if (!same || !back) {
      crucible_report_dec("sweep_len", (int32_t)n);
      crucible_report_dec("sweep_encoding_ok", same);
      crucible_report_dec("sweep_decoded_ok", back);
      return -1;
    }
  }
  return (int)count;
}

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
  int swept = sweep();
  if (swept >= 0) {
    crucible_report_dec("sweep", swept);
  }
  return 0;
}
