#include <stdint.h>

#include "stm32f4.h"

#define CORE_HZ 16000000u
#define TICK_HZ 1000u

static volatile uint32_t ticks;

void SysTick_Handler(void) { ticks++; }

void systick_init(void) {
  ticks = 0;
  SysTick->LOAD = CORE_HZ / TICK_HZ - 1u;
  SysTick->VAL = 0;
  SysTick->CTRL = SysTick_CTRL_CLKSOURCE | SysTick_CTRL_TICKINT | SysTick_CTRL_ENABLE;
}

uint32_t millis(void) { return ticks; }

void delay_ms(uint32_t ms) {
  uint32_t start = ticks;
  while (ticks - start < ms) {
  }
}
