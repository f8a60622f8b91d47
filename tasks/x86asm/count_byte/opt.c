#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* 64 bytes per step: a byte compare gives 0xff (-1) per match, subtracted into byte
 * counters; every 255 steps (before a counter can wrap) the counters are summed into
 * 64-bit lanes with VPSADBW. The tail of fewer than 32 bytes is counted one by one. */
size_t count_byte(const uint8_t *buf, size_t n, uint8_t c) {
    const __m256i needle = _mm256_set1_epi8((char)c);
    const __m256i zero = _mm256_setzero_si256();
    __m256i total = zero;
    size_t i = 0;
    while (i + 64 <= n) {
        size_t steps = (n - i) / 64;
        if (steps > 255)
            steps = 255;
        __m256i a0 = zero, a1 = zero;
        for (size_t k = 0; k < steps; k++, i += 64) {
            __m256i v0 = _mm256_loadu_si256((const __m256i *)(buf + i));
            __m256i v1 = _mm256_loadu_si256((const __m256i *)(buf + i + 32));
            a0 = _mm256_sub_epi8(a0, _mm256_cmpeq_epi8(v0, needle));
            a1 = _mm256_sub_epi8(a1, _mm256_cmpeq_epi8(v1, needle));
        }
        total = _mm256_add_epi64(total, _mm256_sad_epu8(a0, zero));
        total = _mm256_add_epi64(total, _mm256_sad_epu8(a1, zero));
    }
    if (i + 32 <= n) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(buf + i));
        __m256i a = _mm256_sub_epi8(zero, _mm256_cmpeq_epi8(v, needle));
        total = _mm256_add_epi64(total, _mm256_sad_epu8(a, zero));
        i += 32;
    }
    __m128i t = _mm_add_epi64(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
    size_t count = (size_t)_mm_cvtsi128_si64(t) + (size_t)_mm_extract_epi64(t, 1);
    for (; i < n; i++)
        count += buf[i] == c;
    return count;
}
