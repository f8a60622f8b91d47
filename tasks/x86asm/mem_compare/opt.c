#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

static inline int order(uint8_t x, uint8_t y) {
    return x < y ? -1 : 1;
}

/* 64 bytes per step: byte-equality masks of both halves; a step whose mask is not all
 * ones holds the first difference, at the lowest clear bit. The last partial block is a
 * 32-byte window ending at n (the bytes it re-reads were equal). */
int mem_compare(const uint8_t *a, const uint8_t *b, size_t n) {
    size_t i = 0;
    if (n >= 32) {
        for (; i + 64 <= n; i += 64) {
            __m256i e0 = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(a + i)),
                                           _mm256_loadu_si256((const __m256i *)(b + i)));
            __m256i e1 = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(a + i + 32)),
                                           _mm256_loadu_si256((const __m256i *)(b + i + 32)));
            __m256i both = _mm256_and_si256(e0, e1);
            if (!_mm256_testc_si256(both, _mm256_set1_epi8(-1))) {
                uint64_t m = (uint32_t)_mm256_movemask_epi8(e0) |
                             (uint64_t)(uint32_t)_mm256_movemask_epi8(e1) << 32;
                size_t k = i + (size_t)__builtin_ctzll(~m);
                return order(a[k], b[k]);
            }
        }
        if (i + 32 <= n) {
            uint32_t m = (uint32_t)_mm256_movemask_epi8(
                _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(a + i)),
                                  _mm256_loadu_si256((const __m256i *)(b + i))));
            if (m != 0xffffffffu) {
                size_t k = i + (size_t)__builtin_ctz(~m);
                return order(a[k], b[k]);
            }
            i += 32;
        }
        if (i < n) {
            uint32_t m = (uint32_t)_mm256_movemask_epi8(
                _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(a + n - 32)),
                                  _mm256_loadu_si256((const __m256i *)(b + n - 32))));
            if (m != 0xffffffffu) {
                size_t k = n - 32 + (size_t)__builtin_ctz(~m);
                return order(a[k], b[k]);
            }
        }
        return 0;
    }
    for (; i + 8 <= n; i += 8) {
        uint64_t x, y;
        __builtin_memcpy(&x, a + i, 8);
        __builtin_memcpy(&y, b + i, 8);
        if (x != y) {
            size_t k = i + (size_t)(__builtin_ctzll(x ^ y) >> 3);
            return order(a[k], b[k]);
        }
    }
    for (; i < n; i++) {
        if (a[i] != b[i])
            return order(a[i], b[i]);
    }
    return 0;
}
