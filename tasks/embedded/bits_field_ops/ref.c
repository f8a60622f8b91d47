#include <stdint.h>

/* a mask of `width` ones (1..32) without shifting by 32, which C leaves undefined */
static uint32_t ones(uint32_t width) { return width >= 32u ? 0xFFFFFFFFu : (1u << width) - 1u; }

uint32_t set_field(uint32_t reg, uint32_t pos, uint32_t width, uint32_t value) {
  uint32_t mask = ones(width) << pos;
  return (reg & ~mask) | ((value << pos) & mask);
}

uint32_t get_field(uint32_t reg, uint32_t pos, uint32_t width) {
  return (reg >> pos) & ones(width);
}

uint32_t reverse_bits(uint32_t x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
  x = ((x >> 8) & 0x00FF00FFu) | ((x & 0x00FF00FFu) << 8);
  return (x >> 16) | (x << 16);
}

uint32_t popcount32(uint32_t x) {
  uint32_t n = 0;
  while (x) {
    x &= x - 1u; /* clears the lowest set bit */
    n++;
  }
  return n;
}

int is_power_of_two(uint32_t x) { return x != 0u && (x & (x - 1u)) == 0u; }

uint32_t rotl32(uint32_t x, uint32_t n) {
  n &= 31u;
  return n ? (x << n) | (x >> (32u - n)) : x;
}

int32_t highest_bit(uint32_t x) {
  int32_t i = -1;
  while (x) {
    x >>= 1;
    i++;
  }
  return i;
}
