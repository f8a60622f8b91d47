#include <stddef.h>
#include <stdint.h>

/* For each of the m keys, the index of the first element of the sorted array a[0..n)
 * that is >= the key (n when there is none): binary search. */
void lower_bounds(const uint32_t *a, size_t n, const uint32_t *keys, uint32_t *out, size_t m) {
    for (size_t i = 0; i < m; i++) {
        uint32_t key = keys[i];
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (a[mid] < key)
                lo = mid + 1;
            else
                hi = mid;
        }
        out[i] = (uint32_t)lo;
    }
}
