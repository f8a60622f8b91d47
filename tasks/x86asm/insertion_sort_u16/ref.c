#include <stddef.h>
#include <stdint.h>

/* Sort the n uint16 of a into ascending order (insertion sort). */
void sort_u16(uint16_t *a, size_t n) {
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
