#include <stddef.h>
#include <stdint.h>

/* out[i] = in[i] clamped: raised to lo if below it, then lowered to hi if above it. */
void clamp_i32(int32_t *out, const int32_t *in, size_t n, int32_t lo, int32_t hi) {
    for (size_t i = 0; i < n; i++) {
        int32_t v = in[i];
        if (v < lo)
            v = lo;
        if (v > hi)
            v = hi;
        out[i] = v;
    }
}
