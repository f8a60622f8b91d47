#include <stdint.h>

#include "hal.h"

#define LED_FIRST 12u
#define LED_LAST 15u

void blink(uint32_t rounds) {
  hal_gpio_clock_enable(GPIOD);
  for (uint32_t pin = LED_FIRST; pin <= LED_LAST; pin++) {
    hal_gpio_mode(GPIOD, pin, GPIO_MODER_OUTPUT);
  }
  for (uint32_t pin = LED_FIRST; pin <= LED_LAST; pin++) {
    hal_gpio_write(GPIOD, pin, 0);
  }
  while (rounds--) {
    for (uint32_t pin = LED_FIRST; pin <= LED_LAST; pin++) {
      hal_gpio_write(GPIOD, pin, 1);
    }
    for (uint32_t pin = LED_LAST + 1u; pin-- > LED_FIRST;) {
      hal_gpio_toggle(GPIOD, pin);
    }
  }
}
