#include <stddef.h>
#include <stdint.h>

/* CRC-8/ATM: polynomial x^8 + x^2 + x + 1 (0x07), most significant bit first, initial
 * value 0, no final XOR; one bit at a time. */
uint8_t crc8_atm(const uint8_t *p, size_t n) {
    uint8_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) {
            if (crc & 0x80)
                crc = (uint8_t)((crc << 1) ^ 0x07);
            else
                crc = (uint8_t)(crc << 1);
        }
    }
    return crc;
}
