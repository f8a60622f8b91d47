"""What GNU as and ld said, as taxonomy codes: a table of (pattern, code), first match
wins, and the lines of the candidate's own file (never a path on the host)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_AS_LINE = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+): (?P<kind>Error|Warning): (?P<msg>.*)$", re.M
)
# (pattern on the message, code): the order matters
AS_CODES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), code)
    for p, code in (
        (r"bad register name `%(?:zmm|k[0-7])", "isa_not_allowed"),
        (r"is not supported on|not supported in 64-bit mode", "isa_not_allowed"),
        (r"no such instruction", "unknown_instruction"),
        (r"operand type mismatch|operand size mismatch|number of operands mismatch|"
         r"invalid instruction suffix|bad register name|ambiguous operand size|"
         r"invalid operand|incorrect register|operand mismatch|unsupported instruction|"
         r"no instruction mnemonic suffix", "bad_operand"),
    )
)  # fmt: skip


@dataclass(frozen=True)
class Diagnostic:
    line: int
    kind: str  # Error / Warning
    message: str

    def show(self) -> str:
        return f"line {self.line}: {self.kind.lower()}: {self.message}"


def as_diagnostics(log: str) -> list[Diagnostic]:
    return [Diagnostic(int(m["line"]), m["kind"], m["msg"].strip()) for m in _AS_LINE.finditer(log)]


def as_code(diags: list[Diagnostic]) -> str:
    """The taxonomy code of an assembly that failed: the first error's."""
    for d in diags:
        if d.kind != "Error":
            continue
        for pattern, code in AS_CODES:
            if pattern.search(d.message):
                return code
        return "syntax_error"
    return "syntax_error"


_UNDEF = re.compile(r"undefined reference to `([^']+)'")


def link_problem(log: str) -> tuple[str, str, list[str]]:
    """(code, one-line summary, missing symbols) of a link that failed."""
    missing = list(dict.fromkeys(_UNDEF.findall(log)))
    if missing:
        names = [m.removeprefix("cand.") for m in missing]
        return "undefined_symbol", f"undefined reference to {', '.join(names[:5])}", names
    first = next((ln.strip() for ln in log.splitlines() if ln.strip()), "the linker failed")
    return "compile_error", first[:300], []
