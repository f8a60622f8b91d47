#include <stddef.h>
#include <stdint.h>

/* nibble table: 16 words of flash, two lookups per byte */
static const uint32_t crc32_nibble[16] = {
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u,
    0x4DB26158u, 0x5005713Cu, 0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
    0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
};

uint32_t crc32_init(void) { return 0xFFFFFFFFu; }

uint32_t crc32_update(uint32_t state, const uint8_t *data, uint32_t len) {
  for (uint32_t i = 0; i < len; i++) {
    state ^= data[i];
    state = (state >> 4) ^ crc32_nibble[state & 0xFu];
    state = (state >> 4) ^ crc32_nibble[state & 0xFu];
  }
  return state;
}

uint32_t crc32_final(uint32_t state) { return state ^ 0xFFFFFFFFu; }
