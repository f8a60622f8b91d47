/* Register values for the peripherals QEMU does not model (RCC, GPIO, FLASH, DMA, PWR).

   QEMU 7.2 maps them as "unimplemented devices": writes are dropped and reads return 0, so a
   read-modify-write and a dummy read followed by a constant write store the same value, and
   no check can tell a kept bit from a clobbered one. Here they get values: the MPU makes
   those address ranges no-access before the test main, so every load or store the firmware
   makes there (through any pointer, any access size) faults into MemManage (or HardFault,
   where MemManage cannot preempt); the handler decodes the instruction, performs the same
   access on the real bus with the MPU off (so QEMU's unimp trace still logs it: address,
   size, value, which is what the verifier judges), keeps the register's value in a shadow
   that starts at the preset below (non-zero: other code's clock enables, the SWD pins), and
   gives loads the shadow's value. Ready bits follow their enables (HSERDY after HSEON, SWS
   after SW), so a firmware that waits for them behaves as on the chip.

   The verifier replays the trace against the same presets (it reads the PRESET rows below),
   so a write's bits outside a task's field are judged by value, never by the order of the
   accesses. An access the decoder does not handle (LDM/STM, LDRD/STRD, exclusive or FPU
   loads and stores) on those ranges exits CRUCIBLE_EXIT_PERIPH with its PC. */
#include <stdint.h>

#include "harness.h"
#include "stm32f4.h"

typedef struct {
  uint32_t addr, value, ro; /* ro: bits the hardware owns (writes never change them) */
} preset_t;

/* PRESET rows, parsed by verifiers/embedded/verifier.py: keep one row per line */
static const preset_t presets[] = {
    {0x40023800u, 0x00000083u, 0x0A020002u}, /* PRESET RCC CR: HSION, HSIRDY, HSITRIM 16 */
    {0x40023804u, 0x24003010u, 0x00000000u}, /* PRESET RCC PLLCFGR: reset value */
    {0x40023808u, 0x00080000u, 0x0000000Cu}, /* PRESET RCC CFGR: RTCPRE 8; SWS follows SW */
    {0x40023820u, 0x00004000u, 0x00000000u}, /* PRESET RCC APB1RSTR: SPI2 held in reset */
    {0x40023830u, 0x00100080u, 0x00000000u}, /* PRESET RCC AHB1ENR: CCMDATARAM, GPIOH on */
    {0x40023840u, 0x00200008u, 0x00000000u}, /* PRESET RCC APB1ENR: TIM5, I2C1 on */
    {0x40023844u, 0x00000100u, 0x00000000u}, /* PRESET RCC APB2ENR: ADC1 on */
    {0x40023870u, 0x00000000u, 0x00000002u}, /* PRESET RCC BDCR: LSERDY follows LSEON */
    {0x40023874u, 0x0E000000u, 0x00000002u}, /* PRESET RCC CSR: reset flags; LSIRDY */
    {0x40020000u, 0xA8000000u, 0x00000000u}, /* PRESET GPIOA MODER: PA13-15 SWD (AF) */
    {0x40020008u, 0x0C000000u, 0x00000000u}, /* PRESET GPIOA OSPEEDR: PA13 very high */
    {0x4002000Cu, 0x64000000u, 0x00000000u}, /* PRESET GPIOA PUPDR: SWD pull-ups/downs */
    {0x40020010u, 0x00000000u, 0xFFFFFFFFu}, /* PRESET GPIOA IDR */
    {0x40020020u, 0x00000001u, 0x00000000u}, /* PRESET GPIOA AFRL: PA0 AF1 (TIM2_CH1) */
    {0x40020400u, 0x00000280u, 0x00000000u}, /* PRESET GPIOB MODER: PB3-4 JTAG (AF) */
    {0x40020408u, 0x000000C0u, 0x00000000u}, /* PRESET GPIOB OSPEEDR: PB3 very high */
    {0x40020404u, 0x00000300u, 0x00000000u}, /* PRESET GPIOB OTYPER: PB8-9 open drain */
    {0x4002040Cu, 0x00000100u, 0x00000000u}, /* PRESET GPIOB PUPDR: PB4 pull-up */
    {0x40020410u, 0x00000000u, 0xFFFFFFFFu}, /* PRESET GPIOB IDR */
    {0x40020800u, 0x0000A000u, 0x00000000u}, /* PRESET GPIOC MODER: PC6-7 AF (USART6) */
    {0x40020804u, 0x00000040u, 0x00000000u}, /* PRESET GPIOC OTYPER: PC6 open drain */
    {0x40020808u, 0x0000A000u, 0x00000000u}, /* PRESET GPIOC OSPEEDR: PC6-7 high */
    {0x4002080Cu, 0x00004000u, 0x00000000u}, /* PRESET GPIOC PUPDR: PC7 pull-up */
    {0x40020810u, 0x00000000u, 0xFFFFFFFFu}, /* PRESET GPIOC IDR */
    {0x40020C00u, 0x00000001u, 0x00000000u}, /* PRESET GPIOD MODER: PD0 output */
    {0x40020C10u, 0x00000000u, 0xFFFFFFFFu}, /* PRESET GPIOD IDR */
    {0x40020C14u, 0x00000001u, 0x00000000u}, /* PRESET GPIOD ODR: PD0 high */
    {0x40021010u, 0x00000000u, 0xFFFFFFFFu}, /* PRESET GPIOE IDR */
    {0x40026000u, 0x00000000u, 0xFFFFFFFFu}, /* PRESET DMA1 LISR */
    {0x40026004u, 0x00000000u, 0xFFFFFFFFu}, /* PRESET DMA1 HISR */
    {0x40026400u, 0x00000000u, 0xFFFFFFFFu}, /* PRESET DMA2 LISR */
    {0x40026404u, 0x00000000u, 0xFFFFFFFFu}, /* PRESET DMA2 HISR */
    {0x40007000u, 0x00004100u, 0x00000000u}, /* PRESET PWR CR: VOS scale 1, DBP */
    {0x40007004u, 0x00004000u, 0xFFFFFFFFu}, /* PRESET PWR CSR: VOSRDY */
};

/* the shadowed windows: [base, base + words * 4) of each device */
typedef struct {
  uint32_t base, words;
} window_t;
static const window_t windows[] = {
    {0x40020000u, 10}, {0x40020400u, 10}, {0x40020800u, 10}, {0x40020C00u, 10},
    {0x40021000u, 10}, {0x40021400u, 10}, {0x40021800u, 10}, {0x40021C00u, 10},
    {0x40022000u, 10}, {0x40023800u, 36}, {0x40023C00u, 6},  {0x40026000u, 52},
    {0x40026400u, 52}, {0x40007000u, 2},  {0x40013C00u, 6},
};
#define NWINDOWS (sizeof(windows) / sizeof(windows[0]))
#define SHADOW_WORDS (9 * 10 + 36 + 6 + 52 + 52 + 2 + 6)
/* QEMU maps no CCM on this machine: the shadow is an object of the harness's in SRAM */
static uint32_t shadow[SHADOW_WORDS];

#define MPU_TYPE (*(volatile uint32_t *)0xE000ED90u)
#define MPU_CTRL (*(volatile uint32_t *)0xE000ED94u)
#define MPU_RNR (*(volatile uint32_t *)0xE000ED98u)
#define MPU_RBAR (*(volatile uint32_t *)0xE000ED9Cu)
#define MPU_RASR (*(volatile uint32_t *)0xE000EDA0u)
#define GPIO_BSRR 0x18u
#define DMA_LIFCR 0x08u
#define DMA_HIFCR 0x0Cu
#define EXTI_SWIER 0x10u
#define EXTI_PR 0x14u

static volatile uint32_t *slot(uint32_t addr, uint32_t *base_out) {
  uint32_t at = 0;
  for (uint32_t i = 0; i < NWINDOWS; i++) {
    const window_t *w = &windows[i];
    if (addr >= w->base && addr < w->base + 4u * w->words) {
      *base_out = w->base;
      return &shadow[at + (addr - w->base) / 4u];
    }
    at += w->words;
  }
  return 0;
}

static uint32_t ro_of(uint32_t word_addr) {
  for (uint32_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
    if (presets[i].addr == word_addr) {
      return presets[i].ro;
    }
  }
  return 0;
}

void crucible_periph_init(void) {
  uint32_t base;
  for (uint32_t i = 0; i < SHADOW_WORDS; i++) {
    shadow[i] = 0;
  }
  for (uint32_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
    *slot(presets[i].addr, &base) = presets[i].value;
  }
  if (((MPU_TYPE >> 8) & 0xFFu) < 2u) {
    return; /* no MPU: the trace still holds every access (reads then return 0) */
  }
  /* region 0: AHB1 0x40020000-0x40027FFF (GPIOA-I, RCC, FLASH, DMA1/2); region 1: PWR.
     AP = 000 (no access, privileged too), XN; the background map stays for the rest */
  MPU_RNR = 0;
  MPU_RBAR = 0x40020000u;
  MPU_RASR = (1u << 28) | (14u << 1) | 1u; /* 2^(14+1) = 32 KiB */
  MPU_RNR = 1;
  MPU_RBAR = 0x40007000u;
  MPU_RASR = (1u << 28) | (9u << 1) | 1u; /* 1 KiB */
  /* region 2: EXTI. QEMU models it, but nothing there ever sets a pending bit (its input
     lines come from GPIO, which it does not model): here SWIER sets PR as on silicon, so a
     handler's `PR |= line` visibly clears the other pending lines */
  MPU_RNR = 2;
  MPU_RBAR = 0x40013C00u;
  MPU_RASR = (1u << 28) | (9u << 1) | 1u; /* 1 KiB */
  MPU_CTRL = (1u << 2) | 1u;              /* PRIVDEFENA | ENABLE */
  __DSB();
  __ISB();
}

static void follow(uint32_t base, uint32_t off, volatile uint32_t *s) {
  if (base == RCC_BASE) {
    uint32_t v = *s;
    if (off == 0x00u) { /* CR: HSIRDY, HSERDY, PLLRDY, PLLI2SRDY follow their ON bits */
      v &= ~0x0A020002u;
      v |= (v & 1u) << 1 | (v & (1u << 16)) << 1 | (v & (1u << 24)) << 1 | (v & (1u << 26)) << 1;
    } else if (off == 0x08u) { /* CFGR: SWS = SW */
      v = (v & ~0xCu) | (v & 3u) << 2;
    } else if (off == 0x70u || off == 0x74u) { /* BDCR LSERDY, CSR LSIRDY */
      v = (v & ~2u) | (v & 1u) << 1;
    }
    *s = v;
  }
}

static void store(uint32_t addr, uint32_t size, uint32_t value) {
  uint32_t base, lane = (addr & 3u) * 8u;
  uint32_t mask = size == 4u ? 0xFFFFFFFFu : ((1u << (8u * size)) - 1u) << lane;
  uint32_t bits = (value << lane) & mask;
  volatile uint32_t *s = slot(addr & ~3u, &base);
  if (s == 0) {
    return;
  }
  uint32_t off = (addr & ~3u) - base;
  int gpio = base < RCC_BASE && base >= GPIOA_BASE;
  int dma = base == DMA1_BASE || base == DMA2_BASE;
  if (gpio && off == GPIO_BSRR) { /* set wins over reset; BSRR itself reads 0 */
    volatile uint32_t *odr = s - 1;
    *odr = ((*odr & ~(bits >> 16)) | bits) & 0xFFFFu;
    return;
  }
  if (dma && (off == DMA_LIFCR || off == DMA_HIFCR)) { /* write 1 to clear LISR / HISR */
    s[-2] &= ~bits;
    return;
  }
  if (base == EXTI_BASE && off == EXTI_SWIER) { /* a 0 -> 1 sets PR where IMR unmasks */
    uint32_t rising = bits & ~*s;
    *s |= bits;
    s[1] |= rising & s[-4];
    return;
  }
  if (base == EXTI_BASE && off == EXTI_PR) { /* write 1 to clear, the software trigger too */
    *s &= ~bits;
    s[-1] &= ~bits;
    return;
  }
  uint32_t ro = ro_of(addr & ~3u);
  *s = (*s & (~mask | ro)) | (bits & ~ro);
  follow(base, off, s);
}

static uint32_t load(uint32_t addr, uint32_t size) {
  uint32_t base;
  volatile uint32_t *s = slot(addr & ~3u, &base);
  uint32_t v = s ? *s : 0u;
  v >>= (addr & 3u) * 8u;
  return size == 4u ? v : v & ((1u << (8u * size)) - 1u);
}

/* the bus access itself, MPU off: QEMU logs it in the unimp trace */
static uint32_t bus(uint32_t addr, uint32_t size, int is_store, uint32_t value) {
  uint32_t ctrl = MPU_CTRL, got = 0;
  MPU_CTRL = 0;
  __DSB();
  __ISB();
  if (is_store) {
    if (size == 1u) {
      *(volatile uint8_t *)addr = (uint8_t)value;
    } else if (size == 2u) {
      *(volatile uint16_t *)addr = (uint16_t)value;
    } else {
      *(volatile uint32_t *)addr = value;
    }
  } else if (size == 1u) {
    got = *(volatile uint8_t *)addr;
  } else if (size == 2u) {
    got = *(volatile uint16_t *)addr;
  } else {
    got = *(volatile uint32_t *)addr;
  }
  MPU_CTRL = ctrl;
  __DSB();
  __ISB();
  return got;
}

static int watched(uint32_t addr) {
  return (addr >= 0x40020000u && addr < 0x40028000u) ||
         (addr >= 0x40007000u && addr < 0x40007400u) || (addr >= EXTI_BASE && addr < EXTI_BASE + 0x400u);
}

/* frame: r0-r3, r12, lr, pc, xpsr as the core stacked them; hi: r4-r11 as the entry saved
   them (written back on return) */
static uint32_t *reg(uint32_t *frame, uint32_t *hi, uint32_t r) {
  if (r <= 3u) {
    return &frame[r];
  }
  if (r <= 11u) {
    return &hi[r - 4u];
  }
  if (r == 12u) {
    return &frame[4];
  }
  if (r == 14u) {
    return &frame[5];
  }
  return 0; /* sp, pc: not a peripheral access any compiler makes */
}

static void advance_it(uint32_t *frame) {
  uint32_t xpsr = frame[7];
  uint32_t it = ((xpsr >> 8) & 0xFCu) | ((xpsr >> 25) & 3u);
  if (it == 0u) {
    return;
  }
  it = (it & 7u) == 0u ? 0u : (it & 0xE0u) | ((it << 1) & 0x1Fu);
  xpsr &= ~((0x3Fu << 10) | (3u << 25));
  xpsr |= ((it >> 2) & 0x3Fu) << 10 | (it & 3u) << 25;
  frame[7] = xpsr;
}

/* 1: the access was emulated (return to the next instruction); 0: a real fault */
int crucible_periph_trap(uint32_t *frame, uint32_t *hi) {
  uint32_t cfsr = SCB->CFSR;
  if ((cfsr & 0x82u) != 0x82u) { /* DACCVIOL with a valid MMFAR */
    return 0;
  }
  uint32_t addr = SCB->MMFAR;
  if (!watched(addr)) {
    return 0;
  }
  uint32_t pc = frame[6];
  uint32_t hw1 = *(const uint16_t *)pc, len = 2, rt, size, is_load, sign = 0, wb = 0, rn = 0;
  uint32_t new_rn = 0;
  if ((hw1 >> 11) >= 0x1Du) {
    uint32_t hw2 = *(const uint16_t *)(pc + 2u);
    len = 4;
    if ((hw1 & 0xFE00u) != 0xF800u) {
      goto unsupported;
    }
    rn = hw1 & 0xFu;
    rt = hw2 >> 12;
    is_load = (hw1 >> 4) & 1u;
    sign = (hw1 >> 8) & 1u;
    size = 1u << ((hw1 >> 5) & 3u);
    if (size > 4u || rn == 15u) {
      goto unsupported;
    }
    if (!(hw1 & 0x80u) && (hw2 & 0x800u)) { /* imm8: P U W */
      uint32_t imm = hw2 & 0xFFu, p = (hw2 >> 10) & 1u, u = (hw2 >> 9) & 1u;
      wb = (hw2 >> 8) & 1u;
      if (wb) {
        new_rn = p ? addr : (u ? addr + imm : addr - imm);
      }
    } else if (!(hw1 & 0x80u) && (hw2 & 0xFC0u) != 0u) {
      goto unsupported;
    }
  } else {
    uint32_t op5 = hw1 >> 11, op7 = hw1 >> 9;
    rt = hw1 & 7u;
    if (op5 >= 0x0Cu && op5 <= 0x11u) { /* STR/LDR, STRB/LDRB, STRH/LDRH (imm5) */
      static const uint8_t sizes[] = {4, 4, 1, 1, 2, 2};
      size = sizes[op5 - 0x0Cu];
      is_load = op5 & 1u;
    } else if (op7 >= 0x28u && op7 <= 0x2Fu) { /* register offset */
      static const uint8_t sizes[] = {4, 2, 1, 1, 4, 2, 1, 2};
      size = sizes[op7 - 0x28u];
      is_load = op7 >= 0x2Bu;
      sign = op7 == 0x2Bu || op7 == 0x2Fu;
    } else {
      goto unsupported;
    }
  }
  uint32_t *t = reg(frame, hi, rt);
  if (t == 0 || (wb && reg(frame, hi, rn) == 0)) {
    goto unsupported;
  }
  if (is_load) {
    (void)bus(addr, size, 0, 0);
    uint32_t v = load(addr, size);
    if (sign) {
      v = size == 1u ? (uint32_t)(int32_t)(int8_t)v : (uint32_t)(int32_t)(int16_t)v;
    }
    *t = v;
  } else {
    uint32_t v = *t;
    (void)bus(addr, size, 1, v);
    store(addr, size, v);
  }
  if (wb) {
    *reg(frame, hi, rn) = new_rn;
  }
  frame[6] = pc + len;
  advance_it(frame);
  SCB->CFSR = 0xFFu; /* write 1 to clear MMFSR */
  SCB->HFSR = 1u << 30; /* FORCED, where it escalated */
  return 1;
unsupported:
  crucible_periph_unsupported(pc, addr);
  return 0;
}
