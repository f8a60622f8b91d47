#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* 8 x 8 tiles transposed in registers (AVX2): eight row loads, three rounds of shuffles
 * (32-bit unpacks, 64-bit unpacks, 128-bit lane swaps) and eight row stores, so both
 * matrices are touched in whole 32-byte rows. The edges that do not fill a tile go element
 * by element. */
static inline void tile8(uint32_t *out, const uint32_t *in, size_t rows, size_t cols) {
    __m256i r0 = _mm256_loadu_si256((const __m256i *)(in + 0 * cols));
    __m256i r1 = _mm256_loadu_si256((const __m256i *)(in + 1 * cols));
    __m256i r2 = _mm256_loadu_si256((const __m256i *)(in + 2 * cols));
    __m256i r3 = _mm256_loadu_si256((const __m256i *)(in + 3 * cols));
    __m256i r4 = _mm256_loadu_si256((const __m256i *)(in + 4 * cols));
    __m256i r5 = _mm256_loadu_si256((const __m256i *)(in + 5 * cols));
    __m256i r6 = _mm256_loadu_si256((const __m256i *)(in + 6 * cols));
    __m256i r7 = _mm256_loadu_si256((const __m256i *)(in + 7 * cols));
    __m256i t0 = _mm256_unpacklo_epi32(r0, r1), t1 = _mm256_unpackhi_epi32(r0, r1);
    __m256i t2 = _mm256_unpacklo_epi32(r2, r3), t3 = _mm256_unpackhi_epi32(r2, r3);
    __m256i t4 = _mm256_unpacklo_epi32(r4, r5), t5 = _mm256_unpackhi_epi32(r4, r5);
    __m256i t6 = _mm256_unpacklo_epi32(r6, r7), t7 = _mm256_unpackhi_epi32(r6, r7);
    /* u0..u3: columns 0..3 of rows 0-3 in the low lane, columns 4..7 in the high lane */
    __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
    __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
    _mm256_storeu_si256((__m256i *)(out + 0 * rows), _mm256_permute2x128_si256(u0, u4, 0x20));
    _mm256_storeu_si256((__m256i *)(out + 1 * rows), _mm256_permute2x128_si256(u1, u5, 0x20));
    _mm256_storeu_si256((__m256i *)(out + 2 * rows), _mm256_permute2x128_si256(u2, u6, 0x20));
    _mm256_storeu_si256((__m256i *)(out + 3 * rows), _mm256_permute2x128_si256(u3, u7, 0x20));
    _mm256_storeu_si256((__m256i *)(out + 4 * rows), _mm256_permute2x128_si256(u0, u4, 0x31));
    _mm256_storeu_si256((__m256i *)(out + 5 * rows), _mm256_permute2x128_si256(u1, u5, 0x31));
    _mm256_storeu_si256((__m256i *)(out + 6 * rows), _mm256_permute2x128_si256(u2, u6, 0x31));
    _mm256_storeu_si256((__m256i *)(out + 7 * rows), _mm256_permute2x128_si256(u3, u7, 0x31));
}

void transpose_u32(uint32_t *restrict out, const uint32_t *restrict in, size_t rows,
                   size_t cols) {
    size_t r8 = rows & ~(size_t)7, c8 = cols & ~(size_t)7;
    for (size_t i = 0; i < r8; i += 8) {
        for (size_t j = 0; j < c8; j += 8)
            tile8(out + j * rows + i, in + i * cols + j, rows, cols);
        for (size_t j = c8; j < cols; j++)
            for (size_t k = i; k < i + 8; k++)
                out[j * rows + k] = in[k * cols + j];
    }
    for (size_t i = r8; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            out[j * rows + i] = in[i * cols + j];
}
