#include <stddef.h>
#include <stdint.h>

/* The wrapped sum is below a exactly when the true sum overflowed; OR-ing in the mask
 * -(overflow) makes it 255 then. No branches, byte-wide arithmetic only: gcc vectorizes it
 * 32 bytes at a time with AVX2. */
void sat_add_u8(uint8_t *restrict out, const uint8_t *restrict a, const uint8_t *restrict b,
                size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint8_t s = (uint8_t)(a[i] + b[i]);
        out[i] = s | (uint8_t)-(s < a[i]);
    }
}
