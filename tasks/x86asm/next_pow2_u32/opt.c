#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* Branch-free, eight words at a time: smear the highest set bit of x - 1 into every lower
 * bit and add one. For x = 0, x - 1 = 0xffffffff smears to itself and the sum wraps to
 * 0, so 1 is added back where x == 0 (the compare gives -1 there, subtracted); for
 * x > 2^31 the smear is also all ones and the sum is the required 0. The last partial
 * block is an 8-word window ending at n (out and in do not overlap); below 8 words,
 * LZCNT per word. */
static inline __m256i pow2_8(__m256i x) {
    const __m256i one = _mm256_set1_epi32(1);
    __m256i v = _mm256_sub_epi32(x, one);
    v = _mm256_or_si256(v, _mm256_srli_epi32(v, 1));
    v = _mm256_or_si256(v, _mm256_srli_epi32(v, 2));
    v = _mm256_or_si256(v, _mm256_srli_epi32(v, 4));
    v = _mm256_or_si256(v, _mm256_srli_epi32(v, 8));
    v = _mm256_or_si256(v, _mm256_srli_epi32(v, 16));
    v = _mm256_add_epi32(v, one);
    return _mm256_sub_epi32(v, _mm256_cmpeq_epi32(x, _mm256_setzero_si256()));
}

static inline uint32_t pow2_1(uint32_t x) {
    if (x <= 1)
        return 1;
    if (x > 0x80000000u)
        return 0;
    return 1u << (32 - __builtin_clz(x - 1));
}

void next_pow2_u32(uint32_t *restrict out, const uint32_t *restrict in, size_t n) {
    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            out[i] = pow2_1(in[i]);
        return;
    }
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(in + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(in + i + 8));
        _mm256_storeu_si256((__m256i *)(out + i), pow2_8(a));
        _mm256_storeu_si256((__m256i *)(out + i + 8), pow2_8(b));
    }
    if (i + 8 <= n) {
        _mm256_storeu_si256((__m256i *)(out + i),
                            pow2_8(_mm256_loadu_si256((const __m256i *)(in + i))));
        i += 8;
    }
    if (i < n)
        _mm256_storeu_si256((__m256i *)(out + n - 8),
                            pow2_8(_mm256_loadu_si256((const __m256i *)(in + n - 8))));
}
