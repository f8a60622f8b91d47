#include <stddef.h>
#include <stdint.h>

/* The number of set bits in the n 64-bit words at a. */
uint64_t popcount_array(const uint64_t *a, size_t n) {
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        for (int bit = 0; bit < 64; bit++)
            total += (a[i] >> bit) & 1;
    }
    return total;
}
