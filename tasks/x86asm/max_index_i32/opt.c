#include <stddef.h>
#include <stdint.h>

/* Two passes, each a loop gcc vectorizes with AVX2: the largest value first (vpmaxsd, no
 * index bookkeeping), then its first position, found 64 elements at a time with a
 * branch-free "any equal" test (vpcmpeqd / vpor) before the one block that holds it is
 * scanned element by element. */
size_t max_index_i32(const int32_t *restrict a, size_t n) {
    if (n == 0)
        return 0;
    int32_t m = a[0];
    for (size_t i = 1; i < n; i++)
        m = a[i] > m ? a[i] : m;

    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        int hit = 0;
        for (int j = 0; j < 64; j++)
            hit |= a[i + j] == m;
        if (hit)
            break;
    }
    while (a[i] != m)
        i++;
    return i;
}
