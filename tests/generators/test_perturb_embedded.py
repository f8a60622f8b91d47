"""The offline embedded generator: every operator applies where its construct exists and
nowhere else, changes one thing, never edits comments or strings, is deterministic; with
arm-none-eabi-gcc present, rewrites and functional mutations compile and syntax / api ones
do not."""

from __future__ import annotations

import difflib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from generators.base import seeded_rng
from generators.perturb import generator_for, known_domains
from generators.perturb.c_sites import analyze, lex
from generators.perturb.embedded import MUTATIONS, REWRITES, EmbeddedPerturbGenerator
from verifiers.catalog import load_catalog
from verifiers.contract import ORIGINS, Task
from verifiers.embedded import build
from verifiers.taxonomy import API, CATEGORIES, FUNCTIONAL, SYNTAX

ROOT = Path(__file__).resolve().parents[2]
needs_gcc = pytest.mark.skipif(
    shutil.which(build.CC) is None,
    reason="arm-none-eabi-gcc missing: bash infra/install-toolchains.sh embedded",
)

# --- small firmware, one per kind of construct the operators look for -------------------------

GPIO = """\
#include <stdint.h>
#include "stm32f4.h"

#define LED_PIN 5u /* PA5: the Nucleo's LED */

// Turn on GPIOA's clock, then make PA5 a push-pull output.
void led_init(void) {
    RCC->AHB1ENR |= RCC_AHB1ENR_GPIOAEN;
    GPIOA->MODER &= ~(3u << (LED_PIN * 2u));
    GPIOA->MODER |= (1u << (LED_PIN * 2u));
    GPIOA->OTYPER &= ~(1u << 5);
}

void led_set(int on) {
    if (on) {
        GPIOA->BSRR = (1u << 5);
    } else {
        GPIOA->BSRR = (1u << 21);  /* reset bit: 5 + 16 */
    }
}

int led_pattern(uint32_t mask) {
    int lit = 0;
    for (int i = 0; i < 8; i++) {
        uint32_t bit = (mask >> i) & 1u;
        GPIOA->ODR = GPIOA->ODR | (bit << 5);
        lit += (int)bit;
    }
    return lit;
}
"""

UART = """\
#include <stdint.h>
#include "stm32f4.h"

#define RX_SIZE 16u

static volatile uint8_t rx_buf[RX_SIZE];
static volatile uint32_t rx_head; /* written by the ISR */
static volatile uint32_t rx_tail;
static const char banner[] = "uart2 ready: RCC->APB1ENR |= 1; % RX_SIZE";

void uart_init(uint32_t baud) {
    RCC->APB1ENR |= RCC_APB1ENR_USART2EN;
    USART2->BRR = (16000000u + baud / 2u) / baud;
    USART2->CR1 = USART_CR1_UE | USART_CR1_TE | USART_CR1_RE | USART_CR1_RXNEIE;
    NVIC_SetPriority(USART2_IRQn, 3);
    NVIC_EnableIRQ(USART2_IRQn);
}

void USART2_IRQHandler(void) {
    if (USART2->SR & USART_SR_RXNE) {
        uint8_t c = (uint8_t)USART2->DR;
        uint32_t next = (rx_head + 1u) % RX_SIZE;
        if (next != rx_tail) {
            rx_buf[rx_head] = c;
            rx_head = next;
        }
    }
}

int uart_read(void) {
    if (rx_head == rx_tail) {
        return -1;
    }
    int c = rx_buf[rx_tail];
    rx_tail = (rx_tail + 1u) % RX_SIZE;
    return c;
}

int uart_full(void) {
    return (rx_head + 1u) % RX_SIZE == rx_tail;
}

uint32_t uart_banner_len(void) {
    return sizeof banner - 1u;
}
"""

SYSTICK = """\
#include <stdint.h>
#include "stm32f4.h"

static volatile uint32_t ticks;

void SysTick_Handler(void) {
    ticks++;
}

void tick_init(void) {
    SysTick->LOAD = 16000u - 1u;
    SysTick->VAL = 0u;
    SysTick->CTRL = SysTick_CTRL_CLKSOURCE | SysTick_CTRL_TICKINT | SysTick_CTRL_ENABLE;
    SCB->SHP[11] = 0x20;  // SysTick is exception 15: SHP[15 - 4]
    NVIC->IP[TIM2_IRQn] = (4u << 4);
}

uint32_t tick_wait(uint32_t n) {
    uint32_t start = ticks;
    while (ticks - start < n) {
        __WFI();
    }
    return ticks;
}
"""

HAL = """\
#include <stdint.h>
#include "hal.h"

static volatile int tim_events;

void TIM2_IRQHandler(void) {
    TIM2->SR = 0;
    tim_events += 1;
}

void app_init(void) {
    hal_gpio_clock_enable(GPIOA);
    hal_gpio_mode(GPIOA, 5, GPIO_MODER_OUTPUT);
    hal_uart_init(USART2, 115200);
    hal_tim_clock_enable(TIM2);
    hal_tim_base(TIM2, 15, 999);
    TIM2->DIER |= TIM_DIER_UIE;
    hal_nvic_enable(TIM2_IRQn, 2);
    hal_tim_start(TIM2);
}

void app_report(const char *text) {
    hal_uart_write(USART2, text);
    hal_gpio_write(GPIOA, 5, 1);
}

int app_events(void) {
    return tim_events;
}
"""

FIRMWARE = {"gpio": GPIO, "uart": UART, "systick": SYSTICK, "hal": HAL}
INTERFACES = {
    "gpio": ["void led_init(void)", "void led_set(int on)", "int led_pattern(uint32_t mask)"],
    "uart": ["void uart_init(uint32_t baud)", "int uart_read(void)", "int uart_full(void)",
             "uint32_t uart_banner_len(void)"],
    "systick": ["void tick_init(void)", "uint32_t tick_wait(uint32_t n)"],
    "hal": ["void app_init(void)", "void app_report(const char *text)", "int app_events(void)"],
}  # fmt: skip
PLAIN = """\
#include <stdint.h>

int add(int a, int b) {
    return a + b;
}
"""
EMPTY = "#include <stdint.h>\n"

# operator -> (firmware it must apply to, one it cannot apply to)
MUTATION_CASES = {
    "missing_clock_enable": (GPIO, SYSTICK),
    "wrong_register_offset": (GPIO, PLAIN),
    "wrong_bit": (UART, PLAIN),
    "wrong_baud_divisor": (UART, GPIO),
    "misspelled_irq_handler": (SYSTICK, GPIO),
    "missing_volatile": (UART, GPIO),
    "wrong_nvic_priority": (SYSTICK, GPIO),
    "ring_buffer_off_by_one": (UART, GPIO),
    "nonexistent_hal_call": (HAL, GPIO),
    "off_by_one": (GPIO, PLAIN),
    "missing_semicolon": (PLAIN, EMPTY),
    "swapped_operator": (PLAIN, EMPTY),
    "wrong_operator": (GPIO, PLAIN),
}
REWRITE_CASES = {
    "reformat": (GPIO, None),
    "rename_locals": (PLAIN, EMPTY),
    "compound_assign": (GPIO, PLAIN),
    "literal_base": (SYSTICK, PLAIN),
}
UNCOMPILABLE = {m.name for m in MUTATIONS if m.category in (SYNTAX, API)}


def _task(source: str | None, name: str = "t") -> Task:
    return Task(name=name, domain="embedded", family="gpio", level=1, requirement="r",
                interface={}, platform={}, reference=source, harness={})  # fmt: skip


def _rng(op: str, seed: int = 0) -> random.Random:
    return seeded_rng("test-task", op, str(seed))


def _changed_lines(a: str, b: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def _gcc(tmp_path: Path, code: str, functions: list[str], name: str) -> subprocess.CompletedProcess:
    iface = tmp_path / f"{name}_iface.h"
    iface.write_text(build.interface_header(functions))
    src = tmp_path / f"{name}.c"
    src.write_text(code)
    argv = [build.CC, *build.CFLAGS, "-I", str(build.INCLUDE), "-include", str(iface), "-c",
            str(src), "-o", str(tmp_path / f"{name}.o")]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


# --- the tables --------------------------------------------------------------------------------


def test_tables_cover_the_required_bugs_and_rewrites():
    names = {m.name for m in MUTATIONS}
    assert names >= {
        "missing_clock_enable", "wrong_register_offset", "wrong_bit", "wrong_baud_divisor",
        "misspelled_irq_handler", "missing_volatile", "wrong_nvic_priority",
        "ring_buffer_off_by_one", "nonexistent_hal_call",
    }  # fmt: skip
    assert set(MUTATION_CASES) == names, "every mutation needs a test case here"
    assert set(REWRITE_CASES) == {r.name for r in REWRITES}
    for m in MUTATIONS:
        assert m.category in CATEGORIES and m.description and callable(m.apply)
    by = {m.name: m.category for m in MUTATIONS}
    assert by["nonexistent_hal_call"] == API and by["missing_semicolon"] == SYNTAX
    assert by["missing_clock_enable"] == by["wrong_bit"] == FUNCTIONAL


def test_registry_gives_a_fresh_embedded_generator():
    assert "embedded" in known_domains()
    gen = generator_for("embedded")
    assert isinstance(gen, EmbeddedPerturbGenerator) and gen.name == "perturb:embedded"
    assert generator_for("embedded") is not gen


def test_the_lexer_keeps_comments_strings_and_directives_apart():
    code, comments = lex(UART)
    assert any('"uart2 ready' in t.text for t in code if t.kind == "str")
    assert [c.text for c in comments] == ["/* written by the ISR */"]
    s = analyze(UART)
    assert all(t.pp for t in s.toks if t.text == "RX_SIZE" and t.start < UART.index("static"))
    names = [s.name_of(f) for f in s.functions]
    assert names == ["uart_init", "USART2_IRQHandler", "uart_read", "uart_full",
                     "uart_banner_len"]  # fmt: skip
    assert [t.text for t in lex("x = 0x20UL << 1u;")[0]] == ["x", "=", "0x20UL", "<<", "1u", ";"]


# --- each operator, alone ----------------------------------------------------------------------


@pytest.mark.parametrize("op", MUTATIONS + REWRITES, ids=lambda op: op.name)
def test_operator_applies_where_it_should_and_only_there(op):
    good, bad = (MUTATION_CASES | REWRITE_CASES)[op.name]
    out = op.apply(good, _rng(op.name))
    assert out is not None and out != good
    assert op.apply(good, _rng(op.name)) == out, "same rng seed, same result"
    if bad is not None:
        assert op.apply(bad, _rng(op.name)) is None


@pytest.mark.parametrize("op", MUTATIONS, ids=lambda op: op.name)
def test_mutations_change_one_thing_and_never_comments_or_strings(op):
    for source in FIRMWARE.values():
        literals = [t.text for t in lex(source)[0] if t.kind == "str"]
        for seed in range(6):
            out = op.apply(source, _rng(op.name, seed))
            if out is None:
                continue
            changed = _changed_lines(source, out)
            assert 1 <= len(changed) <= 2, f"{op.name}: {changed}"
            assert len([x for x in changed if x.startswith("-")]) == 1
            for comment in lex(source)[1]:
                assert comment.text in out, f"{op.name} touched {comment.text!r}"
            for lit in literals:
                assert lit in out, f"{op.name} touched {lit!r}"


def test_code_inside_comments_and_strings_is_never_a_site():
    src = (
        "#include <stdint.h>\n"
        "// RCC->AHB1ENR |= 1u << 5; USART1_IRQHandler NVIC_SetPriority(x, 3); hal_uart_write\n"
        "/* GPIOA->ODR |= (1u << 5); for (i = 0; i < 8; i++) x %= SIZE; */\n"
        'static const char s[] = "RCC->APB1ENR |= (1u << 17); USART2->BRR = 16000000 / baud;";\n'
        "int f(void) { return (int)sizeof s; }\n"
    )
    for op in MUTATIONS:
        if op.name == "missing_semicolon":
            continue
        for seed in range(6):
            assert op.apply(src, _rng(op.name, seed)) is None, op.name


def test_specific_edits_look_like_the_bug_they_imitate():
    by = {m.name: m for m in MUTATIONS}

    def outs(name: str, source: str) -> set[str]:
        return {by[name].apply(source, _rng(name, seed)) for seed in range(16)} - {None}

    assert all("RCC->AHB1ENR" not in o for o in outs("missing_clock_enable", GPIO))
    assert all("hal_gpio_clock_enable" not in o or "hal_tim_clock_enable" not in o
               for o in outs("missing_clock_enable", HAL))  # fmt: skip
    regs = outs("wrong_register_offset", GPIO)
    assert any("GPIOA->OTYPER &= ~(3u" in o or "GPIOA->PUPDR &= ~(3u" in o for o in regs)
    assert any("RCC->AHB2ENR |=" in o for o in regs)
    bits = outs("wrong_bit", UART)
    assert any("USART_CR1_RE | USART_CR1_TCIE;" in o for o in bits)
    assert not any("USART_CR1_RE | USART_CR1_RE" in o for o in bits), "not a dropped bit"
    te = "void f(void) { USART1->CR1 = USART_CR1_TE; }"
    assert outs("wrong_bit", te) == {te.replace("TE;", "RE;"), te.replace("TE;", "RXNEIE;")}
    assert any("(1u << 6)" in o or "(1u << 4)" in o for o in outs("wrong_bit", GPIO))
    baud = outs("wrong_baud_divisor", UART)
    assert any("/ (baud * 2)" in o for o in baud) and any("8000000u" in o for o in baud)
    assert any("hal_uart_init(USART2, 115200)" not in o for o in outs("wrong_baud_divisor", HAL))
    irq = outs("misspelled_irq_handler", SYSTICK)
    assert "void SysTick_Handler" not in "".join(irq) and any("Systick_Handler" in o for o in irq)
    assert all("USART2_IRQHandler" not in o for o in outs("misspelled_irq_handler", UART))
    vol = outs("missing_volatile", UART)
    assert vol and all(o.count("volatile") == UART.count("volatile") - 1 for o in vol)
    assert all("static volatile uint32_t rx_head" not in o or "static volatile uint32_t "
               "rx_tail" not in o or "volatile uint8_t rx_buf" not in o for o in vol)  # fmt: skip
    prio = outs("wrong_nvic_priority", SYSTICK.replace("(4u << 4)", "PRIO(4u)"))
    assert any("SHP[11] = 0x30" in o or "SHP[11] = 0x10" in o for o in prio)
    assert any("PRIO(5u)" in o or "PRIO(3u)" in o for o in prio)
    raw = outs("wrong_nvic_priority", "void f(int p) { NVIC->IP[6] = 0; NVIC->IP[7] = p; }")
    assert raw == {
        "void f(int p) { NVIC->IP[6] = 16; NVIC->IP[7] = p; }",
        "void f(int p) { NVIC->IP[6] = 0; NVIC->IP[7] = (p) + 0x10u; }",
    }
    prio = outs("wrong_nvic_priority", SYSTICK)
    assert any("SHP[11] = 0x30" in o or "SHP[11] = 0x10" in o for o in prio)
    assert any("(5u << 4)" in o or "(3u << 4)" in o for o in prio)
    assert any("hal_nvic_enable(TIM2_IRQn, 1)" in o or "hal_nvic_enable(TIM2_IRQn, 3)" in o
               for o in outs("wrong_nvic_priority", HAL))  # fmt: skip
    ring = outs("ring_buffer_off_by_one", UART)
    assert any("% (RX_SIZE - 1)" in o for o in ring)
    assert any("return rx_head == rx_tail;" in o for o in ring)
    hal = outs("nonexistent_hal_call", HAL)
    assert any("hal_uart_puts(USART2, text)" in o for o in hal)
    assert any("hal_gpio_set(GPIOA" in o for o in hal)
    assert any("NVIC_EnableIrq(USART2_IRQn)" in o or "NVIC_IRQEnable" in o
               for o in outs("nonexistent_hal_call", UART))  # fmt: skip
    assert all("i <= 8" in o for o in outs("off_by_one", GPIO))
    semis = outs("missing_semicolon", GPIO)
    assert len(semis) > 3 and all("for (int i = 0; i < 8; i++)" in o for o in semis)
    obo = outs("off_by_one", SYSTICK)
    assert any("SysTick->LOAD = 16000u;" in o for o in obo)
    assert any("ticks - start <= n" in o for o in obo)
    assert any("GPIOA->MODER = (1u" in o for o in outs("wrong_operator", GPIO))
    assert outs("swapped_operator", PLAIN) == {PLAIN.replace("a + b", "a - b")}
    mask = "int f(int x) { return (x >> 4) & 0x0Fu; }"
    want = {mask.replace(">> 4", ">> 3"), mask.replace(">> 4", ">> 5")}
    want |= {mask.replace("0x0Fu", "0x07u"), mask.replace("0x0Fu", "0x1Fu")}
    assert outs("wrong_bit", mask) == want


def test_missing_volatile_needs_an_isr_writer_and_another_reader():
    by = {m.name: m for m in MUTATIONS}
    lonely = "static volatile int flag;\nvoid f(void) { flag = 1; }\nint g(void) { return flag; }\n"
    assert by["missing_volatile"].apply(lonely, _rng("v")) is None
    isr = lonely.replace("void f(void)", "void EXTI0_IRQHandler(void)")
    assert by["missing_volatile"].apply(isr, _rng("v")) == isr.replace("volatile ", "", 1)
    helper = (
        "static volatile int n;\nstatic void bump(void) { n++; }\n"
        "void TIM2_IRQHandler(void) { bump(); }\nint count(void) { return n; }\n"
    )
    assert by["missing_volatile"].apply(helper, _rng("v")) == helper.replace("volatile ", "", 1)


def test_wrong_bit_skips_swaps_that_change_nothing():
    by = {m.name: m for m in MUTATIONS}

    def outs(source: str) -> set[str]:
        return {by["wrong_bit"].apply(source, _rng("b", seed)) for seed in range(16)} - {None}

    # waiting for TC instead of TXE before writing DR only waits longer (TC implies TXE)
    txe = "void f(char c) { while (!(USART1->SR & USART_SR_TXE)) {} USART1->DR = c; }"
    assert outs(txe) == set()
    tc = txe.replace("USART_SR_TXE", "USART_SR_TC")
    assert txe in outs(tc), "the other way round is a real bug (the next byte overwritten)"
    # a mask cast to 8 bits: 0x1FF keeps the same byte, 0x7F does not
    for cast in ("char", "uint8_t", "unsigned char"):
        byte = f"int g(void) {{ return ({cast})(USART1->DR & 0xFFu); }}"
        assert outs(byte) == {byte.replace("0xFFu", "0x7Fu")}
    wide = "int g(void) { return (int)(USART1->DR & 0xFFu); }"
    assert outs(wide) == {wide.replace("0xFFu", "0x7Fu"), wide.replace("0xFFu", "0x1FFu")}


def test_sites_where_the_edit_changes_nothing_are_skipped():
    by = {m.name: m for m in MUTATIONS}

    def outs(name: str, source: str) -> set[str]:
        return {by[name].apply(source, _rng(name, seed)) for seed in range(24)} - {None}

    # a clamp: at v == C both branches give C, so > / >= there is the same
    clamp = "int f(int v) { if (v > INT16_MAX) { return INT16_MAX; } if (v < 3u) v = 3u; }"
    assert outs("off_by_one", clamp) == set()
    other = "int f(int v) { if (v > 9) { return 8; } return v; }"
    assert outs("off_by_one", other) == {other.replace("v > 9", "v >= 9")}
    # shifting zero, or by a zero (a literal or a macro of stm32f4.h that is 0)
    zero = "uint32_t f(void) { return (0u << RCC_CFGR_HPRE_Pos) | (2u << RCC_CFGR_SW_Pos); }"
    assert outs("swapped_operator", zero) == {zero.replace(") | (", ") & (")}
    shift = "uint32_t g(uint32_t a) { return a << 1u; }"
    assert outs("swapped_operator", shift) == {shift.replace("<<", ">>")}
    # a 16-bit variable initialised with a mask: 0x1FFFF is the same value once stored
    crc = "uint16_t h(void) { uint16_t crc = 0xFFFFu; return crc; }"
    assert outs("wrong_bit", crc) == {crc.replace("0xFFFFu", "0x7FFFu")}


def test_rewrites_look_as_they_say():
    by = {r.name: r for r in REWRITES}
    out = by["reformat"].apply(GPIO, _rng("r"))
    assert "//" not in out and "/*" not in out and "#define LED_PIN 5u" in out
    assert [t.text for t in lex(out)[0]] == [t.text for t in lex(GPIO)[0]]
    out = by["compound_assign"].apply("void f(void) { GPIOA->ODR |= 1u << 5; }\n", _rng("c"))
    assert "GPIOA->ODR = GPIOA->ODR | (1u << 5);" in out
    back = by["compound_assign"].apply("void f(void) { GPIOA->ODR = GPIOA->ODR | 4u; }", _rng("c"))
    assert "GPIOA->ODR |= 4u;" in back
    loose = "void f(int x) { GPIOA->ODR = GPIOA->ODR & 3u | x; }"
    assert by["compound_assign"].apply(loose, _rng("c")) is None, "(odr & 3) | x != odr &= 3 | x"
    two = "int g;\nint f(int a) { return a + g; }\nint h(int a) { int g2 = a; return g2; }\n"
    out = by["rename_locals"].apply(two, _rng("n"))
    assert out.count("a_") == 4 and "g2_" in out and " g;" in out and "+ g;" in out
    shadow = "int a;\nint f(int a) { return a; }\nint h(void) { return a; }\n"
    assert by["rename_locals"].apply(shadow, _rng("n")) is None
    out = by["rename_locals"].apply(GPIO, _rng("n"))
    assert "lit" not in [t.text for t in lex(out)[0]] and "(mask >> i)" not in out
    assert "void led_set(int on" in out.replace("on_v", "on").replace("on_l", "on")


# --- the generator -----------------------------------------------------------------------------


def test_generate_reference_first_then_rewrites_then_perturbations():
    task = _task(UART)
    cands = EmbeddedPerturbGenerator().generate(task)
    assert cands[0].origin == "reference" and cands[0].code == UART
    assert cands[0].generator == "catalog:reference"
    origins = [c.origin for c in cands]
    assert origins == sorted(origins, key=["reference", "rewrite", "perturb"].index)
    for c in cands:
        assert c.origin in ORIGINS and c.task_id == task.task_id
    codes = [c.code for c in cands]
    assert len(set(codes)) == len(codes)
    perturbed = [c for c in cands if c.origin == "perturb"]
    assert len({c.generator for c in perturbed}) == len(perturbed) >= 9


def test_generate_is_deterministic_seeded_and_capped():
    task = _task(HAL)
    gen = EmbeddedPerturbGenerator()
    first = [c.candidate_id for c in gen.generate(task, seed=3)]
    assert first == [c.candidate_id for c in generator_for("embedded").generate(task, seed=3)]
    assert [c.candidate_id for c in gen.generate(task, seed=4)] != first
    assert len([c for c in gen.generate(task, n=3) if c.origin == "perturb"]) == 3
    many = [c for c in gen.generate(task, n=40) if c.origin == "perturb"]
    assert len(many) > len([c for c in gen.generate(task) if c.origin == "perturb"])
    assert gen.generate(_task(None)) == []
    with pytest.raises(ValueError, match="embedded"):
        gen.generate(Task(name="k", domain="rtl", family="f", level=1, requirement="r",
                          interface={}, platform={}, reference="x", harness={}))  # fmt: skip


# --- against arm-none-eabi-gcc -----------------------------------------------------------------


@needs_gcc
@pytest.mark.parametrize("kind", sorted(FIRMWARE))
def test_every_candidate_compiles_or_fails_as_its_class_says(kind, tmp_path):
    functions = INTERFACES[kind]
    ref = _gcc(tmp_path, FIRMWARE[kind], functions, "ref")
    assert ref.returncode == 0, ref.stderr
    cands = [
        c for seed in range(2)
        for c in EmbeddedPerturbGenerator().generate(_task(FIRMWARE[kind]), n=30, seed=seed)
    ]  # fmt: skip
    seen: set[str] = set()
    for c in cands:
        if c.code in seen:
            continue
        seen.add(c.code)
        op = c.generator.split(":", 1)[1]
        res = _gcc(tmp_path, c.code, functions, op)
        if op in UNCOMPILABLE:
            assert res.returncode != 0, f"{op} compiled:\n{c.code}"
        else:
            assert res.returncode == 0, f"{c.generator}:\n{res.stderr}\n{c.code}"


# --- the catalog -------------------------------------------------------------------------------


def _catalog_tasks() -> list[Task]:
    if not (ROOT / "tasks" / "embedded").is_dir():
        return []
    tasks, _errors = load_catalog(ROOT / "tasks", domains=["embedded"])
    return tasks


def test_catalog_references_get_mutations():
    tasks = _catalog_tasks()
    if not tasks:
        pytest.skip("no tasks under tasks/embedded yet")
    gen = EmbeddedPerturbGenerator()
    mutated = [t for t in tasks if any(c.origin == "perturb" for c in gen.generate(t))]
    assert len(mutated) >= 0.8 * len(tasks)
    # those that program a peripheral get a peripheral bug, not only generic C ones
    domain_ops = {m.name for m in MUTATIONS} - {"off_by_one", "missing_semicolon"}
    peripheral = [t for t in tasks if "->" in t.reference]
    specific = [
        t for t in peripheral
        if any(c.origin == "perturb" and c.generator.split(":")[1] in domain_ops
               for c in gen.generate(t))
    ]  # fmt: skip
    assert len(specific) >= 0.8 * len(peripheral)


@needs_gcc
def test_catalog_rewrites_compile(tmp_path):
    tasks = _catalog_tasks()
    if not tasks:
        pytest.skip("no tasks under tasks/embedded yet")
    gen = EmbeddedPerturbGenerator()
    for task in tasks:
        functions = list(task.interface.get("functions", []))
        for c in gen.generate(task, n=0):
            res = _gcc(tmp_path, c.code, functions, task.name)
            assert res.returncode == 0, f"{task.name} {c.generator}:\n{res.stderr}"


def test_ids_do_not_depend_on_the_process():
    """String hashing is salted per process; no site choice may depend on set order."""
    script = (
        "import json\n"
        "from generators.perturb.embedded import EmbeddedPerturbGenerator\n"
        "from tests.generators.test_perturb_embedded import FIRMWARE, _task\n"
        "ids = [c.candidate_id for d in FIRMWARE.values()\n"
        "       for c in EmbeddedPerturbGenerator().generate(_task(d), n=30)]\n"
        "print(json.dumps(ids))\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True,
            env={**os.environ, "PYTHONHASHSEED": str(salt)}, timeout=120,
        ).stdout
        for salt in (1, 2)
    ]  # fmt: skip
    assert runs[0] == runs[1] and len(json.loads(runs[0])) > 50
