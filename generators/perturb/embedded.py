"""Offline candidates for embedded tasks (C for the STM32F407): the reference, rewrites of
it, and the bugs firmware written by models has, one defect per candidate.

Every operator edits the reference text at token spans found by `c_sites.analyze`, so
comments, string literals and layout stay as the author wrote them; preprocessor lines are
never edited except where an operator says so (bit masks defined by `#define`).
"""

from __future__ import annotations

import bisect
import random
import re
from pathlib import Path

from generators.perturb.c_sites import (
    ASSIGN_OPS,
    KEYWORDS,
    OPENERS,
    PRECEDENCE,
    TYPES,
    Edit,
    Function,
    Source,
    analyze,
    call_args,
    delete_stmt,
    format_int,
    int_value,
    is_binary,
    is_call,
    match_forward,
    replace_range,
    replace_tok,
    splice,
    statements,
    stmt_end,
    stmt_start,
)
from generators.perturb.operators import Mutation, OperatorGenerator, Rewrite, check_table
from verifiers.taxonomy import API, FUNCTIONAL, SYNTAX

HEADER = Path(__file__).resolve().parents[2] / "verifiers/embedded/target/include/stm32f4.h"
CLOCK_REGS = frozenset({"AHB1ENR", "AHB2ENR", "AHB3ENR", "APB1ENR", "APB2ENR"})
_CLOCK_CALL = re.compile(r"hal_\w*clock_enable|hal_\w*_clk_enable")


def _edit(source: str, s: Source, edits: list[Edit]) -> str | None:
    out = splice(source, edits)
    return None if out == source else out


# --- missing_clock_enable ----------------------------------------------------------------------


def missing_clock_enable(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = []
    for i, e in statements(s):
        toks = [t.text for t in s.toks[i:e]]
        writes_enr = (
            len(toks) >= 4
            and toks[1] in ("->", ".")
            and toks[2] in CLOCK_REGS
            and toks[3] in ("|=", "=")
        )
        if writes_enr or (_CLOCK_CALL.fullmatch(toks[0]) and toks[1:2] == ["("]):
            sites.append((i, e))
    if not sites:
        return None
    return _edit(source, s, [delete_stmt(s, *rng.choice(sites))])


# --- wrong_register_offset ---------------------------------------------------------------------

# member -> neighbours that exist in every peripheral struct that has the member
NEIGHBOUR_REGS: dict[str, tuple[str, ...]] = {
    "ODR": ("IDR", "BSRR"), "IDR": ("ODR",), "BSRR": ("ODR",), "MODER": ("OTYPER", "PUPDR"),
    "OTYPER": ("MODER",), "PUPDR": ("OSPEEDR",), "OSPEEDR": ("PUPDR",), "CR1": ("CR2",),
    "CR2": ("CR1",), "CR3": ("CR2",), "BRR": ("DR",), "APB1ENR": ("APB2ENR",),
    "APB2ENR": ("APB1ENR",), "AHB1ENR": ("AHB2ENR",), "ARR": ("PSC",), "PSC": ("ARR",),
    "DIER": ("SR",), "CCR1": ("CCR2",), "CCR2": ("CCR1",), "CCMR1": ("CCMR2",),
    "LOAD": ("VAL",), "VAL": ("LOAD",), "IMR": ("EMR",), "EMR": ("IMR",), "RTSR": ("FTSR",),
    "FTSR": ("RTSR",), "SQR3": ("SQR2",), "SMPR2": ("SMPR1",), "AIRCR": ("SCR",),
}  # fmt: skip


def wrong_register_offset(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = [
        k
        for k in range(1, len(s.toks))
        if s.toks[k].text in NEIGHBOUR_REGS and s.toks[k - 1].text == "->" and s.code(k)
    ]
    if not sites:
        return None
    k = rng.choice(sites)
    return _edit(source, s, [replace_tok(s, k, rng.choice(NEIGHBOUR_REGS[s.toks[k].text]))])


# --- wrong_bit ---------------------------------------------------------------------------------

_BIT_DEF = re.compile(r"^#define\s+(\w+)\s+\(1UL << (\d+)\)", re.M)
_bit_neighbours: dict[str, tuple[str, ...]] | None = None


def bit_neighbours() -> dict[str, tuple[str, ...]]:
    """Each single-bit macro of stm32f4.h -> the macros of the nearest lower and higher
    bits of the same register (USART_CR1_TE -> USART_CR1_RE, USART_CR1_RXNEIE): the names a
    model reaches for by mistake."""
    global _bit_neighbours
    if _bit_neighbours is None:
        groups: dict[str, list[tuple[int, str]]] = {}
        text = HEADER.read_text() if HEADER.is_file() else ""
        for name, bit in _BIT_DEF.findall(text):
            groups.setdefault(name.rsplit("_", 1)[0], []).append((int(bit), name))
        out = {}
        for members in groups.values():
            members.sort()
            for idx, (_bit, name) in enumerate(members):
                near = [members[x][1] for x in (idx - 1, idx + 1) if 0 <= x < len(members)]
                if near:
                    out[name] = tuple(near)
        _bit_neighbours = out
    return _bit_neighbours


def _in_define(s: Source, k: int) -> bool:
    line = s.text[s.text.rfind("\n", 0, s.toks[k].start) + 1 : s.toks[k].start]
    return re.match(r"\s*#\s*define\b", line) is not None


def _neighbour_mask(value: int) -> list[int]:
    """A single bit or a run of low ones, one bit off (0x20 -> 0x10 / 0x40, 0xF -> 0x7 /
    0x1F); other masks have no obvious neighbour."""
    if value <= 0 or value >= 2**32:
        return []
    if value & (value - 1) == 0:
        return [v for v in (value >> 1, value << 1) if 0 < v < 2**32]
    if value & (value + 1) == 0 and value > 1:
        return [v for v in (value >> 1, (value << 1) | 1) if v < 2**32]
    return []


# (bit, neighbour) swaps that change no behaviour: waiting for TC (transmission complete)
# where TXE (data register empty) is waited for only waits longer, since TC implies TXE
SAME_EFFECT_BITS = frozenset({("USART_SR_TXE", "USART_SR_TC")})
_BYTE_CASTS = (["uint8_t"], ["int8_t"], ["char"], ["unsigned", "char"], ["signed", "char"])


def _byte_cast_group(s: Source, k: int) -> bool:
    """Is token k inside `(T)(a->b & k)`, T an 8-bit type, the group holding only names,
    members and `&`? Then only the low 8 bits of the mask count."""
    j, depth = k - 1, 0
    while j >= 0:
        text = s.toks[j].text
        if text == ")":
            depth += 1
        elif text == "(":
            if depth == 0:
                break
            depth -= 1
        elif text in (";", "{", "}"):
            return False
        j -= 1
    close = match_forward(s, j) if j >= 0 else None
    if close is None:
        return False
    inner = s.toks[j + 1 : close]
    if not all(x.kind in ("id", "number") or x.text in ("->", ".", "&") for x in inner):
        return False
    before = [x.text for x in s.toks[max(j - 4, 0) : j]]
    return before[-1:] == [")"] and any(before[-2 - len(c) : -1] == ["(", *c] for c in _BYTE_CASTS)


_NARROW = {"uint8_t": 8, "int8_t": 8, "uint16_t": 16, "int16_t": 16}


def _narrow_init_width(s: Source, k: int) -> int:
    """The bit width of `uint16_t x = k;` (8 or 16-bit types), else 0."""
    if k < 3 or k + 1 >= len(s.toks) or s.toks[k + 1].text not in (";", ","):
        return 0
    if s.toks[k - 1].text != "=" or s.toks[k - 2].kind != "id":
        return 0
    return _NARROW.get(s.toks[k - 3].text, 0)


def wrong_bit(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites: list[Edit] = []
    bits = bit_neighbours()
    for k, t in enumerate(s.toks):
        if t.pp and not _in_define(s, k):
            continue
        if t.kind == "id" and t.text in bits and not t.pp:
            # a neighbour the statement already names would only drop a bit: not that one
            i, e = stmt_start(s, k), stmt_end(s, k) or k + 1
            used = {x.text for x in s.toks[i:e]}
            near = [
                n for n in bits[t.text] if n not in used and (t.text, n) not in SAME_EFFECT_BITS
            ]
            if near:
                sites.append(replace_tok(s, k, rng.choice(near)))
        # `1u << 5`, `(x >> 17)`: a literal shift count, the whole right operand
        if t.text in ("<<", ">>") and k + 1 < len(s.toks) and is_binary(s, k):
            right = s.toks[k + 1]
            after = s.toks[k + 2].text if k + 2 < len(s.toks) else ";"
            parsed = int_value(right.text) if right.kind == "number" else None
            if parsed is None or (after in PRECEDENCE and PRECEDENCE[after] > PRECEDENCE["<<"]):
                continue
            value = parsed[0]
            if value > 31:
                continue
            new = value + 1 if value == 0 or (value < 31 and rng.random() < 0.5) else value - 1
            sites.append(replace_tok(s, k + 1, format_int(new, right.text)))
        # a hex mask: `0x20`, `0x0Fu`
        if t.kind == "number" and t.text[:2].lower() == "0x" and int_value(t.text):
            value = int_value(t.text)[0]
            options = _neighbour_mask(value)
            if _byte_cast_group(s, k):  # (uint8_t)(DR & 0xFF) -> 0x1FF: the cast drops bit 8
                options = [v for v in options if (v ^ value) & 0xFF]
            width = _narrow_init_width(s, k)  # uint16_t crc = 0xFFFF -> 0x1FFFF: the same
            if width:
                options = [v for v in options if (v ^ value) & ((1 << width) - 1)]
            if options:
                sites.append(replace_tok(s, k, format_int(rng.choice(options), t.text)))
    if not sites:
        return None
    return _edit(source, s, [rng.choice(sites)])


# --- wrong_baud_divisor ------------------------------------------------------------------------

_PCLK = re.compile(r"16000000[uUlL]*|16e6[fF]?")
BAUDS = (9600, 19200, 38400, 57600, 115200, 230400)


def _brr_statements(s: Source) -> list[tuple[int, int]]:
    out = []
    for k in range(1, len(s.toks) - 1):
        t = s.toks[k]
        if t.text == "BRR" and s.toks[k - 1].text in ("->", ".") and s.toks[k + 1].text == "=":
            j = k + 2
            while j < len(s.toks) and s.toks[j].text != ";":
                j += 1
            if not t.pp:
                out.append((k + 2, j))
    return out


def wrong_baud_divisor(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites: list[Edit] = []
    brr = _brr_statements(s)
    in_brr = {k for i, j in brr for k in range(i, j)}
    for i, j in brr:
        if j == i + 1 and s.toks[i].kind == "number" and int_value(s.toks[i].text):
            value = int_value(s.toks[i].text)[0]
            new = rng.choice([value + 1, value - 1, value * 2])
            sites.append(replace_tok(s, i, format_int(new, s.toks[i].text)))
    for k, t in enumerate(s.toks):
        if not s.code(k):
            continue
        if t.text == "HAL_PCLK_HZ" or (t.kind == "number" and _PCLK.fullmatch(t.text)):
            sites.append(replace_tok(s, k, "8000000UL" if t.text == "HAL_PCLK_HZ" else
                                     t.text.replace("16", "8", 1)))  # fmt: skip
        # `/ baud` in a divisor computation: the baud doubled
        if t.text == "/" and k + 1 < len(s.toks) and s.toks[k + 1].kind == "id":
            nxt = s.toks[k + 2].text if k + 2 < len(s.toks) else ";"
            name = s.toks[k + 1].text
            if (k in in_brr or "baud" in name.lower()) and nxt not in ("(", "[", "->", "."):
                sites.append(replace_tok(s, k + 1, f"({name} * 2)"))
        if t.text == "hal_uart_init" and is_call(s, k):
            args = call_args(s, k)
            if args and len(args) == 2 and args[1][1] == args[1][0] + 1:
                a = args[1][0]
                parsed = int_value(s.toks[a].text)
                if parsed and parsed[0] in BAUDS:
                    others = [b for b in BAUDS if b != parsed[0]]
                    sites.append(replace_tok(s, a, format_int(rng.choice(others),
                                                              s.toks[a].text)))  # fmt: skip
    if not sites:
        return None
    return _edit(source, s, [rng.choice(sites)])


# --- misspelled_irq_handler --------------------------------------------------------------------


def _handler_typos(name: str) -> list[str]:
    if name.endswith("_IRQHandler"):
        stem = name[: -len("_IRQHandler")]
        return [f"{stem}_IRQHandle", f"{stem}_IRQ_Handler", f"{stem}_IrqHandler",
                f"{stem}_IRQhandler", f"{stem}IRQHandler"]  # fmt: skip
    stem = name[: -len("_Handler")]
    typos = [f"{stem}_handler", f"{stem}Handler", f"{stem}_Handle"]
    if stem == "SysTick":
        typos.insert(0, "Systick_Handler")
    return typos


def misspelled_irq_handler(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    taken = {t.text for t in s.toks if t.kind == "id"}
    sites = []
    for f in s.functions:
        name = s.name_of(f)
        if name.endswith("_Handler") or name.endswith("_IRQHandler"):
            typos = [t for t in _handler_typos(name) if t not in taken]
            if typos:
                sites.append((f.name, typos))
    if not sites:
        return None
    k, typos = rng.choice(sites)
    return _edit(source, s, [replace_tok(s, k, rng.choice(typos))])


# --- missing_volatile --------------------------------------------------------------------------


def _declared_name(s: Source, k: int) -> int | None:
    """The declarator name of the file-scope declaration whose `volatile` is at k."""
    j, name = k + 1, None
    while j < len(s.toks) and s.toks[j].text not in ("=", ";", "[", ",", "(", ")"):
        if s.toks[j].kind == "id" and s.toks[j].text not in KEYWORDS:
            name = j
        j += 1
    if j >= len(s.toks) or s.toks[j].text in ("(", ")"):
        return None
    return name


def _writes(s: Source, i: int, j: int, name: str) -> bool:
    for k in range(i, j):
        if s.toks[k].text != name or s.toks[k - 1].text in ("->", "."):
            continue
        nxt = s.toks[k + 1].text
        if nxt == "[":
            close = match_forward(s, k + 1)
            nxt = s.toks[close + 1].text if close is not None else ""
        if nxt in ASSIGN_OPS or nxt in ("++", "--") or s.toks[k - 1].text in ("++", "--"):
            return True
    return False


def _reads(s: Source, i: int, j: int, name: str) -> bool:
    return any(
        s.toks[k].text == name and s.toks[k - 1].text not in ("->", ".") for k in range(i, j)
    )


def _isr_functions(s: Source) -> list[Function]:
    """Handlers and the functions of the file they call, transitively."""
    by_name = {s.name_of(f): f for f in s.functions}
    todo = [f for f in s.functions if s.name_of(f).endswith("Handler")]
    seen: dict[str, None] = {}
    while todo:
        f = todo.pop()
        if s.name_of(f) in seen:
            continue
        seen[s.name_of(f)] = None
        for k in range(f.body[0], f.body[1]):
            callee = by_name.get(s.toks[k].text)
            if callee is not None and s.toks[k + 1].text == "(":
                todo.append(callee)
    return [by_name[n] for n in seen]


def missing_volatile(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    handlers = _isr_functions(s)
    others = [f for f in s.functions if all(f is not h for h in handlers)]
    sites = []
    for k, t in enumerate(s.toks):
        if t.text != "volatile" or t.pp or s.depth[k] != 0 or s.function_at(k):
            continue
        if k and s.toks[k - 1].text in ("(", ","):
            continue  # a parameter of a prototype
        n = _declared_name(s, k)
        if n is None:
            continue
        name = s.toks[n].text
        if any(_writes(s, *h.body, name) for h in handlers) and any(
            _reads(s, *f.body, name) for f in others
        ):
            sites.append(k)
    if not sites:
        return None
    k = rng.choice(sites)
    start, end = s.toks[k].start, s.toks[k].end
    while end < len(source) and source[end] in " \t":
        end += 1
    return _edit(source, s, [(start, end, "")])


# --- wrong_nvic_priority -----------------------------------------------------------------------


def _bump_priority(s: Source, i: int, j: int, rng: random.Random, *, raw: bool) -> Edit:
    """The priority expression [i, j) made one level off. `raw`: the value is the register
    byte (NVIC->IP[], SCB->SHP[]), whose level is in the top four bits, so a lone literal
    moves by 16; otherwise (NVIC_SetPriority) it is the level itself. Else `n << 4` or
    `PRIO(n)`: n moved by one; else one level added."""
    toks = s.toks

    def moved(value: int, step: int, limit: int) -> int:
        up = value + step <= limit and (value - step < 0 or rng.random() < 0.5)
        return value + step if up else value - step

    if j == i + 1 and toks[i].kind == "number" and int_value(toks[i].text):
        value = int_value(toks[i].text)[0]
        step, limit = (16, 0xF0) if raw else (1, 15)
        return replace_tok(s, i, format_int(moved(value, step, limit), toks[i].text))
    for k in range(i, j):
        parsed = int_value(toks[k].text) if toks[k].kind == "number" else None
        if parsed is None or toks[k - 1].text in ("<<", ">>") or parsed[0] > 15:
            continue
        if toks[k + 1].text == "<<" or (toks[k - 1].text == "(" and toks[k + 1].text == ")"):
            return replace_tok(s, k, format_int(moved(parsed[0], 1, 15), toks[k].text))
    return replace_range(s, i, j, f"({s.text_of(i, j)}) + {'0x10u' if raw else '1u'}")


def wrong_nvic_priority(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = []
    for k, t in enumerate(s.toks):
        if not s.code(k):
            continue
        if t.text in ("NVIC_SetPriority", "hal_nvic_enable") and is_call(s, k):
            args = call_args(s, k)
            if args and len(args) == 2:
                sites.append((*args[1], False))
        if t.text in ("IP", "SHP") and k > 0 and s.toks[k - 1].text == "->":
            close = match_forward(s, k + 1) if s.toks[k + 1].text == "[" else None
            if close is not None and s.toks[close + 1].text == "=":
                j = close + 2
                while j < len(s.toks) and s.toks[j].text != ";":
                    j += 1
                sites.append((close + 2, j, True))
    if not sites:
        return None
    i, j, raw = rng.choice(sites)
    return _edit(source, s, [_bump_priority(s, i, j, rng, raw=raw)])


# --- ring_buffer_off_by_one --------------------------------------------------------------------

_RING = re.compile(
    r"(?i)(?:^|_)(?:head|tail|idx|index|pos|next|rd|wr|put|get|count|cnt|len|in|out|[rw]p)"
    r"(?:_|$|\d)|^(?:head|tail|next|count|len)|(?:head|tail|idx|index|pos|count|len)$"
)
_LIMIT = re.compile(r"(?:U?INT\d*|U?LONG|U?SHRT|U?CHAR|S?SIZE|LLONG|ULLONG|PTRDIFF)_(?:MIN|MAX)")


def _ring_stmt(s: Source, k: int) -> bool:
    """Does the statement or condition around token k touch ring-buffer indices?"""
    i = k
    while i > 0 and s.toks[i - 1].text not in (";", "{", "}") and not s.toks[i - 1].pp:
        i -= 1
    j = k
    while j < len(s.toks) and s.toks[j].text not in (";", "{", "}"):
        j += 1
    return any(s.toks[x].kind == "id" and _RING.search(s.toks[x].text) for x in range(i, j))


def ring_buffer_off_by_one(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    toks, sites = s.toks, []
    for k, t in enumerate(toks):
        if not s.code(k) or k + 1 >= len(toks) or not s.function_at(k):
            continue
        nxt = toks[k + 1]
        after = toks[k + 2].text if k + 2 < len(toks) else ";"
        # `% SIZE` -> `% (SIZE - 1)`
        modulo = t.text in ("%", "%=") and nxt.kind in ("id", "number")
        if modulo and after not in (*OPENERS, "->", ".") and _ring_stmt(s, k):
            sites.append([replace_tok(s, k + 1, f"({nxt.text} - 1)")])
        # `& (SIZE - 1)` -> `& SIZE`
        if t.text in ("&", "&=") and nxt.text == "(" and _ring_stmt(s, k):
            close = match_forward(s, k + 1)
            inner = [x.text for x in toks[k + 2 : close]] if close else []
            if len(inner) == 3 and inner[1:] == ["-", "1"]:
                sites.append([replace_range(s, k + 1, close + 1, inner[0])])
        # `(head + 1) % SIZE == tail` -> `head == tail`
        if t.text == "(" and k + 6 < len(toks):
            seq = [x.text for x in toks[k : k + 7]]
            if (
                seq[2] == "+"
                and (int_value(seq[3]) or (0,))[0] == 1
                and seq[4] == ")"
                and seq[5] == "%"
                and toks[k + 1].kind == "id"
                and k + 7 < len(toks)
                and toks[k + 7].text in ("==", "!=")
            ):
                sites.append([replace_range(s, k, k + 7, toks[k + 1].text)])
        # `>= SIZE` / `== SIZE` -> `> SIZE` (a wrap test), `< SIZE` -> `<= SIZE` (room left)
        sizeish = nxt.kind == "id" and (nxt.text.isupper() or "size" in nxt.text.lower())
        sizeish = sizeish and not _LIMIT.fullmatch(nxt.text)
        wrap_test = t.text in (">=", "==", "<") and is_binary(s, k) and sizeish
        if wrap_test and after in (")", ";", "&&", "||", "?") and _ring_stmt(s, k):
            sites.append([replace_tok(s, k, "<=" if t.text == "<" else ">")])
    if not sites:
        return None
    return _edit(source, s, rng.choice(sites))


# --- nonexistent_hal_call ----------------------------------------------------------------------

PLAUSIBLE_NAMES: dict[str, tuple[str, ...]] = {
    "hal_uart_write": ("hal_uart_puts", "hal_uart_print", "hal_uart_send"),
    "hal_uart_putc": ("hal_uart_putchar", "hal_uart_send_byte"),
    "hal_uart_getc": ("hal_uart_getchar", "hal_uart_read"),
    "hal_uart_init": ("hal_uart_begin", "hal_uart_config"),
    "hal_gpio_write": ("hal_gpio_set", "hal_gpio_write_pin"),
    "hal_gpio_toggle": ("hal_gpio_toggle_pin",),
    "hal_gpio_read": ("hal_gpio_get", "hal_gpio_read_pin"),
    "hal_gpio_mode": ("hal_gpio_set_mode", "hal_gpio_config"),
    "hal_gpio_af": ("hal_gpio_set_af", "hal_gpio_alternate"),
    "hal_gpio_clock_enable": ("hal_gpio_enable_clock", "hal_gpio_clk_enable"),
    "hal_tim_clock_enable": ("hal_tim_enable_clock",),
    "hal_tim_base": ("hal_tim_init", "hal_tim_config"),
    "hal_tim_start": ("hal_tim_enable", "hal_tim_start_it"),
    "hal_systick_config": ("hal_systick_init", "SysTick_Config"),
    "hal_nvic_enable": ("hal_nvic_enable_irq", "hal_nvic_set"),
    "hal_nvic_disable": ("hal_nvic_disable_irq",),
    "NVIC_EnableIRQ": ("NVIC_EnableIrq", "NVIC_IRQEnable"),
    "NVIC_DisableIRQ": ("NVIC_DisableIrq",),
    "NVIC_SetPriority": ("NVIC_SetIRQPriority", "NVIC_SetPrio"),
    "NVIC_ClearPendingIRQ": ("NVIC_ClearPending",),
    "NVIC_SetPendingIRQ": ("NVIC_SetPending",),
}


def nonexistent_hal_call(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    defined = {s.name_of(f) for f in s.functions}
    sites = [
        k
        for k, t in enumerate(s.toks)
        if t.text in PLAUSIBLE_NAMES and s.code(k) and is_call(s, k) and s.function_at(k)
    ]
    if not sites:
        return None
    k = rng.choice(sites)
    names = [n for n in PLAUSIBLE_NAMES[s.toks[k].text] if n not in defined]
    return _edit(source, s, [replace_tok(s, k, rng.choice(names))]) if names else None


# --- generic C ---------------------------------------------------------------------------------


RELOAD_REGS = frozenset({"LOAD", "ARR", "PSC"})


def _conditions(s: Source) -> list[tuple[int, int]]:
    """Token ranges of the tests of for headers and of if / while conditions."""
    out = []
    for k, t in enumerate(s.toks):
        if t.text not in ("for", "if", "while") or not s.code(k) or k + 1 >= len(s.toks):
            continue
        if s.toks[k + 1].text != "(":
            continue
        close = match_forward(s, k + 1)
        if close is None:
            continue
        semis = [j for j in range(k + 2, close) if s.toks[j].text == ";"]
        if t.text == "for":
            if len(semis) == 2:
                out.append((semis[0] + 1, semis[1]))
        elif not semis:
            out.append((k + 2, close))
    return out


def _clamp(s: Source, i: int, j: int) -> bool:
    """`if (v > C) { return C; }` or `if (v > C) v = C;`: at the boundary v == C either
    branch gives C, so `>` / `>=` (and `<` / `<=`) there change nothing."""
    toks = s.toks
    if j - i != 3 or toks[i].kind != "id" or toks[i + 1].text not in ("<", "<=", ">", ">="):
        return False
    if toks[i - 2].text != "if" or toks[j].text != ")":
        return False
    limit, k = toks[i + 2].text, j + 1
    if k < len(toks) and toks[k].text == "{":
        k += 1
    body = [t.text for t in toks[k : k + 4]]
    return body[:3] == ["return", limit, ";"] or body == [toks[i].text, "=", limit, ";"]


def off_by_one(source: str, rng: random.Random) -> str | None:
    """A loop bound or comparison one off (`<` -> `<=`, `>=` -> `>`), or a timer / SysTick
    reload written without its `- 1`."""
    s = analyze(source)
    swap = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
    sites: list[Edit] = []
    for i, j in _conditions(s):
        if _clamp(s, i, j):
            continue
        for k in range(i, j):
            if s.toks[k].text in swap and is_binary(s, k):
                sites.append(replace_tok(s, k, swap[s.toks[k].text]))
    for i, e in statements(s):
        toks = s.toks
        reload = e - i >= 5 and toks[i + 1].text == "->" and toks[i + 2].text in RELOAD_REGS
        minus_one = toks[e - 2].text == "-" and (int_value(toks[e - 1].text) or (0,))[0] == 1
        if reload and toks[i + 3].text == "=" and minus_one and e - 2 > i + 4:
            sites.append((toks[e - 3].end, toks[e - 1].end, ""))
    if not sites:
        return None
    return _edit(source, s, [rng.choice(sites)])


def missing_semicolon(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = [e for _i, e in statements(s) if e + 1 < len(s.toks) and not s.toks[e + 1].pp]
    if not sites:
        return None
    return _edit(source, s, [replace_tok(s, rng.choice(sites), "")])


def wrong_operator(source: str, rng: random.Random) -> str | None:
    """`REG |= X` -> `REG = X` (and `&=` likewise): the other bits of the register clobbered."""
    s = analyze(source)
    sites = []
    for i, e in statements(s):
        for k in range(i, e):
            if s.toks[k].text in ("|=", "&=") and any(s.toks[x].text == "->" for x in range(i, k)):
                sites.append(k)
                break
    if not sites:
        return None
    return _edit(source, s, [replace_tok(s, rng.choice(sites), "=")])


SIMILAR_OPS = {
    "^": "|", "|": "&", "&": "|", "<<": ">>", ">>": "<<", "+": "-", "-": "+", "&&": "||",
    "||": "&&", "==": "!=", "!=": "==",
}  # fmt: skip


def swapped_operator(source: str, rng: random.Random) -> str | None:
    """A binary operator replaced by a similar one (^ for |, >> for <<, - for +)."""
    s = analyze(source)
    zeros = _zero_macros(s)
    sites = [
        k
        for k, t in enumerate(s.toks)
        if t.text in SIMILAR_OPS
        and not t.pp
        and s.function_at(k)
        and is_binary(s, k)
        and not _zero_shift(s, k, zeros)
    ]
    if not sites:
        return None
    k = rng.choice(sites)
    return _edit(source, s, [replace_tok(s, k, SIMILAR_OPS[s.toks[k].text])])


_ZERO_DEF = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+\(?0[uUlL]*\)?[ \t]*$", re.M)
_zero_header: frozenset[str] | None = None
# operators looser than a shift: `0 << n` after one of these is a whole operand
_LOOSER = frozenset({"(", "=", ",", "return", "|", "&", "^", "||", "&&", "?", ":", "|="})


def _zero_macros(s: Source) -> frozenset[str]:
    """Names #defined as a plain 0 in the file or stm32f4.h (RCC_CFGR_SW_Pos)."""
    global _zero_header
    if _zero_header is None:
        text = HEADER.read_text() if HEADER.is_file() else ""
        _zero_header = frozenset(_ZERO_DEF.findall(text))
    return _zero_header | frozenset(_ZERO_DEF.findall(s.text))


def _zero_shift(s: Source, k: int, zeros: frozenset[str]) -> bool:
    """`0u << n` or `x << 0` (a literal or a macro of 0): << and >> give the same."""
    if s.toks[k].text not in ("<<", ">>"):
        return False

    def zero(t) -> bool:
        if t.kind == "number":
            return (int_value(t.text) or (1,))[0] == 0
        return t.kind == "id" and t.text in zeros

    left = zero(s.toks[k - 1]) and s.toks[k - 2].text in _LOOSER
    after = s.toks[k + 2].text if k + 2 < len(s.toks) else ";"
    tighter = after in PRECEDENCE and PRECEDENCE[after] > PRECEDENCE["<<"]
    return left or (k + 1 < len(s.toks) and zero(s.toks[k + 1]) and not tighter)


# --- rewrites ----------------------------------------------------------------------------------


def reformat(source: str, rng: random.Random) -> str | None:
    """Comments removed, code lines re-indented four spaces per brace level, trailing blanks
    dropped; every token and every preprocessor line kept."""
    s = analyze(source)
    edits = []
    for c in s.comments:
        edits.append((c.start, c.end, " " if c.text.startswith("/*") else ""))
    text = splice(source, edits)
    t = analyze(text)
    lines = text.split("\n")
    first_tok: dict[int, int] = {}
    line_starts = [0]
    for line in lines[:-1]:
        line_starts.append(line_starts[-1] + len(line) + 1)
    for k, tok in enumerate(t.toks):
        ln = bisect.bisect_right(line_starts, tok.start) - 1
        first_tok.setdefault(ln, k)
    out = []
    for ln, line in enumerate(lines):
        body = line.strip()
        k = first_tok.get(ln)
        if not body:
            if out and out[-1] == "":
                continue
            out.append("")
            continue
        if (
            k is None
            or t.toks[k].pp
            or t.toks[k].start != line_starts[ln] + len(line) - len(line.lstrip())
        ):
            out.append(line.rstrip())  # a directive, or a line inside a multi-line token
            continue
        depth = t.depth[k] - (t.toks[k].text == "}")
        out.append("    " * max(depth, 0) + body)
    result = "\n".join(out).strip("\n") + "\n"
    return result


def _locals(s: Source, f) -> list[str]:
    """Names declared as parameters or locals of function f."""
    names: dict[str, None] = {}
    lo, hi = f.params[0], f.body[1]
    for k in range(lo + 1, hi):
        t = s.toks[k]
        if t.kind != "id" or t.text in KEYWORDS or t.text in TYPES or t.pp:
            continue
        prev = s.toks[k - 1]
        nxt = s.toks[k + 1].text
        typed = prev.text in TYPES or (prev.text == "*" and s.toks[k - 2].text in TYPES)
        typed = typed or (prev.kind == "id" and prev.text.endswith("_t") and prev.text != "_t")
        typed = typed or prev.text in ("char", "int", "long", "short", "unsigned", "signed")
        if typed and nxt in ("=", ";", ",", "[", ")"):
            names.setdefault(t.text, None)
    return list(names)


def rename_locals(source: str, rng: random.Random) -> str | None:
    """Parameters and local variables renamed consistently in their function; only names
    that occur nowhere else in the file but as other functions' own locals (so no global or
    macro is shadowed or captured)."""
    s = analyze(source)
    taken = {t.text for t in s.toks if t.kind == "id"}
    suffix = rng.choice(("_v", "_l", "_local"))
    owners = {id(f): set(_locals(s, f)) for f in s.functions}

    def owned_elsewhere(k: int, name: str) -> bool:
        if s.toks[k].pp:
            return False
        if s.toks[k - 1].text in ("->", ".") and s.function_at(k) is not None:
            return True  # a member of something, inside code
        return any(f.params[0] <= k <= f.body[1] and name in owners[id(f)] for f in s.functions)

    edits = []
    for f in s.functions:
        lo, hi = f.params[0], f.body[1]
        for name in _locals(s, f):
            new = name + suffix
            if new in taken:
                continue
            if not all(
                owned_elsewhere(k, name)
                for k, t in enumerate(s.toks)
                if t.text == name and (not lo <= k <= hi or t.pp)
            ):
                continue
            for k in range(lo, hi):
                t = s.toks[k]
                if t.text == name and s.toks[k - 1].text not in ("->", "."):
                    edits.append(replace_tok(s, k, new))
    if not edits:
        return None
    return _edit(source, s, edits)


def _pure_lvalue(s: Source, i: int, j: int) -> bool:
    """Tokens [i, j) name an object without side effects: ids, members, constant indices."""
    if j <= i:
        return False
    for k in range(i, j):
        t = s.toks[k]
        if t.kind == "id" and k + 1 < j and s.toks[k + 1].text == "(":
            return False
        if not (t.kind in ("id", "number") or t.text in ("->", ".", "[", "]", "*", "(", ")")):
            return False
    return True


ASSOCIATIVE = frozenset({"|", "&", "^", "+", "*"})


def compound_assign(source: str, rng: random.Random) -> str | None:
    """`x |= e;` <-> `x = x | (e);` for a side-effect-free x, where the expanded form
    computes the same (e parenthesized; the reverse only where no looser operator follows)."""
    s = analyze(source)
    sites: list[Edit] = []
    for i, e in statements(s):
        ops = [k for k in range(i, e) if s.toks[k].text in ASSIGN_OPS and s.depth[k] == s.depth[i]]
        if len(ops) != 1 or any(s.toks[k].text in ("++", "--", ",") for k in range(i, e)):
            continue
        k = ops[0]
        op = s.toks[k].text
        if not _pure_lvalue(s, i, k) or s.toks[i].text in TYPES or s.toks[i].text in KEYWORDS:
            continue
        lhs = s.text_of(i, k)
        if op != "=" and op[:-1] in PRECEDENCE and k + 1 < e:
            rhs = s.text_of(k + 1, e)
            single = e == k + 2 or (s.toks[k + 1].text == "(" and match_forward(s, k + 1) == e - 1)
            sites.append(replace_range(s, k, e, f"= {lhs} {op[:-1]} " +
                                       (rhs if single else f"({rhs})")))  # fmt: skip
            continue
        if op == "=":
            n = k - i
            same = k + 1 + n < e and [x.text for x in s.toks[k + 1 : k + 1 + n]] == [
                x.text for x in s.toks[i:k]
            ]
            if not same:
                continue
            b = k + 1 + n
            bop = s.toks[b].text
            if bop not in ("|", "&", "^", "+", "-", "*", "<<", ">>") or b + 1 >= e:
                continue
            depth, ok = 0, True
            for x in range(b + 1, e):
                tx = s.toks[x].text
                if tx in OPENERS:
                    depth += 1
                elif tx in (")", "]", "}"):
                    depth -= 1
                elif depth == 0 and (tx == "?" or (tx in PRECEDENCE and is_binary(s, x))):
                    tighter = tx in PRECEDENCE and PRECEDENCE[tx] > PRECEDENCE[bop]
                    if not (tighter or (tx == bop and bop in ASSOCIATIVE)):
                        ok = False
            if ok:
                sites.append(replace_range(s, k, e, f"{bop}= {s.text_of(b + 1, e)}"))
    if not sites:
        return None
    return _edit(source, s, [rng.choice(sites)])


def literal_base(source: str, rng: random.Random) -> str | None:
    """Decimal integer literals >= 10 written in hex (and hex in decimal); same value, and
    below 2**31 the same type."""
    s = analyze(source)
    sites = []
    for k, t in enumerate(s.toks):
        parsed = int_value(t.text) if t.kind == "number" and s.code(k) else None
        if parsed is None or not 10 <= parsed[0] < 2**31:
            continue
        value, body, suffix = parsed
        new = f"{value}{suffix}" if body[:2].lower() == "0x" else f"0x{value:X}{suffix}"
        sites.append(replace_tok(s, k, new))
    if not sites:
        return None
    return _edit(source, s, sites)


REWRITES: tuple[Rewrite, ...] = (
    Rewrite("reformat", "comments removed and lines re-indented; tokens unchanged", reformat),
    Rewrite("rename_locals", "parameters and locals renamed consistently within their "
            "function; names used anywhere else untouched", rename_locals),
    Rewrite("compound_assign", "x |= e <-> x = x | (e) for a side-effect-free x",
            compound_assign),
    Rewrite("literal_base", "integer literals between 10 and 2**31 switched between decimal "
            "and hex", literal_base),
)  # fmt: skip

MUTATIONS: tuple[Mutation, ...] = (
    Mutation("missing_clock_enable", "the RCC enable of a peripheral's clock forgotten: its "
             "registers ignore every write", FUNCTIONAL, missing_clock_enable),
    Mutation("wrong_register_offset", "a neighbouring register of the same peripheral (IDR "
             "for ODR, CR2 for CR1, APB2ENR for APB1ENR)", FUNCTIONAL, wrong_register_offset),
    Mutation("wrong_bit", "a bit position or named bit one off (1u << 6 for 1u << 5, "
             "USART_CR1_RE for USART_CR1_TE)", FUNCTIONAL, wrong_bit),
    Mutation("wrong_baud_divisor", "the BRR divisor off: doubled baud, an 8 MHz clock, a "
             "miscounted literal", FUNCTIONAL, wrong_baud_divisor),
    Mutation("misspelled_irq_handler", "an interrupt handler whose name misses the vector "
             "table's, so the vector stays on Default_Handler", FUNCTIONAL,
             misspelled_irq_handler),
    Mutation("missing_volatile", "a flag shared with an ISR not volatile: the main loop "
             "caches it and never sees the interrupt", FUNCTIONAL, missing_volatile),
    Mutation("wrong_nvic_priority", "an interrupt priority one level off", FUNCTIONAL,
             wrong_nvic_priority),
    Mutation("ring_buffer_off_by_one", "a ring buffer wrapping one slot early or late, or "
             "its full test reading as empty", FUNCTIONAL, ring_buffer_off_by_one),
    Mutation("nonexistent_hal_call", "a plausible HAL or CMSIS function that does not "
             "exist (hal_uart_puts, NVIC_EnableIrq)", API, nonexistent_hal_call),
    Mutation("off_by_one", "a loop bound or comparison one off (< for <=), or a reload "
             "value without its - 1", FUNCTIONAL, off_by_one),
    Mutation("swapped_operator", "a similar operator (& for |, | for ^, >> for <<, - for +, "
             "|| for &&)", FUNCTIONAL, swapped_operator),
    Mutation("missing_semicolon", "a statement without its `;`", SYNTAX, missing_semicolon),
    Mutation("wrong_operator", "`=` for `|=` / `&=` on a register: the other bits "
             "clobbered", FUNCTIONAL, wrong_operator),
)  # fmt: skip

check_table(REWRITES)
check_table(MUTATIONS)


class EmbeddedPerturbGenerator(OperatorGenerator):
    name = "perturb:embedded"
    domain = "embedded"
    rewrites = REWRITES
    mutations = MUTATIONS
