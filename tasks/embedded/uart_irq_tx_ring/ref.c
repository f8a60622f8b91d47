#include <stdint.h>

#include "stm32f4.h"

#define TX_SIZE 16u /* a power of two: the free-running indices wrap cleanly */

/* single producer (uart_write) and single consumer (the ISR): each index has one writer, so
   no critical section is needed; head - tail is the count (0..TX_SIZE) */
static volatile uint8_t tx_buf[TX_SIZE];
static volatile uint32_t tx_head; /* written by uart_write only */
static volatile uint32_t tx_tail; /* written by the ISR only */

void uart_tx_init(void) {
  tx_head = 0;
  tx_tail = 0;
  USART1->CR1 = (USART1->CR1 & ~USART_CR1_TXEIE) | USART_CR1_UE | USART_CR1_TE;
  NVIC_EnableIRQ(USART1_IRQn);
}

void uart_write(const char *data, uint32_t len) {
  for (uint32_t i = 0; i < len; i++) {
    while (tx_head - tx_tail >= TX_SIZE) {
      /* full: the ISR frees a slot */
    }
    tx_buf[tx_head % TX_SIZE] = (uint8_t)data[i];
    tx_head = tx_head + 1u;
    USART1->CR1 |= USART_CR1_TXEIE;
    NVIC_SetPendingIRQ(USART1_IRQn); /* kick: QEMU's USART raises no TXE interrupt */
  }
}

uint32_t uart_tx_pending(void) { return tx_head - tx_tail; }

void USART1_IRQHandler(void) {
  if (!(USART1->CR1 & USART_CR1_TXEIE)) {
    return;
  }
  while (tx_head != tx_tail && (USART1->SR & USART_SR_TXE)) {
    USART1->DR = tx_buf[tx_tail % TX_SIZE];
    tx_tail = tx_tail + 1u;
  }
  if (tx_head == tx_tail) {
    USART1->CR1 &= ~USART_CR1_TXEIE; /* nothing left: stop the TXE interrupt */
  }
}
