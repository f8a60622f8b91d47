#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

void order_init(void);
void order_run_masked(void);
void order_run_nested(void);
uint32_t order_log_len(void);
uint32_t order_log_at(uint32_t i);
void order_log_clear(void);

static void dump(const char *key) {
  uint8_t b[17];
  uint32_t n = order_log_len();
  for (uint32_t i = 0; i < n && i < 16u; i++) {
    b[i] = (uint8_t)order_log_at(i);
  }
  crucible_report_dec("len", (int32_t)n);
  crucible_report_mem(key, b, n < 16u ? n : 16u);
}

int crucible_test_main(void) {
  order_init();
  crucible_report("ip54", NVIC->IP[TIM6_DAC_IRQn]);
  crucible_report("ip55", NVIC->IP[TIM7_IRQn]);
  crucible_report("iser1", NVIC->ISER[1] & (3u << 22));
  dump("empty");
  order_run_masked();
  dump("masked");
  order_log_clear();
  order_run_nested();
  dump("nested");
  /* the flag is off again: TIM7 alone logs only itself */
  order_log_clear();
  NVIC_SetPendingIRQ(TIM7_IRQn);
  __DSB();
  __ISB();
  dump("plain");
  /* overflow: 9 masked rounds = 18 entries, 16 kept */
  order_log_clear();
  for (int i = 0; i < 9; i++) {
    order_run_masked();
  }
  dump("full");
  crucible_report_dec("beyond", (int32_t)order_log_at(16));
  crucible_report("ispr1", NVIC->ISPR[1] & (3u << 22));
  NVIC_DisableIRQ(TIM6_DAC_IRQn);
  NVIC_DisableIRQ(TIM7_IRQn);
  return 0;
}
