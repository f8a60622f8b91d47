#include <stddef.h>
#include <stdint.h>

/* 16-bit lanes only: the wrapped sum s overflowed exactly when a and b have the same sign
 * and s the other one ((a ^ s) & (b ^ s) negative), and the saturated value then is
 * 32767 for a non-negative a and -32768 for a negative one, 0x7fff + (a >> 15). All
 * branch-free, so gcc vectorizes it sixteen lanes at a time with AVX2. */
void sat_add_i16(int16_t *restrict out, const int16_t *restrict a, const int16_t *restrict b,
                 size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint16_t x = (uint16_t)a[i], y = (uint16_t)b[i];
        uint16_t s = (uint16_t)(x + y);
        uint16_t sat = (uint16_t)((x >> 15) + 0x7fff);
        int16_t ovf = (int16_t)((x ^ s) & (y ^ s));
        out[i] = (int16_t)(ovf < 0 ? sat : s);
    }
}
