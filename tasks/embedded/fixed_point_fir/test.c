#include <stdint.h>

#include "harness.h"

void fir_q15(const int16_t coef[8], const int16_t *in, int16_t *out, uint32_t n);

static int16_t out[24];

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
  return 0;
}
