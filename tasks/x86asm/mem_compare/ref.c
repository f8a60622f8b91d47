#include <stddef.h>
#include <stdint.h>

/* Compare a[0..n) with b[0..n) byte by byte as unsigned values: -1 when a is lower at
 * the first byte where they differ, 1 when it is higher, 0 when they are equal. */
int mem_compare(const uint8_t *a, const uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    }
    return 0;
}
