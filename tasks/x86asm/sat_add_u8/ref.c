#include <stddef.h>
#include <stdint.h>

/* out[i] = a[i] + b[i], saturated at 255. */
void sat_add_u8(uint8_t *out, const uint8_t *a, const uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned sum = (unsigned)a[i] + b[i];
        if (sum > 255)
            out[i] = 255;
        else
            out[i] = (uint8_t)sum;
    }
}
