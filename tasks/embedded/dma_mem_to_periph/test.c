#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

void dma_tx_init(void);
void dma_tx_start(const uint8_t *buf, uint16_t len);
int dma_tx_busy(void);

static uint8_t msg[16] = "hello, dma!\r\n";
static uint8_t big[1000];

/* the DMA is not modelled: the test raises the transfer-complete interrupt itself */
static void complete(void) {
  NVIC_SetPendingIRQ(DMA2_Stream7_IRQn);
  for (uint32_t n = 0; dma_tx_busy(); n++) {
    if (n == 200000u) {
      crucible_print("!stuck\n");
      crucible_exit(CRUCIBLE_EXIT_WAIT);
    }
  }
}

int crucible_test_main(void) {
  USART1->CR3 = 1u << 11; /* ONEBIT, set by "the system": the read-modify-write keeps it */
  dma_tx_init();
  crucible_report_dec("nvic_enabled",
                      (int32_t)((NVIC->ISER[DMA2_Stream7_IRQn >> 5] >> (DMA2_Stream7_IRQn & 31)) & 1u));
  crucible_report("nvic_priority", NVIC->IP[DMA2_Stream7_IRQn]);
  crucible_report_dec("busy", dma_tx_busy());
  dma_tx_start(msg, 13);
  crucible_report_dec("busy", dma_tx_busy());
  crucible_report("usart1_cr3", USART1->CR3);
  complete();
  crucible_report_dec("busy", dma_tx_busy());
  dma_tx_start(msg, 0); /* nothing to send: nothing starts */
  crucible_report_dec("busy", dma_tx_busy());
  dma_tx_start(big, sizeof big);
  crucible_report_dec("busy", dma_tx_busy());
  complete();
  crucible_report_dec("busy", dma_tx_busy());
  return 0;
}
