#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* vpmaddwd multiplies sixteen int16 pairs and adds adjacent products into eight int32
 * lanes. A lane's true value lies in [-2147418112, 2147483648]; only 2^31 (both products
 * (-32768)^2) does not fit, and it wraps to -2^31, a value no lane can really have. So the
 * lane plus 0x7fff0000, taken as unsigned, is exact (0 .. 2^32 - 65536): it is
 * zero-extended into 64-bit accumulators and the bias is taken off once at the end
 * (modulo 2^64, which the exact result fits). */
int64_t dot_i16(const int16_t *restrict a, const int16_t *restrict b, size_t n) {
    const __m256i bias = _mm256_set1_epi32(0x7fff0000);
    const __m256i zero = _mm256_setzero_si256();
    __m256i acc0 = zero, acc1 = zero;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i p0 = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(a + i)),
                                       _mm256_loadu_si256((const __m256i *)(b + i)));
        __m256i p1 = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(a + i + 16)),
                                       _mm256_loadu_si256((const __m256i *)(b + i + 16)));
        p0 = _mm256_add_epi32(p0, bias);
        p1 = _mm256_add_epi32(p1, bias);
        acc0 = _mm256_add_epi64(acc0, _mm256_unpacklo_epi32(p0, zero));
        acc1 = _mm256_add_epi64(acc1, _mm256_unpackhi_epi32(p0, zero));
        acc0 = _mm256_add_epi64(acc0, _mm256_unpacklo_epi32(p1, zero));
        acc1 = _mm256_add_epi64(acc1, _mm256_unpackhi_epi32(p1, zero));
    }
    __m256i acc = _mm256_add_epi64(acc0, acc1);
    __m128i s = _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    uint64_t total = (uint64_t)_mm_cvtsi128_si64(s) + (uint64_t)_mm_extract_epi64(s, 1);
    total -= (uint64_t)(i / 2) * 0x7fff0000u; /* i / 2 lanes, each biased */
    for (; i < n; i++)
        total += (uint64_t)(int64_t)((int32_t)a[i] * (int32_t)b[i]);
    return (int64_t)total;
}
