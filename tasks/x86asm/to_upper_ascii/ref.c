#include <stddef.h>
#include <stdint.h>

/* In place: each ASCII lowercase letter of s[0..n) becomes its uppercase letter. */
void to_upper_ascii(uint8_t *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (s[i] >= 'a' && s[i] <= 'z')
            s[i] = (uint8_t)(s[i] - ('a' - 'A'));
    }
}
