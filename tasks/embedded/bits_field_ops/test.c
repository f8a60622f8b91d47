#include <stdint.h>

#include "harness.h"

uint32_t set_field(uint32_t reg, uint32_t pos, uint32_t width, uint32_t value);
uint32_t get_field(uint32_t reg, uint32_t pos, uint32_t width);
uint32_t reverse_bits(uint32_t x);
uint32_t popcount32(uint32_t x);
int is_power_of_two(uint32_t x);
uint32_t rotl32(uint32_t x, uint32_t n);
int32_t highest_bit(uint32_t x);

static const uint32_t set_cases[][4] = {
    {0xFFFFFFFFu, 4, 4, 0x0},       {0x00000000u, 4, 4, 0x1F},  /* value wider than the field */
    {0x12345678u, 0, 32, 0xCAFEBABEu}, {0x00000000u, 31, 1, 1},
    {0x80000000u, 31, 1, 2},        {0xA5A5A5A5u, 8, 8, 0x3C},
    {0x0000FFFFu, 16, 16, 0x12345u},
};
static const uint32_t get_cases[][3] = {
    {0xA5A53CA5u, 8, 8}, {0xDEADBEEFu, 0, 32}, {0x80000000u, 31, 1},
    {0xDEADBEEFu, 28, 4}, {0x12345678u, 5, 7},
};
static const uint32_t rev_cases[] = {1u, 0xDEADBEEFu, 0u, 0xFFFFFFFFu, 0x0000F00Du};
static const uint32_t pop_cases[] = {0u, 0xFFFFFFFFu, 0xDEADBEEFu, 0x80000001u};
static const uint32_t rot_cases[][2] = {
    {0x80000001u, 1}, {0x12345678u, 0}, {0x12345678u, 32}, {0x12345678u, 36}, {0x12345678u, 31},
};
static const uint32_t pow_cases[] = {0u, 1u, 0x80000000u, 0x80000001u, 6u, 64u, 3u};
static const uint32_t msb_cases[] = {0u, 1u, 0x80000000u, 0x00012345u};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void report_i(const char *prefix, uint32_t i, uint32_t v, int dec) {
  char key[8] = {0};
  uint32_t n = 0;
  while (prefix[n]) {
    key[n] = prefix[n];
    n++;
  }
  key[n] = (char)('0' + i);
  if (dec) {
    crucible_report_dec(key, (int32_t)v);
  } else {
    crucible_report(key, v);
  }
}

int crucible_test_main(void) {
  for (uint32_t i = 0; i < N(set_cases); i++) {
    const uint32_t *c = set_cases[i];
    report_i("set", i, set_field(c[0], c[1], c[2], c[3]), 0);
  }
  for (uint32_t i = 0; i < N(get_cases); i++) {
    const uint32_t *c = get_cases[i];
    report_i("get", i, get_field(c[0], c[1], c[2]), 0);
  }
  for (uint32_t i = 0; i < N(rev_cases); i++) {
    report_i("rev", i, reverse_bits(rev_cases[i]), 0);
  }
  for (uint32_t i = 0; i < N(pop_cases); i++) {
    report_i("pop", i, popcount32(pop_cases[i]), 1);
  }
  for (uint32_t i = 0; i < N(rot_cases); i++) {
    report_i("rotl", i, rotl32(rot_cases[i][0], rot_cases[i][1]), 0);
  }
  char pow[N(pow_cases) + 2];
  for (uint32_t i = 0; i < N(pow_cases); i++) {
    pow[i] = is_power_of_two(pow_cases[i]) ? '1' : '0';
  }
  pow[N(pow_cases)] = '\n';
  pow[N(pow_cases) + 1] = 0;
  crucible_print("@pow2=");
  crucible_print(pow);
  for (uint32_t i = 0; i < N(msb_cases); i++) {
    report_i("msb", i, (uint32_t)highest_bit(msb_cases[i]), 1);
  }
  return 0;
}
