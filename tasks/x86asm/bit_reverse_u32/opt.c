#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* Eight words at a time: reverse the bits of each byte with two 16-entry VPSHUFB tables
 * (the reversed low nibble moved to the top, the reversed high nibble to the bottom),
 * then reverse the order of the four bytes of each word with one more VPSHUFB. The last
 * partial block is an 8-word window ending at n (out and in do not overlap); below 8
 * words, the classic swap-halves sequence per word. */
static inline __m256i reverse8(__m256i v) {
    const __m256i rev_hi = _mm256_setr_epi8(0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7,
                                            15, 0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11,
                                            7, 15);
    const __m256i rev_lo = _mm256_slli_epi16(rev_hi, 4); /* each entry moved to the top */
    const __m256i bswap = _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13,
                                           12, 3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14,
                                           13, 12);
    const __m256i low = _mm256_set1_epi8(0x0f);
    __m256i lo = _mm256_and_si256(v, low);
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
    __m256i r = _mm256_or_si256(_mm256_shuffle_epi8(rev_lo, lo), _mm256_shuffle_epi8(rev_hi, hi));
    return _mm256_shuffle_epi8(r, bswap);
}

static inline uint32_t reverse1(uint32_t x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}

void bit_reverse_u32(uint32_t *restrict out, const uint32_t *restrict in, size_t n) {
    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            out[i] = reverse1(in[i]);
        return;
    }
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(in + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(in + i + 8));
        _mm256_storeu_si256((__m256i *)(out + i), reverse8(a));
        _mm256_storeu_si256((__m256i *)(out + i + 8), reverse8(b));
    }
    if (i + 8 <= n) {
        _mm256_storeu_si256((__m256i *)(out + i),
                            reverse8(_mm256_loadu_si256((const __m256i *)(in + i))));
        i += 8;
    }
    if (i < n)
        _mm256_storeu_si256((__m256i *)(out + n - 8),
                            reverse8(_mm256_loadu_si256((const __m256i *)(in + n - 8))));
}
