#include <stdint.h>

#include "stm32f4.h"

#define RX_SIZE 8u /* a power of two: the free-running indices wrap cleanly */

/* single producer (the ISR) and single consumer (rx_read): each index has one writer;
   head - tail is the count (0..RX_SIZE) */
static volatile uint8_t rx_buf[RX_SIZE];
static volatile uint32_t rx_head;    /* written by the ISR only */
static volatile uint32_t rx_tail;    /* written by rx_read only */
static volatile uint32_t rx_lost;    /* written by the ISR only */

void uart_rx_init(void) {
  rx_head = 0;
  rx_tail = 0;
  rx_lost = 0;
  USART1->CR1 |= USART_CR1_UE | USART_CR1_TE | USART_CR1_RE | USART_CR1_RXNEIE;
  NVIC_EnableIRQ(USART1_IRQn);
}

uint32_t rx_available(void) { return rx_head - rx_tail; }

int rx_read(void) {
  if (rx_head == rx_tail) {
    return -1;
  }
  int c = rx_buf[rx_tail % RX_SIZE];
  rx_tail = rx_tail + 1u;
  return c;
}

uint32_t rx_dropped(void) { return rx_lost; }

void USART1_IRQHandler(void) {
  if (!(USART1->SR & USART_SR_RXNE)) {
    return;
  }
  uint8_t c = (uint8_t)(USART1->DR & 0xFFu); /* reading DR clears RXNE */
  if (rx_head - rx_tail >= RX_SIZE) {
    rx_lost = rx_lost + 1u; /* full: the new byte is dropped */
  } else {
    rx_buf[rx_head % RX_SIZE] = c;
    rx_head = rx_head + 1u;
  }
}
