#include <stdint.h>

#define DEBOUNCE_N 4u

static int stable;
static uint32_t run;
static uint32_t presses;

void debounce_reset(void) {
  stable = 0;
  run = 0;
  presses = 0;
}

int debounce_step(int raw) {
  int level = raw != 0;
  if (level == stable) {
    run = 0;
  } else if (++run >= DEBOUNCE_N) {
    stable = level;
    run = 0;
    if (stable) {
      presses++;
    }
  }
  return stable;
}

uint32_t debounce_presses(void) { return presses; }
