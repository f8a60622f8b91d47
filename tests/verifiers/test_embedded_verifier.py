"""The embedded verifier, gate by gate: the fixture task's reference passes, and for every
gate a wrong candidate fails it with the right status and code (tests/fixtures/embedded).

Needs arm-none-eabi-gcc, qemu-system-arm and bwrap (`bash infra/install-toolchains.sh
embedded`); skipped without them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.adversarial.embedded.cases import SEMIHOST
from tests.adversarial.embedded.test_hostile_embedded import NoTrapCheck
from verifiers.catalog import load_task
from verifiers.contract import Limits, Status
from verifiers.embedded import emulator
from verifiers.embedded.verifier import EmbeddedVerifier

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "embedded" / "board"
TOOLS = ("arm-none-eabi-gcc", "qemu-system-arm", "bwrap")
pytestmark = pytest.mark.skipif(
    any(shutil.which(t) is None for t in TOOLS),
    reason="embedded toolchain missing: bash infra/install-toolchains.sh embedded",
)


@pytest.fixture(scope="module")
def task():
    return load_task(FIXTURE, "embedded")


@pytest.fixture(scope="module")
def verifier():
    return EmbeddedVerifier()


@pytest.fixture(scope="module")
def ref(task):
    return task.reference


def edit(code: str, old: str, new: str) -> str:
    assert old in code, old
    return code.replace(old, new, 1)


def failed_gate(v) -> str:
    return next(c.name for c in v.checks if not c.ok)


def test_reference_passes_every_gate(task, verifier, ref):
    v = verifier.verify(task, ref)
    assert v.status is Status.PASS, v.feedback
    assert [c.name for c in v.checks] == ["format", *verifier.gates]
    assert v.metrics["exit_code"] == 7 and v.metrics["flash_bytes"] > 0
    assert {a.name for a in v.artifacts} >= {"uart.txt", "register_trace.txt"}
    assert "arm-none-eabi-gcc" in v.toolchain and "qemu-system-arm" in v.toolchain


# --- compile -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "old,new,code",
    [
        ("tick_count++;", "tick_count++", "syntax_error"),
        ("USART1->BRR =", "USART1->BAUD =", "wrong_api"),  # no such register
        ('#include "stm32f4.h"', '#include "stm32f4xx_hal.h"', "wrong_api"),
        ("void led(int on) {", "void led(int on, int x) {", "type_error"),  # not the interface
        ("tick_count++;", "tick_count++; undeclared_counter++;", "undeclared_identifier"),
        # a HAL function that does not exist: an implicit declaration, refused as `api`
        ("tick_count++;", "tick_count++; hal_systick_clear();", "undefined_symbol"),
    ],
)
def test_compile_errors_are_parsed(task, verifier, ref, old, new, code):
    v = verifier.verify(task, edit(ref, old, new))
    assert (v.status, v.code, failed_gate(v)) == (Status.COMPILE_ERROR, code, "compile"), v.feedback
    assert "line " in v.feedback or "#include" in v.feedback


def test_an_include_the_task_does_not_allow_is_refused(task, verifier, ref):
    v = verifier.verify(task, edit(ref, "#include <stdint.h>", "#include <string.h>"))
    assert (v.status, v.code) == (Status.COMPILE_ERROR, "wrong_api")
    assert "not allowed" in v.checks[-1].detail


# --- link --------------------------------------------------------------------------------


def test_a_missing_interface_function_is_format_error(task, verifier, ref):
    v = verifier.verify(task, edit(ref, "uint32_t ticks(void) { return tick_count; }", ""))
    assert (v.status, v.code) == (Status.FORMAT_ERROR, "missing_entry_point"), v.feedback
    assert "ticks" in v.feedback


def test_an_undefined_reference_is_api_with_the_symbol(task, verifier, ref):
    code = "void hal_watchdog_kick(void);\n" + edit(
        ref, "tick_count++;", "tick_count++; hal_watchdog_kick();"
    )
    v = verifier.verify(task, code)
    assert (v.status, v.code, failed_gate(v)) == (Status.COMPILE_ERROR, "undefined_symbol", "link")
    assert v.category == "api" and v.metrics["missing_symbol"] == "hal_watchdog_kick"


def test_a_hal_call_the_task_does_not_allow_is_refused(task, verifier, ref):
    code = '#include "hal.h"\n' + edit(
        ref, "void led(int on) {", "void led(int on) {\n  hal_gpio_toggle(GPIOA, 5);"
    )
    t = _with(task, interface={**task.interface, "headers": [*task.interface["headers"], "hal.h"]})
    v = verifier.verify(t, code)
    assert (v.status, v.code, failed_gate(v)) == (Status.COMPILE_ERROR, "api_not_allowed", "link")
    assert "hal_gpio_toggle" in v.feedback


def test_a_required_hal_call_must_be_made(task, verifier, ref):
    iface = {**task.interface, "allowed_api": ["hal_uart_init"], "required_api": ["hal_uart_init"]}
    v = verifier.verify(_with(task, interface=iface), ref)
    assert (v.status, v.code) == (Status.COMPILE_ERROR, "api_not_used"), v.feedback


def test_the_harness_symbols_are_not_the_candidates(task, verifier, ref):
    v = verifier.verify(task, ref + "\nvoid HardFault_Handler(void) { for (;;) {} }\n")
    assert (v.status, failed_gate(v)) == (Status.COMPILE_ERROR, "link"), v.feedback
    assert "multiple definition" in v.feedback
    code = (
        ref
        + "\nvoid crucible_report(const char *k, uint32_t v);\n"
        + 'void x(void) { crucible_report("a", 1); }\n'
    )
    v = verifier.verify(task, code)
    assert (v.status, v.code) == (Status.COMPILE_ERROR, "api_not_allowed"), v.feedback


def test_a_semihosting_trap_in_the_candidate_is_rejected(task, verifier, ref):
    code = edit(ref, "tick_count++;", 'tick_count++; __asm__ volatile("bkpt 0xab");')
    v = verifier.verify(task, code)
    assert (v.status, v.code, failed_gate(v)) == (Status.REJECTED, "semihosting_call", "link")
    raw = edit(ref, "tick_count++;", 'tick_count++; __asm__ volatile(".short 0xbeab");')
    assert verifier.verify(task, raw).code == "semihosting_call"


def test_a_vector_table_of_the_candidates_own_is_rejected(task, verifier, ref):
    """Input sections go in link order and the candidate's object comes first: its own
    .isr_vector would become the reset vector and the initial stack pointer."""
    code = ref + (
        "\nvoid my_reset(void) { for (;;) {} }\n"
        '__attribute__((section(".isr_vector"), used)) void (*const mine[2])(void) = '
        "{(void (*)(void))0x20020000, my_reset};\n"
    )
    v = verifier.verify(task, code)
    assert (v.status, v.code, failed_gate(v)) == (Status.REJECTED, "testbench_tampering", "link")


# --- size --------------------------------------------------------------------------------


def test_a_firmware_that_does_not_fit_is_resource_limit(task, verifier, ref):
    big = ref + "\nuint8_t huge[200 * 1024];\nvoid touch(void) { huge[5] = 1; }\n"
    big = edit(big, "void led(int on) {", "void touch(void);\nvoid led(int on) {\n  touch();")
    v = verifier.verify(task, big)
    assert (v.status, v.code) == (Status.RESOURCE_LIMIT, "firmware_too_large"), v.feedback
    tight = _with(task, harness={**task.harness, "max_flash": 1024})
    v = verifier.verify(tight, ref)
    assert (v.status, v.code, failed_gate(v)) == (
        Status.RESOURCE_LIMIT,
        "firmware_too_large",
        "size",
    )


# --- boot --------------------------------------------------------------------------------


def test_a_fault_reports_its_registers_and_pc(task, verifier, ref):
    v = verifier.verify(
        task, edit(ref, "void led(int on) {", "void led(int on) {\n  __builtin_trap();")
    )
    assert (v.status, v.code, failed_gate(v)) == (Status.RUNTIME_ERROR, "hard_fault", "boot"), (
        v.feedback
    )
    assert "UsageFault" in v.feedback and "UNDEFINSTR" in v.feedback
    assert "led+0x" in v.feedback  # the faulting PC, named
    bad_addr = edit(
        ref, "void led(int on) {", "void led(int on) {\n  *(volatile uint32_t *)0xA0001000 = 1;"
    )
    v = verifier.verify(task, bad_addr)
    assert v.code == "hard_fault" and "BusFault" in v.feedback, v.feedback


def test_a_misspelt_handler_falls_to_the_default_handler(task, verifier, ref):
    v = verifier.verify(task, edit(ref, "void SysTick_Handler(void)", "void Systick_Handler(void)"))
    assert (v.status, v.code, failed_gate(v)) == (
        Status.RUNTIME_ERROR,
        "unhandled_interrupt",
        "boot",
    )
    assert "SysTick_Handler is not defined" in v.feedback and "Systick_Handler" in v.feedback


def test_a_busy_hang_is_timeout(task, verifier, ref):
    v = verifier.verify(
        task,
        edit(ref, "void led(int on) {", "void led(int on) {\n  for (;;) {}"),
        Limits(timeout_s=3, cpu_s=1),
    )
    # its CPU budget, or (on a loaded machine) the wall clock after it had the CPU for it
    assert (v.status, v.code) in {(Status.TIMEOUT, "cpu_limit"), (Status.TIMEOUT, "firmware_hang")}
    assert v.status is Status.TIMEOUT, v.feedback
    assert v.metrics["hang_pc"].endswith(tuple(f"led+0x{i:x}" for i in range(64))), v.metrics
    assert "firmware was at PC=0x08" in v.feedback and "(led+0x" in v.feedback


def test_a_missing_volatile_on_the_isr_counter_hangs_or_fails(task, verifier, ref):
    code = edit(ref, "static volatile uint32_t tick_count;", "static uint32_t tick_count;")
    code = edit(
        code,
        "uint32_t ticks(void) { return tick_count; }",
        "uint32_t ticks(void) { uint32_t t = tick_count; while (t == tick_count) {} return t; }",
    )
    v = verifier.verify(task, code, Limits(timeout_s=3, cpu_s=1))
    assert v.status is Status.TIMEOUT, v.feedback


def test_ready_bits_follow_their_enables_and_a_bit_that_never_comes_is_the_firmwares(
    task, verifier, ref
):
    """The harness's register model sets RCC->CR.PLLRDY once PLLON is set, as the chip does:
    a PLL start-up that waits for it passes. Waiting for PLLRDY without ever setting PLLON
    hangs on the chip too: the firmware's own timeout, named (before the model, both were
    infra_error emulator_unmodelled_register, retried forever: a wrong candidate dodged
    its label by spinning first)."""
    wait = "  while (!(RCC->CR & RCC_CR_PLLRDY)) {\n  }"
    pll = edit(
        ref,
        "void board_init(void) {",
        "void board_init(void) {\n  RCC->CR |= RCC_CR_PLLON;\n" + wait,
    )
    assert verifier.verify(task, pll).status is Status.PASS
    never = edit(ref, "void board_init(void) {", "void board_init(void) {\n" + wait)
    v = verifier.verify(task, never)
    assert (v.status, v.code) == (Status.TIMEOUT, "register_poll_hang"), v.feedback
    assert v.metrics["polled_register"] == "RCC+0x000"


I2C1_SR1 = "(*(volatile uint32_t *)0x40005414u)"  # QEMU leaves I2C1 unimplemented


def test_spinning_on_an_unmodelled_register_is_judged_by_what_the_reference_touches(
    task, verifier, ref
):
    """A register outside the model (I2C1's status): spinning on one the reference never
    touches is the firmware's (timeout); on one the reference reads too, the emulator's
    limit (infra)."""
    spin = edit(
        ref, "void led(int on) {", f"void led(int on) {{\n  while (!({I2C1_SR1} & 1u)) {{\n  }}"
    )
    v = verifier.verify(task, spin)
    assert (v.status, v.code) == (Status.TIMEOUT, "register_poll_hang"), v.feedback
    assert "never touches" in v.feedback
    touching = edit(ref, "void led(int on) {", f"void led(int on) {{\n  (void){I2C1_SR1};")
    t = _with(task, reference=touching)
    v = EmbeddedVerifier().verify(t, spin)
    assert (v.status, v.code) == (Status.INFRA_ERROR, "emulator_unmodelled_register"), v.feedback


def test_an_uart_flood_is_resource_limit(task, verifier, ref):
    code = edit(
        ref, "void led(int on) {", 'void led(int on) {\n  for (;;) say("flood flood flood\\n");'
    )
    v = verifier.verify(task, code, Limits(output_bytes=64 * 1024))
    assert (v.status, v.code) == (Status.RESOURCE_LIMIT, "output_limit"), v.feedback


def test_a_register_loop_overflows_the_trace(task, verifier, ref):
    code = edit(ref, "void led(int on) {", "void led(int on) {\n  for (;;) GPIOA->ODR ^= 1;")
    v = verifier.verify(task, code)
    assert (v.status, v.code) == (Status.RESOURCE_LIMIT, "trace_limit"), v.feedback


# --- judges --------------------------------------------------------------------------------


def test_a_wrong_exit_code_fails_exit(task, verifier, ref):
    t = _with(task, harness={**task.harness, "exit_code": 3})
    v = verifier.verify(t, ref)
    assert (v.status, v.code, failed_gate(v)) == (Status.WRONG_ANSWER, "exit_code_mismatch", "exit")


def test_a_wrong_baud_divisor_fails_uart(task, verifier, ref):
    v = verifier.verify(
        task, edit(ref, "(16000000UL + 115200UL / 2) / 115200UL", "16000000UL / 9600UL")
    )
    assert (v.status, v.code, failed_gate(v)) == (Status.WRONG_ANSWER, "uart_mismatch", "uart")
    assert "@brr=0x0000008b" in v.feedback and "0x00000682" in v.feedback


def test_printing_the_expected_lines_does_not_pass(task, verifier, ref):
    """A forged report: the candidate prints what the harness would, and skips the work."""
    forged = edit(ref, "  RCC->APB2ENR |= RCC_APB2ENR_USART1EN;\n", "")
    forged = edit(
        forged,
        "void say(const char *text) {",
        'void say(const char *text) {\n  text = "hello\\n@brr=0x0000008b\\n@cr1=0x0000200c\\n'
        '@load=0x00003e7f\\n@prio=0x00000020\\n@ticked=0x00000001\\n";',
    )
    v = verifier.verify(task, forged)
    assert not v.passed
    assert v.code in ("uart_mismatch", "register_mismatch"), v.feedback


@pytest.mark.parametrize(
    "old,new,why",
    [
        ("  RCC->AHB1ENR |= RCC_AHB1ENR_GPIOAEN;\n", "", "was never written"),  # clock missing
        ("(GPIO_MODER_OUTPUT << 10)", "(GPIO_MODER_OUTPUT << 12)", "MODER"),  # wrong bit
        ("GPIOA->BSRR = on ?", "GPIOA->ODR = on ?", "BSRR"),  # wrong register
        # `=` for `|=`: the preset clock enables (CCMDATARAM, GPIOH) are cleared
        (
            "RCC->AHB1ENR |= RCC_AHB1ENR_GPIOAEN;",
            "RCC->AHB1ENR = RCC_AHB1ENR_GPIOAEN;",
            "were not kept",
        ),
        # a read first does not make it a read-modify-write: judged by value, not by order
        (
            "RCC->AHB1ENR |= RCC_AHB1ENR_GPIOAEN;",
            "(void)RCC->AHB1ENR;\n  RCC->AHB1ENR = RCC_AHB1ENR_GPIOAEN;",
            "were not kept",
        ),
        # a byte store into MODER's top byte clobbers the SWD pins (PA13-15): offset 0x03 is
        # MODER's byte, not a register of its own
        (
            "  RCC->APB2ENR |=",
            "  *((volatile uint8_t *)&GPIOA->MODER + 3) = 0;\n  RCC->APB2ENR |=",
            "is 0x00000400 after write 2",
        ),
    ],
)
def test_wrong_register_writes_fail_registers(task, verifier, ref, old, new, why):
    v = verifier.verify(task, edit(ref, old, new))
    assert (v.status, v.code, failed_gate(v)) == (
        Status.WRONG_ANSWER,
        "register_mismatch",
        "registers",
    )
    assert why in v.feedback


def test_sub_word_stores_are_writes_of_their_register(task, verifier, ref):
    """A halfword store to BSRR's upper half (offset 0x1a) resets the pin as the word store
    does: the same writes, so the same verdict; a wrong pin through it is seen."""
    half = "*((volatile uint16_t *)&GPIOA->BSRR + 1) = 1u << 5;"
    led = "void led(int on) {\n  if (!on) {\n    " + half + "\n    return;\n  }\n "
    v = verifier.verify(task, edit(ref, "void led(int on) {", led))
    assert v.status is Status.PASS, v.feedback
    wrong = edit(ref, "void led(int on) {", led.replace("1u << 5", "1u << 6"))
    v = verifier.verify(task, wrong)
    assert (v.status, v.code) == (Status.WRONG_ANSWER, "register_mismatch"), v.feedback
    assert "0x400000" in v.feedback


def test_painted_ram_leaves_the_stack_its_room_and_sees_a_store_past_it(task, verifier, ref):
    """An 8 KiB local buffer is honest stack use (the paint starts 16 KiB below the test
    main's stack); a store 40000 bytes past a global lands in the paint and is named."""
    deep = "void led(int on) {\n  volatile uint8_t big[8192];\n  big[0] = 1;\n  big[8191] = 2;\n"
    assert verifier.verify(task, edit(ref, "void led(int on) {", deep)).status is Status.PASS
    stray = "void led(int on) {\n  ((volatile uint8_t *)&tick_count)[40000] = 1u;\n"
    v = verifier.verify(task, edit(ref, "void led(int on) {", stray))
    assert (v.status, v.code) == (Status.WRONG_ANSWER, "out_of_bounds_write"), v.feedback
    assert "bytes past the end of" in v.feedback and v.metrics["oob_first"].startswith("0x2000")


@pytest.mark.parametrize(
    "access",
    [
        '__asm__ volatile("ldm %0, {r2, r3}" : : "r"(GPIOA) : "r2", "r3", "memory");',
        '__asm__ volatile("ldrd r2, r3, [%0]" : : "r"(GPIOA) : "r2", "r3", "memory");',
    ],
    ids=["ldm", "ldrd"],
)
def test_an_access_the_register_model_does_not_decode_is_final_and_explained(
    task, verifier, ref, access
):
    """LDM / LDRD of GPIO registers: the trap cannot serve them; the firmware's own label,
    explained, never infra retried forever (deterministic: a retry gives the same)."""
    v = verifier.verify(task, edit(ref, "void led(int on) {", "void led(int on) {\n  " + access))
    assert (v.status, v.code) == (Status.RUNTIME_ERROR, "unsupported_peripheral_access"), v.feedback
    assert "0x40020000" in v.feedback and "(led+0x" in v.feedback


def test_a_wrong_priority_is_seen_through_the_harness(task, verifier, ref):
    v = verifier.verify(
        task, edit(ref, "NVIC_SetPriority(SysTick_IRQn, 2);", "NVIC_SetPriority(SysTick_IRQn, 3);")
    )
    assert (v.code, failed_gate(v)) == ("uart_mismatch", "uart")
    assert "@prio=0x00000030" in v.feedback


# --- the emulator's reach ------------------------------------------------------------------


def test_semihosting_serves_nothing_but_the_exit(task, ref, tmp_path):
    """Past the link gate's trap check, a firmware's semihosting calls reach QEMU, which
    serves none but the exit (-semihosting-config target=gdb, no debugger): opens, reads of
    the sandbox's /proc, a shell command come back without effect, so the firmware learns
    nothing of the host and leaves nothing there."""
    verifier = NoTrapCheck(keep_workdirs=tmp_path)
    opener = SEMIHOST + edit(
        ref,
        "void led(int on) {",
        """void led(int on) {
  static const char name[] = "planted.txt";
  static const char env[] = "/proc/self/environ";
  static char buf[64];
  uint32_t a[3] = {(uint32_t)name, 4, sizeof(name) - 1};
  uint32_t b[3] = {(uint32_t)env, 0, sizeof(env) - 1};
  (void)semihost(0x01, a);
  uint32_t r[3] = {(uint32_t)semihost(0x01, b), (uint32_t)buf, 63};
  (void)semihost(0x06, r);
  static const char cmd[] = "touch /work/ran";
  uint32_t c[2] = {(uint32_t)cmd, sizeof(cmd) - 1};
  (void)semihost(0x12, c);
  say(buf);""",
    )
    v = verifier.verify(task, opener)
    assert v.status is Status.PASS, v.feedback  # nothing read, nothing said
    assert not list(tmp_path.glob("*/planted.txt")) and not list(tmp_path.glob("*/ran"))


def test_the_same_firmware_gives_the_same_trace(task, verifier, ref):
    a, b = verifier.verify(task, ref), verifier.verify(task, ref)
    assert a.metrics["trace_sha"] == b.metrics["trace_sha"]
    assert (a.status, a.code) == (b.status, b.code)


def test_the_unimp_trace_parser():
    q = emulator.Qemu()
    run = q.parse(
        0,
        "",
        "RCC: unimplemented device write (size 4, offset 0x030, value 0x00000001)\n"
        "GPIOA: unimplemented device read  (size 4, offset 0x010)\nnoise\n",
        False,
    )
    assert [a.show() for a in run.accesses] == ["RCC+0x030 <- 0x00000001", "GPIOA+0x010 read"]
    assert run.errors == ["noise"] and run.writes("RCC", 0x30) == [1]
    spin = q.parse(0, "", "RCC: unimplemented device read  (size 4, offset 0x000)\n" * 300, True)
    assert spin.spin() is not None
    mixed = (
        "RCC: unimplemented device read  (size 4, offset 0x000)\n"
        "GPIOA: unimplemented device read  (size 4, offset 0x010)\n"
    )
    assert q.parse(0, "", mixed * 200, True).spin() is None


def test_register_writes_are_decoded_by_lane_and_replayed_from_the_presets():
    """No emulator: a trace replayed. A byte store at MODER+3 is MODER's top byte; a
    halfword at BSRR+2 is BSRR's reset half; a register's value starts at the harness's
    preset (periph.c's PRESET rows: GPIOA MODER 0xa8000000, the SWD pins); the state line
    is cut from the transcript and read; a forged one earlier in it is just text."""
    q = emulator.Qemu()

    def line(size, off, val):
        what = f"size {size}, offset 0x{off:03x}, value 0x{val:x}"
        return f"GPIOA: unimplemented device write ({what})\n"

    run = q.parse(
        0,
        "hi\n\x1e!state primask=0 basepri=0x00\nmore\n"
        "\x1e!state primask=1 basepri=0x80 vtor=0x08000000\n",
        line(4, 0x000, 0xA8000400) + line(1, 0x003, 0x00) + line(2, 0x01A, 0x20),
        False,
    )
    assert emulator.preset_of("GPIOA", 0x00) == (0xA8000000, 0)
    assert run.writes("GPIOA", 0x00) == [0xA8000400, 0x00000400]  # the byte cleared PA12-15
    assert run.final("GPIOA", 0x00) == 0x400
    assert run.writes("GPIOA", 0x18) == [0x00200000]  # BSRR: the lanes written, no memory
    assert run.state == {"primask": 1, "basepri": 0x80, "vtor": 0x08000000}
    assert run.uart == "hi\n\x1e!state primask=0 basepri=0x00\nmore\n"


def _with(task, **changes):
    import dataclasses

    return dataclasses.replace(task, **changes)


ECHO_TEST = """
#include "harness.h"
#include "stm32f4.h"
void board_init(void);
void say(const char *text);
int crucible_test_main(void) {
  board_init();
  crucible_rx_ready();
  static char line[32];
  int n = 0;
  while (n < 31) {
    while (!(USART1->SR & USART_SR_RXNE)) {
    }
    char c = (char)USART1->DR;
    if (c == '\\n') break;
    line[n++] = c;
  }
  say(line);
  say("|\\n");
  return 7;
}
"""


def test_uart_input_arrives_whole_once_the_receiver_is_on(task, verifier, ref):
    """QEMU drops bytes that come before the receiver is enabled: the input is held back
    until the test main says it is ready, so every run reads all of it."""
    h = {**task.harness, "test": ECHO_TEST, "uart_input": "ping 123\n", "uart": "ping 123|\n",
         "registers": []}  # fmt: skip
    t = _with(task, harness=h)
    verdicts = [verifier.verify(t, ref) for _ in range(8)]
    assert {(v.status, v.code) for v in verdicts} == {(Status.PASS, "")}, verdicts[0].feedback


def test_a_starved_emulator_is_the_machines_whatever_its_threads():
    """Seen at load 30: QEMU stopped by the wall clock with 1.76 s of a 3 s CPU budget and
    4.7 s of CPU wait. The shared rule counts QEMU's own threads (main loop, RCU, the UART
    feeder) as the run's contenders and says `timeout`; the guest is one core, so the
    embedded verifier judges it the machine's. A run that had its CPU stays the firmware's."""
    from verifiers.base import GateFail
    from verifiers.embedded.verifier import _starved
    from verifiers.sandbox import RunResult, Stop, Usage

    def stopped(cpu: float, wait: float) -> RunResult:
        stop = Stop(4.0, True, Usage(cpu, wait, 5), 3.0)
        return RunResult(-9, "", "", 4.0, timed_out=True, signal=9, stop=stop)

    starved = stopped(1.76, 4.69)
    assert starved.stop.code() == "timeout"  # the shared rule, threads counted
    with pytest.raises(GateFail) as e:
        _starved(starved)
    assert (e.value.status, e.value.code) == (Status.INFRA_ERROR, "machine_slow")
    _starved(stopped(2.9, 0.1))  # it had the CPU: not the machine's (fail_on_limit judges it)
