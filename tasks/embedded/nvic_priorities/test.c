#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

void irq_priorities_init(void);

int crucible_test_main(void) {
  /* neighbours and an earlier setting the function must keep or overwrite */
  NVIC->IP[EXTI0_IRQn] = 0xA0u;
  NVIC->IP[5] = 0x50u;
  NVIC->IP[7] = 0x60u;
  NVIC->IP[27] = 0x70u;
  NVIC->IP[29] = 0x80u;
  NVIC->IP[36] = 0x90u;
  NVIC->IP[38] = 0xB0u;
  SCB->SHP[10] = 0xC0u; /* PendSV */
  NVIC_EnableIRQ(TIM6_DAC_IRQn); /* an enable that must survive */
  irq_priorities_init();
  crucible_report("ip_exti0", NVIC->IP[EXTI0_IRQn]);
  crucible_report("ip_tim2", NVIC->IP[TIM2_IRQn]);
  crucible_report("ip_usart1", NVIC->IP[USART1_IRQn]);
  crucible_report("shp_systick", SCB->SHP[11]);
  crucible_report("shpr3", *(volatile uint32_t *)0xE000ED20u);
  crucible_report("ip_neigh", (uint32_t)NVIC->IP[5] | (uint32_t)NVIC->IP[7] << 8 |
                                  (uint32_t)NVIC->IP[27] << 16 | (uint32_t)NVIC->IP[29] << 24);
  crucible_report("ip_neigh2", (uint32_t)NVIC->IP[36] | (uint32_t)NVIC->IP[38] << 8 |
                                   (uint32_t)SCB->SHP[10] << 16);
  crucible_report("iser0", NVIC->ISER[0]);
  crucible_report("iser1", NVIC->ISER[1]);
  crucible_report("iser2", NVIC->ISER[2]);
  crucible_report_dec("prio_tim2", (int32_t)NVIC_GetPriority(TIM2_IRQn));
  crucible_report_dec("prio_systick", (int32_t)NVIC_GetPriority(SysTick_IRQn));
  NVIC->ICER[0] = 0xFFFFFFFFu;
  NVIC->ICER[1] = 0xFFFFFFFFu;
  return 0;
}
