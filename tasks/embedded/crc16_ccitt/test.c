#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

uint16_t crc16_bitwise(const uint8_t *data, uint32_t len);
uint16_t crc16_table(const uint8_t *data, uint32_t len);

/* the verifier defines CRUCIBLE_SEED per task and verifier version (verifier.py) */
#ifndef CRUCIBLE_SEED
#define CRUCIBLE_SEED 1u
#endif
#define MAX_LEN 16384u /* the largest input the requirement names */
#define RANDOM_LENS 24u

static uint8_t buf[MAX_LEN + 4];

static void both(const char *kb, const char *kt, const uint8_t *d, uint32_t n) {
  crucible_report(kb, crc16_bitwise(d, n));
  crucible_report(kt, crc16_table(d, n));
}

/* the test's own CRC-16/CCITT-FALSE, table-driven: the truth of the sweep, and the cost of
   one lookup per byte that the candidate's table version is measured against */
static uint16_t truth_table[256];

static void truth_init(void) {
  for (uint32_t n = 0; n < 256u; n++) {
    uint16_t c = (uint16_t)(n << 8);
    for (int bit = 0; bit < 8; bit++) {
      c = (c & 0x8000u) ? (uint16_t)((c << 1) ^ 0x1021u) : (uint16_t)(c << 1);
    }
    truth_table[n] = c;
  }
}

static uint16_t __attribute__((noipa)) truth(const uint8_t *d, uint32_t n) {
  uint16_t crc = 0xFFFFu;
  while (n--) {
    crc = (uint16_t)((crc << 8) ^ truth_table[((crc >> 8) ^ *d++) & 0xFFu]);
  }
  return crc;
}

static uint32_t rng = CRUCIBLE_SEED;

static uint32_t next(void) { return crucible_rand(&rng); }

/* both functions against the truth at `len` bytes from a random alignment; 0 when all agree */
static int sweep_one(uint32_t len) {
  const uint8_t *d = buf + (next() & 3u);
  uint16_t want = truth(d, len);
  uint16_t bit = crc16_bitwise(d, len), tab = crc16_table(d, len);
  if (bit == want && tab == want) {
    return 0;
  }
  crucible_report_dec("sweep_mismatch_len", (int32_t)len);
  crucible_report("sweep_want", want);
  crucible_report("sweep_bitwise", bit);
  crucible_report("sweep_table", tab);
  return 1;
}

/* lengths across the whole range (harness.h crucible_sweep_sizes), each from a random
   alignment; the count of lengths when all agree, -1 at the first that does not */
static int sweep(void) {
  static uint32_t lens[160];
  uint32_t count = crucible_sweep_sizes(lens, 160u, MAX_LEN, RANDOM_LENS, &rng);
  for (uint32_t i = 0; i < count; i++) {
    if (sweep_one(lens[i])) {
      return -1;
    }
  }
  return (int)count;
}

/* the virtual clock (QEMU -icount: one instruction, one nanosecond) through SysTick */
static volatile uint16_t sink; /* a result used, so no call is dropped as pure */

static uint32_t ticks_of(uint16_t (*f)(const uint8_t *, uint32_t), const uint8_t *d, uint32_t n) {
  uint32_t t0 = SysTick->VAL; /* a down-counter of 24 bits: one wrap at most here */
  sink = f(d, n);
  uint32_t t1 = SysTick->VAL;
  return (t0 - t1) & 0xFFFFFFu;
}

int crucible_test_main(void) {
  static const uint8_t check[] = "123456789";
  static const uint8_t one_a[] = {'A'};
  static const uint8_t one_0[] = {0x00};
  static const uint8_t one_ff[] = {0xFF};
  both("check_bit", "check_tab", check, 9);
  both("empty_bit", "empty_tab", (const uint8_t *)0, 0);
  both("a_bit", "a_tab", one_a, 1);
  both("zero_bit", "zero_tab", one_0, 1);
  both("ff_bit", "ff_tab", one_ff, 1);
  for (uint32_t i = 0; i < 256u; i++) {
    buf[i + 1] = (uint8_t)i; /* odd address: any alignment */
  }
  both("ramp_bit", "ramp_tab", buf + 1, 256);
  /* every single byte: the two implementations agree */
  uint32_t agree = 0;
  for (uint32_t i = 0; i < 256u; i++) {
    uint8_t b = (uint8_t)i;
    agree += crc16_bitwise(&b, 1) == crc16_table(&b, 1);
  }
  crucible_report_dec("agree", (int32_t)agree);
  truth_init();
  for (uint32_t i = 0; i < sizeof(buf); i++) {
    buf[i] = (uint8_t)next();
  }
  /* a mismatch or a table loop's cost is a transcript line (the real reason: output), not
     an exit code */
  int swept = sweep();
  if (swept < 0) {
    return 0;
  }
  crucible_report_dec("sweep", swept);
  /* "one lookup per byte": the table version costs about what the test's own table loop
     does (a bit loop costs ~5x, a 16-entry table ~2x); measured after a first call, so a
     table built at run time is already there */
  SysTick->LOAD = 0xFFFFFFu;
  SysTick->VAL = 0;
  SysTick->CTRL = SysTick_CTRL_CLKSOURCE | SysTick_CTRL_ENABLE;
  (void)crc16_table(buf, 16);
  uint32_t own = ticks_of(truth, buf, 4096u), cand = ticks_of(crc16_table, buf, 4096u);
  SysTick->CTRL = 0;
  if (cand * 4u > own * 7u) {
    crucible_report_dec("table_cost_percent", (int32_t)(cand * 100u / (own ? own : 1u)));
    return 0;
  }
  crucible_report_dec("table_lookup_per_byte", 1);
  return 0;
}
