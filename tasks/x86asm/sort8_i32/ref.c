#include <stddef.h>
#include <stdint.h>

/* Sort each group of 8 consecutive int32 of a (n groups) into ascending order. */
void sort8_i32(int32_t *a, size_t n) {
    for (size_t g = 0; g < n; g++) {
        int32_t *p = a + 8 * g;
        for (int i = 1; i < 8; i++) {
            int32_t v = p[i];
            int j = i;
            while (j > 0 && p[j - 1] > v) {
                p[j] = p[j - 1];
                j--;
            }
            p[j] = v;
        }
    }
}
