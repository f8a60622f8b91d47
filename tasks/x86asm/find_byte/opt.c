#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* 64 bytes per step: compare against c, OR the two halves' masks, and test; on a hit,
 * the first set bit of the 64-bit mask is the index. The last partial block is a
 * 32-byte window ending at buf + n (the bytes it re-reads held no match). Below 32
 * bytes, a 16-byte window or a byte loop. */
size_t find_byte(const uint8_t *buf, size_t n, uint8_t c) {
    if (n < 32) {
        size_t i = 0;
        if (n >= 16) {
            __m128i nd = _mm_set1_epi8((char)c);
            unsigned m = (unsigned)_mm_movemask_epi8(
                _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)buf), nd));
            if (m)
                return (size_t)__builtin_ctz(m);
            m = (unsigned)_mm_movemask_epi8(
                _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(buf + n - 16)), nd));
            return m ? n - 16 + (size_t)__builtin_ctz(m) : n;
        }
        for (; i < n; i++) {
            if (buf[i] == c)
                return i;
        }
        return n;
    }
    const __m256i needle = _mm256_set1_epi8((char)c);
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m256i e0 = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(buf + i)), needle);
        __m256i e1 =
            _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(buf + i + 32)), needle);
        if (!_mm256_testz_si256(_mm256_or_si256(e0, e1), _mm256_or_si256(e0, e1))) {
            uint64_t m = (uint32_t)_mm256_movemask_epi8(e0) |
                         (uint64_t)(uint32_t)_mm256_movemask_epi8(e1) << 32;
            return i + (size_t)__builtin_ctzll(m);
        }
    }
    if (i + 32 <= n) {
        unsigned m = (unsigned)_mm256_movemask_epi8(
            _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(buf + i)), needle));
        if (m)
            return i + (size_t)__builtin_ctz(m);
        i += 32;
    }
    if (i < n) {
        unsigned m = (unsigned)_mm256_movemask_epi8(
            _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(buf + n - 32)), needle));
        if (m)
            return n - 32 + (size_t)__builtin_ctz(m);
    }
    return n;
}
