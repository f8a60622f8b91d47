#include <stddef.h>
#include <stdint.h>

/* The polynomial string hash of Java's String.hashCode over bytes: h = 31 h + p[i],
 * modulo 2^32. */
uint32_t poly_hash31(const uint8_t *p, size_t n) {
    uint32_t h = 0;
    for (size_t i = 0; i < n; i++)
        h = h * 31u + p[i];
    return h;
}
