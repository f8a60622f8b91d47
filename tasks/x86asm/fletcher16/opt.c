#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define CHUNKS 160 /* 160 * 32 = 5120 bytes per block: no 32-bit lane can overflow */

/* Deferred modulo, 32 bytes per step. Over a block of L bytes x_0..x_{L-1} starting from
 * (s1, s2): s1' = s1 + sum x_i and s2' = s2 + L*s1 + sum (L - i) x_i. Per 32-byte chunk
 * k, (L - i) = 32 * (chunks after k) + (32 - j) for byte j of the chunk: VPMADDUBSW with
 * the weights 32..1 gives the second part, and 32 times the running sum of the earlier
 * chunks' byte sums (VPSADBW) the first. Both sums are reduced mod 255 once per block;
 * the residues are the same as reducing at every byte. */
static inline uint64_t hsum32(__m256i v) {
    __m256i lo = _mm256_and_si256(v, _mm256_set1_epi64x(0xffffffff));
    __m256i hi = _mm256_srli_epi64(v, 32);
    __m256i s = _mm256_add_epi64(lo, hi);
    __m128i t = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    return (uint64_t)_mm_cvtsi128_si64(t) + (uint64_t)_mm_extract_epi64(t, 1);
}

uint16_t fletcher16(const uint8_t *p, size_t n) {
    uint32_t s1 = 0, s2 = 0;
    const __m256i weights = _mm256_setr_epi8(32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21,
                                             20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8,
                                             7, 6, 5, 4, 3, 2, 1);
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i zero = _mm256_setzero_si256();
    while (n >= 32) {
        size_t chunks = n / 32;
        if (chunks > CHUNKS)
            chunks = CHUNKS;
        size_t len = chunks * 32;
        __m256i vs1 = zero, vs2 = zero, prior = zero;
        for (size_t k = 0; k < chunks; k++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)p);
            p += 32;
            prior = _mm256_add_epi32(prior, vs1);
            vs1 = _mm256_add_epi32(vs1, _mm256_sad_epu8(v, zero));
            vs2 = _mm256_add_epi32(vs2, _mm256_madd_epi16(_mm256_maddubs_epi16(v, weights), ones));
        }
        vs2 = _mm256_add_epi32(vs2, _mm256_slli_epi32(prior, 5));
        uint64_t t1 = hsum32(vs1), t2 = hsum32(vs2);
        s2 = (uint32_t)(((uint64_t)s2 + (uint64_t)s1 * len + t2) % 255);
        s1 = (uint32_t)(((uint64_t)s1 + t1) % 255);
        n -= len;
    }
    for (size_t i = 0; i < n; i++) {
        s1 += p[i];
        s2 += s1;
    }
    s1 %= 255;
    s2 %= 255;
    return (uint16_t)((s2 << 8) | s1);
}
