#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CHUNK 512

/* Separable: for each interior row, the column sums of three rows (16-bit) over a chunk
 * of columns, then each output is the sum of three neighbouring column sums divided by 9
 * (at most 2295, so 16-bit lanes hold it; gcc divides by the constant with a multiply).
 * Both loops are plain unit-stride loops that gcc vectorizes with AVX2. The first and last
 * rows, and the first and last pixel of each row, are copied. */
void box_blur3_u8(uint8_t *restrict out, const uint8_t *restrict in, size_t rows,
                  size_t cols) {
    if (rows < 3 || cols < 3) {
        memcpy(out, in, rows * cols);
        return;
    }
    uint16_t v[CHUNK + 2];
    memcpy(out, in, cols);
    for (size_t r = 1; r + 1 < rows; r++) {
        const uint8_t *up = in + (r - 1) * cols, *mid = up + cols, *dn = mid + cols;
        uint8_t *o = out + r * cols;
        o[0] = mid[0];
        for (size_t c0 = 1; c0 + 1 < cols; c0 += CHUNK) {
            size_t w = cols - 1 - c0 < CHUNK ? cols - 1 - c0 : CHUNK;
            /* v[k] = the column sum at column c0 - 1 + k, k in [0, w + 2) */
            for (size_t k = 0; k < w + 2; k++)
                v[k] = (uint16_t)(up[c0 - 1 + k] + mid[c0 - 1 + k] + dn[c0 - 1 + k]);
            for (size_t k = 0; k < w; k++)
                o[c0 + k] = (uint8_t)((uint16_t)(v[k] + v[k + 1] + v[k + 2]) / 9);
        }
        o[cols - 1] = mid[cols - 1];
    }
    memcpy(out + (rows - 1) * cols, in + (rows - 1) * cols, cols);
}
