#include <stddef.h>
#include <stdint.h>

/* 32-bit lanes only: the wrapped difference d = a - b overflowed exactly when a and b
 * have different signs and d's sign differs from a's ((a ^ b) & (a ^ d) negative); the
 * saturated value then is INT32_MAX for a non-negative a and INT32_MIN for a negative one,
 * 0x7fffffff + (the sign bit of a). Branch-free, so gcc vectorizes it eight lanes at a
 * time with AVX2. */
void sat_sub_i32(int32_t *restrict out, const int32_t *restrict a, const int32_t *restrict b,
                 size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t x = (uint32_t)a[i], y = (uint32_t)b[i];
        uint32_t d = x - y;
        uint32_t sat = (x >> 31) + 0x7fffffffu;
        int32_t ovf = (int32_t)((x ^ y) & (x ^ d));
        out[i] = (int32_t)(ovf < 0 ? sat : d);
    }
}
