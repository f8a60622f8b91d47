#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

void exti0_init(void);
void exti0_trigger_soft(void);
uint32_t exti0_count(void);

int crucible_test_main(void) {
  /* settings of other lines that must survive, and a wrong EXTI0 mapping and edge */
  SYSCFG->EXTICR[0] = 0x1238u; /* EXTI0 on port I (8): all four bits of the field to clear */
  EXTI->IMR = EXTI_LINE(5);
  EXTI->RTSR = EXTI_LINE(5);
  EXTI->FTSR = EXTI_LINE(0) | EXTI_LINE(3);
  exti0_init();
  crucible_report("exticr0", SYSCFG->EXTICR[0]);
  crucible_report("imr", EXTI->IMR);
  crucible_report("rtsr", EXTI->RTSR);
  crucible_report("ftsr", EXTI->FTSR);
  crucible_report_dec("iser_exti0", (NVIC->ISER[0] >> EXTI0_IRQn) & 1u);
  crucible_report_dec("count0", (int32_t)exti0_count());
  /* another line pending (line 5, unmasked, its IRQ not enabled): the handler's clear of PR0
     must leave it pending; `EXTI->PR |= EXTI_LINE(0)` writes it back as 1 and clears it */
  EXTI->SWIER = EXTI_LINE(5);
  crucible_report("pr5_before", EXTI->PR & EXTI_LINE(5));
  for (uint32_t k = 1; k <= 3u; k++) {
    exti0_trigger_soft();
    crucible_report("swier", EXTI->SWIER & 1u);
    NVIC_SetPendingIRQ(EXTI0_IRQn);
    uint32_t spins = 0;
    while (exti0_count() < k && spins < 2000000u) {
      spins++;
    }
    crucible_report_dec("count", (int32_t)exti0_count());
  }
  crucible_report("pr", EXTI->PR);
  EXTI->PR = EXTI_LINE(5);
  NVIC_DisableIRQ(EXTI0_IRQn);
  return 0;
}
