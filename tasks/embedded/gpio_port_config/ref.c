#include <stdint.h>

#include "stm32f4.h"

/* one 2-bit field (MODER, OSPEEDR, PUPDR) or 1-bit field (OTYPER) per pin */
#define F2(pin, v) ((uint32_t)(v) << (2u * (pin)))
#define F1(pin, v) ((uint32_t)(v) << (pin))

static void rmw(volatile uint32_t *reg, uint32_t clear, uint32_t set) {
  *reg = (*reg & ~clear) | set;
}

void ports_init(void) {
  RCC->AHB1ENR |= RCC_AHB1ENR_GPIOBEN | RCC_AHB1ENR_GPIOCEN;

  /* GPIOB: PB0 PP medium, PB6/PB7 OD very high pull-up, PB12 input pull-down */
  const uint32_t b2 = F2(0, 3) | F2(6, 3) | F2(7, 3) | F2(12, 3);
  rmw(&GPIOB->MODER, b2, F2(0, 1) | F2(6, 1) | F2(7, 1) | F2(12, 0));
  rmw(&GPIOB->OTYPER, F1(0, 1) | F1(6, 1) | F1(7, 1), F1(6, 1) | F1(7, 1));
  rmw(&GPIOB->OSPEEDR, F2(0, 3) | F2(6, 3) | F2(7, 3), F2(0, 1) | F2(6, 3) | F2(7, 3));
  rmw(&GPIOB->PUPDR, b2, F2(6, 1) | F2(7, 1) | F2(12, 2));

  /* GPIOC: PC0 analog, PC8 PP high, PC9 OD low, PC13 input pull-up */
  const uint32_t c2 = F2(0, 3) | F2(8, 3) | F2(9, 3) | F2(13, 3);
  rmw(&GPIOC->MODER, c2, F2(0, 3) | F2(8, 1) | F2(9, 1) | F2(13, 0));
  rmw(&GPIOC->OTYPER, F1(8, 1) | F1(9, 1), F1(9, 1));
  rmw(&GPIOC->OSPEEDR, F2(8, 3) | F2(9, 3), F2(8, 2) | F2(9, 0));
  rmw(&GPIOC->PUPDR, c2, F2(13, 1));
}
