"""Static anti-cheat rules for RTL candidates: named, each with a one-line rationale.

A design under test has no business ending the simulation, touching files, reading the
simulator's command line, overriding signals it does not own or reaching into the
testbench. The rules run over the candidate with comments and strings removed (so a
comment that *mentions* `$finish` is no offence), and once more over its preprocessed text
(so a macro that pastes `$fin``ish` together is caught too).

Hierarchical references are checked conservatively: only names the harness owns (the
testbench's modules and instances, the reference) count, and only when the candidate does
not declare the name itself, so generate blocks, struct fields and the candidate's own
instances (`u0.q`) are never flagged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from verifiers.rtl.hdl import (
    REF_PREFIX,
    REF_TOP,
    REPORT_TOKEN,
    code_only,
    module_names,
    strip_comments,
    strip_strings,
)

TAMPERING = "testbench_tampering"
FORBIDDEN = "forbidden_system_task"


@dataclass(frozen=True)
class Rule:
    name: str
    code: str
    pattern: str
    rationale: str
    keep_strings: bool = False  # match against text whose string literals are kept


RULES: tuple[Rule, ...] = (
    Rule(
        "root_reference",
        TAMPERING,
        r"\$root\b",
        "$root names the top of the simulation, i.e. the testbench",
    ),
    Rule(
        "simulation_control",
        FORBIDDEN,
        r"\$(?:finish|stop|fatal|exit)\b",
        "ending the simulation early skips the testbench's report",
    ),
    Rule("shell_access", FORBIDDEN, r"\$system\b", "a design does not run shell commands"),
    Rule(
        "file_access",
        FORBIDDEN,
        r"\$(?:f(?:open|close|write[bho]?|display[bho]?|strobe[bho]?|monitor[bho]?|scanf"
        r"|gets|getc|read|seek|tell|eof|error|flush|rewind)|ungetc|s?readmem[bh]?"
        r"|writemem[bh]?|sdf_annotate)\b",
        "files hold the harness (testbench, report token); a design neither reads nor writes them",
    ),
    Rule("waveform_dump", FORBIDDEN, r"\$dump\w*\b", "waveform files are the harness's to write"),
    Rule(
        "plusargs",
        FORBIDDEN,
        r"\$(?:value|test)\$plusargs\b",
        "the simulator's command line belongs to the harness",
    ),
    Rule(
        "deposit",
        TAMPERING,
        r"\$deposit\b",
        "depositing values overrides signals the design does not own",
    ),
    Rule(
        "force_release",
        TAMPERING,
        r"\b(?:force|release)\b",
        "force/release overrides signals the design does not own",
    ),
    Rule(
        "bind",
        TAMPERING,
        r"(?m)^\s*bind\s+[A-Za-z_]",
        "bind injects code into other modules (the reference, the testbench)",
    ),
    Rule(
        "include", TAMPERING, r"`include\b", "the only files there are to include are the harness's"
    ),
    Rule(
        "report_token",
        TAMPERING,
        re.escape(REPORT_TOKEN),
        "only the testbench may speak the report protocol",
        keep_strings=True,
    ),
    Rule(
        "reserved_name",
        TAMPERING,
        rf"\b(?:{REF_TOP}|crucible_\w*|{REF_PREFIX}\w*)\b",
        "RefModule and crucible_* are the harness's: using one reuses or shadows the reference",
    ),
)

_COMPILED = tuple((r, re.compile(r.pattern)) for r in RULES)

# Rules whose pattern depends on the task's testbench (its module and instance names).
HIER = Rule(
    "harness_hierarchy",
    TAMPERING,
    "<testbench module or instance name>.<anything>",
    "a hierarchical name into the testbench or the reference reads or drives the harness",
)
HARNESS_MODULE = Rule(
    "harness_module_name",
    TAMPERING,
    "module <testbench module name>",
    "a module named like the testbench's would replace it",
)


@dataclass(frozen=True)
class Finding:
    rule: str
    code: str
    rationale: str
    line: int
    excerpt: str

    def describe(self) -> str:
        return f"line {self.line}: {self.rule}: `{self.excerpt}` ({self.rationale})"


def harness_names(testbench: str) -> set[str]:
    """Names the testbench owns: its modules and the instances it creates."""
    code = code_only(testbench)
    mods = set(module_names(code))
    names = set(mods)
    # `Type [#(...)] inst (` for any type: the tb's instances of the dut, the reference
    # and its own helpers. Keywords that look like `word word (` are filtered out.
    for m in re.finditer(r"\b([A-Za-z_]\w*)\s*(?:#\s*\([^;]*?\))?\s+([A-Za-z_]\w*)\s*\(", code):
        if m.group(1) not in _NOT_TYPES:
            names.add(m.group(2))
    return names - _NOT_TYPES


_NOT_TYPES_TEXT = (
    "module macromodule task function begin end if else case for while repeat forever "
    "initial always assign input output inout wire reg integer logic return automatic "
    "static void fork join posedge negedge or and not"
)
_NOT_TYPES = frozenset(_NOT_TYPES_TEXT.split())


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def scan(
    candidate: str, harness: Iterable[str] = (), harness_modules: Iterable[str] = ()
) -> list[Finding]:
    """Every rule the candidate breaks (first occurrence of each), in rule order. `harness`:
    the testbench's module and instance names; `harness_modules`: its module names."""
    no_comments = strip_comments(candidate)
    code = strip_strings(no_comments)
    found = []
    for rule, rx in _COMPILED:
        hay = no_comments if rule.keep_strings else code
        if m := rx.search(hay):
            found.append(_finding(rule, hay, m))
    if m := _hierarchical_reference(code, harness):
        found.append(_finding(HIER, code, m))
    taken = set(harness_modules)
    for m in re.finditer(r"\b(?:module|macromodule)\s+([A-Za-z_]\w*)", code):
        if m.group(1) in taken:
            found.append(_finding(HARNESS_MODULE, code, m))
            break
    return found


def _finding(rule: Rule, text: str, m: re.Match) -> Finding:
    excerpt = " ".join(text[m.start() : m.end()].split())[:80]
    return Finding(rule.name, rule.code, rule.rationale, _line_of(text, m.start()), excerpt)


def _hierarchical_reference(code: str, names: Iterable[str]) -> re.Match | None:
    names = sorted(set(names))
    if not names:
        return None
    alt = "|".join(map(re.escape, names))
    for m in re.finditer(rf"(?<![\w.$])({alt})\s*(?:\[[^\]]*\]\s*)?\.\s*[A-Za-z_]", code):
        if not _declared(code, m.group(1)):
            return m
    return None


def _declared(code: str, name: str) -> bool:
    """The candidate uses `name` somewhere other than as the head of a dotted name: it
    declares it (an instance, a signal, a generate block), so `name.x` is its own."""
    rx = re.compile(rf"(?<![\w.$]){re.escape(name)}\b(?!\s*(?:\[[^\]]*\]\s*)?\.)")
    return rx.search(code) is not None
