#include <stddef.h>
#include <stdint.h>

/* The dot product of two int16 vectors of n elements, exact in 64 bits. */
int64_t dot_i16(const int16_t *a, const int16_t *b, size_t n) {
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (int32_t)a[i] * (int32_t)b[i];
    return sum;
}
