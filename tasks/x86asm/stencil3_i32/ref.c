#include <stddef.h>
#include <stdint.h>

/* The [1 2 1] stencil: out[i] = in[i-1] + 2*in[i] + in[i+1] (mod 2^32) for the interior,
 * the two end elements copied. */
void stencil3_i32(int32_t *out, const int32_t *in, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || i == n - 1)
            out[i] = in[i];
        else
            out[i] = (int32_t)((uint32_t)in[i - 1] + 2u * (uint32_t)in[i] + (uint32_t)in[i + 1]);
    }
}
