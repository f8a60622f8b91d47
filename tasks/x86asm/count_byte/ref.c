#include <stddef.h>
#include <stdint.h>

/* The number of bytes of buf[0..n) equal to c. */
size_t count_byte(const uint8_t *buf, size_t n, uint8_t c) {
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == c)
            count++;
    }
    return count;
}
