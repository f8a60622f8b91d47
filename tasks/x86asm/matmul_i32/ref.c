#include <stddef.h>
#include <stdint.h>

/* c = a * b for n x n row-major matrices, with 32-bit wraparound (computed in uint32). */
void matmul_i32(int32_t *c, const int32_t *a, const int32_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            uint32_t sum = 0;
            for (size_t k = 0; k < n; k++)
                sum += (uint32_t)a[i * n + k] * (uint32_t)b[k * n + j];
            c[i * n + j] = (int32_t)sum;
        }
    }
}
