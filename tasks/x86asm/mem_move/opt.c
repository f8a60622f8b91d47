#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* 128 bytes per step in the safe direction (forward when dst is below src, backward
 * otherwise): four unaligned AVX2 loads, then the four stores, so a step never reads what
 * it has already written; the last partial step is one overlapping block of 32-byte
 * moves, the remainder below 32 bytes a byte loop. */
void mem_move(uint8_t *dst, const uint8_t *src, size_t n) {
    if (dst == src || n == 0)
        return;
    if (dst < src) {
        size_t i = 0;
        for (; i + 128 <= n; i += 128) {
            __m256i a = _mm256_loadu_si256((const __m256i *)(src + i));
            __m256i b = _mm256_loadu_si256((const __m256i *)(src + i + 32));
            __m256i c = _mm256_loadu_si256((const __m256i *)(src + i + 64));
            __m256i d = _mm256_loadu_si256((const __m256i *)(src + i + 96));
            _mm256_storeu_si256((__m256i *)(dst + i), a);
            _mm256_storeu_si256((__m256i *)(dst + i + 32), b);
            _mm256_storeu_si256((__m256i *)(dst + i + 64), c);
            _mm256_storeu_si256((__m256i *)(dst + i + 96), d);
        }
        for (; i + 32 <= n; i += 32)
            _mm256_storeu_si256((__m256i *)(dst + i), _mm256_loadu_si256((const __m256i *)(src + i)));
        for (; i < n; i++)
            dst[i] = src[i];
    } else {
        size_t i = n;
        for (; i >= 128; i -= 128) {
            __m256i a = _mm256_loadu_si256((const __m256i *)(src + i - 32));
            __m256i b = _mm256_loadu_si256((const __m256i *)(src + i - 64));
            __m256i c = _mm256_loadu_si256((const __m256i *)(src + i - 96));
            __m256i d = _mm256_loadu_si256((const __m256i *)(src + i - 128));
            _mm256_storeu_si256((__m256i *)(dst + i - 32), a);
            _mm256_storeu_si256((__m256i *)(dst + i - 64), b);
            _mm256_storeu_si256((__m256i *)(dst + i - 96), c);
            _mm256_storeu_si256((__m256i *)(dst + i - 128), d);
        }
        for (; i >= 32; i -= 32)
            _mm256_storeu_si256((__m256i *)(dst + i - 32),
                                _mm256_loadu_si256((const __m256i *)(src + i - 32)));
        for (; i > 0; i--)
            dst[i - 1] = src[i - 1];
    }
}
