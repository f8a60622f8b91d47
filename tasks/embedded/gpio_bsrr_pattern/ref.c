#include <stdint.h>

#include "stm32f4.h"

#define BUS_SHIFT 8u

void bus_init(void) {
  RCC->AHB1ENR |= RCC_AHB1ENR_GPIODEN;
  GPIOD->MODER = (GPIOD->MODER & 0x0000FFFFu) | 0x55550000u; /* PD8..PD15: output */
}

void bus_write(uint32_t value) {
  uint32_t v = value & 0xFFu;
  GPIOD->BSRR = (v << BUS_SHIFT) | ((~v & 0xFFu) << (BUS_SHIFT + 16u));
}
