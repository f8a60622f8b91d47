#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

void uart_tx_init(void);
void uart_write(const char *data, uint32_t len);
uint32_t uart_tx_pending(void);

static uint32_t len(const char *s) {
  uint32_t n = 0;
  while (s[n]) {
    n++;
  }
  return n;
}

/* a watchdog on SysTick: uart_write blocking while the USART interrupt is off (a ring that
   holds fewer than 16 bytes) ends the run instead of hanging it */
static volatile uint32_t armed, ticks;
/* rescue mode: instead of ending the run, the first tick turns USART1's interrupt back on
   (uart_write blocked on a full ring is let go) and counts that it had to */
static volatile uint32_t rescue, rescued;

void SysTick_Handler(void) {
  if (rescue) {
    rescue = 0;
    rescued++;
    SysTick->CTRL = 0;
    NVIC_EnableIRQ(USART1_IRQn);
    return;
  }
  if (armed && ++ticks >= 2u) {
    crucible_print("\n!blocked\n");
    crucible_exit(CRUCIBLE_EXIT_WAIT);
  }
}

static void watchdog(uint32_t on) {
  ticks = 0;
  SysTick->LOAD = 1000000u;
  SysTick->VAL = 0;
  SysTick->CTRL = on ? (SysTick_CTRL_ENABLE | SysTick_CTRL_TICKINT | SysTick_CTRL_CLKSOURCE) : 0;
  armed = on;
}

/* waits (bounded) until the ISR has sent everything, then ends the line */
static void drain(void) {
  for (uint32_t n = 0; uart_tx_pending() != 0; n++) {
    if (n == 200000u) {
      crucible_print("\n!stuck\n");
      crucible_exit(CRUCIBLE_EXIT_WAIT);
    }
  }
  crucible_print("\n");
}

int crucible_test_main(void) {
  /* uart_tx_init must set UE and TE itself, clear TXEIE and keep the rest (WAKE, bit 11) */
  USART1->CR1 = USART_CR1_TXEIE | (1u << 11);
  uart_tx_init();
  crucible_report("cr1", USART1->CR1);
  crucible_report_dec("nvic", (int32_t)((NVIC->ISER[USART1_IRQn >> 5] >> (USART1_IRQn & 31)) & 1u));

  /* USART1's interrupt off in the NVIC: the bytes stay queued */
  NVIC_DisableIRQ(USART1_IRQn);
  uart_write("ABCDEFGH", 8);
  crucible_report_dec("pending", (int32_t)uart_tx_pending());
  crucible_report_dec("txeie", (int32_t)((USART1->CR1 >> 7) & 1u));
  /* the handler entered with TXEIE clear sends nothing */
  USART1->CR1 &= ~USART_CR1_TXEIE;
  NVIC_EnableIRQ(USART1_IRQn);
  NVIC_SetPendingIRQ(USART1_IRQn);
  crucible_report_dec("pending_txeie_off", (int32_t)uart_tx_pending());
  USART1->CR1 |= USART_CR1_TXEIE;
  NVIC_SetPendingIRQ(USART1_IRQn);
  drain();

  /* exactly the capacity: 16 bytes fit without blocking */
  NVIC_DisableIRQ(USART1_IRQn);
  watchdog(1);
  uart_write("0123456789abcdef", 16);
  watchdog(0);
  crucible_report_dec("pending", (int32_t)uart_tx_pending());

  /* one more byte while the ring is full: uart_write must wait for a free slot (the tick
     lets the interrupt in) rather than overwrite the oldest queued byte */
  rescued = 0;
  rescue = 1;
  SysTick->LOAD = 1000000u;
  SysTick->VAL = 0;
  SysTick->CTRL = SysTick_CTRL_ENABLE | SysTick_CTRL_TICKINT | SysTick_CTRL_CLKSOURCE;
  uart_write("+", 1);
  rescue = 0;
  SysTick->CTRL = 0;
  NVIC_EnableIRQ(USART1_IRQn);
  drain();
  crucible_report_dec("rescued", (int32_t)rescued);

  /* more than the buffer holds: uart_write blocks while full */
  const char *big = "The quick brown fox jumps over the lazy dog, 0123456789!";
  uart_write(big, len(big));
  drain();
  crucible_report_dec("pending", (int32_t)uart_tx_pending());
  crucible_report_dec("txeie", (int32_t)((USART1->CR1 >> 7) & 1u));
  crucible_report("cr1", USART1->CR1); /* TXEIE cleared, nothing else touched */

  /* a partial write and an empty one */
  uart_write("xyz-ignored", 3);
  uart_write("never", 0);
  drain();
  crucible_report_dec("pending", (int32_t)uart_tx_pending());
  return 0;
}
