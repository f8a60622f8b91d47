#include <stddef.h>
#include <stdint.h>

/* Q15 multiply with rounding: out[i] = (a[i] * b[i] + 0x4000) >> 15, saturated to int16. */
void q15_mul(int16_t *out, const int16_t *a, const int16_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int32_t p = (int32_t)a[i] * (int32_t)b[i];
        int32_t r = (p + 0x4000) >> 15;
        if (r > 32767)
            r = 32767;
        if (r < -32768)
            r = -32768;
        out[i] = (int16_t)r;
    }
}
