#include <stdint.h>

#include "stm32f4.h"

#define LED_PIN 5u

void led_init(void) {
  RCC->AHB1ENR |= RCC_AHB1ENR_GPIOAEN;
  GPIOA->MODER = (GPIOA->MODER & ~(3u << (2u * LED_PIN))) | (GPIO_MODER_OUTPUT << (2u * LED_PIN));
}

void led_on(void) { GPIOA->BSRR = 1u << LED_PIN; }

void led_off(void) { GPIOA->BSRR = 1u << (LED_PIN + 16u); }
