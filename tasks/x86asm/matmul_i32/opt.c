#include <stddef.h>
#include <stdint.h>

/* i-k-j order: row i of c accumulates a[i][k] times row k of b, so the innermost loop
 * walks b and c with unit stride and gcc vectorizes it with AVX2 (vpmulld, vpaddd, eight
 * lanes). Two rows of c are built together so every row of b loaded serves both. The
 * arithmetic is uint32, so the wraparound is defined. */
void matmul_i32(int32_t *restrict c, const int32_t *restrict a, const int32_t *restrict b,
                size_t n) {
    size_t i = 0;
    for (; i + 2 <= n; i += 2) {
        uint32_t *c0 = (uint32_t *)c + i * n, *c1 = c0 + n;
        const uint32_t *a0 = (const uint32_t *)a + i * n, *a1 = a0 + n;
        for (size_t j = 0; j < n; j++) {
            c0[j] = 0;
            c1[j] = 0;
        }
        for (size_t k = 0; k < n; k++) {
            const uint32_t *bk = (const uint32_t *)b + k * n;
            uint32_t x0 = a0[k], x1 = a1[k];
            for (size_t j = 0; j < n; j++) {
                c0[j] += x0 * bk[j];
                c1[j] += x1 * bk[j];
            }
        }
    }
    for (; i < n; i++) {
        uint32_t *c0 = (uint32_t *)c + i * n;
        const uint32_t *a0 = (const uint32_t *)a + i * n;
        for (size_t j = 0; j < n; j++)
            c0[j] = 0;
        for (size_t k = 0; k < n; k++) {
            const uint32_t *bk = (const uint32_t *)b + k * n;
            uint32_t x0 = a0[k];
            for (size_t j = 0; j < n; j++)
                c0[j] += x0 * bk[j];
        }
    }
}
