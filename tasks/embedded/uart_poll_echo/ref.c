#include <stdint.h>
#include <string.h>

#include "stm32f4.h"

#define LINE_MAX 32

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

void echo_init(void) { USART1->CR1 |= USART_CR1_UE | USART_CR1_TE | USART_CR1_RE; }

int echo_lines(void) {
  char line[LINE_MAX + 1];
  int lines = 0;
  for (;;) {
    size_t n = 0;
    for (char c = getc_polled(); c != '\n'; c = getc_polled()) {
      if (c != '\r' && n < LINE_MAX) {
        line[n++] = c;
      }
    }
    line[n] = '\0';
    if (strcmp(line, "quit") == 0) {
      for (const char *s = "bye\n"; *s; s++) {
        putc_polled(*s);
      }
      return lines;
    }
    for (size_t i = 0; i < n; i++) {
      char c = line[i];
      putc_polled(c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c);
    }
    putc_polled('\n');
    lines++;
  }
}
