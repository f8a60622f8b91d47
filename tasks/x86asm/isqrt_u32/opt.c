#include <stddef.h>
#include <stdint.h>

/* Build the root bit by bit from the top: r | 2^k is kept when its square does not exceed
 * x. The candidate is below 2^16, so its square fits in 32 bits. Sixteen fixed steps of a
 * multiply, an unsigned compare and a select, with no branches: gcc runs the loop over
 * the elements eight lanes at a time with AVX2 (vpmulld, vpmaxud / vpcmpeqd, blend). */
void isqrt_u32(uint32_t *restrict out, const uint32_t *restrict in, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t x = in[i];
        uint32_t r = 0;
        for (int k = 15; k >= 0; k--) {
            uint32_t t = r | (1u << k);
            r = t * t <= x ? t : r;
        }
        out[i] = r;
    }
}
