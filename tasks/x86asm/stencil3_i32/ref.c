#include <stddef.h>
#include <stdint.h>

/* The [1 2 1] stencil: out[i] = in[i-1] + 2*in[i] + in[i+1] (mod 2^32) for the interior,
 * the two end elements copied. */
void stencil3_i32(int32_t *out, const int32_t *in, size_t n) {
    if (n == 0)
        return;
    out[0] = in[0];
    for (size_t i = 1; i + 1 < n; i++)
        out[i] = (int32_t)((uint32_t)in[i - 1] + 2u * (uint32_t)in[i] + (uint32_t)in[i + 1]);
    if (n > 1)
        out[n - 1] = in[n - 1];
}
