"""Icarus Verilog compiler output -> taxonomy code, as a table of rules.

iverilog reports most parse problems as a bare "syntax error", so one rule looks past the
message: a syntax error on a candidate line that holds a based literal with digits its base
does not allow (`4'b102`, `8'hZG`, `'d1A`) is a `malformed_literal`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from verifiers.feedback import trim
from verifiers.rtl.hdl import code_only

CAND_FILE = "cand.sv"
REF_FILE = "ref.sv"

# file:line: [error|warning]: message   (iverilog's own format)
_DIAG = re.compile(r"^(?P<file>[^:\s]+\.s?v):(?P<line>\d+):\s*(?P<msg>.*)$")

# A based literal: optional size, ', optional s, base letter, then the digits as written.
# The digit run is taken greedily over every alphanumeric so an illegal digit is part of it.
_BASED = re.compile(r"(?:\b\d[\d_]*\s*)?'\s*[sS]?(?P<base>[bBoOdDhH])\s*(?P<digits>[0-9A-Za-z_?]+)")
_LEGAL = {
    "b": set("01xXzZ?_"),
    "o": set("01234567xXzZ?_"),
    "d": set("0123456789_xXzZ?"),
    "h": set("0123456789abcdefABCDEFxXzZ?_"),
}


@dataclass(frozen=True)
class Diag:
    file: str
    line: int
    message: str
    text: str  # the whole line as the compiler printed it

    @property
    def is_warning(self) -> bool:
        return self.message.lstrip().startswith("warning")


@dataclass(frozen=True)
class ErrorRule:
    code: str
    pattern: str
    why: str
    candidate_only: bool = False  # only counts on a line of the candidate's file


ERROR_RULES: tuple[ErrorRule, ...] = (
    ErrorRule(
        "port_mismatch",
        r"port ``?\w+'+ is not a port of",
        "the testbench connects a port the candidate does not have",
    ),
    ErrorRule(
        "port_mismatch",
        r"(?:Instantiating module|instance) \S+ with dangling \w+ port",
        "the candidate has a port the testbench does not connect",
    ),
    ErrorRule(
        "port_mismatch",
        r"Wrong number of ports|too many ports|port count",
        "the candidate's port count differs from the interface",
    ),
    ErrorRule(
        "unknown_module", r"Unknown module type", "an instantiated module is defined nowhere"
    ),
    ErrorRule(
        "undeclared_identifier",
        r"Unable to bind (?:wire/reg/memory|parameter|wire|reg)|Could not find variable"
        r"|No function named|No task named|not declared|Unknown type",
        "a name is used but never declared",
    ),
    ErrorRule(
        "syntax_error",
        r"syntax error|malformed statement|I give up|Incomprehensible"
        r"|Malformed|Invalid module (?:item|instantiation)",
        "the parser rejected the text",
        candidate_only=True,
    ),
)
_COMPILED = tuple((r, re.compile(r.pattern, re.I)) for r in ERROR_RULES)


def parse_diagnostics(log: str) -> list[Diag]:
    out = []
    for raw in log.splitlines():
        m = _DIAG.match(raw.strip())
        if m:
            out.append(Diag(m.group("file"), int(m.group("line")), m.group("msg"), raw.rstrip()))
    return out


def bad_literal(line: str) -> str | None:
    """The first based literal on `line` with a digit its base does not allow."""
    for m in _BASED.finditer(line):
        legal = _LEGAL[m.group("base").lower()]
        if any(ch not in legal for ch in m.group("digits")):
            return m.group(0).strip()
    return None


def classify(log: str, candidate: str) -> tuple[str, list[Diag]]:
    """The taxonomy code for a failed compile and the diagnostics that decided it."""
    diags = parse_diagnostics(log)
    errors = [d for d in diags if not d.is_warning] or diags
    # -u keeps the candidate's text out of the reference's compilation unit, and the
    # candidate cannot use the reference's module names: errors only there are the task's
    if errors and all(d.file == REF_FILE for d in errors):
        return "harness_error", errors
    lines = candidate.splitlines()
    for d in errors:
        on_cand = d.file == CAND_FILE and 0 < d.line <= len(lines)
        if on_cand and "syntax" in d.message.lower() and bad_literal(code_only(lines[d.line - 1])):
            return "malformed_literal", [d]
    for rule, rx in _COMPILED:
        hits = [
            d
            for d in errors
            if rx.search(d.message) and (d.file == CAND_FILE or not rule.candidate_only)
        ]
        if hits:
            return rule.code, hits
    return "compile_error", errors


def width_warnings(log: str, top: str) -> list[Diag]:
    """iverilog's 'Port N (x) of <top> expects K bits, got J' on the testbench's instance:
    a candidate port whose width is not the interface's (only a warning to iverilog)."""
    rx = re.compile(rf"Port \d+ \((\w+)\) of {re.escape(top)} expects (\d+) bits?, got (\d+)")
    return [d for d in parse_diagnostics(log) if d.file != CAND_FILE and rx.search(d.message)]


def dangling_port_warnings(log: str, top: str) -> list[Diag]:
    rx = re.compile(rf"Instantiating module {re.escape(top)} with dangling")
    return [d for d in parse_diagnostics(log) if rx.search(d.message)]


def feedback(
    log: str, candidate: str, decided: Sequence[Diag], budget: int, prefix: str = ""
) -> str:
    """The compiler's lines about the candidate (and the ones that decided the code), each
    followed by the candidate's source line it points at."""
    lines = candidate.splitlines()
    diags = parse_diagnostics(log)
    keep = [d for d in diags if d.file == CAND_FILE or d in decided]
    if not keep:
        keep = diags
    out: list[str] = []
    shown: set[int] = set()
    for d in keep:
        out.append(d.text.strip())
        if d.file == CAND_FILE and 0 < d.line <= len(lines) and d.line not in shown:
            shown.add(d.line)
            out.append(f"    {d.line} | {lines[d.line - 1].rstrip()}")
            lit = bad_literal(code_only(lines[d.line - 1])) if "syntax" in d.message else None
            if lit:
                out.append(f"    note: `{lit}` has a digit its base does not allow")
    if not out:
        out = [ln for ln in log.strip().splitlines() if ln.strip()]
    text = "\n".join(out)
    return trim((prefix + "\n" + text) if prefix else text, budget)


# --- the candidate's port list, read leniently from its text ---------------------------

_DIRS = ("input", "output", "inout")
_DECL_WORDS_TEXT = (
    "input output inout wire reg logic var bit tri tri0 tri1 wand wor uwire supply0 "
    "supply1 signed unsigned integer int byte shortint longint const interconnect"
)
_DECL_WORDS = frozenset(_DECL_WORDS_TEXT.split())


def _balanced(text: str, start: int) -> int:
    """Index just past the bracket group opening at text[start]."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = [pairs[text[start]]]
    i = start + 1
    while i < len(text) and stack:
        ch = text[i]
        if ch in pairs:
            stack.append(pairs[ch])
        elif ch == stack[-1]:
            stack.pop()
        i += 1
    return i


_PARAM_ITEM = re.compile(
    r"(?:parameter\s+)?(?:(?:integer|int|unsigned|signed|logic|bit|reg)\s+)*"
    r"(?:\[[^\]]*\]\s*)?([A-Za-z_]\w*)\s*=\s*(\S.*)",
    re.S,
)


def _module_at(code: str, top: str) -> re.Match[str] | None:
    return re.search(
        rf"\b(?:module|macromodule)\s+(?:automatic\s+|static\s+)?{re.escape(top)}\b\s*", code
    )


def header_parameters(source: str, top: str) -> dict[str, str]:
    """Name -> default text of the parameters in module `top`'s `#( ... )` list: the ones
    an instance can override."""
    code = code_only(source)
    m = _module_at(code, top)
    if not m or not code.startswith("#", m.end()):
        return {}
    j = code.find("(", m.end())
    if j < 0:
        return {}
    out = {}
    for item in _split_top(code[j + 1 : _balanced(code, j) - 1]):
        if pm := _PARAM_ITEM.fullmatch(item.strip()):
            out[pm[1]] = pm[2].strip()
    return out


def declares_parameter(source: str, top: str, name: str) -> bool:
    """Module `top` declares `parameter ... name` (in its header or its body): an
    instance can set it."""
    if name in header_parameters(source, top):
        return True
    code = code_only(source)
    m = _module_at(code, top)
    if not m:
        return False
    end = code.find("endmodule", m.end())
    body = code[m.end() : end if end >= 0 else len(code)]
    return bool(re.search(rf"\bparameter\b[^;]*?\b{re.escape(name)}\s*=", body))


def _split_top(text: str, sep: str = ",") -> list[str]:
    items, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    items.append("".join(cur))
    return [i for i in items if i.strip()]


def _drop_groups(text: str) -> str:
    """Remove [...] ranges and `= default` tails: what is left names the port."""
    out, i = [], 0
    while i < len(text):
        if text[i] in "[({":
            i = _balanced(text, i)
            out.append(" ")
            continue
        if text[i] == "=":
            break
        out.append(text[i])
        i += 1
    return "".join(out)


def _idents(text: str) -> list[str]:
    return re.findall(r"[A-Za-z_][\w$]*", _drop_groups(text))


def candidate_ports(source: str, top: str) -> dict[str, str | None] | None:
    """Port name -> direction (None where the text does not say) of module `top`, or None
    when the header cannot be read (the compiler will have its say)."""
    code = code_only(source)
    m = re.search(
        rf"\b(?:module|macromodule)\s+(?:automatic\s+|static\s+)?{re.escape(top)}\b", code
    )
    if not m:
        return None
    i = m.end()
    while True:  # skip `import pkg::*;` and whitespace up to `#(` / `(` / `;`
        while i < len(code) and code[i].isspace():
            i += 1
        if code.startswith("import", i):
            i = code.find(";", i) + 1 or len(code)
            continue
        break
    if i < len(code) and code[i] == "#":
        j = code.find("(", i)
        if j < 0:
            return None
        i = _balanced(code, j)
        while i < len(code) and code[i].isspace():
            i += 1
    if i >= len(code) or code[i] not in "(;":
        return None
    if code[i] == ";":
        return {}
    end = _balanced(code, i)
    header = code[i + 1 : end - 1]
    body_end = code.find("endmodule", end)
    body = code[end : body_end if body_end >= 0 else len(code)]
    ports: dict[str, str | None] = {}
    direction: str | None = None
    for item in _split_top(header):
        words = _idents(item)
        if not words:
            continue
        if item.strip().startswith("."):
            return None  # explicit port expressions: leave them to the compiler
        dirs = [w for w in words if w in _DIRS]
        if dirs:
            direction = dirs[0]
        ports[words[-1]] = direction
    if any(d is None for d in ports.values()):  # non-ANSI header: directions in the body
        for dm in re.finditer(r"\b(input|output|inout)\b([^;]*);", body):
            for decl in _split_top(dm.group(2)):
                names = [w for w in _idents(decl) if w not in _DECL_WORDS]
                if names and names[0] in ports:
                    ports[names[0]] = dm.group(1)
    return ports


def port_problems(ports: dict[str, str | None], interface_ports: Sequence[dict]) -> list[str]:
    """What differs between the candidate's ports and the interface's, in words."""
    want = {p["name"]: p.get("direction") for p in interface_ports}
    problems = []
    missing = [n for n in want if n not in ports]
    extra = [n for n in ports if n not in want]
    if missing:
        problems.append("missing port(s): " + ", ".join(missing))
    if extra:
        problems.append("port(s) not in the interface: " + ", ".join(extra))
    for name, d in ports.items():
        if name in want and d and want[name] and d != want[name]:
            problems.append(f"port {name} is an {d}; the interface says {want[name]}")
    return problems
