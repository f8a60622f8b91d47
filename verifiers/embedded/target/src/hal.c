/* Crucible's small HAL (see hal.h): register-level, no state of its own. */
#include "hal.h"

static uint32_t gpio_index(GPIO_TypeDef *port) {
  return ((uint32_t)port - GPIOA_BASE) / 0x400u;
}

void hal_gpio_clock_enable(GPIO_TypeDef *port) {
  RCC->AHB1ENR |= 1UL << gpio_index(port);
  (void)RCC->AHB1ENR; /* RM0090: a read after the enable lets the clock reach the port */
}

void hal_gpio_mode(GPIO_TypeDef *port, uint32_t pin, uint32_t mode) {
  port->MODER = (port->MODER & ~(3UL << (2u * pin))) | ((mode & 3u) << (2u * pin));
}

void hal_gpio_af(GPIO_TypeDef *port, uint32_t pin, uint32_t af) {
  volatile uint32_t *afr = &port->AFR[pin >> 3];
  uint32_t shift = 4u * (pin & 7u);
  *afr = (*afr & ~(0xFUL << shift)) | ((af & 0xFu) << shift);
  hal_gpio_mode(port, pin, GPIO_MODER_AF);
}

void hal_gpio_write(GPIO_TypeDef *port, uint32_t pin, int high) {
  port->BSRR = high ? (1UL << pin) : (1UL << (pin + 16u));
}

void hal_gpio_toggle(GPIO_TypeDef *port, uint32_t pin) { port->ODR ^= 1UL << pin; }

int hal_gpio_read(GPIO_TypeDef *port, uint32_t pin) { return (int)((port->IDR >> pin) & 1u); }

static void uart_clock_enable(USART_TypeDef *uart) {
  if (uart == USART1) {
    RCC->APB2ENR |= RCC_APB2ENR_USART1EN;
  } else if (uart == USART6) {
    RCC->APB2ENR |= RCC_APB2ENR_USART6EN;
  } else if (uart == USART2) {
    RCC->APB1ENR |= RCC_APB1ENR_USART2EN;
  } else if (uart == USART3) {
    RCC->APB1ENR |= RCC_APB1ENR_USART3EN;
  }
}

void hal_uart_init(USART_TypeDef *uart, uint32_t baud) {
  uart_clock_enable(uart);
  uart->CR1 = 0;
  uart->BRR = (HAL_PCLK_HZ + baud / 2u) / baud;
  uart->CR1 = USART_CR1_UE | USART_CR1_TE | USART_CR1_RE;
}

void hal_uart_putc(USART_TypeDef *uart, char c) {
  while (!(uart->SR & USART_SR_TXE)) {
  }
  uart->DR = (uint32_t)(uint8_t)c;
}

void hal_uart_write(USART_TypeDef *uart, const char *text) {
  while (*text) {
    hal_uart_putc(uart, *text++);
  }
}

int hal_uart_getc(USART_TypeDef *uart) {
  while (!(uart->SR & USART_SR_RXNE)) {
  }
  return (int)(uart->DR & 0xFFu);
}

void hal_tim_clock_enable(TIM_TypeDef *tim) {
  RCC->APB1ENR |= 1UL << (((uint32_t)tim - TIM2_BASE) / 0x400u);
}

void hal_tim_base(TIM_TypeDef *tim, uint32_t prescaler, uint32_t period) {
  tim->PSC = prescaler;
  tim->ARR = period;
  tim->EGR = TIM_EGR_UG;
  tim->SR = 0;
}

void hal_tim_start(TIM_TypeDef *tim) { tim->CR1 |= TIM_CR1_CEN; }

uint32_t hal_systick_config(uint32_t ticks) {
  if (ticks == 0u || ticks - 1u > 0xFFFFFFu) {
    return 1u;
  }
  SysTick->LOAD = ticks - 1u;
  SysTick->VAL = 0;
  SysTick->CTRL = SysTick_CTRL_CLKSOURCE | SysTick_CTRL_TICKINT | SysTick_CTRL_ENABLE;
  return 0u;
}

void hal_nvic_enable(IRQn_Type irq, uint32_t priority) {
  NVIC_SetPriority(irq, priority);
  NVIC_EnableIRQ(irq);
}

void hal_nvic_disable(IRQn_Type irq) { NVIC_DisableIRQ(irq); }
