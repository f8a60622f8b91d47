"""The test inputs of a function task, and the bytes the driver reads and writes.

A task's harness says how its inputs are made (`[harness.values]`: ranges, edge values,
buffer contents; `[harness.perf]`: the perf workload); this module makes them, seeded by
the task's name and signature, so every node and every rerun sees the same cases:

- edge cases: each scalar's edge values (zero length, one, the type's extremes) with the
  others drawn at random, and every length from the smallest up (`SWEEP`: each remainder
  of an unrolled vector loop); buffers all zeros, all at their maximum; every buffer
  ending at the last byte before an unmapped page;
- random cases: scalars uniform or log-uniform over their ranges, buffers at alignments
  from 64 bytes down to their element size (or any byte, where the task allows), some
  ending at a page boundary, overlapping where the task says they may (memmove), NULL
  where a buffer of length 0 may be;
- sizes over the whole range a task allows, up to twice the perf workload's (`sizes`): a
  draw in every quarter octave past the sweep, a few uniform draws among the large and the
  small sizes, every size scalar at its largest at once; seeded by the task and the
  verifier's version, placed in turn at each placement (so any band of sizes one octave
  wide meets all four);
- the perf workload: `calls` inputs of the given sizes, 64-byte aligned, laid out apart so
  that one pass calls the function on each in turn; in PERF_VARIANTS variants, each with
  contents of its own at the same sizes and places, so that every timed round of passes
  meets inputs no earlier pass saw (a result kept from one pass is worth nothing in the
  next), and each variant's outputs are checked against the reference's.

Each pointer parameter gets an arena (two that may overlap share one) mapped between
inaccessible guard pages. A case holds, per arena, a window: the buffers plus 64 bytes of
random fill on each side (none past a page end). The driver copies the window in, calls,
and hashes the window after the call, so a write past either end of a buffer, or into an
input the function must not change, differs from the reference's window. Beyond the
window the driver keeps the rest of each arena filled with a pattern, checks RED_ZONE bytes
on either side of every window after every call and the whole arena every so often: a
write anywhere else in an arena is reported (an `O` line) with the case and the offset.
"""

from __future__ import annotations

import array
import functools
import math
import random
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from verifiers.contract import content_id
from verifiers.x86asm.signature import IntType, Param, Signature

# the verifier's version (X86Verifier.version; 3: an inconclusive wall time is timed again
# up to 8 runs, a median under a raised noise floor included): the sizes past the task's
# own ranges are seeded with it, so a new version draws new ones
VERSION = "3"
PAGE = 4096
GUARD = 64  # fill bytes compared on each side of a buffer
MAGIC = b"CRXASM01"
MODES = {"check": 1, "dump": 2, "time": 3, "count": 4}
FLAG_VALGRIND, FLAG_BASE = 1, 2
NULL_OFF = (1 << 64) - 1
DEFAULT_RANDOM_CASES = 64
# the perf workload's variants: one for the untimed warm-up pass, one per timed round (the
# verifier's default timing_reps); more rounds than that meet a variant again
PERF_VARIANTS = 16
# every length from the smallest up to this many more: tails of unrolled vector loops (4
# x 32 bytes) at every remainder, where a wrong bound or a dropped tail shows
SWEEP = 136
# sizes past the sweep: one log-uniform draw in each 1/SIZES_PER_OCTAVE of an octave up to
# twice the perf workload's size (a wrong band of sizes a factor 2^(2/4) = 1.41 wide holds a
# whole cell, so it is met), plus uniform draws among the large and among the small ones
SIZES_PER_OCTAVE = 4
UNIFORM_LARGE, UNIFORM_SMALL = 2, 12
PERF_REACH = 2  # the largest size tested: this many times the perf workload's
SIZE_CAP = 1 << 22  # ... and no more than this (a range left at its type's, by mistake)
# bytes of pattern the driver checks on either side of each window after every call
RED_ZONE = 4096
# a dump (feedback on a mismatch): a hash of each DUMP_CHUNK bytes of a window, and the bytes
# of DUMP_MAX from a chosen offset (driver.c's)
DUMP_CHUNK, DUMP_MAX = 4096, 12288
# where a case puts its buffers: 64-byte aligned, at a random multiple of the element size,
# at any byte the buffer's alignment allows, ending right before an unmapped page
PLACEMENTS = ("aligned", "elem", "any", "page_end")
# the ABI findings the driver reports, bit by bit (driver.c's ABI_* names)
ABI_BITS = (
    ("rbx", "callee-saved %rbx changed"),
    ("rbp", "callee-saved %rbp changed"),
    ("r12", "callee-saved %r12 changed"),
    ("r13", "callee-saved %r13 changed"),
    ("r14", "callee-saved %r14 changed"),
    ("r15", "callee-saved %r15 changed"),
    ("rsp", "%rsp on return differs from %rsp at the call (pushes and pops do not match)"),
    ("df", "returned with the direction flag set (std without cld)"),
    ("mxcsr", "changed the MXCSR control bits (rounding, flush-to-zero) without restoring"),
    ("x87", "changed the x87 control word without restoring it"),
    ("frame", "wrote into its caller's stack frame, above its return address"),
    ("align", "called a library function with %rsp not 16-byte aligned"),
    ("x87stack", "returned with values on the x87 register stack (or MMX state without emms)"),
)
STARTED = "crucible: started\n"  # the driver's first stderr line, before candidate code runs
_TOOL_LINE = re.compile(r"==\d+==|--\d+(?::\d+)?--")  # valgrind's own stderr lines


def started(stderr: str) -> bool:
    """The driver said it started (its first line on stderr, after valgrind's banner when
    under valgrind) before any candidate code could run."""
    for line in stderr.splitlines(keepends=True):
        if not _TOOL_LINE.match(line):
            return line == STARTED
    return False


HELPERS = ("memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strchr", "strcmp")


@dataclass
class Buffer:
    param: Param
    elems: list[int] | array.array | None  # None: the pointer is NULL (long ones: arrays)
    string: bool = False
    offset: int = 0  # bytes from its arena's start
    placement: str = ""  # how it was placed, for feedback

    @property
    def nbytes(self) -> int:
        return 0 if self.elems is None else len(self.elems) * self.param.type.size

    def data(self) -> bytes:
        if isinstance(self.elems, array.array):
            return self.elems.tobytes()
        t = self.param.type
        fmt = {8: "b", 16: "h", 32: "i", 64: "q"}[t.bits]
        fmt = "<" + (fmt if t.signed else fmt.upper()) * len(self.elems or ())
        return struct.pack(fmt, *(self.elems or ()))


@dataclass
class Case:
    scalars: dict[str, int]
    buffers: dict[str, Buffer]
    why: str  # "edge len=0", "random", ...
    fill: bytes = b""  # a seed for the window's fill bytes
    registers: dict[str, int] = field(default_factory=dict)  # what each scalar's register holds
    place: str = ""  # how its buffers are placed: aligned, elem, any, page_end


@dataclass(frozen=True)
class Layout:
    arena_of: dict[str, int]  # pointer parameter -> its arena
    sizes: tuple[int, ...]  # bytes of each arena (whole pages)


@dataclass(frozen=True)
class Workload:
    layout: Layout
    cases: list[Case]
    per_pass: int = 0  # cases per pass where the cases are several passes' (0: one pass)

    def first_pass(self) -> Workload:
        """The first pass's cases alone (the variant the counted run measures)."""
        if not self.per_pass:
            return self
        return Workload(self.layout, self.cases[: self.per_pass])


class CaseError(ValueError):
    """The harness cannot make cases for this signature (a task spec mistake)."""


# --- arithmetic on lengths ---------------------------------------------------------------


def length_of(expr: str | int, scalars: Mapping[str, int]) -> int:
    """A buffer's element count: a number, or +, -, *, // over scalar parameters."""
    if isinstance(expr, int):
        return expr
    tokens = expr.replace("(", " ( ").replace(")", " ) ").split()
    safe = []
    for t in tokens:
        if t in scalars:
            safe.append(str(int(scalars[t])))
        elif t.isdigit() or t in ("+", "-", "*", "//", "(", ")"):
            safe.append(t)
        else:
            raise CaseError(f"length {expr!r}: {t!r} is not a scalar parameter, number or + - * //")
    try:
        value = eval(" ".join(safe), {"__builtins__": {}}, {})  # only digits and operators
    except (SyntaxError, ZeroDivisionError) as e:
        raise CaseError(f"length {expr!r} cannot be computed: {e}") from None
    return max(0, int(value))


def length_names(expr: str | int) -> set[str]:
    if isinstance(expr, int):
        return set()
    words = expr.replace("(", " ").replace(")", " ").split()
    return {t for t in words if t[0].isalpha() or t[0] == "_"}


# --- value generators ----------------------------------------------------------------------


def value_range(t: IntType, spec: Mapping[str, Any]) -> tuple[int, int]:
    lo, hi = spec.get("range", (t.lo, t.hi))
    return max(int(lo), t.lo), min(int(hi), t.hi)


def default_edges(t: IntType, lo: int, hi: int) -> list[int]:
    cand = [lo, lo + 1, hi - 1, hi, 0, 1, -1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65]
    if (lo, hi) == (t.lo, t.hi) and t.signed:
        cand += [t.lo + 1, -2]
    out = []
    for v in cand:
        if lo <= v <= hi and v not in out:
            out.append(v)
    return out


def draw(rng: random.Random, lo: int, hi: int, spec: Mapping[str, Any]) -> int:
    if spec.get("specials") and rng.random() < SPECIAL_SHARE:
        return int(rng.choice(spec["specials"]))
    if spec.get("choices"):
        return int(rng.choice(spec["choices"]))
    if hi - lo > 256 and rng.random() < 0.5:  # small values as often as large ones
        return lo + min(hi - lo, int(math.exp(rng.uniform(0, math.log(hi - lo + 1)))) - 1)
    return rng.randint(lo, hi)


SPECIAL_SHARE = 0.125  # how often a value with `specials` is one of them (a delimiter, say)
FAST_ELEMS = 4096  # longer buffers are drawn uniformly from random bytes (speed)
_FMT = {8: "b", 16: "h", 32: "i", 64: "q"}
# array typecodes of those widths (x86-64 Linux: i is 4 bytes, q 8), so a long buffer is
# 1 to 8 bytes an element in memory, not a Python int's 28 (a task's sizes reach 10^5 and up)
_ARRAY = {8: "b", 16: "h", 32: "i", 64: "q"}


def _elems(
    rng: random.Random, p: Param, n: int, spec: Mapping[str, Any], fill: str, fast: bool = False
) -> list[int] | array.array:
    lo, hi = value_range(p.type, spec)
    if fill == "zeros":
        vals = [max(lo, min(hi, 0))] * n
    elif fill == "max":
        vals = [hi] * n
    elif fill == "min":
        vals = [lo] * n
    elif n > FAST_ELEMS and spec.get("choices") and not spec.get("specials"):
        t = p.type
        code = _ARRAY[t.bits] if t.signed else _ARRAY[t.bits].upper()
        picked = array.array(code, rng.choices([int(v) for v in spec["choices"]], k=n))
        return array.array(code, sorted(picked)) if spec.get("sorted") else picked
    elif (n > FAST_ELEMS or fast) and not spec.get("choices") and not spec.get("specials"):
        # (fast: a perf workload's variants are megabytes, drawn as bytes at any length)
        t = p.type
        fmt = _FMT[t.bits] if t.signed else _FMT[t.bits].upper()
        code = _ARRAY[t.bits] if t.signed else _ARRAY[t.bits].upper()
        data = rng.randbytes(n * t.size)
        if (lo, hi) == (t.lo, t.hi):
            vals = array.array(code, data)
        else:
            span = hi - lo + 1
            raw = struct.unpack(f"<{n}{fmt}", data)
            vals = array.array(code, (lo + (v - t.lo) % span for v in raw))
        if spec.get("sorted"):
            vals = array.array(code, sorted(vals))
        return vals
    else:
        vals = [draw(rng, lo, hi, spec) for _ in range(n)]
    if spec.get("sorted"):
        vals.sort()
    return vals


class Generator:
    """Cases for one function task (its Signature, interface and harness)."""

    def __init__(
        self,
        sig: Signature,
        interface: Mapping[str, Any],
        harness: Mapping[str, Any],
        task_key: str = "",
    ):
        self.sig = sig
        self.buffers: Mapping[str, Mapping[str, Any]] = interface.get("buffers", {})
        self.values: Mapping[str, Mapping[str, Any]] = harness.get("values", {})
        self.harness = harness
        self.seed = content_id("x86asm-cases", interface["function"], sig.text)
        # the sizes past the task's ranges: a new draw per task and per verifier version
        self.size_seed = content_id("x86asm-sizes", VERSION, task_key, interface["function"],
                                    sig.text)  # fmt: skip
        arena_of: dict[str, int] = {}
        for p in sig.pointers:
            other = self.buffers.get(p.name, {}).get("overlaps")
            if other and other in arena_of:
                arena_of[p.name] = arena_of[other]
            else:
                arena_of[p.name] = len(set(arena_of.values()))
        self.arena_of = arena_of
        self.n_arenas = len(set(arena_of.values()))

    # --- one input ---------------------------------------------------------------------
    def _scalars(self, rng: random.Random, fixed: Mapping[str, int]) -> dict[str, int]:
        out = {}
        for p in self.sig.scalars:
            spec = self.values.get(p.name, {})
            lo, hi = value_range(p.type, spec)
            out[p.name] = int(fixed[p.name]) if p.name in fixed else draw(rng, lo, hi, spec)
        return out

    def _buffers(self, rng: random.Random, scalars: Mapping[str, int], fill: str,
                 lengths: Mapping[str, int], contents: Mapping[str, Any] | None = None,
                 fast: bool = False) -> dict[str, Buffer]:  # fmt: skip
        out = {}
        for p in self.sig.pointers:
            conf = self.buffers.get(p.name, {})
            # the perf workload's own contents replace the check cases' table whole
            spec = (contents or {}).get(p.name) or self.values.get(p.name, {})
            if conf.get("string"):
                lo, hi = spec.get("length", (0, 256))
                n = lengths.get(p.name, draw(rng, int(lo), int(hi), {}))
                rng_spec = {**spec, "range": spec.get("range", (1, p.type.hi))}
                body = _elems(rng, p, n, rng_spec, fill, fast)
                body = [v if v != 0 else 1 for v in body]  # no NUL inside the string
                out[p.name] = Buffer(p, [*body, 0], string=True)
                continue
            n = length_of(conf["length"], scalars)
            elems: list[int] | None = _elems(rng, p, n, spec, fill, fast)
            if n == 0 and conf.get("nullable") and rng.random() < 0.5:
                elems = None
            out[p.name] = Buffer(p, elems)
        return out

    def _registers(self, rng: random.Random, scalars: Mapping[str, int]) -> dict[str, int]:
        """What each scalar's register holds: the value extended to 32 bits as compilers
        pass it, and, for a type narrower than 64 bits, junk above that (the ABI leaves it
        undefined: code that reads %rdi for a 32-bit argument is wrong)."""
        regs = {}
        for p in self.sig.scalars:
            v = scalars[p.name]
            if p.type.bits == 64:
                regs[p.name] = v & (2**64 - 1)
            else:
                low = v & 0xFFFFFFFF
                regs[p.name] = (rng.getrandbits(32) | 1) << 32 | low
        return regs

    def _align(self, p: Param) -> int:
        return int(self.buffers.get(p.name, {}).get("align", p.type.size))

    # --- the correctness cases ---------------------------------------------------------
    @functools.cached_property
    def check(self) -> Workload:
        """The correctness cases (made once per generator)."""
        return self.check_cases()

    @functools.cached_property
    def perf(self) -> Workload:
        """The perf workload (made once per generator)."""
        return self.perf_workload()

    def input_file(self, which: str, mode: str, **options: int) -> bytes:
        """`encode` of the check cases, the perf workload or its first pass (`which`:
        check, perf, perf1), kept: every candidate of the task runs on the same bytes."""
        key = (which, mode, *sorted(options.items()))
        cache = self.__dict__.setdefault("_inputs", {})
        if key not in cache:
            if which == "check":
                work = self.check
            else:
                work = self.perf if which == "perf" else self.perf.first_pass()
            cache[key] = encode(self.sig, work, mode, **options)
        return cache[key]

    def check_cases(self) -> Workload:
        rng = random.Random(int(self.seed[:16], 16))
        raw: list[tuple[dict[str, int], str, str, dict[str, int], str]] = []
        sizes = {n for b in self.buffers.values() for n in length_names(b.get("length", 0))}
        for p in self.sig.scalars:
            spec = self.values.get(p.name, {})
            lo, hi = value_range(p.type, spec)
            edges = [int(v) for v in spec.get("edges") or default_edges(p.type, lo, hi)]
            for v in edges:
                raw.append(({p.name: v}, "random", f"edge {p.name}={v}", {}, ""))
            if p.name in sizes:  # each small length at every kind of placement
                for v in range(lo, min(hi, lo + SWEEP) + 1):
                    for how in PLACEMENTS:
                        raw.append(({p.name: v}, "random", f"{p.name}={v}, {how}", {}, how))
        for p in self.sig.pointers:
            if self.buffers.get(p.name, {}).get("string"):
                lo, hi = self.values.get(p.name, {}).get("length", (0, 256))
                for n in self.values.get(p.name, {}).get("edges") or ():
                    raw.append(({}, "random", f"edge strlen({p.name})={n}", {p.name: n}, ""))
                for n in range(int(lo), min(int(hi), int(lo) + SWEEP) + 1):
                    for how in PLACEMENTS:
                        raw.append(({}, "random", f"strlen({p.name})={n}, {how}", {p.name: n}, how))
        for fill in ("zeros", "max", "min"):
            raw.append(({}, fill, f"buffers all {fill}", {}, ""))
        if self.sig.pointers:
            raw.append(({}, "random", "every buffer ends at a page boundary", {}, "page_end"))
            raw.append(({}, "random", "every buffer 64-byte aligned", {}, "aligned"))
        for _ in range(int(self.harness.get("random_cases", DEFAULT_RANDOM_CASES))):
            raw.append(({}, "random", "random", {}, ""))
        raw += self.sized()
        cases = []
        for fixed, fill, why, lengths, place in raw:
            scalars = self._scalars(rng, fixed)
            bufs = self._buffers(rng, scalars, fill, lengths)
            how = place or rng.choice(PLACEMENTS)
            cases.append(
                Case(scalars, bufs, why, rng.randbytes(8), self._registers(rng, scalars), how)
            )
        sizes = self._arena_sizes(cases)
        for case in cases:
            self._place(rng, case, sizes, case.place)
        return Workload(Layout(self.arena_of, sizes), cases)

    def size_ranges(self) -> dict[str, tuple[int, int, int]]:
        """Each size (a scalar a buffer's length names, or a string's length): (smallest,
        largest of its own range, largest tested: PERF_REACH times the perf workload's)."""
        perf = {k: int(v) for k, v in self.harness.get("perf", {}).get("values", {}).items()}
        names = {n for b in self.buffers.values() for n in length_names(b.get("length", 0))}
        out = {}
        for p in self.sig.scalars:
            if p.name in names:
                spec = self.values.get(p.name, {})
                lo, hi = value_range(p.type, spec)
                if spec.get("choices") and "range" not in spec:
                    lo, hi = min(map(int, spec["choices"])), max(map(int, spec["choices"]))
                top = min(p.type.hi, max(hi, PERF_REACH * perf.get(p.name, 0)), SIZE_CAP)
                out[p.name] = (lo, hi, max(top, lo))
        for p in self.sig.pointers:
            if self.buffers.get(p.name, {}).get("string"):
                lo, hi = (int(v) for v in self.values.get(p.name, {}).get("length", (0, 256)))
                out[p.name] = (lo, hi, min(max(hi, PERF_REACH * perf.get(p.name, 0)), SIZE_CAP))
        return out

    def sized(self) -> list[tuple[dict[str, int], str, str, dict[str, int], str]]:
        """The cases of `size_schedule`, one size at a time (the others drawn as usual),
        then every size at its largest at once and once more at random between the perf
        workload's and that (where a task has several)."""
        rng = random.Random(int(self.size_seed[:16], 16))
        strings = {p.name for p in self.sig.pointers if self.buffers.get(p.name, {}).get("string")}
        ranges = self.size_ranges()
        perf = {k: int(v) for k, v in self.harness.get("perf", {}).get("values", {}).items()}
        raw: list[tuple[dict[str, int], str, str, dict[str, int], str]] = []

        def add(values: dict[str, int], how: str) -> None:
            fixed = {k: v for k, v in values.items() if k not in strings}
            lengths = {k: v for k, v in values.items() if k in strings}
            what = ", ".join(f"strlen({k})={v}" if k in strings else f"{k}={v}"
                             for k, v in values.items())  # fmt: skip
            raw.append((fixed, "random", f"size {what}, {how}", lengths, how))

        for name, (lo, hi, top) in ranges.items():
            turn = rng.randrange(len(PLACEMENTS))
            for i, n in enumerate(size_schedule(rng, lo, hi, top)):
                add({name: n}, PLACEMENTS[(turn + i) % len(PLACEMENTS)])
        if len(ranges) > 1:
            add({k: top for k, (_, _, top) in ranges.items()}, "page_end")
            add({k: rng.randint(min(perf.get(k, hi), top), top)
                 for k, (_, hi, top) in ranges.items()}, rng.choice(PLACEMENTS))  # fmt: skip
        return raw

    def _arena_sizes(self, cases: list[Case]) -> tuple[int, ...]:
        need = [0] * self.n_arenas
        for case in cases:
            per = [0] * self.n_arenas
            for name, b in case.buffers.items():
                per[self.arena_of[name]] += b.nbytes + 2 * GUARD + 64
            need = [max(a, b) for a, b in zip(need, per, strict=True)]
        return tuple(PAGE * (2 + -(-n // PAGE)) for n in need)

    def _place(self, rng: random.Random, case: Case, sizes: tuple[int, ...], how: str) -> None:
        """Choose each buffer's offset in its arena (`how`: aligned, elem, any, page_end)."""
        primary: dict[int, Buffer] = {}
        for name, b in case.buffers.items():
            a = self.arena_of[name]
            align = self._align(b.param)
            if a in primary:  # shares an arena with a buffer it may overlap
                first = primary[a]
                span = max(first.nbytes, b.nbytes) + 32
                delta = rng.randint(-span, span) // align * align
                if rng.random() < 0.25:
                    delta = align_up(first.nbytes + GUARD, align)  # apart
                off = min(max(first.offset + delta, 0), sizes[a] - b.nbytes)
                b.offset = off // align * align
                b.placement = f"{delta:+d} bytes from {first.param.name}"
                continue
            primary[a] = b
            if how == "page_end" and b.nbytes and (sizes[a] - b.nbytes) % align == 0:
                b.offset = sizes[a] - b.nbytes
                b.placement = "ending at a page boundary (an unmapped page follows)"
                continue
            mis = {
                "aligned": 0,
                "elem": rng.randrange(0, 64, b.param.type.size),
                "any": rng.randrange(0, 64),
            }.get(how, 0)
            mis = mis // align * align
            b.offset = PAGE + mis
            b.placement = f"{mis} bytes past a 64-byte boundary" if mis else "64-byte aligned"

    # --- the perf workload ---------------------------------------------------------------
    def perf_workload(self, variants: int = PERF_VARIANTS) -> Workload:
        """`variants` passes of the perf workload: the same sizes (the perf values fix
        every length) and places, contents and free scalars drawn anew for each."""
        perf = self.harness.get("perf", {})
        fixed = {k: int(v) for k, v in perf.get("values", {}).items()}
        calls = int(perf.get("calls", 1))
        cases = []
        for v in range(variants):
            rng = random.Random(int(self.seed[16:32], 16) + v)
            for i in range(calls):
                scalars = self._scalars(rng, fixed)
                lengths = {k: n for k, n in fixed.items() if k in self.buffers}
                # uniform over each buffer's range, whatever its length: 16 variants of a
                # workload are drawn per task and process, and the per-value draw (small
                # values as often as large: edges, for the check cases) costs 10x more
                bufs = self._buffers(
                    rng, scalars, "random", lengths, perf.get("contents"), fast=True
                )
                for b in bufs.values():
                    if b.elems is None:
                        b.elems = []
                why = f"perf call {i}" + (f" (variant {v})" if v else "")
                cases.append(Case(scalars, bufs, why, rng.randbytes(8),
                                  self._registers(rng, scalars)))  # fmt: skip
        ends = [PAGE] * self.n_arenas
        for case in cases[:calls]:
            for name, b in case.buffers.items():
                a = self.arena_of[name]
                b.offset = align_up(ends[a] + GUARD, 64)
                b.placement = "64-byte aligned"
                ends[a] = b.offset + b.nbytes + GUARD
        for k, case in enumerate(cases[calls:]):
            for name, b in case.buffers.items():
                first = cases[k % calls].buffers[name]
                if b.nbytes != first.nbytes:
                    raise CaseError(f"perf buffer {name}: its length is not fixed by perf values")
                b.offset, b.placement = first.offset, first.placement
        sizes = tuple(align_up(e + PAGE, PAGE) for e in ends)
        return Workload(Layout(self.arena_of, sizes), cases, calls if variants > 1 else 0)


def size_schedule(rng: random.Random, lo: int, hi: int, top: int) -> list[int]:
    """Sizes past the sweep of the smallest ones (lo .. lo + SWEEP) up to `top`: one drawn
    log-uniformly in each 1/SIZES_PER_OCTAVE octave, `top` itself, UNIFORM_LARGE uniform in
    [hi, top] and UNIFORM_SMALL uniform in [lo, 4 hi] (small sizes are cheap, and most
    bugs of a length live there). The elements checked grow about 8x the largest size."""
    start = min(hi, lo + SWEEP) + 1
    out: list[int] = []
    if start <= top:
        step = 2 ** (1 / SIZES_PER_OCTAVE)
        cell = float(max(start, 1))
        while cell <= top:
            n = int(cell * step ** rng.random())
            out.append(min(max(n, start), top))
            cell *= step
        out.append(top)
    if top > hi:
        out += [rng.randint(hi, top) for _ in range(UNIFORM_LARGE)]
    out += [rng.randint(lo, min(top, 4 * max(hi, 1))) for _ in range(UNIFORM_SMALL)]
    return out


def align_up(v: int, a: int) -> int:
    return -(-v // a) * a


# --- the driver's input ------------------------------------------------------------------


def windows(case: Case, layout: Layout) -> list[tuple[int, int]]:
    out = []
    for a, size in enumerate(layout.sizes):
        mine = [
            b for n, b in case.buffers.items() if layout.arena_of[n] == a and b.elems is not None
        ]
        if not mine:
            out.append((0, 0))
            continue
        lo = max(0, min(b.offset for b in mine) - GUARD)
        hi = min(size, max(b.offset + b.nbytes for b in mine) + GUARD)
        out.append((lo, hi))
    return out


def window_image(case: Case, layout: Layout, a: int, lo: int, hi: int) -> bytes:
    img = bytearray(random.Random(case.fill + bytes([a])).randbytes(hi - lo))
    for name, b in case.buffers.items():  # later buffers win where two overlap
        if layout.arena_of[name] == a and b.elems is not None:
            img[b.offset - lo : b.offset - lo + b.nbytes] = b.data()
    return bytes(img)


def encode(
    sig: Signature,
    work: Workload,
    mode: str,
    *,
    flags: int = 0,
    reps: int = 0,
    nonce: int = 0,
    arg: int = 0,
) -> bytes:
    """The driver's input file for `work` in `mode` (driver.c reads it)."""
    lay = work.layout
    ret_bits = sig.ret.bits if sig.ret is not None else 0  # what a pass line's hash keeps
    head = struct.pack(
        "<8s8Q",
        MAGIC,
        MODES[mode],
        len(work.cases),
        len(sig.params),
        len(lay.sizes),
        reps,
        flags | ret_bits << 8,
        nonce & (2**64 - 1),
        arg or (work.per_pass if mode == "time" else 0),
    )
    parts = [head, struct.pack(f"<{len(lay.sizes)}Q", *lay.sizes)]
    kinds = [lay.arena_of[p.name] + 1 if p.pointer else 0 for p in sig.params]
    parts.append(struct.pack(f"<{len(kinds)}Q", *kinds))
    for case in work.cases:
        args = []
        for p in sig.params:
            if p.pointer:
                b = case.buffers[p.name]
                args.append(NULL_OFF if b.elems is None else b.offset)
            else:
                args.append(case.registers[p.name])
        parts.append(struct.pack(f"<{len(args)}Q", *args))
        for a, (lo, hi) in enumerate(windows(case, lay)):
            img = window_image(case, lay, a, lo, hi)
            parts.append(struct.pack("<2Q", lo, hi) + img + b"\0" * (-len(img) % 8))
    return b"".join(parts)


# --- the driver's output -------------------------------------------------------------------


SI_KERNEL, SEGV_MAPERR, SEGV_ACCERR = 0x80, 1, 2
_PREFIXES = {0x66, 0x67, 0xF2, 0xF3, 0x2E, 0x3E, 0x26, 0x36, 0x64, 0x65}
_COUNTERS = ((b"\x0f\x01\xf9", "rdtscp"), (b"\x0f\x31", "rdtsc"), (b"\x0f\x33", "rdpmc"))


@dataclass(frozen=True)
class Record:
    case: int
    rax: int
    rdx: int
    abi: int
    misaligned: int
    hashes: tuple[int, ...]


@dataclass(frozen=True)
class Crash:
    case: int
    signal: int
    addr: int
    rip: int
    si_code: int = 0
    err: int = 0  # a page fault's error code (bit 1: a write)
    insn: int = 0  # the 8 bytes at rip (little-endian) of a fault that is no page fault

    @property
    def write(self) -> bool:
        return self.si_code in (SEGV_MAPERR, SEGV_ACCERR) and bool(self.err & 2)

    def counter(self) -> str | None:
        """The cycle-counter instruction that faulted here (the TSC is off), if it was one."""
        code = self.insn.to_bytes(8, "little")
        i = 0
        while i < 4 and (code[i] in _PREFIXES or 0x40 <= code[i] <= 0x4F):
            i += 1
        return next((name for op, name in _COUNTERS if code[i:].startswith(op)), None)


@dataclass(frozen=True)
class Stray:
    """A byte outside every window that changed: in one of cases first..last."""

    first: int
    last: int
    arena: int
    offset: int


@dataclass
class Output:
    records: dict[int, Record] = field(default_factory=dict)
    crash: Crash | None = None
    # per timed round: (candidate ns, baseline ns, the baseline's second copy ns)
    times: list[tuple[int, int, int]] = field(default_factory=list)
    dumps: dict[int, tuple[int, bytes]] = field(default_factory=dict)  # arena -> (lo, bytes)
    chunks: dict[int, tuple[int, ...]] = field(default_factory=dict)  # arena -> DUMP_CHUNK hashes
    # variant -> (abi, mis, hash) of its timed pass's outputs
    passes: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    arenas: dict[int, int] = field(default_factory=dict)  # arena -> its address
    end: int | None = None
    stray: Stray | None = None  # a write outside every window (check runs)
    malformed: str = ""  # the first line that is not the driver's


def parse_output(text: str, n_arenas: int) -> Output:
    """The driver's records. Anything else on its stdout (the candidate can write there
    too) makes the output malformed: then no record of it is trusted."""
    out = Output()
    for line in text.splitlines():
        f = line.split()
        try:
            if f and f[0] == "R" and len(f) == 6 + n_arenas:
                c = int(f[1])
                if c in out.records:
                    raise ValueError("a case twice")
                vals = [int(x, 16) for x in f[2:]]
                out.records[c] = Record(c, vals[0], vals[1], vals[2], vals[3], tuple(vals[4:]))
            elif f and f[0] == "X" and len(f) == 8 and out.crash is None:
                out.crash = Crash(int(f[1]) if int(f[1]) < 2**63 else -1, int(f[2]),
                                  *(int(x, 16) for x in f[3:]))  # fmt: skip
            elif f and f[0] == "O" and len(f) == 5 and out.stray is None:
                out.stray = Stray(*(int(x) for x in f[1:]))
            elif f and f[0] == "P" and len(f) == 5:
                v = int(f[1])
                if v in out.passes:
                    raise ValueError("a pass twice")
                out.passes[v] = (int(f[2], 16), int(f[3], 16), int(f[4], 16))
            elif f and f[0] == "T" and len(f) == 5:
                out.times.append((int(f[2]), int(f[3]), int(f[4])))
            elif f and f[0] == "D" and len(f) in (3, 4):
                out.dumps[int(f[1])] = (int(f[2]), bytes.fromhex(f[3] if len(f) == 4 else ""))
            elif f and f[0] == "K" and len(f) >= 2:
                out.chunks[int(f[1])] = tuple(int(x, 16) for x in f[2:])
            elif f and f[0] == "A" and len(f) == 3:
                out.arenas[int(f[1])] = int(f[2], 16)
            elif f and f[0] == "E" and len(f) == 2 and out.end is None:
                out.end = int(f[1])
            else:
                raise ValueError("not a driver line")
        except ValueError:
            out.malformed = out.malformed or line[:200]
    return out


def abi_findings(abi: int) -> list[str]:
    return [text for bit, (_, text) in enumerate(ABI_BITS) if abi >> bit & 1]


def abi_names(abi: int) -> list[str]:
    return [name for bit, (name, _) in enumerate(ABI_BITS) if abi >> bit & 1]


def pass_hash(sig: Signature, results: list[list[int]]) -> int:
    """What the driver's pass line (driver.c pass_record) says of a pass whose calls gave
    `results` ([rax, rdx, window hashes...] each): FNV-1a over each call's return register,
    under the return type's width, and its window hashes, as little-endian words."""
    mask = (1 << sig.ret.bits) - 1 if sig.ret is not None else 0
    h = 0xCBF29CE484222325
    for r in results:
        for word in [r[0] & mask, *r[2:]]:
            for byte in word.to_bytes(8, "little"):
                h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def same_result(sig: Signature, want: list[int], got: list[int]) -> bool:
    """One call's result against the reference's ([rax, rdx, window hashes...]): the
    return register under the return type's width (the ABI leaves the bits above it
    undefined), every window byte for byte."""
    if sig.ret is not None and (want[0] ^ got[0]) & ((1 << sig.ret.bits) - 1):
        return False
    return list(want[2:]) == list(got[2:])
