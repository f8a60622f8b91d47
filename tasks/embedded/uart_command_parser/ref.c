#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "hal.h"

#define LINE_MAX 32u
#define NREGS 8u
#define MAX_WORDS 4u

static uint32_t regs[NREGS];
static char line[LINE_MAX + 1u];
static uint32_t line_len;
static bool overflow;

static void reply(const char *s) {
  hal_uart_write(USART1, s);
  hal_uart_putc(USART1, '\n');
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

static bool parse_u32(const char *s, uint32_t *out) {
  uint64_t v = 0;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s += 2;
    uint32_t n = 0;
    for (; *s; s++, n++) {
      int d = hex_digit(*s);
      if (d < 0 || n >= 8u) {
        return false;
      }
      v = (v << 4) | (uint32_t)d;
    }
    if (n == 0u) {
      return false;
    }
  } else {
    if (!*s) {
      return false;
    }
    for (; *s; s++) {
      if (*s < '0' || *s > '9') {
        return false;
      }
      v = v * 10u + (uint32_t)(*s - '0');
      if (v > 0xFFFFFFFFu) {
        return false;
      }
    }
  }
  *out = (uint32_t)v;
  return true;
}

static void reply_hex(uint32_t v) {
  static const char digits[] = "0123456789abcdef";
  char buf[11] = "0x";
  for (int i = 0; i < 8; i++) {
    buf[2 + i] = digits[(v >> (28 - 4 * i)) & 0xFu];
  }
  buf[10] = 0;
  reply(buf);
}

static void reply_dec(uint32_t v) {
  char buf[11];
  int n = 10;
  buf[n] = 0;
  do {
    buf[--n] = (char)('0' + v % 10u);
    v /= 10u;
  } while (v);
  reply(&buf[n]);
}

static void execute(void) {
  char *words[MAX_WORDS];
  uint32_t nw = 0;
  char *p = line;
  while (*p) {
    while (*p == ' ') {
      *p++ = 0;
    }
    if (!*p) {
      break;
    }
    if (nw == MAX_WORDS) {
      reply("ERR");
      return;
    }
    words[nw++] = p;
    while (*p && *p != ' ') {
      p++;
    }
  }
  if (nw == 0u) {
    return;
  }
  uint32_t a, b;
  if (strcmp(words[0], "HELP") == 0 && nw == 1u) {
    reply("CMDS: SET GET ADD HELP");
  } else if (strcmp(words[0], "SET") == 0 && nw == 3u && parse_u32(words[1], &a) && a < NREGS &&
             parse_u32(words[2], &b)) {
    regs[a] = b;
    reply("OK");
  } else if (strcmp(words[0], "GET") == 0 && nw == 2u && parse_u32(words[1], &a) && a < NREGS) {
    reply_hex(regs[a]);
  } else if (strcmp(words[0], "ADD") == 0 && nw == 3u && parse_u32(words[1], &a) &&
             parse_u32(words[2], &b)) {
    reply_dec(a + b);
  } else {
    reply("ERR");
  }
}

void cmd_init(void) {
  memset(regs, 0, sizeof regs);
  line_len = 0;
  overflow = false;
}

void cmd_feed(char c) {
  if (c == '\r') {
    return;
  }
  if (c == '\n') {
    line[line_len] = 0;
    if (overflow) {
      reply("ERR");
    } else {
      execute();
    }
    line_len = 0;
    overflow = false;
    return;
  }
  if (line_len < LINE_MAX) {
    line[line_len++] = c;
  } else {
    overflow = true;
  }
}
