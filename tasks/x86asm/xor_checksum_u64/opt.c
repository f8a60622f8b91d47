#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* The checksum is linear over XOR: after n words,
 *     h = rotl(seed, 5n) ^ XOR_i rotl(w[i], 5 (n - 1 - i))   (rotations mod 64),
 * so the chain can be split. Eight lanes (two AVX2 registers) each take every eighth
 * word: lane j keeps acc_j = rotl(acc_j, 40) ^ w[8k + j]. After m blocks of eight, word
 * 8k + j needs a further rotation by 5 (7 - j) to be in place, which a per-lane variable
 * rotate applies before the lanes are XORed together; the seed starts in lane 7, whose
 * extra rotation is 0. The last n mod 8 words follow one at a time. */
static inline __m256i rotl40(__m256i x) {
    return _mm256_or_si256(_mm256_slli_epi64(x, 40), _mm256_srli_epi64(x, 24));
}

uint64_t xor_checksum_u64(const uint64_t *w, size_t n) {
    uint64_t h = 0x243F6A8885A308D3ull;
    size_t i = 0;
    if (n >= 8) {
        __m256i a = _mm256_setzero_si256();
        __m256i b = _mm256_set_epi64x((long long)h, 0, 0, 0);
        for (; i + 8 <= n; i += 8) {
            a = _mm256_xor_si256(rotl40(a), _mm256_loadu_si256((const __m256i *)(w + i)));
            b = _mm256_xor_si256(rotl40(b), _mm256_loadu_si256((const __m256i *)(w + i + 4)));
        }
        const __m256i ra = _mm256_setr_epi64x(35, 30, 25, 20);
        const __m256i rb = _mm256_setr_epi64x(15, 10, 5, 0);
        const __m256i k64 = _mm256_set1_epi64x(64);
        a = _mm256_or_si256(_mm256_sllv_epi64(a, ra),
                            _mm256_srlv_epi64(a, _mm256_sub_epi64(k64, ra)));
        b = _mm256_or_si256(_mm256_sllv_epi64(b, rb),
                            _mm256_srlv_epi64(b, _mm256_sub_epi64(k64, rb)));
        __m256i x = _mm256_xor_si256(a, b);
        __m128i y = _mm_xor_si128(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
        h = (uint64_t)_mm_cvtsi128_si64(y) ^ (uint64_t)_mm_extract_epi64(y, 1);
    }
    for (; i < n; i++)
        h = ((h << 5) | (h >> 59)) ^ w[i];
    return h;
}
