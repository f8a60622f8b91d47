/* The test harness library: report lines on USART1 (written at register level, so a task
   whose subject is the UART driver never depends on the candidate's), and the exit through
   semihosting. The semihosting trap lives here only: the verifier refuses a candidate
   object that holds one (BKPT 0xAB). */
#include "harness.h"

#include "stm32f4.h"

static void put(char c) {
  while (!(USART1->SR & USART_SR_TXE)) {
  }
  USART1->DR = (uint32_t)(uint8_t)c;
}

static void puts_raw(const char *s) {
  while (*s) {
    put(*s++);
  }
}

static void hex(uint32_t v, int digits) {
  static const char d[] = "0123456789abcdef";
  for (int i = digits - 1; i >= 0; i--) {
    put(d[(v >> (4 * i)) & 0xFu]);
  }
}

static void dec(int32_t v) {
  char buf[12];
  int n = 0;
  uint32_t u = v < 0 ? (uint32_t)(-(v + 1)) + 1u : (uint32_t)v;
  if (v < 0) {
    put('-');
  }
  do {
    buf[n++] = (char)('0' + u % 10u);
    u /= 10u;
  } while (u);
  while (n) {
    put(buf[--n]);
  }
}

void crucible_print(const char *text) { puts_raw(text); }

static void key(const char *k) {
  put('@');
  puts_raw(k);
  put('=');
}

void crucible_report(const char *k, uint32_t v) {
  key(k);
  puts_raw("0x");
  hex(v, 8);
  put('\n');
}

void crucible_report_dec(const char *k, int32_t v) {
  key(k);
  dec(v);
  put('\n');
}

void crucible_report_mem(const char *k, const void *p, uint32_t n) {
  const uint8_t *b = (const uint8_t *)p;
  key(k);
  for (uint32_t i = 0; i < n; i++) {
    hex(b[i], 2);
  }
  put('\n');
}

void crucible_fault_report(const char *name, uint32_t cfsr, uint32_t hfsr, uint32_t mmfar,
                           uint32_t bfar, uint32_t pc, uint32_t lr) {
  puts_raw("\n!fault ");
  puts_raw(name);
  puts_raw(" CFSR=0x");
  hex(cfsr, 8);
  puts_raw(" HFSR=0x");
  hex(hfsr, 8);
  puts_raw(" MMFAR=0x");
  hex(mmfar, 8);
  puts_raw(" BFAR=0x");
  hex(bfar, 8);
  puts_raw(" PC=0x");
  hex(pc, 8);
  puts_raw(" LR=0x");
  hex(lr, 8);
  put('\n');
}

void crucible_unhandled_report(int32_t irq) {
  puts_raw("\n!unhandled_irq ");
  dec(irq);
  put('\n');
}

void crucible_oob_report(const char *kind, uint32_t first, uint32_t last, uint32_t lo,
                         uint32_t hi) {
  puts_raw("\n!oob first=0x");
  hex(first, 8);
  puts_raw(" last=0x");
  hex(last, 8);
  put(' ');
  puts_raw(kind);
  puts_raw("=0x");
  hex(lo, 8);
  puts_raw("-0x");
  hex(hi, 8);
  put('\n');
}

uint32_t crucible_rand(uint32_t *rng) {
  uint32_t x = *rng ? *rng : 1u;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  *rng = x;
  return x;
}

static void add_size(uint32_t *sizes, uint32_t *n, uint32_t cap, uint32_t max, uint32_t v) {
  if (*n < cap && v <= max) {
    sizes[(*n)++] = v;
  }
}

uint32_t crucible_sweep_sizes(uint32_t *sizes, uint32_t cap, uint32_t max, uint32_t randoms,
                              uint32_t *rng) {
  static const uint32_t decimal[] = {100, 200, 300, 500, 1000, 2000, 5000, 10000};
  uint32_t n = 0;
  for (uint32_t v = 0; v <= 64u; v++) {
    add_size(sizes, &n, cap, max, v);
  }
  for (uint32_t p = 128u; p && p <= max; p <<= 1) {
    add_size(sizes, &n, cap, max, p - 1u);
    add_size(sizes, &n, cap, max, p);
    add_size(sizes, &n, cap, max, p + 1u);
  }
  for (uint32_t i = 0; i < sizeof(decimal) / sizeof(decimal[0]); i++) {
    add_size(sizes, &n, cap, max, decimal[i]);
  }
  uint32_t top = 1;
  while (top < 31u && (1u << top) <= max) {
    top++;
  }
  for (uint32_t i = 0; i < randoms; i++) {
    uint32_t bits = 1u + crucible_rand(rng) % top; /* log-uniform: a bit length, then a value */
    add_size(sizes, &n, cap, max, (crucible_rand(rng) & ((1u << bits) - 1u)) % (max + 1u));
  }
  if (n == 0 || sizes[n - 1] != max) {
    add_size(sizes, &n, cap, max, max);
  }
  return n;
}

void crucible_zone_fill(void *buf, uint32_t size, uint8_t pattern) {
  volatile uint8_t *b = (volatile uint8_t *)buf;
  for (uint32_t i = 0; i < size; i++) {
    b[i] = pattern;
  }
}

void crucible_zone_check(const void *buf, uint32_t from, uint32_t size, uint8_t pattern) {
  const volatile uint8_t *b = (const volatile uint8_t *)buf;
  uint32_t first = size, last = size;
  for (uint32_t i = from; i < size; i++) {
    if (b[i] != pattern) {
      first = first == size ? i : first;
      last = i;
    }
  }
  if (first != size) {
    uint32_t at = (uint32_t)buf;
    crucible_oob_report("zone", at + first, at + last, at + from, at + size);
    crucible_exit(CRUCIBLE_EXIT_OOB);
  }
}

void crucible_periph_unsupported(uint32_t pc, uint32_t addr) {
  puts_raw("\n!periph_unsupported PC=0x");
  hex(pc, 8);
  puts_raw(" ADDR=0x");
  hex(addr, 8);
  put('\n');
  crucible_exit(CRUCIBLE_EXIT_PERIPH);
}

/* The core's state once the test main returned, on a line of its own after a record
   separator (no task prints one): the verifier strips it from the transcript and checks
   what the task says must hold at exit. */
void crucible_state_report(void) {
  uint32_t primask, basepri, faultmask, control;
  __asm__ volatile("mrs %0, primask" : "=r"(primask));
  __asm__ volatile("mrs %0, basepri" : "=r"(basepri));
  __asm__ volatile("mrs %0, faultmask" : "=r"(faultmask));
  __asm__ volatile("mrs %0, control" : "=r"(control));
  put('\x1e');
  puts_raw("!state primask=");
  hex(primask, 1);
  puts_raw(" basepri=0x");
  hex(basepri, 2);
  puts_raw(" faultmask=");
  hex(faultmask, 1);
  puts_raw(" control=0x");
  hex(control, 1);
  puts_raw(" vtor=0x");
  hex(SCB->VTOR, 8);
  puts_raw(" systick_ctrl=0x");
  hex(SysTick->CTRL & 7u, 1);
  put('\n');
}

void crucible_rx_ready(void) { put('\x06'); } /* READY for target/uart_feeder.py */

void crucible_wait(volatile uint32_t *flag, uint32_t value, uint32_t loops) {
  while (loops--) {
    if (*flag == value) {
      return;
    }
  }
  puts_raw("\n!wait_timeout\n");
  crucible_exit(CRUCIBLE_EXIT_WAIT);
}

/* SYS_EXIT_EXTENDED (0x20): {ADP_Stopped_ApplicationExit, code}; QEMU exits with `code` */
void crucible_exit(int code) {
  static volatile uint32_t block[2];
  block[0] = 0x20026u;
  block[1] = (uint32_t)code;
  register uint32_t r0 __asm__("r0") = 0x20u;
  register volatile uint32_t *r1 __asm__("r1") = block;
  __asm__ volatile("bkpt 0xab" : : "r"(r0), "r"(r1) : "memory");
  for (;;) {
  }
}
