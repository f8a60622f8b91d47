#include <stddef.h>
#include <stdint.h>

/* The index of the first largest of the n int32 of a (0 when n is 0). */
size_t max_index_i32(const int32_t *a, size_t n) {
    size_t best = 0;
    for (size_t i = 1; i < n; i++) {
        if (a[i] > a[best])
            best = i;
    }
    return best;
}
