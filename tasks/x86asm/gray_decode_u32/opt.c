#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* Bit k of the result is the XOR of bits k..31 of g: a prefix XOR from the top, done in
 * five doubling steps (b ^= b >> 1, >> 2, >> 4, >> 8, >> 16) instead of up to 31, eight
 * words at a time. The last partial block is an 8-word window ending at n (out and in do
 * not overlap); below 8 words, the same steps per word. */
static inline __m256i decode8(__m256i b) {
    b = _mm256_xor_si256(b, _mm256_srli_epi32(b, 1));
    b = _mm256_xor_si256(b, _mm256_srli_epi32(b, 2));
    b = _mm256_xor_si256(b, _mm256_srli_epi32(b, 4));
    b = _mm256_xor_si256(b, _mm256_srli_epi32(b, 8));
    return _mm256_xor_si256(b, _mm256_srli_epi32(b, 16));
}

static inline uint32_t decode1(uint32_t b) {
    b ^= b >> 1;
    b ^= b >> 2;
    b ^= b >> 4;
    b ^= b >> 8;
    return b ^ (b >> 16);
}

void gray_decode_u32(uint32_t *restrict out, const uint32_t *restrict in, size_t n) {
    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            out[i] = decode1(in[i]);
        return;
    }
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(in + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(in + i + 8));
        _mm256_storeu_si256((__m256i *)(out + i), decode8(a));
        _mm256_storeu_si256((__m256i *)(out + i + 8), decode8(b));
    }
    if (i + 8 <= n) {
        _mm256_storeu_si256((__m256i *)(out + i),
                            decode8(_mm256_loadu_si256((const __m256i *)(in + i))));
        i += 8;
    }
    if (i < n)
        _mm256_storeu_si256((__m256i *)(out + n - 8),
                            decode8(_mm256_loadu_si256((const __m256i *)(in + n - 8))));
}
