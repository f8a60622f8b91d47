#include "harness.h"

void echo_init(void);
int echo_lines(void);

int crucible_test_main(void) {
  echo_init();
  crucible_rx_ready(); /* the receiver is on: the input is sent now */
  int n = echo_lines();
  crucible_report_dec("lines", n);
  return 0;
}
