"""Offline candidates for x86asm tasks: the reference answer (x86-64 assembly, AT&T syntax,
as gcc writes it), rewrites of it that are the same machine code, and the bugs hand-written
and model-written assembly has, one defect per candidate.

Every operator edits instruction lines found by a small line parser (labels, directives and
instructions told apart; comments never edited). What the verifier should make of each:
a wrong bound, a signed/unsigned condition, a wrong index scale, a dropped tail loop and
swapped operands change results (`wrong_answer`); a clobbered callee-saved register and a
misaligned call break the ABI (`abi_violation`, even where the output is right); a
misspelt mnemonic and a call to a builtin that is no function do not build; the given
-O3 baseline, copied (relabelled or not), is `slow` / `copied_input`.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from generators.base import CandidateSet, seeded_rng
from generators.perturb.operators import Mutation, OperatorGenerator, Rewrite, check_table
from verifiers.contract import Candidate, Task
from verifiers.taxonomy import API, FUNCTIONAL, SYNTAX

_LABEL = re.compile(r"^\s*([A-Za-z_.$][\w.$]*):")
_INSN = re.compile(r"^(\s+)([a-z][a-z0-9]*)(?:(\s+)(.*?))?\s*$")
_LOCAL = re.compile(r"\.L\w+")


@dataclass(frozen=True)
class Insn:
    line: int
    mnemonic: str
    operands: str


_COMMENT = re.compile(r'("(?:\\.|[^"\\])*")|#.*')


def code_part(line: str) -> str:
    """A line without its `#` comment (a `#` inside a string literal is data, kept)."""
    return _COMMENT.sub(lambda m: m[1] or "", line)


class Asm:
    """An assembly file's lines, its instructions and where each label is."""

    def __init__(self, text: str):
        self.lines = text.split("\n")
        self.insns: list[Insn] = []
        self.labels: dict[str, int] = {}
        for i, raw in enumerate(self.lines):
            code = code_part(raw)
            if m := _LABEL.match(code):
                self.labels[m[1]] = i
            elif (m := _INSN.match(code)) and not code.lstrip().startswith("."):
                self.insns.append(Insn(i, m[2], (m[4] or "").strip()))

    def text(self) -> str:
        return "\n".join(self.lines)

    def replace(self, insn: Insn, mnemonic: str, operands: str | None = None) -> str:
        lines = list(self.lines)
        ops = insn.operands if operands is None else operands
        lines[insn.line] = f"\t{mnemonic}\t{ops}" if ops else f"\t{mnemonic}"
        return "\n".join(lines)

    def insert(self, at_line: int, new: list[str]) -> str:
        lines = list(self.lines)
        lines[at_line:at_line] = new
        return "\n".join(lines)

    def target(self, insn: Insn) -> int | None:
        """The line of the label a jump goes to, if it is one of this file's."""
        return self.labels.get(insn.operands.strip())

    def loops(self) -> list[tuple[int, Insn]]:
        """(first line of the body, the backward jump that closes it)."""
        out = []
        for ins in self.insns:
            if (
                ins.mnemonic.startswith("j")
                and (t := self.target(ins)) is not None
                and t < ins.line
            ):
                out.append((t, ins))
        return out


def _changed(source: str, new: str | None) -> str | None:
    return None if new is None or new == source else new


# --- mutations ------------------------------------------------------------------------------

# the bound one off: < for <=, > for >=, and back
OFF_BY_ONE = {"jb": "jbe", "jbe": "jb", "ja": "jnb", "jnb": "ja", "jae": "ja", "jl": "jle",
              "jle": "jl", "jg": "jge", "jge": "jg", "jnbe": "jnb", "jnae": "jbe"}  # fmt: skip
# a signed condition for an unsigned one, and back (jl/jb), in jumps, cmov and set
SIGNEDNESS = {"l": "b", "le": "be", "g": "a", "ge": "nb", "b": "l", "be": "le", "a": "g",
              "nb": "ge", "ae": "ge", "nbe": "g", "nae": "l"}  # fmt: skip
_CC = re.compile(
    r"(j|cmov|set)(" + "|".join(sorted(SIGNEDNESS, key=len, reverse=True)) + r")([wlq]?)\Z"
)


def off_by_one_bound(source: str, rng: random.Random) -> str | None:
    a = Asm(source)
    sites = [i for i in a.insns if i.mnemonic in OFF_BY_ONE]
    imms = [
        i for i in a.insns
        if i.mnemonic.startswith("cmp") and re.match(r"\$-?\d+\s*,", i.operands)
    ]  # fmt: skip
    if not sites and not imms:
        return None
    if sites and (not imms or rng.random() < 0.6):
        ins = rng.choice(sites)
        return _changed(source, a.replace(ins, OFF_BY_ONE[ins.mnemonic]))
    ins = rng.choice(imms)
    m = re.match(r"\$(-?\d+)(\s*,.*)", ins.operands)
    value = int(m[1]) + rng.choice((-1, 1))
    return _changed(source, a.replace(ins, ins.mnemonic, f"${value}{m[2]}"))


# the same operation on signed and on unsigned data: extensions, packed min/max and
# compares, arithmetic and logical shifts (the one swapped for the other)
SIGNED_PAIRS = {
    "movzbl": "movsbl", "movzbq": "movsbq", "movzwl": "movswl", "movzwq": "movswq",
    "movsbl": "movzbl", "movsbq": "movzbq", "movswl": "movzwl", "movswq": "movzwq",
    "movslq": "movl", "vpmaxub": "vpmaxsb", "vpmaxsb": "vpmaxub", "vpminub": "vpminsb",
    "vpminsb": "vpminub", "vpmaxuw": "vpmaxsw", "vpmaxsw": "vpmaxuw", "vpminuw": "vpminsw",
    "vpminsw": "vpminuw", "vpmaxud": "vpmaxsd", "vpmaxsd": "vpmaxud", "vpminud": "vpminsd",
    "vpminsd": "vpminud", "vpaddusb": "vpaddsb", "vpaddsb": "vpaddusb", "vpaddusw": "vpaddsw",
    "vpaddsw": "vpaddusw", "vpsubusb": "vpsubsb", "vpsubusw": "vpsubsw", "vpsrad": "vpsrld",
    "vpsrld": "vpsrad", "vpsraw": "vpsrlw", "vpsrlw": "vpsraw", "pmaxub": "pmaxsw",
    "paddusb": "paddsb", "psubusb": "psubsb", "paddusw": "paddsw", "psubusw": "psubsw",
}  # fmt: skip


def signedness_swap(source: str, rng: random.Random) -> str | None:
    """The signed form of an operation for the unsigned one, or back: first where the data
    itself is extended, compared or shifted (movzbl/movsbl, vpmaxub/vpmaxsb, vpsrad/vpsrld),
    else in a condition (jl for jb, cmovg for cmova) or a scalar shift (sar for shr)."""
    a = Asm(source)
    data = [i for i in a.insns if i.mnemonic in SIGNED_PAIRS]
    if data:
        ins = rng.choice(data)
        return _changed(source, a.replace(ins, SIGNED_PAIRS[ins.mnemonic]))
    sites = [(i, m) for i in a.insns if (m := _CC.match(i.mnemonic))]
    shifts = [i for i in a.insns if re.fullmatch(r"(sar|shr)[bwlq]?", i.mnemonic)]
    if not sites and not shifts:
        return None
    if sites and (not shifts or rng.random() < 0.75):
        ins, m = rng.choice(sites)
        return _changed(source, a.replace(ins, m[1] + SIGNEDNESS[m[2]] + m[3]))
    ins = rng.choice(shifts)  # an arithmetic shift for a logical one, and back
    swapped = ("shr" if ins.mnemonic.startswith("sar") else "sar") + ins.mnemonic[3:]
    return _changed(source, a.replace(ins, swapped))


_REG_FORMS = {
    "r10": ("%r10", "%r10d", "%r10w", "%r10b"),
    "r11": ("%r11", "%r11d", "%r11w", "%r11b"),
    "r8": ("%r8", "%r8d", "%r8w", "%r8b"),
    "r9": ("%r9", "%r9d", "%r9w", "%r9b"),
    "rbx": ("%rbx", "%ebx", "%bx", "%bl"),
    "r12": ("%r12", "%r12d", "%r12w", "%r12b"),
    "r13": ("%r13", "%r13d", "%r13w", "%r13b"),
    "r14": ("%r14", "%r14d", "%r14w", "%r14b"),
    "r15": ("%r15", "%r15d", "%r15w", "%r15b"),
}
SCRATCH = ("r10", "r11", "r9", "r8")
CALLEE_SAVED = ("rbx", "r12", "r13", "r14", "r15")


def _uses(source: str, reg: str) -> bool:
    return any(re.search(re.escape(f) + r"\b", source) for f in _REG_FORMS[reg])


def clobber_callee_saved(source: str, rng: random.Random) -> str | None:
    """A scratch register swapped for a callee-saved one the function never saves: it
    computes the same, and the caller's value in that register is gone."""
    scratch = [r for r in SCRATCH if _uses(source, r)]
    free = [r for r in CALLEE_SAVED if not _uses(source, r)]
    if not free:
        return None
    if not scratch:  # keep a copy of the first argument in a callee-saved register
        a = Asm(source)
        if not a.insns:
            return None
        first = a.insns[0]
        return _changed(
            source, a.insert(first.line, [f"\tmovq\t%rdi, {_REG_FORMS[rng.choice(free)][0]}"])
        )
    old, new = rng.choice(scratch), rng.choice(free)
    out = source
    for o, n in zip(_REG_FORMS[old], _REG_FORMS[new], strict=True):
        out = re.sub(re.escape(o) + r"\b", n, out)
    return _changed(source, out)


def misaligned_stack_call(source: str, rng: random.Random) -> str | None:
    """A call made with %rsp 8 bytes off the 16-byte alignment the ABI promises the
    callee (an odd number of pushes, a frame size off by 8)."""
    a = Asm(source)
    calls = [i for i in a.insns if i.mnemonic in ("call", "callq")]
    if not calls:
        return None
    ins = rng.choice(calls)
    lines = list(a.lines)
    lines[ins.line : ins.line + 1] = ["\tsubq\t$8, %rsp", lines[ins.line], "\taddq\t$8, %rsp"]
    return "\n".join(lines)


_SCALED = re.compile(r"\((%\w+)?,\s*(%\w+),\s*([1248])\)")


def wrong_scale(source: str, rng: random.Random) -> str | None:
    """An index scaled by the wrong element size: (%rdi,%rax,4) for (%rdi,%rax,8)."""
    a = Asm(source)
    sites = [i for i in a.insns if _SCALED.search(i.operands)]
    if not sites:
        return None
    ins = rng.choice(sites)
    m = _SCALED.search(ins.operands)
    scale = int(m[3])
    new = rng.choice([s for s in (1, 2, 4, 8) if s != scale and (s == scale * 2 or s * 2 == scale)])
    ops = ins.operands[: m.start(3)] + str(new) + ins.operands[m.end(3) :]
    return _changed(source, a.replace(ins, ins.mnemonic, ops))


def dropped_tail(source: str, rng: random.Random) -> str | None:
    """After a vectorized loop, the elements left over (n not a multiple of the vector
    width) skipped: the jump that bypasses the scalar tail when nothing is left taken
    always."""
    a = Asm(source)
    sites = []
    for start, back in a.loops():
        body = "\n".join(a.lines[start : back.line])
        if "%ymm" not in body and "%xmm" not in body:
            continue
        after = [i for i in a.insns if back.line < i.line][:24]
        for ins in after:
            t = a.target(ins)
            if (
                ins.mnemonic.startswith("j")
                and ins.mnemonic != "jmp"
                and t is not None
                and t > ins.line
            ):
                sites.append(ins)
                break
    if not sites:
        return None
    return _changed(source, a.replace(rng.choice(sites), "jmp"))


_TWO_REGS = re.compile(r"^(%\w+),\s*(%\w+)$")


def swapped_operands(source: str, rng: random.Random) -> str | None:
    """Intel operand order written in AT&T syntax: source and destination swapped."""
    a = Asm(source)
    sites = [
        i for i in a.insns
        if re.fullmatch(r"(mov|add|sub|and|or|xor|imul|cmp)[bwlq]?", i.mnemonic)
        and (m := _TWO_REGS.match(i.operands)) and m[1] != m[2]
    ]  # fmt: skip
    if not sites:
        return None
    ins = rng.choice(sites)
    m = _TWO_REGS.match(ins.operands)
    return _changed(source, a.replace(ins, ins.mnemonic, f"{m[2]}, {m[1]}"))


TYPOS = {"movq": "mvoq", "movl": "mvol", "addq": "addd", "vpaddd": "vpadd", "leaq": "lea.q",
         "cmpq": "cmpp", "popcntq": "popcount", "vmovdqu": "vmovdq", "shrq": "shrr"}  # fmt: skip


def misspelled_mnemonic(source: str, rng: random.Random) -> str | None:
    a = Asm(source)
    sites = [i for i in a.insns if i.mnemonic in TYPOS]
    if not sites:
        return None
    ins = rng.choice(sites)
    return _changed(source, a.replace(ins, TYPOS[ins.mnemonic]))


BUILTINS = {"popcnt": "__builtin_popcountll", "tzcnt": "__builtin_ctzll",
            "lzcnt": "__builtin_clzll", "bsf": "__builtin_ctzll", "bsr": "__builtin_clzll",
            "bswap": "__builtin_bswap64", "pdep": "_pdep_u64", "pext": "_pext_u64"}  # fmt: skip


def builtin_as_call(source: str, rng: random.Random) -> str | None:
    """A C builtin or intrinsic called as if it were a function the linker could find."""
    a = Asm(source)
    sites = [
        (i, b)
        for i in a.insns
        for k, b in BUILTINS.items()
        if i.mnemonic.rstrip("lq").startswith(k)
    ]
    if not sites:
        return None
    ins, name = rng.choice(sites)
    return _changed(source, a.replace(ins, "call", name))


# --- rewrites -------------------------------------------------------------------------------


def relabel(source: str, rng: random.Random) -> str | None:
    """Local labels renamed consistently (.L5 -> .Lloop5_k): the same machine code."""
    tag = rng.choice(("loop", "blk", "bb", "x"))
    out = _LOCAL.sub(lambda m: f".L{tag}{m[0][2:]}", source)
    return _changed(source, out)


def reformat(source: str, rng: random.Random) -> str | None:
    """Comments and the `.file`/`.ident` lines dropped, one space between mnemonic and
    operands: the same machine code."""
    out = []
    for line in source.split("\n"):
        code = code_part(line).rstrip()
        if re.match(r"\s*\.(file|ident)\b", code):
            continue
        if m := _INSN.match(code):
            code = f"    {m[2]} {m[4] or ''}".rstrip()
        out.append(code)
    return _changed(source, "\n".join(out))


REWRITES: tuple[Rewrite, ...] = (
    Rewrite("relabel", "local labels renamed consistently: the same machine code", relabel),
    Rewrite("reformat", "comments, .file and .ident dropped, layout changed: the same "
            "machine code", reformat),
)  # fmt: skip

MUTATIONS: tuple[Mutation, ...] = (
    Mutation("off_by_one_bound", "a loop bound or comparison one off (jb for jbe, cmp $3 "
             "for cmp $4)", FUNCTIONAL, off_by_one_bound),
    Mutation("signedness_swap", "a signed operation for an unsigned one (movsbl for movzbl, "
             "vpmaxsb for vpmaxub, jl for jb, sar for shr)", FUNCTIONAL, signedness_swap),
    Mutation("clobber_callee_saved", "a callee-saved register used as scratch without saving "
             "it: right output, broken caller", FUNCTIONAL, clobber_callee_saved),
    Mutation("misaligned_stack_call", "a call with the stack 8 bytes off its 16-byte "
             "alignment", FUNCTIONAL, misaligned_stack_call),
    Mutation("wrong_scale", "an index scaled by the wrong element size ((,%rax,4) for "
             "(,%rax,8))", FUNCTIONAL, wrong_scale),
    Mutation("dropped_tail", "the scalar tail after a vectorized loop skipped: n not a "
             "multiple of the vector width loses elements", FUNCTIONAL, dropped_tail),
    Mutation("swapped_operands", "Intel operand order in AT&T syntax: source and destination "
             "swapped", FUNCTIONAL, swapped_operands),
    Mutation("misspelled_mnemonic", "a mnemonic misspelt (mvoq, vpadd)", SYNTAX,
             misspelled_mnemonic),
    Mutation("builtin_as_call", "a C builtin called as a function (call "
             "__builtin_popcountll for popcnt)", API, builtin_as_call),
)  # fmt: skip

check_table(REWRITES)
check_table(MUTATIONS)


# the optimized C at other levels: correct assembly of other speeds (the -O3 -march answer
# is the task's reference), from which optimization pairs come once each is measured
LADDER = (
    ("opt_O2", ("-O2",)),
    ("opt_O1", ("-O1",)),
    ("opt_Os", ("-Os",)),
    ("opt_O3_generic", ("-O3", "-march=x86-64")),
)


def ladder(task: Task) -> list[tuple[str, str]]:
    """(name, assembly) of the task's optimized C at the LADDER's levels (its own ISA kept
    where the level names none)."""
    h = task.harness
    if "optimized_c" not in h:
        return []
    from verifiers.x86asm import toolchain  # the toolchain only where a ladder is made

    march = [f for f in h.get("optimized_flags", []) if f.startswith("-march=")]
    out = []
    for name, flags in LADDER:
        full = (*flags, *([] if any(f.startswith("-march=") for f in flags) else march))
        try:
            out.append((name, toolchain.compile_asm(h["optimized_c"], full, h["optimized_name"])))
        except toolchain.ToolchainError:
            continue
    return out


class X86PerturbGenerator(OperatorGenerator):
    """Reference, rewrites, mutations; the optimized C at other levels (`LADDER`: correct
    code of other speeds, origin `rewrite`); then the copied input: the -O3 baseline the
    task gives, verbatim and relabelled (a copy the verifier must call one)."""

    name = "perturb:x86asm"
    domain = "x86asm"
    rewrites = REWRITES
    mutations = MUTATIONS

    def generate(self, task: Task, *, n: int | None = None, seed: int = 0) -> list[Candidate]:
        out = super().generate(task, n=n, seed=seed)
        baseline = (task.harness.get("baselines") or {}).get("O3")
        if not out or not baseline:
            return out
        have = CandidateSet(task)
        for c in out:
            have.add(c.code, c.origin, c.generator)
        for name, code in ladder(task):
            self._offer(have, code, "rewrite", name)
        copies = [baseline, relabel(baseline, seeded_rng(task.task_id, "copy", str(seed)))]
        for code in copies:
            self._offer(have, code, "perturb", "copied_input")
        return have.candidates
