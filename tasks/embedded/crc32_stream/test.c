#include <stdint.h>

#include "harness.h"

uint32_t crc32_init(void);
uint32_t crc32_update(uint32_t state, const uint8_t *data, uint32_t len);
uint32_t crc32_final(uint32_t state);

/* the verifier defines CRUCIBLE_SEED per task and verifier version (verifier.py) */
#ifndef CRUCIBLE_SEED
#define CRUCIBLE_SEED 1u
#endif
#define MAX_LEN 16384u /* the largest input the requirement names */
#define RANDOM_LENS 24u

static uint8_t buf[MAX_LEN + 4];

/* the test's own CRC-32 (table-driven): the truth of the sweep */
static uint32_t truth_table[256];

static void truth_init(void) {
  for (uint32_t n = 0; n < 256u; n++) {
    uint32_t c = n;
    for (int bit = 0; bit < 8; bit++) {
      c = (c & 1u) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    }
    truth_table[n] = c;
  }
}

static uint32_t truth(const uint8_t *d, uint32_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  while (n--) {
    crc = (crc >> 8) ^ truth_table[(crc ^ *d++) & 0xFFu];
  }
  return crc ^ 0xFFFFFFFFu;
}

static uint32_t rng = CRUCIBLE_SEED;

static uint32_t next(void) { return crucible_rand(&rng); }

static uint32_t whole(const uint8_t *d, uint32_t n) {
  return crc32_final(crc32_update(crc32_init(), d, n));
}

int crucible_test_main(void) {
  static const uint8_t check[] = "123456789";
  static const uint8_t fox[] = "The quick brown fox jumps over the lazy dog";
  crucible_report("init", crc32_init());
  crucible_report("check", whole(check, 9));
  crucible_report("empty", whole((const uint8_t *)0, 0));
  crucible_report("fox", whole(fox, 43));
  /* "123456789" split at every point, with an empty update in the middle */
  uint32_t same = 0;
  for (uint32_t cut = 0; cut <= 9u; cut++) {
    uint32_t s = crc32_init();
    s = crc32_update(s, check, cut);
    s = crc32_update(s, (const uint8_t *)0, 0);
    s = crc32_update(s, check + cut, 9u - cut);
    same += crc32_final(s) == 0xCBF43926u;
  }
  crucible_report_dec("splits_ok", (int32_t)same);
  /* two interleaved computations: no hidden state */
  uint32_t a = crc32_init(), b = crc32_init();
  a = crc32_update(a, check, 4);
  b = crc32_update(b, fox, 20);
  a = crc32_update(a, check + 4, 5);
  b = crc32_update(b, fox + 20, 23);
  crucible_report("inter_a", crc32_final(a));
  crucible_report("inter_b", crc32_final(b));
  /* 256-byte ramp at an odd address */
  for (uint32_t i = 0; i < 256u; i++) {
    buf[i + 1] = (uint8_t)i;
  }
  crucible_report("ramp", whole(buf + 1, 256));
  /* 1024 bytes of 0xA5 streamed in 7-byte chunks (the last one shorter) */
  for (uint32_t i = 0; i < 1024u; i++) {
    buf[i] = 0xA5u;
  }
  uint32_t s = crc32_init();
  for (uint32_t off = 0; off < 1024u; off += 7u) {
    s = crc32_update(s, buf + off, off + 7u <= 1024u ? 7u : 1024u - off);
  }
  crucible_report("a5_chunks", crc32_final(s));
  crucible_report("a5_whole", whole(buf, 1024));
  /* lengths across the whole range (harness.h crucible_sweep_sizes), each from a random
     alignment, whole and split at a random point */
  truth_init();
  for (uint32_t i = 0; i < sizeof(buf); i++) {
    buf[i] = (uint8_t)next();
  }
  static uint32_t lens[160];
  uint32_t count = crucible_sweep_sizes(lens, 160u, MAX_LEN, RANDOM_LENS, &rng);
  for (uint32_t i = 0; i < count; i++) {
    uint32_t n = lens[i];
    const uint8_t *d = buf + (next() & 3u);
    uint32_t cut = n ? next() % (n + 1u) : 0u;
    uint32_t want = truth(d, n), got = whole(d, n);
    uint32_t split = crc32_final(crc32_update(crc32_update(crc32_init(), d, cut), d + cut, n - cut));
    if (got != want || split != want) {
      crucible_report_dec("sweep_mismatch_len", (int32_t)n);
      crucible_report_dec("sweep_cut", (int32_t)cut);
      crucible_report("sweep_want", want);
      crucible_report("sweep_whole", got);
      crucible_report("sweep_split", split);
      return 0; /* the transcript says what went wrong */
    }
  }
  crucible_report_dec("sweep", (int32_t)count);
  return 0;
}
