#include <stdint.h>

#define FIR_TAPS 8

static int16_t sat16(int64_t v) {
  if (v > INT16_MAX) {
    return INT16_MAX;
  }
  if (v < INT16_MIN) {
    return INT16_MIN;
  }
  return (int16_t)v;
}

void fir_q15(const int16_t coef[8], const int16_t *in, int16_t *out, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    int64_t acc = 0;
    for (uint32_t k = 0; k < FIR_TAPS && k <= i; k++) {
      acc += (int32_t)coef[k] * (int32_t)in[i - k];
    }
    out[i] = sat16((acc + 0x4000) >> 15);
  }
}
