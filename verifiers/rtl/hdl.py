"""Text-level helpers over Verilog sources shared by the RTL verifier, catalog and generator.

The testbench protocol: a testbench instantiates the candidate as the task's `top` module
and the reference as `RefModule`; every line it prints for the harness starts with
`REPORT_TOKEN`. Before each run the harness replaces the token with a fresh nonce, so a
candidate that prints a fake report cannot match it. Lines the harness reads:

    CRUCIBLE_REPORT MISMATCH time=<t> output=<name> expected=<hex> got=<hex> inputs: a=<hex> ...
    CRUCIBLE_REPORT Hint: Output '<name>' has <n> mismatches. First mismatch occurred at time <t>.
    CRUCIBLE_REPORT Mismatches: <n> in <m> samples

(the last two are VerilogEval's own lines, token-prefixed by the importer).
"""

from __future__ import annotations

import re

REPORT_TOKEN = "CRUCIBLE_REPORT"
REF_TOP = "RefModule"
REF_PREFIX = "crucible_ref_"

# One left-to-right pass: whichever of a comment, a string literal or an escaped identifier
# starts first wins, as in the language's own lexer. Stripping comments and strings in two
# separate passes gets this wrong: a "/*" inside a string would hide the code up to a later
# "*/" from every check, and `\\x/*` (an escaped identifier) is no comment at all.
_LEXEMES = re.compile(r'//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*"|\\\S+', re.S)
_MODULE = re.compile(
    r"^\s*(?:module|macromodule)\s+(?:automatic\s+|static\s+)?([A-Za-z_]\w*)", re.M
)


def _blank(text: str) -> str:
    """A comment's replacement: its line breaks (so line numbers still match) or a space."""
    return "\n" * text.count("\n") or " "


def strip_comments(source: str) -> str:
    """Remove // and /* */ comments, keeping line breaks so line numbers still match."""
    return _LEXEMES.sub(lambda m: _blank(m[0]) if m[0][0] == "/" else m[0], source)


def strip_strings(source: str) -> str:
    return _LEXEMES.sub(lambda m: '""' if m[0][0] == '"' else m[0], source)


def code_only(source: str) -> str:
    """The source without comments and with string literals emptied: what the tools see as
    code (line numbers kept). Escaped identifiers stay as written."""

    def repl(m: re.Match) -> str:
        head = m[0][0]
        return _blank(m[0]) if head == "/" else '""' if head == '"' else m[0]

    return _LEXEMES.sub(repl, source)


def comments(source: str) -> list[tuple[int, str]]:
    """(line, text) of every real comment (not a `//` inside a string), markers removed."""
    out = []
    for m in _LEXEMES.finditer(source):
        if m[0][0] == "/":
            body = m[0][2:-2] if m[0].startswith("/*") else m[0][2:]
            out.append((source.count("\n", 0, m.start()) + 1, body))
    return out


def module_names(source: str) -> list[str]:
    return _MODULE.findall(strip_comments(source))


def rename_modules(source: str, mapping: dict[str, str]) -> str:
    """Rename modules (declarations and instantiations) as whole words."""
    if not mapping:
        return source
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, mapping)) + r")\b")
    return pattern.sub(lambda m: mapping[m.group(1)], source)


def rename_reference(source: str, ref_top: str) -> str:
    """The reference as the testbench sees it: its top is `RefModule`, every other module
    is prefixed so it cannot collide with a candidate's module of the same name."""
    mapping = {}
    for name in module_names(source):
        if name == ref_top:
            if name != REF_TOP:
                mapping[name] = REF_TOP
        elif not name.startswith(REF_PREFIX):
            mapping[name] = REF_PREFIX + name
    return rename_modules(source, mapping)


_TIMESCALE = re.compile(r"^[ \t]*`timescale\b[^\n]*", re.M)
_DEFINE = re.compile(r"^[ \t]*`define\s+([A-Za-z_]\w*)", re.M)


def unit_shim(*harness: str) -> str:
    """The file compiled between the harness's files and the candidate's, in one
    compilation unit: the time scale in force after them (the last `timescale), so the
    candidate's delays are in the harness's units, and an `undef of every macro they
    define, so none of the harness's text (its report strings included) can be expanded
    in the candidate's."""
    lines = ["// crucible: between the harness and the candidate"]
    scales = [m[0].strip() for src in harness for m in _TIMESCALE.finditer(strip_comments(src))]
    if scales:
        lines.append(scales[-1])
    names = sorted({m[1] for src in harness for m in _DEFINE.finditer(strip_comments(src))})
    lines += [f"`undef {n}" for n in names]
    return "\n".join(lines) + "\n"


_ALWAYS_COMB = re.compile(r"(?<![\w$`])always_comb\b")


def comb_as_star(source: str) -> str:
    """`always_comb` as `always @*`, for Yosys only (same lines, so messages still point
    right). Yosys 0.23 refuses an `always_comb` that infers a latch ("Latch inferred ...
    from always_comb process"), where simulators and the benchmarks' harnesses run it,
    and synthesizes the same logic, latch and all, from `always @*`; the latch is then
    counted and reported as a finding. Comments, strings and escaped identifiers stay."""
    # comments and strings blanked to the same length: positions stay those of `source`
    code = _LEXEMES.sub(lambda m: m[0] if m[0][0] == "\\" else " " * len(m[0]), source)
    if "always_comb" not in code:
        return source
    out, last = [], 0
    for m in _ALWAYS_COMB.finditer(code):
        out += [source[last : m.start()], "always @*"]
        last = m.end()
    return "".join(out) + source[last:]
