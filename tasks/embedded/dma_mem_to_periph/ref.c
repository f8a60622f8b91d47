#include <stdint.h>

#include "stm32f4.h"

#define USART_CR3_DMAT (1u << 7)
#define DMA_HIFCR_STREAM7_ALL 0x0F400000u /* CTCIF7 CHTIF7 CTEIF7 CDMEIF7 CFEIF7 */
#define DMA_SxCR_PL_HIGH (2u << 16)
#define TX_STREAM (&DMA2->S[7])

static volatile int busy;

void dma_tx_init(void) {
  busy = 0;
  NVIC_SetPriority(DMA2_Stream7_IRQn, 6);
  NVIC_EnableIRQ(DMA2_Stream7_IRQn);
}

void dma_tx_start(const uint8_t *buf, uint16_t len) {
  if (len == 0) {
    return;
  }
  RCC->AHB1ENR |= RCC_AHB1ENR_DMA2EN;
  TX_STREAM->CR = 0; /* on silicon: then wait for EN to read 0 (not modelled here) */
  DMA2->HIFCR = DMA_HIFCR_STREAM7_ALL;
  TX_STREAM->PAR = (uint32_t)&USART1->DR;
  TX_STREAM->M0AR = (uint32_t)buf;
  TX_STREAM->NDTR = len;
  const uint32_t cr = (4u << DMA_SxCR_CHSEL_Pos) | DMA_SxCR_PL_HIGH | DMA_SxCR_MINC |
                      (1u << DMA_SxCR_DIR_Pos) | DMA_SxCR_TCIE;
  TX_STREAM->CR = cr;
  busy = 1;
  TX_STREAM->CR = cr | DMA_SxCR_EN;
  USART1->CR3 |= USART_CR3_DMAT;
}

int dma_tx_busy(void) { return busy; }

void DMA2_Stream7_IRQHandler(void) {
  DMA2->HIFCR = DMA_HIFCR_STREAM7_ALL;
  busy = 0;
}
