#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* 32 bytes at a time: the parity of a byte is the parity of its low nibble XOR the parity
 * of its high nibble, each looked up in a 16-entry table with VPSHUFB. The last partial
 * block is a 32-byte window ending at n (out and in do not overlap, so recomputing a few
 * bytes stores the same values again); below 32 bytes, POPCNT per byte. */
static inline __m256i parity32(__m256i v) {
    const __m256i table = _mm256_setr_epi8(0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0,
                                           0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0);
    const __m256i low = _mm256_set1_epi8(0x0f);
    __m256i lo = _mm256_and_si256(v, low);
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
    return _mm256_xor_si256(_mm256_shuffle_epi8(table, lo), _mm256_shuffle_epi8(table, hi));
}

void parity_bytes(uint8_t *restrict out, const uint8_t *restrict in, size_t n) {
    if (n < 32) {
        for (size_t i = 0; i < n; i++)
            out[i] = (uint8_t)(__builtin_popcount(in[i]) & 1);
        return;
    }
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(in + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(in + i + 32));
        _mm256_storeu_si256((__m256i *)(out + i), parity32(a));
        _mm256_storeu_si256((__m256i *)(out + i + 32), parity32(b));
    }
    if (i + 32 <= n) {
        _mm256_storeu_si256((__m256i *)(out + i),
                            parity32(_mm256_loadu_si256((const __m256i *)(in + i))));
        i += 32;
    }
    if (i < n)
        _mm256_storeu_si256((__m256i *)(out + n - 32),
                            parity32(_mm256_loadu_si256((const __m256i *)(in + n - 32))));
}
