#include <stddef.h>
#include <stdint.h>

/* out[i] = 1 when in[i] has an odd number of set bits, else 0. */
void parity_bytes(uint8_t *out, const uint8_t *in, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint8_t p = 0;
        for (int b = 0; b < 8; b++)
            p ^= (in[i] >> b) & 1;
        out[i] = p;
    }
}
