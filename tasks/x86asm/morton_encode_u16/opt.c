#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* Sixteen codes per step. Every nibble of x is spread to the even bits of a byte and every
 * nibble of y to the odd bits, each with a 16-entry VPSHUFB table; ORed, each byte holds
 * the code of one nibble pair. Interleaving the low-nibble and high-nibble bytes
 * (VPUNPCKLBW / VPUNPCKHBW) puts each 16-bit input's four code bytes in order, and two
 * cross-lane permutes restore element order. The last partial block is a 16-element
 * window ending at n (out does not overlap x or y); below 16 elements, PDEP per element. */
static inline void morton16(uint32_t *out, const uint16_t *x, const uint16_t *y) {
    const __m256i even = _mm256_setr_epi8(
        0x00, 0x01, 0x04, 0x05, 0x10, 0x11, 0x14, 0x15, 0x40, 0x41, 0x44, 0x45, 0x50, 0x51,
        0x54, 0x55, 0x00, 0x01, 0x04, 0x05, 0x10, 0x11, 0x14, 0x15, 0x40, 0x41, 0x44, 0x45,
        0x50, 0x51, 0x54, 0x55);
    const __m256i odd = _mm256_add_epi8(even, even);
    const __m256i low = _mm256_set1_epi8(0x0f);
    __m256i vx = _mm256_loadu_si256((const __m256i *)x);
    __m256i vy = _mm256_loadu_si256((const __m256i *)y);
    __m256i lo = _mm256_or_si256(_mm256_shuffle_epi8(even, _mm256_and_si256(vx, low)),
                                 _mm256_shuffle_epi8(odd, _mm256_and_si256(vy, low)));
    __m256i hi = _mm256_or_si256(
        _mm256_shuffle_epi8(even, _mm256_and_si256(_mm256_srli_epi16(vx, 4), low)),
        _mm256_shuffle_epi8(odd, _mm256_and_si256(_mm256_srli_epi16(vy, 4), low)));
    __m256i a = _mm256_unpacklo_epi8(lo, hi); /* elements 0-3 | 8-11 */
    __m256i b = _mm256_unpackhi_epi8(lo, hi); /* elements 4-7 | 12-15 */
    _mm256_storeu_si256((__m256i *)out, _mm256_permute2x128_si256(a, b, 0x20));
    _mm256_storeu_si256((__m256i *)(out + 8), _mm256_permute2x128_si256(a, b, 0x31));
}

void morton_encode_u16(uint32_t *restrict out, const uint16_t *restrict x,
                       const uint16_t *restrict y, size_t n) {
    if (n < 16) {
        for (size_t i = 0; i < n; i++)
            out[i] = __builtin_ia32_pdep_si(x[i], 0x55555555u) |
                     __builtin_ia32_pdep_si(y[i], 0xaaaaaaaau);
        return;
    }
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        morton16(out + i, x + i, y + i);
    if (i < n)
        morton16(out + n - 16, x + n - 16, y + n - 16);
}
