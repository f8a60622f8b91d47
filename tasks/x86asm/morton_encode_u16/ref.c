#include <stddef.h>
#include <stdint.h>

/* out[i] = the Morton (Z-order) code of (x[i], y[i]): bit k of x[i] goes to bit 2k and
 * bit k of y[i] to bit 2k + 1. */
void morton_encode_u16(uint32_t *out, const uint16_t *x, const uint16_t *y, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t r = 0;
        for (int b = 0; b < 16; b++) {
            r |= (uint32_t)((x[i] >> b) & 1) << (2 * b);
            r |= (uint32_t)((y[i] >> b) & 1) << (2 * b + 1);
        }
        out[i] = r;
    }
}
