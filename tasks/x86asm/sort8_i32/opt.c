#include <stddef.h>
#include <stdint.h>

/* The optimal 19-comparator sorting network for 8 elements, each comparator a min and a
 * max (no branches). The loop over groups has no dependence between iterations, so gcc
 * vectorizes it across 8 groups at once (interleaved loads, vpminsd / vpmaxsd). */
#define CX(i, j)                          \
    do {                                  \
        int32_t lo_ = x##i < x##j ? x##i : x##j; \
        int32_t hi_ = x##i < x##j ? x##j : x##i; \
        x##i = lo_;                       \
        x##j = hi_;                       \
    } while (0)

void sort8_i32(int32_t *restrict a, size_t n) {
    for (size_t g = 0; g < n; g++) {
        int32_t *p = a + 8 * g;
        int32_t x0 = p[0], x1 = p[1], x2 = p[2], x3 = p[3];
        int32_t x4 = p[4], x5 = p[5], x6 = p[6], x7 = p[7];
        CX(0, 2); CX(1, 3); CX(4, 6); CX(5, 7);
        CX(0, 4); CX(1, 5); CX(2, 6); CX(3, 7);
        CX(0, 1); CX(2, 3); CX(4, 5); CX(6, 7);
        CX(2, 4); CX(3, 5);
        CX(1, 4); CX(3, 6);
        CX(1, 2); CX(3, 4); CX(5, 6);
        p[0] = x0; p[1] = x1; p[2] = x2; p[3] = x3;
        p[4] = x4; p[5] = x5; p[6] = x6; p[7] = x7;
    }
}
