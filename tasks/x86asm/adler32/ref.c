#include <stddef.h>
#include <stdint.h>

/* Adler-32 (RFC 1950): two sums modulo 65521, reduced at every byte. */
uint32_t adler32(const uint8_t *p, size_t n) {
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < n; i++) {
        a = (a + p[i]) % 65521;
        b = (b + a) % 65521;
    }
    return (b << 16) | a;
}
