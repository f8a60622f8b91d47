"""Hostile firmware for the embedded verifier: what each one tries, by mechanism.

Each case is the fixture task's reference (tests/fixtures/embedded/board) with hostile code
put at the start of `led()`, which the test main calls after the reports, plus an optional
prelude; `Outside.fill` fills {SECRET_HOME}, {SECRET_TMP}, {TMP}. `front` is the status
family through the front door (the link gate refuses a semihosting trap in the candidate's
object); `runtime`, where set, is the family with that check bypassed, so the firmware
really traps to the emulator's host and the run's defences (the sandbox, its seccomp
filter refusing writes, QEMU's own seccomp refusing process creation) are what stop it.
A case that finds its attack refused goes on to do the task wrong, so a refused attack is
never a pass. Ids read `mechanism-what`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.adversarial.harness import CANDIDATE_FAULT, LIMITS, REFUSED
from verifiers.catalog import load_task
from verifiers.contract import Status

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "embedded" / "board"
INFRA_TEXT = (
    "bwrap: Can't fork: Resource temporarily unavailable; infra_error sandbox_unavailable; "
    "Killed; Out of memory; harness_error; machine_slow; emulator_unmodelled_register"
)
SEMIHOST = """
static int semihost(uint32_t op, void *arg) {
  register uint32_t r0 __asm__("r0") = op;
  register void *r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return (int)r0;
}
static int sh_open(const char *name, uint32_t mode) {
  uint32_t len = 0;
  while (name[len]) len++;
  uint32_t a[3] = {(uint32_t)name, mode, len};
  return semihost(0x01, a);
}
"""
# after a refused attack: the wrong LED level, so the task fails as a wrong answer
WRONG = "  on = !on;\n"


def reference() -> str:
    return load_task(FIXTURE, "embedded").reference


def into_led(body: str, prelude: str = "") -> str:
    ref = reference()
    marker = "void led(int on) {"
    assert marker in ref
    return prelude + ref.replace(marker, marker + "\n" + body, 1)


@dataclass(frozen=True)
class Case:
    id: str
    code: str
    front: frozenset
    runtime: frozenset | None = None


def case(id_: str, code: str, front=CANDIDATE_FAULT, runtime=None) -> Case:
    return Case(id_, code, frozenset(front), frozenset(runtime) if runtime else None)


def _semihosting(id_: str, body: str) -> Case:
    return case(id_, into_led(body, SEMIHOST), front=REFUSED, runtime=CANDIDATE_FAULT)


ALL = (
    # --- the classics -----------------------------------------------------------------
    case("classics-busy_hang", into_led("  for (;;) {\n  }\n"), front=LIMITS),
    case(
        "classics-wfi_forever", into_led("  __disable_irq();\n  for (;;) __WFI();\n"), front=LIMITS
    ),
    case(
        "classics-uart_flood",
        into_led('  for (;;) say("flood flood flood flood flood flood\\n");\n'),
        front=LIMITS,
    ),
    case("classics-register_flood", into_led("  for (;;) GPIOA->ODR ^= 1u;\n"), front=LIMITS),
    case(
        "classics-stack_overflow",
        into_led("  volatile uint8_t big[1024];\n  big[0] = 1;\n  led(big[0]);\n"),
        front=CANDIDATE_FAULT,
    ),
    # a bomb in the build: macros that expand to 2^40 tokens (the compiler's CPU budget)
    case(
        "build-macro_bomb",
        "#define A0 x+x\n"
        + "".join(f"#define A{i} A{i - 1}+A{i - 1}\n" for i in range(1, 41))
        + into_led("  volatile int x = 1;\n  (void)(A40);\n"),
        front=LIMITS,
    ),
    # a fork bomb is a shell command: semihosting SYS_SYSTEM asks the host to run it
    _semihosting(
        "classics-fork_bomb",
        '  static const char bomb[] = ":(){ :|:& };:";\n'
        "  uint32_t a[2] = {(uint32_t)bomb, sizeof(bomb) - 1};\n"
        "  semihost(0x12, a);\n" + WRONG,
    ),
    # --- the host through semihosting -------------------------------------------------
    _semihosting(
        "host-read_secret",
        '  int h = sh_open("{SECRET_HOME}", 0);\n'
        '  if (h < 0) h = sh_open("{SECRET_TMP}", 0);\n'
        "  if (h >= 0) {\n"
        "    static char buf[64];\n"
        "    uint32_t r[3] = {(uint32_t)h, (uint32_t)buf, 63};\n"
        "    semihost(0x06, r);\n"
        "    say(buf);\n"
        "  }\n" + WRONG,
    ),
    _semihosting(
        "host-write_outside",
        '  (void)sh_open("{TMP}/crucible-embedded-planted", 4);\n'
        '  (void)sh_open("/work/planted.c", 4);\n'
        '  (void)sh_open("/dev/stderr", 4);\n' + WRONG,
    ),
    _semihosting(
        "host-forge_trace_on_stderr",
        '  static const char line[] = "GPIOA: unimplemented device write (size 4, offset 0x018, '
        'value 0x00000020)\\n";\n'
        '  int h = sh_open("/proc/self/fd/2", 4);\n'
        "  if (h >= 0) {\n"
        "    uint32_t w[3] = {(uint32_t)h, (uint32_t)line, sizeof(line) - 1};\n"
        "    semihost(0x05, w);\n"
        "  }\n"
        "  return;  /* no BSRR write of its own: only a forged trace line would pass */\n",
    ),
    _semihosting(
        "host-remove_firmware",
        '  static const char f[] = "fw.elf";\n'
        "  uint32_t a[2] = {(uint32_t)f, sizeof(f) - 1};\n"
        "  semihost(0x0E, a);\n" + WRONG,
    ),
    _semihosting(
        "host-exit_early_with_the_expected_code",
        "  static volatile uint32_t block[2] = {0x20026u, 7u};\n  semihost(0x20, (void *)block);\n",
    ),
    # --- the harness's own trap, reached without a trap in the candidate's object ---------
    case(
        "gadget-jump_to_the_harness_exit",
        into_led(
            "  static volatile uint32_t block[2] = {0x20026u, 7u};\n"
            "  for (uint32_t a = 0x08000000u; a < 0x08010000u; a += 2) {\n"
            "    if (*(volatile uint16_t *)a == 0xbeabu) {\n"
            '      register uint32_t r0 __asm__("r0") = 0x20u;\n'
            '      register volatile uint32_t *r1 __asm__("r1") = block;\n'
            '      __asm__ volatile("blx %2" : : "r"(r0), "r"(r1), "r"(a | 1u) : "memory");\n'
            "    }\n"
            "  }\n"
        ),
    ),
    # --- forged reports ---------------------------------------------------------------
    case(
        "forge-prints_the_expected_transcript",
        into_led(
            '  say("hello\\n@brr=0x0000008b\\n@cr1=0x0000200c\\n@load=0x00003e7f\\n'
            '@prio=0x00000020\\n@ticked=0x00000001\\n");\n' + WRONG
        ),
    ),
    case(
        "forge-prints_infra_text",
        into_led(f'  say("{INFRA_TEXT}\\n");\n' + WRONG),
    ),
    case(
        "forge-fake_fault_report",
        into_led(
            '  say("\\n!fault HardFault CFSR=0x00000000 HFSR=0x40000000 MMFAR=0x00000000 '
            'BFAR=0x00000000 PC=0x08000000 LR=0x00000000\\n");\n' + WRONG
        ),
    ),
    # --- tampering with the harness ----------------------------------------------------
    case(
        "tamper-vector_table_in_ram",
        into_led(
            "  static uint32_t table[98] __attribute__((aligned(512)));\n"
            "  for (int i = 0; i < 98; i++) table[i] = ((const uint32_t *)0x08000000u)[i];\n"
            "  SCB->VTOR = (uint32_t)table;\n" + WRONG
        ),
    ),
)


# --- what the task's cases did not reach (#29): each fails for its own reason -------------
# (status, code) exact: a wrong candidate that fails for another reason would hide a gap

TASKS = FIXTURE.parents[3] / "tasks" / "embedded"
I2C1_SR1 = "(*(volatile uint32_t *)0x40005414u)"  # QEMU leaves I2C1 unimplemented
# Thumb `bkpt 0xab; bx lr` as data: no trap in any executable section of the object, so the
# link gate lets it through; the firmware jumps into it (flash is executable)
DATA_TRAP = """
static const uint16_t gadget[2] = {0xbeabu, 0x4770u};
static int semihost(uint32_t op, void *arg) {
  return ((int (*)(uint32_t, void *))((uint32_t)gadget | 1u))(op, arg);
}
static char leak[96];
static void steal(const char *path) {
  uint32_t len = 0;
  while (path[len]) len++;
  uint32_t a[3] = {(uint32_t)path, 0, len};
  int h = semihost(0x01, a);
  uint32_t r[3] = {(uint32_t)h, (uint32_t)leak, sizeof(leak) - 1};
  (void)semihost(0x06, r);
}
"""


@dataclass(frozen=True)
class Exact:
    id: str
    task: Path
    code: str
    status: Status
    reason: str  # the taxonomy code of its real reason


def _ref(task: Path) -> str:
    return load_task(task, "embedded").reference


def _edit(task: Path, *pairs: tuple[str, str], prelude: str = "") -> str:
    code = _ref(task)
    for old, new in pairs:
        assert old in code, old
        code = code.replace(old, new)
    return prelude + code


_CRC = TASKS / "crc16_ccitt"
_EXTI = TASKS / "exti_software_irq"
_NVIC = TASKS / "nvic_preemption_order"
_COBS = TASKS / "cobs_framing"
_FIR = TASKS / "fixed_point_fir"
_FIR_SIG = "void fir_q15(const int16_t coef[8], const int16_t *in, int16_t *out, uint32_t n) {"
_ENC_SIG = "uint32_t cobs_encode(const uint8_t *in, uint32_t len, uint8_t *out) {"
_RMW = "RCC->AHB1ENR |= RCC_AHB1ENR_GPIOAEN;"
_MODER = "GPIOA->MODER = (GPIOA->MODER & ~(3UL << 10)) | (GPIO_MODER_OUTPUT << 10);"
_W, _RM, _UART = Status.WRONG_ANSWER, "register_mismatch", "uart_mismatch"
_SPIN = (Status.TIMEOUT, "register_poll_hang")
_STATE = (Status.WRONG_ANSWER, "exit_state_mismatch")
_OOB = (Status.WRONG_ANSWER, "out_of_bounds_write")
_CRC_RET = "  return crc;\n}"
_LOG_AT = "uint32_t order_log_at(uint32_t i) {"
_BASEPRI_80 = '__asm__ volatile("msr basepri, %0" : : "r"(0x80u));'
_PR = "  EXTI->PR = EXTI_LINE(0);\n  events++;"


def _board(old: str, new: str) -> str:
    return into_led("").replace(old, new)


EXACT = (
    # preservation judged by the values at the end, not by the order of reads and writes
    Exact("rmw-dummy_read_then_constant", FIXTURE,
          _board(_RMW, "(void)RCC->AHB1ENR;\n  RCC->AHB1ENR = RCC_AHB1ENR_GPIOAEN;"), _W, _RM),
    Exact("rmw-read_kept_aside_then_constant_moder", FIXTURE,
          _board(_MODER, "uint32_t m = GPIOA->MODER;\n  (void)m;\n"
                         "  GPIOA->MODER = GPIO_MODER_OUTPUT << 10;"), _W, _RM),
    Exact("rmw-clobber_then_put_right", FIXTURE,
          _board(_MODER, "uint32_t m = GPIOA->MODER;\n  GPIOA->MODER = GPIO_MODER_OUTPUT << 10;\n"
                         "  GPIOA->MODER = (m & ~(3UL << 10)) | (GPIO_MODER_OUTPUT << 10);"),
          _W, _RM),
    # sub-word stores are writes of their register's lanes
    Exact("subword-byte_store_clears_the_swd_pins", FIXTURE,
          _board(_MODER, _MODER + "\n  *((volatile uint8_t *)&GPIOA->MODER + 3) = 0;"), _W, _RM),
    Exact("subword-bsrr_upper_halfword_wrong_pin", FIXTURE,
          into_led("  if (!on) {\n    *((volatile uint16_t *)&GPIOA->BSRR + 1) = 1u << 6;\n"
                   "    return;\n  }\n"), _W, _RM),
    Exact("subword-byte_store_clears_ccm_clock", FIXTURE,
          _board(_RMW, _RMW + "\n  *((volatile uint8_t *)&RCC->AHB1ENR + 2) = 0;"), _W, _RM),
    # inputs past what the old tests reached (256 bytes): the sweep goes to 16384
    Exact("range-wrong_above_300_bytes", _CRC,
          _edit(_CRC, (_CRC_RET, "  return len > 300u ? (uint16_t)(crc ^ 1u) : crc;\n}")),
          _W, _UART),
    Exact("range-wrong_at_exactly_1000_bytes", _CRC,
          _edit(_CRC, (_CRC_RET, "  return len == 1000u ? (uint16_t)(crc ^ 0x8000u) : crc;\n}")),
          _W, _UART),
    Exact("range-table_version_ignores_the_table", _CRC,
          _edit(_CRC, ("uint16_t crc16_table(const uint8_t *data, uint32_t len) {",
                       "uint16_t crc16_table(const uint8_t *data, uint32_t len) {\n"
                       "  if (len > 64u) return crc16_bitwise(data, len);")), _W, _UART),
    Exact("range-fir_stops_at_300_samples", _FIR,
          _edit(_FIR, (_FIR_SIG, _FIR_SIG + "\n  if (n > 300u) n = 300u;")), _W, _UART),
    Exact("range-cobs_encodes_1000_bytes_at_most", _COBS,
          _edit(_COBS, (_ENC_SIG, _ENC_SIG + "\n  if (len > 1000u) len = 1000u;")), _W, _UART),
    # the core's state when the test returns
    Exact("state-primask_left_set", _NVIC,
          _edit(_NVIC, (_LOG_AT, _LOG_AT + "\n  __disable_irq();")), *_STATE),
    Exact("state-basepri_left_raised", _NVIC,
          _edit(_NVIC, (_LOG_AT, _LOG_AT + "\n  " + _BASEPRI_80)), *_STATE),
    # a wrong firmware that spins first is still judged (before: infra_error, retried forever)
    Exact("spin-unmodelled_register_the_reference_never_touches", FIXTURE,
          into_led(f"  while (!({I2C1_SR1} & 1u)) {{\n  }}\n"), *_SPIN),
    Exact("spin-pllrdy_without_pllon", FIXTURE,
          into_led("  while (!(RCC->CR & RCC_CR_PLLRDY)) {\n  }\n"), *_SPIN),
    Exact("spin-dma_flag_nothing_sets", FIXTURE,
          into_led("  while (!(DMA2->HISR & (1u << 27))) {\n  }\n"), *_SPIN),
    # a requirement the old test could not see: `PR |=` clears the other pending lines
    Exact("exti-pr_or_equals", _EXTI,
          _edit(_EXTI, (_PR, "  EXTI->PR |= EXTI_LINE(0);\n  events++;")), _W, _UART),
    Exact("exti-pr_byte_or_equals", _EXTI,
          _edit(_EXTI, (_PR, "  *(volatile uint8_t *)&EXTI->PR |= 1u;\n  events++;")), _W, _UART),
    # semihosting from a trap kept in data: nothing read, nothing run; then the task done wrong
    Exact("semihost-data_trap_reads_environ", FIXTURE,
          into_led('  steal("/proc/self/environ");\n  say(leak);\n' + WRONG, DATA_TRAP), _W, _RM),
    Exact("semihost-data_trap_reads_pid1_and_mounts", FIXTURE,
          into_led('  steal("/proc/1/cmdline");\n  say(leak);\n  steal("/proc/self/mounts");\n'
                   "  say(leak);\n" + WRONG, DATA_TRAP), _W, _RM),
    # RAM outside every object, read back once after the test main
    Exact("oob-wild_store_into_free_ram", FIXTURE,
          into_led("  *(volatile uint32_t *)0x20010000u = on;\n"), *_OOB),
    Exact("oob-far_past_a_global", FIXTURE,
          into_led("  ((volatile uint8_t *)&tick_count)[40000] = 1u;\n"), *_OOB),
    # a test buffer's red zone: the bytes past what a call may write
    Exact("oob-encoder_appends_the_delimiter", _COBS,
          _edit(_COBS, ("  out[code_at] = code;\n  return o;\n}",
                        "  out[code_at] = code;\n  out[o] = 0;\n  return o;\n}")), *_OOB),
    Exact("oob-decoder_terminates_past_the_input", _COBS,
          _edit(_COBS, ("  return (int32_t)o;", "  out[len] = 0;\n  return (int32_t)o;")), *_OOB),
)  # fmt: skip
