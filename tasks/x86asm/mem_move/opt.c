#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Eight bytes at a time in the safe direction: forward when dst is below src, backward
 * otherwise (each 8-byte chunk is loaded whole before it is stored). */
void mem_move(uint8_t *dst, const uint8_t *src, size_t n) {
    if (dst < src) {
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            uint64_t v;
            memcpy(&v, src + i, 8);
            memcpy(dst + i, &v, 8);
        }
        for (; i < n; i++)
            dst[i] = src[i];
    } else {
        size_t i = n;
        for (; i >= 8; i -= 8) {
            uint64_t v;
            memcpy(&v, src + i - 8, 8);
            memcpy(dst + i - 8, &v, 8);
        }
        for (; i > 0; i--)
            dst[i - 1] = src[i - 1];
    }
}
