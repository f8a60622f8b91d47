#include <stddef.h>
#include <stdint.h>

/* Only -32768 * -32768 rounds outside the int16 range (to 32768), and no true result is
 * -32768 (the most negative product, -32768 * 32767, rounds to -32767). So: round in 32
 * bits, keep the low 16 bits, and map the one wrapped value, -32768, to 32767. Without the
 * clamp on the wide value gcc vectorizes it in 16-bit lanes with AVX2. */
void q15_mul(int16_t *restrict out, const int16_t *restrict a, const int16_t *restrict b,
             size_t n) {
    for (size_t i = 0; i < n; i++) {
        int32_t p = (int32_t)a[i] * (int32_t)b[i];
        int16_t r = (int16_t)((p + 0x4000) >> 15);
        out[i] = r == INT16_MIN ? INT16_MAX : r;
    }
}
