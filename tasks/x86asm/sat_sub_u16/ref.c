#include <stddef.h>
#include <stdint.h>

/* out[i] = a[i] - b[i], saturated at 0. */
void sat_sub_u16(uint16_t *out, const uint16_t *a, const uint16_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (a[i] > b[i])
            out[i] = (uint16_t)(a[i] - b[i]);
        else
            out[i] = 0;
    }
}
