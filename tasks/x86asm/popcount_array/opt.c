#include <stddef.h>
#include <stdint.h>

/* One POPCNT per word, four independent sums (x86-64-v3 has POPCNT). */
uint64_t popcount_array(const uint64_t *a, size_t n) {
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += (uint64_t)__builtin_popcountll(a[i]);
        s1 += (uint64_t)__builtin_popcountll(a[i + 1]);
        s2 += (uint64_t)__builtin_popcountll(a[i + 2]);
        s3 += (uint64_t)__builtin_popcountll(a[i + 3]);
    }
    for (; i < n; i++)
        s0 += (uint64_t)__builtin_popcountll(a[i]);
    return s0 + s1 + s2 + s3;
}
