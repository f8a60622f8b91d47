/* Crucible's small HAL for the STM32F407: the API surface a task may allow. A task's
   `interface.allowed_api` lists which of these (and of CMSIS's inline helpers) a candidate may
   call; a call to one it does not list, or to one that does not exist, fails the link gate.

   Clocks: the reset default, HSI at 16 MHz, with AHB, APB1 and APB2 undivided, so every
   peripheral clock is HAL_PCLK_HZ. */
#ifndef CRUCIBLE_HAL_H
#define CRUCIBLE_HAL_H

#include <stdint.h>

#include "stm32f4.h"

#define HAL_PCLK_HZ 16000000UL

/* GPIO: `pin` 0..15; modes are GPIO_MODER_* */
void hal_gpio_clock_enable(GPIO_TypeDef *port);
void hal_gpio_mode(GPIO_TypeDef *port, uint32_t pin, uint32_t mode);
void hal_gpio_af(GPIO_TypeDef *port, uint32_t pin, uint32_t af);
void hal_gpio_write(GPIO_TypeDef *port, uint32_t pin, int high);
void hal_gpio_toggle(GPIO_TypeDef *port, uint32_t pin);
int hal_gpio_read(GPIO_TypeDef *port, uint32_t pin);

/* USART: 8N1 at `baud` (clock enabled, BRR = HAL_PCLK_HZ / baud, UE | TE | RE) */
void hal_uart_init(USART_TypeDef *uart, uint32_t baud);
void hal_uart_putc(USART_TypeDef *uart, char c);
void hal_uart_write(USART_TypeDef *uart, const char *text);
int hal_uart_getc(USART_TypeDef *uart); /* blocks until a byte arrives */

/* timers: clock on, PSC, ARR, update event; hal_tim_start sets CEN */
void hal_tim_clock_enable(TIM_TypeDef *tim);
void hal_tim_base(TIM_TypeDef *tim, uint32_t prescaler, uint32_t period);
void hal_tim_start(TIM_TypeDef *tim);

/* SysTick: reload = ticks - 1, core clock, interrupt on; 0 on success (CMSIS SysTick_Config) */
uint32_t hal_systick_config(uint32_t ticks);

/* NVIC */
void hal_nvic_enable(IRQn_Type irq, uint32_t priority);
void hal_nvic_disable(IRQn_Type irq);

#endif
