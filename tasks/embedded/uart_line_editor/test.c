#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

#define CR1_WAKE (1u << 11) /* set before console_init: its read-modify-write keeps it */

void console_init(void);
int line_read(char *buf);

#define LINES 8

int crucible_test_main(void) {
  static struct {
    char buf[17];
    char guard[3];
  } line = {.guard = {'G', 'G', 'G'}};
  USART1->CR1 = CR1_WAKE;
  console_init();
  crucible_report("cr1", USART1->CR1);
  crucible_rx_ready(); /* the receiver is on: the input is sent now */
  for (int i = 0; i < LINES; i++) {
    int n = line_read(line.buf);
    crucible_print("@line=");
    crucible_print(line.buf);
    crucible_print("|\n");
    crucible_report_dec("len", n);
  }
  crucible_report_mem("guard", line.guard, sizeof line.guard);
  return 0;
}
