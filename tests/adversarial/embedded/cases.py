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
