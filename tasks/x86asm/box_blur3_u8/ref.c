#include <stddef.h>
#include <stdint.h>

/* 3x3 box blur of a rows x cols 8-bit image: each interior pixel becomes the sum of its
 * 3x3 neighbourhood divided by 9 (rounded down); border pixels are copied. */
void box_blur3_u8(uint8_t *out, const uint8_t *in, size_t rows, size_t cols) {
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < cols; c++) {
            if (r == 0 || r == rows - 1 || c == 0 || c == cols - 1) {
                out[r * cols + c] = in[r * cols + c];
                continue;
            }
            unsigned sum = 0;
            for (size_t dr = 0; dr < 3; dr++)
                for (size_t dc = 0; dc < 3; dc++)
                    sum += in[(r + dr - 1) * cols + (c + dc - 1)];
            out[r * cols + c] = (uint8_t)(sum / 9);
        }
    }
}
