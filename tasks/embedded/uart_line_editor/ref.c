#include <stdint.h>

#include "stm32f4.h"

#define LINE_MAX 16u

static int last_was_cr; /* a '\n' right after the '\r' that ended a line is no new line */

static char getc_polled(void) {
  while (!(USART1->SR & USART_SR_RXNE)) {
  }
  return (char)(USART1->DR & 0xFFu);
}

static void putc_polled(char c) {
  while (!(USART1->SR & USART_SR_TXE)) {
  }
  USART1->DR = (uint8_t)c;
}

static void puts_polled(const char *s) {
  while (*s) {
    putc_polled(*s++);
  }
}

void console_init(void) {
  last_was_cr = 0;
  USART1->CR1 |= USART_CR1_UE | USART_CR1_TE | USART_CR1_RE;
}

int line_read(char *buf) {
  uint32_t n = 0;
  for (;;) {
    char c = getc_polled();
    if (c == '\n' && last_was_cr) {
      last_was_cr = 0;
      continue;
    }
    last_was_cr = 0;
    if (c == '\r' || c == '\n') {
      last_was_cr = c == '\r';
      puts_polled("\r\n");
      buf[n] = '\0';
      return (int)n;
    }
    if (c == 0x08 || c == 0x7F) {
      if (n > 0) {
        n--;
        puts_polled("\b \b");
      }
    } else if (c >= 0x20 && c <= 0x7E && n < LINE_MAX) {
      buf[n++] = c;
      putc_polled(c);
    }
  }
}
