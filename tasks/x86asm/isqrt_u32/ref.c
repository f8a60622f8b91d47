#include <stddef.h>
#include <stdint.h>

/* out[i] = floor(sqrt(in[i])), digit by digit (two bits of the radicand per step). */
void isqrt_u32(uint32_t *out, const uint32_t *in, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t x = in[i];
        uint32_t res = 0;
        uint32_t bit = 1u << 30;
        while (bit > x)
            bit >>= 2;
        while (bit != 0) {
            if (x >= res + bit) {
                x -= res + bit;
                res = (res >> 1) + bit;
            } else {
                res >>= 1;
            }
            bit >>= 2;
        }
        out[i] = res;
    }
}
