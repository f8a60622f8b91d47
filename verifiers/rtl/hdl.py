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

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRINGS = re.compile(r'"(?:\\.|[^"\\\n])*"')
_MODULE = re.compile(
    r"^\s*(?:module|macromodule)\s+(?:automatic\s+|static\s+)?([A-Za-z_]\w*)", re.M
)


def strip_comments(source: str) -> str:
    """Remove // and /* */ comments, keeping line breaks so line numbers still match."""
    return _COMMENTS.sub(lambda m: "\n" * m.group(0).count("\n") or " ", source)


def strip_strings(source: str) -> str:
    return _STRINGS.sub('""', source)


def code_only(source: str) -> str:
    """The source without comments and with string literals emptied: what the tools see as
    code (line numbers kept)."""
    return strip_strings(strip_comments(source))


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
