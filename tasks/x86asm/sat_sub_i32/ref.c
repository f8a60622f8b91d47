#include <stddef.h>
#include <stdint.h>

/* out[i] = a[i] - b[i], saturated to the int32 range. */
void sat_sub_i32(int32_t *out, const int32_t *a, const int32_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int64_t d = (int64_t)a[i] - (int64_t)b[i];
        if (d > INT32_MAX)
            d = INT32_MAX;
        else if (d < INT32_MIN)
            d = INT32_MIN;
        out[i] = (int32_t)d;
    }
}
