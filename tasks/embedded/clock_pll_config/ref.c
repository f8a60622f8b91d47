#include <stdint.h>

#include "stm32f4.h"

#define RCC_APB1ENR_PWREN_BIT (1u << 28)
#define PWR_CR_VOS (1u << 14)
#define FLASH_ACR_LATENCY_5WS 5u
#define FLASH_ACR_PRFTEN (1u << 8)
#define FLASH_ACR_ICEN (1u << 9)
#define FLASH_ACR_DCEN (1u << 10)
#define RCC_CFGR_FIELDS ((0xFu << RCC_CFGR_HPRE_Pos) | (7u << RCC_CFGR_PPRE1_Pos) | \
                         (7u << RCC_CFGR_PPRE2_Pos) | (3u << RCC_CFGR_SW_Pos))

uint32_t pllcfgr_encode(uint32_t m, uint32_t n, uint32_t p, uint32_t q, int hse) {
  return (m & 0x3Fu) | ((n & 0x1FFu) << 6) | (((p / 2u - 1u) & 3u) << 16) |
         ((hse ? 1u : 0u) << 22) | ((q & 0xFu) << 24);
}

/* No waits on HSERDY / PLLRDY / SWS: the emulator does not model RCC (on silicon each step
   would wait for its ready flag before the next). */
void clock_setup_168mhz(void) {
  RCC->CR |= RCC_CR_HSEON;
  RCC->APB1ENR |= RCC_APB1ENR_PWREN_BIT;
  PWR->CR |= PWR_CR_VOS;
  FLASH->ACR = FLASH_ACR_LATENCY_5WS | FLASH_ACR_PRFTEN | FLASH_ACR_ICEN | FLASH_ACR_DCEN;
  RCC->PLLCFGR = pllcfgr_encode(8, 336, 2, 7, 1);
  RCC->CR |= RCC_CR_PLLON;
  RCC->CFGR = (RCC->CFGR & ~RCC_CFGR_FIELDS) | (0u << RCC_CFGR_HPRE_Pos) |
              (5u << RCC_CFGR_PPRE1_Pos) | (4u << RCC_CFGR_PPRE2_Pos) | (2u << RCC_CFGR_SW_Pos);
}
