#include <limits.h>
#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

void uart1_putc(char c);
void uart1_puts(const char *s);
void uart1_put_hex(uint32_t v);
void uart1_put_dec(int32_t v);

int crucible_test_main(void) {
  static const uint32_t hex[] = {0, 0xDEADBEEFu, 0x0000ABCDu, 0xFFFFFFFFu};
  static const int32_t dec[] = {0, 7, -1, 123456789, INT32_MAX, INT32_MIN, -1000, 10};
  uart1_puts("hello, world\n");
  uart1_putc('[');
  uart1_puts("");
  uart1_putc(']');
  uart1_putc('\n');
  for (unsigned i = 0; i < sizeof hex / sizeof hex[0]; i++) {
    uart1_put_hex(hex[i]);
    uart1_putc('\n');
  }
  for (unsigned i = 0; i < sizeof dec / sizeof dec[0]; i++) {
    uart1_put_dec(dec[i]);
    uart1_putc('\n');
  }
  crucible_report("cr1", USART1->CR1);
  crucible_report("brr", USART1->BRR);
  return 0;
}
