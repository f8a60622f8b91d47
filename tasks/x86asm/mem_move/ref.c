#include <stddef.h>
#include <stdint.h>

/* memmove: copy n bytes from src to dst; the two may overlap. */
void mem_move(uint8_t *dst, const uint8_t *src, size_t n) {
    if (dst < src) {
        for (size_t i = 0; i < n; i++)
            dst[i] = src[i];
    } else {
        for (size_t i = n; i > 0; i--)
            dst[i - 1] = src[i - 1];
    }
}
