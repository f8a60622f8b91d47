#include <stdint.h>

#include "stm32f4.h"

#define LOG_SIZE 16u
#define PRIO_HIGH 2u /* TIM6_DAC */
#define PRIO_LOW 6u  /* TIM7 */

static volatile uint8_t log_buf[LOG_SIZE];
static volatile uint32_t log_len;
static volatile uint32_t nested;

static void log_add(uint8_t v) {
  if (log_len < LOG_SIZE) {
    log_buf[log_len] = v;
    log_len = log_len + 1u;
  }
}

void TIM6_DAC_IRQHandler(void) { log_add((uint8_t)TIM6_DAC_IRQn); }

void TIM7_IRQHandler(void) {
  log_add((uint8_t)TIM7_IRQn);
  if (nested) {
    NVIC_SetPendingIRQ(TIM6_DAC_IRQn);
    __DSB();
    __ISB();
    log_add(255u);
  }
}

void order_log_clear(void) { log_len = 0; }

uint32_t order_log_len(void) { return log_len; }

uint32_t order_log_at(uint32_t i) { return i < log_len ? log_buf[i] : 0u; }

void order_init(void) {
  NVIC_SetPriority(TIM6_DAC_IRQn, PRIO_HIGH);
  NVIC_SetPriority(TIM7_IRQn, PRIO_LOW);
  NVIC_ClearPendingIRQ(TIM6_DAC_IRQn);
  NVIC_ClearPendingIRQ(TIM7_IRQn);
  nested = 0;
  order_log_clear();
  NVIC_EnableIRQ(TIM6_DAC_IRQn);
  NVIC_EnableIRQ(TIM7_IRQn);
}

void order_run_masked(void) {
  __disable_irq();
  NVIC_SetPendingIRQ(TIM7_IRQn);
  NVIC_SetPendingIRQ(TIM6_DAC_IRQn);
  __DSB();
  __enable_irq();
  __ISB();
}

void order_run_nested(void) {
  nested = 1;
  NVIC_SetPendingIRQ(TIM7_IRQn);
  __DSB();
  __ISB();
  nested = 0;
}
