#include <stddef.h>
#include <stdint.h>

/* Word at a time from an 8-byte boundary: an aligned load never crosses into the next
 * page, so reading past the end of the line within its word is safe. A word has a zero
 * byte when (w - 0x01..01) & ~w & 0x80..80 is not zero; a newline byte is a zero byte of
 * w ^ 0x0a..0a. */
static inline uint64_t zero_bytes(uint64_t v) {
    return (v - 0x0101010101010101ULL) & ~v & 0x8080808080808080ULL;
}

size_t line_length(const char *s) {
    const char *p = s;
    while ((uintptr_t)p & 7) {
        if (*p == 0 || *p == '\n')
            return (size_t)(p - s);
        p++;
    }
    for (;;) {
        uint64_t v;
        __builtin_memcpy(&v, p, 8);
        uint64_t z = zero_bytes(v) | zero_bytes(v ^ 0x0a0a0a0a0a0a0a0aULL);
        if (z)
            return (size_t)(p - s) + (size_t)(__builtin_ctzll(z) >> 3);
        p += 8;
    }
}
