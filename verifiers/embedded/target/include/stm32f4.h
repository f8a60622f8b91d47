/* STM32F407 (Cortex-M4F) register definitions for Crucible's embedded tasks.

   Written for Crucible from RM0090 and the ARMv7-M architecture manual, in CMSIS's names
   (RCC->AHB1ENR, GPIOA->MODER, USART1->BRR, NVIC->ISER[0], SCB->CFSR ...). Every base
   address, register offset and IRQ number below is checked against the chip's register
   map (STM32F41x.svd, shipped in the pyocd package) by tests/verifiers/test_embedded_target.py
   through regmap.json. QEMU's netduinoplus2 is an STM32F405 with the same peripheral map. */
#ifndef CRUCIBLE_STM32F4_H
#define CRUCIBLE_STM32F4_H

#include <stdint.h>

#define __IO volatile
#define __I volatile const

/* ---- interrupt numbers (position in the vector table after the 16 system entries) ---- */
typedef enum {
  NonMaskableInt_IRQn = -14,
  MemoryManagement_IRQn = -12,
  BusFault_IRQn = -11,
  UsageFault_IRQn = -10,
  SVCall_IRQn = -5,
  DebugMonitor_IRQn = -4,
  PendSV_IRQn = -2,
  SysTick_IRQn = -1,
  WWDG_IRQn = 0,
  PVD_IRQn = 1,
  TAMP_STAMP_IRQn = 2,
  RTC_WKUP_IRQn = 3,
  FLASH_IRQn = 4,
  RCC_IRQn = 5,
  EXTI0_IRQn = 6,
  EXTI1_IRQn = 7,
  EXTI2_IRQn = 8,
  EXTI3_IRQn = 9,
  EXTI4_IRQn = 10,
  DMA1_Stream0_IRQn = 11,
  DMA1_Stream1_IRQn = 12,
  DMA1_Stream2_IRQn = 13,
  DMA1_Stream3_IRQn = 14,
  DMA1_Stream4_IRQn = 15,
  DMA1_Stream5_IRQn = 16,
  DMA1_Stream6_IRQn = 17,
  ADC_IRQn = 18,
  CAN1_TX_IRQn = 19,
  CAN1_RX0_IRQn = 20,
  CAN1_RX1_IRQn = 21,
  CAN1_SCE_IRQn = 22,
  EXTI9_5_IRQn = 23,
  TIM1_BRK_TIM9_IRQn = 24,
  TIM1_UP_TIM10_IRQn = 25,
  TIM1_TRG_COM_TIM11_IRQn = 26,
  TIM1_CC_IRQn = 27,
  TIM2_IRQn = 28,
  TIM3_IRQn = 29,
  TIM4_IRQn = 30,
  I2C1_EV_IRQn = 31,
  I2C1_ER_IRQn = 32,
  I2C2_EV_IRQn = 33,
  I2C2_ER_IRQn = 34,
  SPI1_IRQn = 35,
  SPI2_IRQn = 36,
  USART1_IRQn = 37,
  USART2_IRQn = 38,
  USART3_IRQn = 39,
  EXTI15_10_IRQn = 40,
  RTC_Alarm_IRQn = 41,
  OTG_FS_WKUP_IRQn = 42,
  TIM8_BRK_TIM12_IRQn = 43,
  TIM8_UP_TIM13_IRQn = 44,
  TIM8_TRG_COM_TIM14_IRQn = 45,
  TIM8_CC_IRQn = 46,
  DMA1_Stream7_IRQn = 47,
  FSMC_IRQn = 48,
  SDIO_IRQn = 49,
  TIM5_IRQn = 50,
  SPI3_IRQn = 51,
  UART4_IRQn = 52,
  UART5_IRQn = 53,
  TIM6_DAC_IRQn = 54,
  TIM7_IRQn = 55,
  DMA2_Stream0_IRQn = 56,
  DMA2_Stream1_IRQn = 57,
  DMA2_Stream2_IRQn = 58,
  DMA2_Stream3_IRQn = 59,
  DMA2_Stream4_IRQn = 60,
  ETH_IRQn = 61,
  ETH_WKUP_IRQn = 62,
  CAN2_TX_IRQn = 63,
  CAN2_RX0_IRQn = 64,
  CAN2_RX1_IRQn = 65,
  CAN2_SCE_IRQn = 66,
  OTG_FS_IRQn = 67,
  DMA2_Stream5_IRQn = 68,
  DMA2_Stream6_IRQn = 69,
  DMA2_Stream7_IRQn = 70,
  USART6_IRQn = 71,
  I2C3_EV_IRQn = 72,
  I2C3_ER_IRQn = 73,
  OTG_HS_EP1_OUT_IRQn = 74,
  OTG_HS_EP1_IN_IRQn = 75,
  OTG_HS_WKUP_IRQn = 76,
  OTG_HS_IRQn = 77,
  DCMI_IRQn = 78,
  CRYP_IRQn = 79,
  HASH_RNG_IRQn = 80,
  FPU_IRQn = 81,} IRQn_Type;

#define CRUCIBLE_IRQ_COUNT 82
#define __NVIC_PRIO_BITS 4 /* STM32F4: 16 priority levels, in the top 4 bits of each byte */

/* ---- peripherals ---- */
typedef struct {
  __IO uint32_t CR, PLLCFGR, CFGR, CIR, AHB1RSTR, AHB2RSTR, AHB3RSTR;
  uint32_t RESERVED0;
  __IO uint32_t APB1RSTR, APB2RSTR;
  uint32_t RESERVED1[2];
  __IO uint32_t AHB1ENR, AHB2ENR, AHB3ENR;
  uint32_t RESERVED2;
  __IO uint32_t APB1ENR, APB2ENR;
  uint32_t RESERVED3[2];
  __IO uint32_t AHB1LPENR, AHB2LPENR, AHB3LPENR;
  uint32_t RESERVED4;
  __IO uint32_t APB1LPENR, APB2LPENR;
  uint32_t RESERVED5[2];
  __IO uint32_t BDCR, CSR;
  uint32_t RESERVED6[2];
  __IO uint32_t SSCGR, PLLI2SCFGR;
} RCC_TypeDef;

typedef struct {
  __IO uint32_t MODER, OTYPER, OSPEEDR, PUPDR, IDR, ODR, BSRR, LCKR;
  __IO uint32_t AFR[2]; /* AFRL, AFRH */
} GPIO_TypeDef;

typedef struct {
  __IO uint32_t SR, DR, BRR, CR1, CR2, CR3, GTPR;
} USART_TypeDef;

typedef struct {
  __IO uint32_t CR1, CR2, SMCR, DIER, SR, EGR, CCMR1, CCMR2, CCER, CNT, PSC, ARR, RCR;
  __IO uint32_t CCR1, CCR2, CCR3, CCR4, BDTR, DCR, DMAR, OR;
} TIM_TypeDef;

typedef struct {
  __IO uint32_t IMR, EMR, RTSR, FTSR, SWIER, PR;
} EXTI_TypeDef;

typedef struct {
  __IO uint32_t MEMRMP, PMC;
  __IO uint32_t EXTICR[4];
  uint32_t RESERVED[2];
  __IO uint32_t CMPCR;
} SYSCFG_TypeDef;

typedef struct {
  __IO uint32_t SR, CR1, CR2, SMPR1, SMPR2, JOFR1, JOFR2, JOFR3, JOFR4, HTR, LTR;
  __IO uint32_t SQR1, SQR2, SQR3, JSQR, JDR1, JDR2, JDR3, JDR4, DR;
} ADC_TypeDef;

typedef struct {
  __IO uint32_t CSR, CCR, CDR;
} ADC_Common_TypeDef;

typedef struct {
  __IO uint32_t CR, NDTR, PAR, M0AR, M1AR, FCR;
} DMA_Stream_TypeDef;

typedef struct {
  __IO uint32_t LISR, HISR, LIFCR, HIFCR;
  DMA_Stream_TypeDef S[8]; /* stream n's registers at 0x10 + 0x18 * n */
} DMA_TypeDef;

typedef struct {
  __IO uint32_t ACR, KEYR, OPTKEYR, SR, CR, OPTCR;
} FLASH_TypeDef;

typedef struct {
  __IO uint32_t CR, CSR;
} PWR_TypeDef;

/* ---- Cortex-M4 core peripherals ---- */
typedef struct {
  __IO uint32_t CTRL, LOAD, VAL;
  __I uint32_t CALIB;
} SysTick_Type;

typedef struct {
  __IO uint32_t ISER[8];
  uint32_t RESERVED0[24];
  __IO uint32_t ICER[8];
  uint32_t RESERVED1[24];
  __IO uint32_t ISPR[8];
  uint32_t RESERVED2[24];
  __IO uint32_t ICPR[8];
  uint32_t RESERVED3[24];
  __IO uint32_t IABR[8];
  uint32_t RESERVED4[56];
  __IO uint8_t IP[240]; /* one byte per interrupt: priority in the top __NVIC_PRIO_BITS */
  uint32_t RESERVED5[644];
  __IO uint32_t STIR;
} NVIC_Type;

typedef struct {
  __I uint32_t CPUID;
  __IO uint32_t ICSR, VTOR, AIRCR, SCR, CCR;
  __IO uint8_t SHP[12]; /* system handler priorities: SHP[n - 4] for exception n */
  __IO uint32_t SHCSR, CFSR, HFSR, DFSR, MMFAR, BFAR, AFSR;
  __I uint32_t PFR[2], DFR, ADR, MMFR[4], ISAR[5];
  uint32_t RESERVED0[5];
  __IO uint32_t CPACR;
} SCB_Type;

/* ---- base addresses ---- */
#define PERIPH_BASE 0x40000000UL
#define APB1PERIPH_BASE PERIPH_BASE
#define APB2PERIPH_BASE (PERIPH_BASE + 0x00010000UL)
#define AHB1PERIPH_BASE (PERIPH_BASE + 0x00020000UL)

#define TIM2_BASE (APB1PERIPH_BASE + 0x0000UL)
#define TIM3_BASE (APB1PERIPH_BASE + 0x0400UL)
#define TIM4_BASE (APB1PERIPH_BASE + 0x0800UL)
#define TIM5_BASE (APB1PERIPH_BASE + 0x0C00UL)
#define USART2_BASE (APB1PERIPH_BASE + 0x4400UL)
#define USART3_BASE (APB1PERIPH_BASE + 0x4800UL)
#define PWR_BASE (APB1PERIPH_BASE + 0x7000UL)
#define USART1_BASE (APB2PERIPH_BASE + 0x1000UL)
#define USART6_BASE (APB2PERIPH_BASE + 0x1400UL)
#define ADC1_BASE (APB2PERIPH_BASE + 0x2000UL)
#define ADC_COMMON_BASE (APB2PERIPH_BASE + 0x2300UL)
#define SYSCFG_BASE (APB2PERIPH_BASE + 0x3800UL)
#define EXTI_BASE (APB2PERIPH_BASE + 0x3C00UL)
#define GPIOA_BASE (AHB1PERIPH_BASE + 0x0000UL)
#define GPIOB_BASE (AHB1PERIPH_BASE + 0x0400UL)
#define GPIOC_BASE (AHB1PERIPH_BASE + 0x0800UL)
#define GPIOD_BASE (AHB1PERIPH_BASE + 0x0C00UL)
#define GPIOE_BASE (AHB1PERIPH_BASE + 0x1000UL)
#define RCC_BASE (AHB1PERIPH_BASE + 0x3800UL)
#define FLASH_R_BASE (AHB1PERIPH_BASE + 0x3C00UL)
#define DMA1_BASE (AHB1PERIPH_BASE + 0x6000UL)
#define DMA2_BASE (AHB1PERIPH_BASE + 0x6400UL)
#define SCS_BASE 0xE000E000UL
#define SysTick_BASE (SCS_BASE + 0x0010UL)
#define NVIC_BASE (SCS_BASE + 0x0100UL)
#define SCB_BASE (SCS_BASE + 0x0D00UL)

#define TIM2 ((TIM_TypeDef *)TIM2_BASE)
#define TIM3 ((TIM_TypeDef *)TIM3_BASE)
#define TIM4 ((TIM_TypeDef *)TIM4_BASE)
#define TIM5 ((TIM_TypeDef *)TIM5_BASE)
#define USART1 ((USART_TypeDef *)USART1_BASE)
#define USART2 ((USART_TypeDef *)USART2_BASE)
#define USART3 ((USART_TypeDef *)USART3_BASE)
#define USART6 ((USART_TypeDef *)USART6_BASE)
#define PWR ((PWR_TypeDef *)PWR_BASE)
#define ADC1 ((ADC_TypeDef *)ADC1_BASE)
#define ADC123_COMMON ((ADC_Common_TypeDef *)ADC_COMMON_BASE)
#define SYSCFG ((SYSCFG_TypeDef *)SYSCFG_BASE)
#define EXTI ((EXTI_TypeDef *)EXTI_BASE)
#define GPIOA ((GPIO_TypeDef *)GPIOA_BASE)
#define GPIOB ((GPIO_TypeDef *)GPIOB_BASE)
#define GPIOC ((GPIO_TypeDef *)GPIOC_BASE)
#define GPIOD ((GPIO_TypeDef *)GPIOD_BASE)
#define GPIOE ((GPIO_TypeDef *)GPIOE_BASE)
#define RCC ((RCC_TypeDef *)RCC_BASE)
#define FLASH ((FLASH_TypeDef *)FLASH_R_BASE)
#define DMA1 ((DMA_TypeDef *)DMA1_BASE)
#define DMA2 ((DMA_TypeDef *)DMA2_BASE)
#define SysTick ((SysTick_Type *)SysTick_BASE)
#define NVIC ((NVIC_Type *)NVIC_BASE)
#define SCB ((SCB_Type *)SCB_BASE)

/* ---- bits the tasks use (RM0090 / ARMv7-M) ---- */
#define RCC_CR_HSION (1UL << 0)
#define RCC_CR_HSIRDY (1UL << 1)
#define RCC_CR_HSEON (1UL << 16)
#define RCC_CR_HSERDY (1UL << 17)
#define RCC_CR_PLLON (1UL << 24)
#define RCC_CR_PLLRDY (1UL << 25)
#define RCC_CFGR_SW_Pos 0
#define RCC_CFGR_SWS_Pos 2
#define RCC_CFGR_HPRE_Pos 4
#define RCC_CFGR_PPRE1_Pos 10
#define RCC_CFGR_PPRE2_Pos 13
#define RCC_AHB1ENR_GPIOAEN (1UL << 0)
#define RCC_AHB1ENR_GPIOBEN (1UL << 1)
#define RCC_AHB1ENR_GPIOCEN (1UL << 2)
#define RCC_AHB1ENR_GPIODEN (1UL << 3)
#define RCC_AHB1ENR_GPIOEEN (1UL << 4)
#define RCC_AHB1ENR_CRCEN (1UL << 12)
#define RCC_AHB1ENR_DMA1EN (1UL << 21)
#define RCC_AHB1ENR_DMA2EN (1UL << 22)
#define RCC_APB1ENR_TIM2EN (1UL << 0)
#define RCC_APB1ENR_TIM3EN (1UL << 1)
#define RCC_APB1ENR_TIM4EN (1UL << 2)
#define RCC_APB1ENR_TIM5EN (1UL << 3)
#define RCC_APB1ENR_USART2EN (1UL << 17)
#define RCC_APB1ENR_USART3EN (1UL << 18)
#define RCC_APB1ENR_PWREN (1UL << 28)
#define RCC_APB2ENR_USART1EN (1UL << 4)
#define RCC_APB2ENR_USART6EN (1UL << 5)
#define RCC_APB2ENR_ADC1EN (1UL << 8)
#define RCC_APB2ENR_SYSCFGEN (1UL << 14)

#define GPIO_MODER_INPUT 0UL
#define GPIO_MODER_OUTPUT 1UL
#define GPIO_MODER_AF 2UL
#define GPIO_MODER_ANALOG 3UL

#define USART_SR_PE (1UL << 0)
#define USART_SR_FE (1UL << 1)
#define USART_SR_ORE (1UL << 3)
#define USART_SR_IDLE (1UL << 4)
#define USART_SR_RXNE (1UL << 5)
#define USART_SR_TC (1UL << 6)
#define USART_SR_TXE (1UL << 7)
#define USART_CR1_RE (1UL << 2)
#define USART_CR1_TE (1UL << 3)
#define USART_CR1_RXNEIE (1UL << 5)
#define USART_CR1_TCIE (1UL << 6)
#define USART_CR1_TXEIE (1UL << 7)
#define USART_CR1_PCE (1UL << 10)
#define USART_CR1_M (1UL << 12)
#define USART_CR1_UE (1UL << 13)
#define USART_CR1_OVER8 (1UL << 15)
#define USART_CR2_STOP_Pos 12

#define TIM_CR1_CEN (1UL << 0)
#define TIM_CR1_UDIS (1UL << 1)
#define TIM_CR1_URS (1UL << 2)
#define TIM_CR1_OPM (1UL << 3)
#define TIM_CR1_DIR (1UL << 4)
#define TIM_CR1_ARPE (1UL << 7)
#define TIM_DIER_UIE (1UL << 0)
#define TIM_DIER_CC1IE (1UL << 1)
#define TIM_SR_UIF (1UL << 0)
#define TIM_SR_CC1IF (1UL << 1)
#define TIM_EGR_UG (1UL << 0)
#define TIM_CCMR1_OC1M_Pos 4
#define TIM_CCMR1_OC1PE (1UL << 3)
#define TIM_CCMR1_OC2M_Pos 12
#define TIM_CCMR1_OC2PE (1UL << 11)
#define TIM_CCER_CC1E (1UL << 0)
#define TIM_CCER_CC1P (1UL << 1)
#define TIM_CCER_CC2E (1UL << 4)

#define SysTick_CTRL_ENABLE (1UL << 0)
#define SysTick_CTRL_TICKINT (1UL << 1)
#define SysTick_CTRL_CLKSOURCE (1UL << 2)
#define SysTick_CTRL_COUNTFLAG (1UL << 16)

#define SCB_AIRCR_VECTKEY (0x05FAUL << 16)
#define SCB_AIRCR_PRIGROUP_Pos 8
#define SCB_ICSR_PENDSVSET (1UL << 28)
#define SCB_SHCSR_USGFAULTENA (1UL << 18)
#define SCB_SHCSR_BUSFAULTENA (1UL << 17)
#define SCB_SHCSR_MEMFAULTENA (1UL << 16)
#define SCB_CCR_DIV_0_TRP (1UL << 4)
#define SCB_CCR_UNALIGN_TRP (1UL << 3)

#define EXTI_LINE(n) (1UL << (n))

#define ADC_SR_EOC (1UL << 1)
#define ADC_CR2_ADON (1UL << 0)
#define ADC_CR2_CONT (1UL << 1)
#define ADC_CR2_SWSTART (1UL << 30)

#define DMA_SxCR_EN (1UL << 0)
#define DMA_SxCR_TCIE (1UL << 4)
#define DMA_SxCR_DIR_Pos 6
#define DMA_SxCR_CIRC (1UL << 8)
#define DMA_SxCR_PINC (1UL << 9)
#define DMA_SxCR_MINC (1UL << 10)
#define DMA_SxCR_PSIZE_Pos 11
#define DMA_SxCR_MSIZE_Pos 13
#define DMA_SxCR_CHSEL_Pos 25

/* ---- the core's own instructions and NVIC helpers (CMSIS's names) ---- */
static inline void __enable_irq(void) { __asm__ volatile("cpsie i" ::: "memory"); }
static inline void __disable_irq(void) { __asm__ volatile("cpsid i" ::: "memory"); }
static inline void __DSB(void) { __asm__ volatile("dsb 0xF" ::: "memory"); }
static inline void __ISB(void) { __asm__ volatile("isb 0xF" ::: "memory"); }
static inline void __WFI(void) { __asm__ volatile("wfi"); }
static inline void __NOP(void) { __asm__ volatile("nop"); }

static inline void NVIC_EnableIRQ(IRQn_Type irq) {
  NVIC->ISER[(uint32_t)irq >> 5] = 1UL << ((uint32_t)irq & 31u);
}
static inline void NVIC_DisableIRQ(IRQn_Type irq) {
  NVIC->ICER[(uint32_t)irq >> 5] = 1UL << ((uint32_t)irq & 31u);
  __DSB();
  __ISB();
}
static inline void NVIC_SetPendingIRQ(IRQn_Type irq) {
  NVIC->ISPR[(uint32_t)irq >> 5] = 1UL << ((uint32_t)irq & 31u);
}
static inline void NVIC_ClearPendingIRQ(IRQn_Type irq) {
  NVIC->ICPR[(uint32_t)irq >> 5] = 1UL << ((uint32_t)irq & 31u);
}
static inline void NVIC_SetPriority(IRQn_Type irq, uint32_t priority) {
  uint8_t value = (uint8_t)((priority << (8u - __NVIC_PRIO_BITS)) & 0xFFu);
  if ((int32_t)irq >= 0) {
    NVIC->IP[(uint32_t)irq] = value;
  } else {
    SCB->SHP[((uint32_t)irq & 0xFu) - 4u] = value;
  }
}
static inline uint32_t NVIC_GetPriority(IRQn_Type irq) {
  if ((int32_t)irq >= 0) {
    return (uint32_t)NVIC->IP[(uint32_t)irq] >> (8u - __NVIC_PRIO_BITS);
  }
  return (uint32_t)SCB->SHP[((uint32_t)irq & 0xFu) - 4u] >> (8u - __NVIC_PRIO_BITS);
}
static inline void NVIC_SetPriorityGrouping(uint32_t group) {
  SCB->AIRCR = SCB_AIRCR_VECTKEY | ((group & 7u) << SCB_AIRCR_PRIGROUP_Pos);
}

#endif
