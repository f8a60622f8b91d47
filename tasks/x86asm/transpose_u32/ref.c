#include <stddef.h>
#include <stdint.h>

/* out (cols x rows) = the transpose of in (rows x cols), both row-major. */
void transpose_u32(uint32_t *out, const uint32_t *in, size_t rows, size_t cols) {
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            out[j * rows + i] = in[i * cols + j];
}
