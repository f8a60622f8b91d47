#include <stdint.h>

#include "harness.h"

void fir_q15(const int16_t coef[8], const int16_t *in, int16_t *out, uint32_t n);

static int16_t out[24];

/* the verifier defines CRUCIBLE_SEED per task and verifier version (verifier.py) */
#ifndef CRUCIBLE_SEED
#define CRUCIBLE_SEED 1u
#endif
#define MAX_N 4096u /* the largest block the requirement names */
static int16_t sin_[MAX_N], sout[MAX_N + 16], coef_[8];
static uint32_t rng = CRUCIBLE_SEED;

/* the test's own filter, the requirement's formula as written */
static int16_t truth(const int16_t *coef, const int16_t *in, uint32_t i) {
  int64_t acc = 0;
  for (uint32_t k = 0; k < 8u && k <= i; k++) {
    acc += (int32_t)coef[k] * (int32_t)in[i - k];
  }
  acc = (acc + 0x4000) >> 15;
  return (int16_t)(acc > 32767 ? 32767 : acc < -32768 ? -32768 : acc);
}

/* random blocks across the whole range of n (harness.h crucible_sweep_sizes), extreme
   values mixed in so saturation happens; the samples past n are a red zone */
static int sweep(void) {
  static uint32_t ns[160];
  uint32_t count = crucible_sweep_sizes(ns, 160u, MAX_N, 24u, &rng);
  for (uint32_t c = 0; c < count; c++) {
    uint32_t n = ns[c];
    for (uint32_t k = 0; k < 8u; k++) {
      uint32_t r = crucible_rand(&rng);
      coef_[k] = (r & 7u) == 0u ? (int16_t)((r & 8u) ? 32767 : -32768) : (int16_t)(r >> 16);
    }
    for (uint32_t i = 0; i < n; i++) {
      uint32_t r = crucible_rand(&rng);
      sin_[i] = (r & 3u) == 0u ? (int16_t)((r & 4u) ? 32767 : -32768) : (int16_t)(r >> 16);
    }
    crucible_zone_fill(sout, sizeof sout, 0xA5u);
    fir_q15(coef_, sin_, sout, n);
    crucible_zone_check(sout, 2u * n, sizeof sout, 0xA5u);
    for (uint32_t i = 0; i < n; i++) {
      int16_t want = truth(coef_, sin_, i);
      if (sout[i] != want) {
        crucible_report_dec("sweep_mismatch_n", (int32_t)n);
        crucible_report_dec("sweep_at", (int32_t)i);
        crucible_report_dec("sweep_want", want);
        crucible_report_dec("sweep_got", sout[i]);
        return -1;
      }
    }
  }
  return (int)count;
}

static void run(const char *key, const int16_t *coef, const int16_t *in, uint32_t n) {
  for (uint32_t i = 0; i < 24u; i++) {
    out[i] = 0x5555; /* canary: n values are written, no more */
  }
  fir_q15(coef, in, out, n);
  crucible_report_mem(key, out, 2u * (n + 1u));
}

int crucible_test_main(void) {
  static const int16_t lowpass[8] = {1024, 2048, 4096, 8192, 8192, 4096, 2048, 1024};
  static const int16_t impulse[12] = {32767, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  static const int16_t step[10] = {10000, 10000, 10000, 10000, 10000,
                                   10000, 10000, 10000, 10000, 10000};
  static const int16_t full[8] = {32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767};
  static const int16_t maxin[10] = {32767, 32767, 32767, 32767, 32767,
                                    -32768, -32768, -32768, -32768, -32768};
  static const int16_t minus1[8] = {-32768, -32768, -32768, -32768,
                                    -32768, -32768, -32768, -32768};
  static const int16_t half[8] = {16384, 0, 0, 0, 0, 0, 0, 0};
  static const int16_t small[6] = {1, -1, 3, -3, 5, -5};
  static const int16_t neg[16] = {-20000, 15000, -32768, 32767, 1, -7, 300, -300,
                                  12345, -12345, 0, 8, -9, 20000, -20000, 7};
  run("impulse", lowpass, impulse, 12);
  run("step", lowpass, step, 10);
  run("sat_pos_neg", full, maxin, 10);
  run("minus1_sq", minus1, minus1, 8);
  run("round", half, small, 6);
  run("mixed", lowpass, neg, 16);
  run("n0", lowpass, step, 0);
  int swept = sweep();
  if (swept >= 0) {
    crucible_report_dec("sweep", swept);
  }
  return 0;
}
