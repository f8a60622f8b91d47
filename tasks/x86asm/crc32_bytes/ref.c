#include <stddef.h>
#include <stdint.h>

/* CRC-32 (IEEE 802.3, as zlib and PNG use it): reflected polynomial 0xEDB88320, initial
 * value 0xFFFFFFFF, final value complemented; one bit at a time. */
uint32_t crc32_bytes(const uint8_t *p, size_t n) {
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}
