#include <stddef.h>
#include <stdint.h>

/* max(a, b) - b is a - b when a > b and 0 otherwise: two branch-free 16-bit operations
 * (vpmaxuw, vpsubw) that gcc vectorizes sixteen lanes at a time with AVX2. */
void sat_sub_u16(uint16_t *restrict out, const uint16_t *restrict a,
                 const uint16_t *restrict b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint16_t x = a[i], y = b[i];
        uint16_t m = x > y ? x : y;
        out[i] = (uint16_t)(m - y);
    }
}
