#include <stddef.h>
#include <stdint.h>

/* out[i] = a[i] + b[i], saturated to the int16 range [-32768, 32767]. */
void sat_add_i16(int16_t *out, const int16_t *a, const int16_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int32_t sum = (int32_t)a[i] + (int32_t)b[i];
        if (sum > 32767)
            sum = 32767;
        else if (sum < -32768)
            sum = -32768;
        out[i] = (int16_t)sum;
    }
}
