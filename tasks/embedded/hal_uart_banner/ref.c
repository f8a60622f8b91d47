#include <stdint.h>

#include "hal.h"

void banner(void) {
  char line[] = "count 0\n";
  hal_uart_init(USART1, 115200u);
  hal_uart_write(USART1, "== crucible uart demo ==\n");
  for (char d = '0'; d <= '9'; d++) {
    line[6] = d;
    hal_uart_write(USART1, line);
  }
}
