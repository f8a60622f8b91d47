#include <stddef.h>
#include <stdint.h>

#define CRC16_POLY 0x1021u

uint16_t crc16_bitwise(const uint8_t *data, uint32_t len) {
  uint16_t crc = 0xFFFFu;
  for (uint32_t i = 0; i < len; i++) {
    crc ^= (uint16_t)((uint16_t)data[i] << 8);
    for (int bit = 0; bit < 8; bit++) {
      crc = (crc & 0x8000u) ? (uint16_t)((crc << 1) ^ CRC16_POLY) : (uint16_t)(crc << 1);
    }
  }
  return crc;
}

static uint16_t table[256];
static int table_ready;

static void build_table(void) {
  for (uint32_t n = 0; n < 256u; n++) {
    uint16_t c = (uint16_t)(n << 8);
    for (int bit = 0; bit < 8; bit++) {
      c = (c & 0x8000u) ? (uint16_t)((c << 1) ^ CRC16_POLY) : (uint16_t)(c << 1);
    }
    table[n] = c;
  }
  table_ready = 1;
}

uint16_t crc16_table(const uint8_t *data, uint32_t len) {
  if (!table_ready) {
    build_table();
  }
  uint16_t crc = 0xFFFFu;
  for (uint32_t i = 0; i < len; i++) {
    crc = (uint16_t)((crc << 8) ^ table[((crc >> 8) ^ data[i]) & 0xFFu]);
  }
  return crc;
}
