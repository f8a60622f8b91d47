#include <stddef.h>

/* The number of bytes before the first newline or NUL of s. */
size_t line_length(const char *s) {
    size_t n = 0;
    while (s[n] != '\n' && s[n] != 0)
        n++;
    return n;
}
