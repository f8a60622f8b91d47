#include <stdint.h>

#include "harness.h"

void debounce_reset(void);
int debounce_step(int raw);
uint32_t debounce_presses(void);

static char line[80];

/* feed a string of '0'/'1' (or other digits: non-zero = pressed), print the outputs */
static void feed(const char *key, const char *samples) {
  uint32_t n = 0;
  while (samples[n] && n < sizeof line - 2u) {
    line[n] = (char)('0' + debounce_step(samples[n] - '0'));
    n++;
  }
  line[n] = '\n';
  line[n + 1] = 0;
  crucible_print(key);
  crucible_print("=");
  crucible_print(line);
  crucible_report_dec("presses", (int32_t)debounce_presses());
}

int crucible_test_main(void) {
  debounce_reset();
  feed("doc", "11101111");
  debounce_reset();
  /* bounce on press and release, a 3-sample glitch, two clean presses, non-1 levels */
  feed("noisy", "0101101111111011101110000000110111000011110000");
  feed("cont", "11113111100000002000020000");
  debounce_reset();
  feed("glitch3", "1110111011100000111");
  debounce_reset();
  feed("reset", "0000");
  return 0;
}
