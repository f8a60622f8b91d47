#include <stddef.h>
#include <stdint.h>

/* Branchless binary search, eight keys at a time. The search for one key keeps a window
 * [base, base + len] known to hold the answer and halves it with a conditional move; the
 * number of halvings depends only on n, so eight searches run in lock step: gcc unrolls
 * the loop over them into eight independent load / compare / cmov chains whose memory
 * accesses overlap, instead of one unpredictable branch per step. */
void lower_bounds(const uint32_t *restrict a, size_t n, const uint32_t *restrict keys,
                  uint32_t *restrict out, size_t m) {
    if (n == 0) {
        for (size_t i = 0; i < m; i++)
            out[i] = 0;
        return;
    }
    size_t i = 0;
    for (; n <= UINT32_MAX && i + 8 <= m; i += 8) {
        uint32_t base[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        const uint32_t *k = keys + i;
        for (uint32_t len = (uint32_t)n; len > 1;) {
            uint32_t half = len >> 1;
            for (int t = 0; t < 8; t++)
                base[t] = a[base[t] + half] < k[t] ? base[t] + half : base[t];
            len -= half;
        }
        for (int t = 0; t < 8; t++)
            out[i + t] = base[t] + (a[base[t]] < k[t]);
    }
    for (; i < m; i++) {
        uint32_t key = keys[i];
        const uint32_t *base = a;
        size_t len = n;
        while (len > 1) {
            size_t half = len >> 1;
            base = base[half] < key ? base + half : base;
            len -= half;
        }
        out[i] = (uint32_t)(base - a) + (*base < key);
    }
}
