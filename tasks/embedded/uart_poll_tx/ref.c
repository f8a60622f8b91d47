#include <stdint.h>

#include "stm32f4.h"

void uart1_putc(char c) {
  while (!(USART1->SR & USART_SR_TXE)) {
  }
  USART1->DR = (uint8_t)c;
}

void uart1_puts(const char *s) {
  while (*s) {
    uart1_putc(*s++);
  }
}

void uart1_put_hex(uint32_t v) {
  static const char digits[] = "0123456789ABCDEF";
  uart1_puts("0x");
  for (int shift = 28; shift >= 0; shift -= 4) {
    uart1_putc(digits[(v >> shift) & 0xFu]);
  }
}

void uart1_put_dec(int32_t v) {
  char buf[10];
  int n = 0;
  /* the magnitude as unsigned: -INT32_MIN does not fit in an int32_t */
  uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
  if (v < 0) {
    uart1_putc('-');
  }
  do {
    buf[n++] = (char)('0' + u % 10u);
    u /= 10u;
  } while (u);
  while (n) {
    uart1_putc(buf[--n]);
  }
}
