#include <stddef.h>
#include <stdint.h>

/* out[i] = the smallest power of two >= in[i] (1 for 0), or 0 when in[i] > 2^31 (the
 * answer does not fit in 32 bits). */
void next_pow2_u32(uint32_t *out, const uint32_t *in, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t x = in[i], p = 1;
        while (p != 0 && p < x)
            p <<= 1;
        out[i] = p;
    }
}
