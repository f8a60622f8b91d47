#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* 32 bytes at a time: a byte is a lowercase letter when (byte - 'a') is below 26 as an
 * unsigned value, i.e. when (byte - 'a' - 128) as a signed byte is below -128 + 26; such
 * bytes get bit 0x20 cleared. The conversion is idempotent, so the last block may overlap
 * bytes already converted. */
static inline __m256i upper32(__m256i v) {
    const __m256i shift = _mm256_set1_epi8((char)(128 - 'a'));
    const __m256i limit = _mm256_set1_epi8((char)(-128 + 26));
    const __m256i bit = _mm256_set1_epi8(0x20);
    __m256i t = _mm256_add_epi8(v, shift);
    __m256i lower = _mm256_cmpgt_epi8(limit, t);
    return _mm256_xor_si256(v, _mm256_and_si256(lower, bit));
}

void to_upper_ascii(uint8_t *s, size_t n) {
    if (n < 32) {
        for (size_t i = 0; i < n; i++) {
            uint8_t c = s[i];
            s[i] = (uint8_t)(c - ((uint8_t)(c - 'a') < 26 ? 0x20 : 0));
        }
        return;
    }
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + i + 32));
        _mm256_storeu_si256((__m256i *)(s + i), upper32(a));
        _mm256_storeu_si256((__m256i *)(s + i + 32), upper32(b));
    }
    if (i + 32 <= n) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
        _mm256_storeu_si256((__m256i *)(s + i), upper32(a));
        i += 32;
    }
    if (i < n) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(s + n - 32));
        _mm256_storeu_si256((__m256i *)(s + n - 32), upper32(a));
    }
}
