#include <stddef.h>
#include <stdint.h>

/* A rotate-XOR checksum of n 64-bit words: h = rotl(h, 5) ^ w[i], from a fixed seed. */
uint64_t xor_checksum_u64(const uint64_t *w, size_t n) {
    uint64_t h = 0x243F6A8885A308D3ull;
    for (size_t i = 0; i < n; i++)
        h = ((h << 5) | (h >> 59)) ^ w[i];
    return h;
}
