#include <stddef.h>
#include <stdint.h>

#define SMALL 256

/* Small arrays: rank sort. Element i goes to position #{j : a[j] < a[i]} + #{j < i :
 * a[j] == a[i]}, which is the number of keys below its own when key(j) = a[j] << 16 | j
 * (all keys distinct, so the positions are a permutation). The keys are kept as signed
 * int32 (top bit flipped) so that one vpcmpgtd compares eight of them; the counting loops
 * have no branches and gcc vectorizes them with AVX2, four elements' ranks at a time so
 * each loaded key vector serves four compares. The key array is padded to a multiple of 8
 * with INT32_MAX, above every key. */
static void rank_sort(uint16_t *restrict a, size_t n) {
    int32_t key[SMALL] __attribute__((aligned(32)));
    size_t npad = (n + 7) & ~(size_t)7;
    for (size_t j = 0; j < n; j++)
        key[j] = (int32_t)((((uint32_t)a[j] << 16) | (uint32_t)j) ^ 0x80000000u);
    for (size_t j = n; j < npad; j++)
        key[j] = INT32_MAX;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        int32_t k0 = key[i], k1 = key[i + 1], k2 = key[i + 2], k3 = key[i + 3];
        uint32_t r0 = 0, r1 = 0, r2 = 0, r3 = 0;
        for (size_t j = 0; j < npad; j++) {
            int32_t kj = key[j];
            r0 += kj < k0;
            r1 += kj < k1;
            r2 += kj < k2;
            r3 += kj < k3;
        }
        a[r0] = (uint16_t)(((uint32_t)k0 ^ 0x80000000u) >> 16);
        a[r1] = (uint16_t)(((uint32_t)k1 ^ 0x80000000u) >> 16);
        a[r2] = (uint16_t)(((uint32_t)k2 ^ 0x80000000u) >> 16);
        a[r3] = (uint16_t)(((uint32_t)k3 ^ 0x80000000u) >> 16);
    }
    for (; i < n; i++) {
        int32_t k = key[i];
        uint32_t r = 0;
        for (size_t j = 0; j < npad; j++)
            r += key[j] < k;
        a[r] = (uint16_t)(((uint32_t)k ^ 0x80000000u) >> 16);
    }
}

void sort_u16(uint16_t *restrict a, size_t n) {
    if (n <= SMALL) {
        rank_sort(a, n);
        return;
    }
    /* larger arrays (not the use this is tuned for): plain insertion sort */
    for (size_t i = 1; i < n; i++) {
        uint16_t v = a[i];
        size_t j = i;
        while (j > 0 && a[j - 1] > v) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}
