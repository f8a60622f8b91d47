#include <stddef.h>
#include <stdint.h>

/* out[i] = in[i] with its 32 bits in reverse order (bit 0 becomes bit 31). */
void bit_reverse_u32(uint32_t *out, const uint32_t *in, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t x = in[i], r = 0;
        for (int b = 0; b < 32; b++) {
            r = (r << 1) | (x & 1);
            x >>= 1;
        }
        out[i] = r;
    }
}
