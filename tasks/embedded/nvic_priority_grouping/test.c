#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

void set_priority_grouping(void);
uint32_t encode_priority(uint32_t preempt, uint32_t sub);
void apply_priorities(void);

int crucible_test_main(void) {
  crucible_report("aircr_reset", SCB->AIRCR);
  NVIC->IP[28] = 0x40u;
  NVIC->IP[30] = 0x50u;
  NVIC->IP[37] = 0x60u;
  NVIC->IP[39] = 0x70u;
  NVIC->IP[6] = 0x80u;
  NVIC->IP[8] = 0x90u;
  set_priority_grouping();
  crucible_report("aircr", SCB->AIRCR);
  crucible_report("prigroup", (SCB->AIRCR >> 8) & 7u);
  static const uint8_t args[][2] = {{0, 0}, {3, 3}, {1, 2}, {2, 1}, {0, 3}, {3, 0}, {4, 0}, {0, 7}, {7, 5}};
  char key[] = "enc_p_s";
  for (uint32_t i = 0; i < sizeof args / sizeof args[0]; i++) {
    key[4] = (char)('0' + args[i][0]);
    key[6] = (char)('0' + args[i][1]);
    crucible_report_dec(key, (int32_t)encode_priority(args[i][0], args[i][1]));
  }
  apply_priorities();
  crucible_report("ip_tim3", NVIC->IP[TIM3_IRQn]);
  crucible_report("ip_usart2", NVIC->IP[USART2_IRQn]);
  crucible_report("ip_exti1", NVIC->IP[EXTI1_IRQn]);
  crucible_report("ip_others", (uint32_t)NVIC->IP[28] | (uint32_t)NVIC->IP[30] << 8 |
                                   (uint32_t)NVIC->IP[37] << 16 | (uint32_t)NVIC->IP[39] << 24);
  crucible_report("ip_others2", (uint32_t)NVIC->IP[6] | (uint32_t)NVIC->IP[8] << 8);
  crucible_report("iser0", NVIC->ISER[0]);
  crucible_report("iser1", NVIC->ISER[1]);
  return 0;
}
