#include <stddef.h>
#include <stdint.h>

/* The index of the first byte of buf[0..n) equal to c, or n when there is none. */
size_t find_byte(const uint8_t *buf, size_t n, uint8_t c) {
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == c)
            return i;
    }
    return n;
}
