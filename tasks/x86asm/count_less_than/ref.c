#include <stddef.h>
#include <stdint.h>

/* The number of the n int32 of a that are less than key. */
size_t count_less_than(const int32_t *a, size_t n, int32_t key) {
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (a[i] < key)
            count++;
    }
    return count;
}
