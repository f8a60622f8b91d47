#include <stddef.h>
#include <stdint.h>

/* out[i] = the binary number whose reflected Gray code is in[i]: bit k of the result is
 * the XOR of bits k..31 of in[i]. */
void gray_decode_u32(uint32_t *out, const uint32_t *in, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t g = in[i], b = g;
        while (g >>= 1)
            b ^= g;
        out[i] = b;
    }
}
