#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* h = sum p[i] * 31^(n-1-i) (mod 2^32), so the chain can be split into lanes. Four AVX2
 * registers of eight 32-bit lanes take 32 bytes per step: lane (q, j) keeps
 * acc = acc * 31^32 + p[32k + 8q + j]. After m steps, byte 32k + 8q + j still needs the
 * factor 31^(31 - 8q - j) (below), applied once before the lanes are summed; the last
 * n mod 32 bytes follow one at a time. */
uint32_t poly_hash31(const uint8_t *p, size_t n) {
    uint32_t h = 0;
    size_t i = 0;
    if (n >= 32) {
        const __m256i step = _mm256_set1_epi32((int)0x7dd7bc01u); /* 31^32 mod 2^32 */
        __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
        for (; i + 32 <= n; i += 32) {
            __m256i b0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + i)));
            __m256i b1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + i + 8)));
            __m256i b2 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + i + 16)));
            __m256i b3 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + i + 24)));
            a0 = _mm256_add_epi32(_mm256_mullo_epi32(a0, step), b0);
            a1 = _mm256_add_epi32(_mm256_mullo_epi32(a1, step), b1);
            a2 = _mm256_add_epi32(_mm256_mullo_epi32(a2, step), b2);
            a3 = _mm256_add_epi32(_mm256_mullo_epi32(a3, step), b3);
        }
        /* wq[j] = 31^(31 - 8q - j) mod 2^32 */
        const __m256i w0 = _mm256_setr_epi32(
            (int)0x88303fdfu, (int)0x14e8c841u, (int)0x00acab9fu, (int)0x294fe481u,
            (int)0xf0d1075fu, (int)0x395110c1u, (int)0x01d9531fu, (int)0x84304d01u);
        const __m256i w1 = _mm256_setr_epi32(
            (int)0xfc018edfu, (int)0x4a319941u, (int)0x8685ba9fu, (int)0x0c98f581u,
            (int)0xe7a1d65fu, (int)0xcdaa61c1u, (int)0xc491e21fu, (int)0x50a9de01u);
        const __m256i w2 = _mm256_setr_epi32(
            (int)0xe191dddfu, (int)0x59db6a41u, (int)0xe1ddc99fu, (int)0xee830681u,
            (int)0x07b1a55fu, (int)0x94e4b2c1u, (int)0xf449711fu, (int)0x94446f01u);
        const __m256i w3 = _mm256_setr_epi32(
            (int)0x67e12cdfu, (int)0x34e63b41u, (int)0x01b4d89fu, (int)0x000e1781u,
            (int)0x0000745fu, (int)0x000003c1u, (int)0x0000001fu, (int)0x00000001u);
        __m256i s = _mm256_add_epi32(
            _mm256_add_epi32(_mm256_mullo_epi32(a0, w0), _mm256_mullo_epi32(a1, w1)),
            _mm256_add_epi32(_mm256_mullo_epi32(a2, w2), _mm256_mullo_epi32(a3, w3)));
        __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4e));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
        h = (uint32_t)_mm_cvtsi128_si32(t);
    }
    for (; i < n; i++)
        h = h * 31u + p[i];
    return h;
}
