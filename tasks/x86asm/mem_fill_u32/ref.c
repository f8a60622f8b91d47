#include <stddef.h>
#include <stdint.h>

/* Store the 32-bit value v into each of the n words at dst. */
void mem_fill_u32(uint32_t *dst, uint32_t v, size_t n) {
    for (size_t i = 0; i < n; i++)
        dst[i] = v;
}
