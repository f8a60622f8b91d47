#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* 128 bytes per iteration in 32-byte AVX2 stores; the tail is one or more overlapping
 * 32-byte stores ending exactly at dst + n (the same value either way), or plain word
 * stores when n < 8. */
void mem_fill_u32(uint32_t *dst, uint32_t v, size_t n) {
    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            dst[i] = v;
        return;
    }
    __m256i x = _mm256_set1_epi32((int)v);
    uint32_t *end = dst + n;
    uint32_t *p = dst;
    for (; p + 32 <= end; p += 32) {
        _mm256_storeu_si256((__m256i *)p, x);
        _mm256_storeu_si256((__m256i *)(p + 8), x);
        _mm256_storeu_si256((__m256i *)(p + 16), x);
        _mm256_storeu_si256((__m256i *)(p + 24), x);
    }
    for (; p + 8 <= end; p += 8)
        _mm256_storeu_si256((__m256i *)p, x);
    if (p < end)
        _mm256_storeu_si256((__m256i *)(end - 8), x);
}
