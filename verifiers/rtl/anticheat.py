"""Static anti-cheat rules for RTL candidates: named, each with a one-line rationale.

A design under test has no business ending the simulation, touching files, reading the
simulator's command line, overriding signals it does not own, reaching into the testbench,
constraining the proof that judges it, or showing the simulator and the synthesizer two
different designs. Where the language is open-ended the rules are allow-lists, because a
deny-list always misses a name (`$fopenr`, `$ivlh_file_open`, `$finish_and_return` were
missed once):

- system tasks and functions (`$name`, also written `\\$name`): only those in
  `SYSTEM_ALLOWED`, i.e. what a synthesizable design needs plus printing to the simulator's
  standard output. Printing is data, never a verdict: the testbench's report is found by a
  per-run nonce that a candidate without file access or hierarchy into the testbench cannot
  learn (the verifier also keeps the testbench source off the disk while it simulates);
- compiler directives: only `DIRECTIVES_ALLOWED` and the candidate's own macros; a
  conditional (`ifdef/`ifndef/`elsif) only on a macro whose value the candidate's own text
  fixes, never on one a tool defines (`SYNTHESIS`, `YOSYS`, `VERILATOR`, `__ICARUS__`);
- attributes `(* ... *)`: only `ATTRIBUTES_ALLOWED` (none changes what is built);
- synthesis pragmas in comments (`// synopsys translate_off`, `full_case`,
  `parallel_case`): none.

Keywords are a closed set, so the constructs a design may not use are a plain table
(`RULES`). Every rule runs over one lexing of the candidate in which comments, strings and
escaped identifiers are told apart in a single pass (so `$display("/*")` hides nothing), and
once more over its preprocessed text (so a macro that pastes `$fin``ish` together is caught).

Hierarchical references are checked conservatively: only names the harness owns (the
testbench's modules and instances, the reference) count, and only when the candidate does
not declare the name itself as a scope (an instance, a named block), so generate blocks and
the candidate's own instances (`u0.q`) are never flagged, while a decoy of another kind
(`genvar tb;` then `tb.sum_ref`, which the simulator resolves upwards into the testbench) is.
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
    comments,
    module_names,
    strip_comments,
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
        r"\\?\$root\b",
        "$root names the top of the simulation, i.e. the testbench",
    ),
    Rule(
        "final_block",
        FORBIDDEN,
        r"\bfinal\b",
        "a final block runs after the testbench's own end: it can print after the report",
    ),
    Rule(
        "foreign_code",
        FORBIDDEN,
        r"\b(?:import|export)\s*\"DPI",
        "DPI / VPI code runs outside the simulator's semantics, with the host's system calls",
        keep_strings=True,
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
        "config",
        TAMPERING,
        r"\b(?:config|endconfig|liblist)\b",
        "a configuration rebinds which module an instance uses, the testbench's included",
    ),
    Rule(
        "formal_property",
        TAMPERING,
        r"\b(?:assume|restrict|assert|cover|expect)\b",
        "assume/restrict narrow the equivalence proof to inputs the design handles; "
        "assert/cover add properties to the harness's miter: the proof is the harness's",
    ),
    Rule(
        "include",
        TAMPERING,
        r"`include\b",
        "the only files there are to include are the harness's (and the host's)",
    ),
    Rule(
        "line_directive",
        TAMPERING,
        r"`line\b",
        "`line makes the compiler blame another file (the reference, the testbench)",
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


@dataclass(frozen=True)
class Allowed:
    names: tuple[str, ...]
    rationale: str


# What a candidate may call. Anything else ($finish*, $stop, $fatal, $f*, $readmem*,
# $system, $dump*, $*plusargs, $deposit, $ivlh_*, $input, $save, $scope, $root, VPI tasks
# of any name) is refused by SYSTEM_RULE. Not even $time: yosys reads an unknown `$name`
# in an expression as an undriven wire (0 in the proof), so a design that tests the time
# is one design in simulation and another in synthesis (a time bomb proven equivalent).
SYSTEM_ALLOWED: tuple[Allowed, ...] = (
    Allowed(
        ("$clog2", "$bits", "$size", "$high", "$low", "$left", "$right", "$increment"),
        "elaboration-time arithmetic on constants, types and array bounds",
    ),
    Allowed(("$dimensions", "$unpacked_dimensions"), "array shape queries, constants"),
    Allowed(("$signed", "$unsigned", "$cast"), "casts between the design's own types"),
    Allowed(
        ("$countones", "$countbits", "$onehot", "$onehot0", "$isunknown"),
        "bit queries on the design's own values",
    ),
    Allowed(
        ("$itor", "$rtoi", "$realtobits", "$bitstoreal", "$ln", "$log10", "$exp", "$sqrt"),
        "real arithmetic on values, for constants and parameters",
    ),
    Allowed(("$pow", "$floor", "$ceil"), "real arithmetic on values, for constants"),
    Allowed(
        (
            *(
                f"{task}{radix}"
                for task in ("$display", "$write", "$strobe", "$monitor")
                for radix in ("", "b", "h", "o")
            ),
            "$monitoron",
            "$monitoroff",
        ),
        "print to the simulator's standard output, which is data: the report is found by "
        "a nonce the candidate cannot learn",
    ),
    Allowed(
        ("$error", "$warning", "$info"),
        "severity messages: print to standard output, the simulation goes on",
    ),
    Allowed(("$sformat", "$sformatf"), "format into the design's own string variables"),
)
_SYSTEM_ALLOWED = frozenset(n for a in SYSTEM_ALLOWED for n in a.names)
SYSTEM_RULE = Rule(
    "system_task_not_allowed",
    FORBIDDEN,
    r"\\?\$[A-Za-z_][\w$]*",
    "only the system tasks a synthesizable design needs, plus printing (SYSTEM_ALLOWED): "
    "the rest end the simulation, touch files or the shell, or read the harness",
)
_SYSTEM = re.compile(SYSTEM_RULE.pattern)

# Directives that change only the candidate's own compilation unit (every file is its own
# unit: iverilog -u; yosys reads the candidate last).
_DIRECTIVES_TEXT = (
    "define undef undefineall ifdef ifndef elsif else endif timescale default_nettype "
    "resetall celldefine endcelldefine unconnected_drive nounconnected_drive "
    "begin_keywords end_keywords __FILE__ __LINE__"
)
DIRECTIVES_ALLOWED = frozenset(_DIRECTIVES_TEXT.split())
DIRECTIVE_RULE = Rule(
    "directive_not_allowed",
    TAMPERING,
    "`<a directive not in DIRECTIVES_ALLOWED, or a macro the candidate does not define>",
    "`include, `line, `pragma and macros the candidate does not define itself (a tool's, "
    "the reference's) bring in text or meaning from outside the design",
)
# Macros a tool defines on its own: a test of one is a test of which tool is reading.
_TOOL_MACROS_TEXT = (
    "SYNTHESIS YOSYS FORMAL SIMULATION VERILATOR verilator verilator3 SYSTEMVERILOG "
    "coverage_block_off __ICARUS__ __VAMS_ENABLE__ IVERILOG COCOTB_SIM"
)
TOOL_MACROS = frozenset(_TOOL_MACROS_TEXT.split())
CONDITIONAL_RULE = Rule(
    "tool_conditional",
    TAMPERING,
    "`ifdef/`ifndef/`elsif <a macro the candidate's own text does not fix first>",
    "conditional compilation on a tool's macro (SYNTHESIS, YOSYS, __ICARUS__) shows the "
    "simulator and the synthesizer different designs",
)
_DIRECTIVE = re.compile(r"`([A-Za-z_]\w*)")
_CONDITIONAL = frozenset(("ifdef", "ifndef", "elsif"))

# Attributes that leave the design's function alone (they steer mapping or keep names).
_ATTRIBUTES_TEXT = "keep dont_touch keep_hierarchy ram_style rom_style ramstyle romstyle syn_keep"
ATTRIBUTES_ALLOWED = frozenset(_ATTRIBUTES_TEXT.split())
ATTRIBUTE_RULE = Rule(
    "attribute_not_allowed",
    TAMPERING,
    "(* <an attribute not in ATTRIBUTES_ALLOWED> *)",
    "the synthesizer obeys attributes the simulator ignores (full_case, parallel_case, "
    "init, blackbox, anyseq): simulation and synthesis would judge different designs",
)
_ATTRIBUTE = re.compile(r"\(\*(?!\s*\))(.*?)\*\)", re.S)

PRAGMA_RULE = Rule(
    "synthesis_pragma",
    TAMPERING,
    r"(?i)^\s*(?:synopsys|synthesis|pragma|ambit\s+synthesis|rtl_synthesis|cadence|exemplar)"
    r"\b\s*(?:translate_off|translate_on|synthesis_off|synthesis_on|full_case|parallel_case"
    r"|off|on)\b",
    "translate_off / full_case / parallel_case comments make the synthesizer build "
    "something other than what the simulator runs",
)
_PRAGMA = re.compile(PRAGMA_RULE.pattern)

# Rules whose pattern depends on the task's testbench (its module and instance names).
HIER = Rule(
    "harness_hierarchy",
    TAMPERING,
    "<testbench module or instance name>.<anything>",
    "a hierarchical name into the testbench or the reference reads or drives the harness",
)
HARNESS_CALL = Rule(
    "harness_subroutine",
    TAMPERING,
    "<a task or function of the testbench, named without declaring it>",
    "a simple task/function name resolves upwards into the testbench: calling one runs the "
    "harness's code (a task that clears its error count) from the design",
)
HARNESS_MODULE = Rule(
    "harness_module_name",
    TAMPERING,
    "module <testbench module name>",
    "a module named like the testbench's would replace it",
)

ALL_RULES = (
    *RULES,
    SYSTEM_RULE,
    DIRECTIVE_RULE,
    CONDITIONAL_RULE,
    ATTRIBUTE_RULE,
    PRAGMA_RULE,
    HIER,
    HARNESS_CALL,
    HARNESS_MODULE,
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


_SUBROUTINE = re.compile(
    r"\b(?:task|function)\s+(?:(?:automatic|static)\s+)?(?:[^;()]*?\s)?\\?([A-Za-z_]\w*)\s*[(;]"
)


def harness_subroutines(testbench: str) -> set[str]:
    """The tasks and functions the testbench declares."""
    return set(_SUBROUTINE.findall(code_only(testbench)))


_NOT_TYPES_TEXT = (
    "module macromodule task function begin end if else case for while repeat forever "
    "initial always assign input output inout wire reg integer logic return automatic "
    "static void fork join posedge negedge or and not"
)
_NOT_TYPES = frozenset(_NOT_TYPES_TEXT.split())


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def scan(
    candidate: str,
    harness: Iterable[str] = (),
    harness_modules: Iterable[str] = (),
    harness_calls: Iterable[str] = (),
) -> list[Finding]:
    """Every rule the candidate breaks (first occurrence of each), in rule order. `harness`:
    the testbench's module and instance names; `harness_modules`: its module names;
    `harness_calls`: its tasks and functions."""
    no_comments = strip_comments(candidate)
    code = code_only(candidate)
    found = []
    for rule, rx in _COMPILED:
        hay = no_comments if rule.keep_strings else code
        if m := rx.search(hay):
            found.append(_finding(rule, hay, m))
    for m in _SYSTEM.finditer(code):
        if m[0].lstrip("\\") not in _SYSTEM_ALLOWED:
            found.append(_finding(SYSTEM_RULE, code, m))
            break
    found += _directives(code)
    for m in _ATTRIBUTE.finditer(code):
        names = {n.split("=")[0].strip() for n in m[1].split(",")}
        if names - ATTRIBUTES_ALLOWED:
            found.append(_finding(ATTRIBUTE_RULE, code, m))
            break
    for line, body in comments(candidate):
        if pm := _PRAGMA.search(body):
            excerpt = " ".join(pm[0].split())[:80]
            found.append(
                Finding(PRAGMA_RULE.name, PRAGMA_RULE.code, PRAGMA_RULE.rationale, line, excerpt)
            )
            break
    if m := _hierarchical_reference(code, harness):
        found.append(_finding(HIER, code, m))
    if m := _harness_call(code, harness_calls):
        found.append(_finding(HARNESS_CALL, code, m))
    taken = set(harness_modules)
    for m in re.finditer(r"\b(?:module|macromodule)\s+([A-Za-z_]\w*)", code):
        if m.group(1) in taken:
            found.append(_finding(HARNESS_MODULE, code, m))
            break
    return found


def _directives(code: str) -> list[Finding]:
    """The directive allow-list and the conditional rule, in one walk over the directives.

    A conditional is allowed when its macro is no tool's and the candidate's own text fixes
    its value before the test: the macro is first named by a `define / `undef outside any
    conditional, or the test is an include guard (`ifndef X directly followed by `define X).
    """
    out: list[Finding] = []
    own = set(re.findall(r"`define\s+([A-Za-z_]\w*)", code))
    fixed: set[str] = set()
    depth = 0
    hits = list(_DIRECTIVE.finditer(code))
    bad_directive = bad_conditional = None
    for k, m in enumerate(hits):
        word = m[1]
        if word not in DIRECTIVES_ALLOWED and word not in own:
            bad_directive = bad_directive or m
            continue
        if word in ("define", "undef"):
            name = re.match(r"\s*([A-Za-z_]\w*)", code[m.end() :])
            if name and depth == 0:
                fixed.add(name[1])
        elif word in _CONDITIONAL:
            name = re.match(r"\s*([A-Za-z_]\w*)", code[m.end() :])
            macro = name[1] if name else ""
            guard = (
                word == "ifndef"
                and k + 1 < len(hits)
                and hits[k + 1][1] == "define"
                and re.match(rf"\s*{re.escape(macro)}\b", code[hits[k + 1].end() :])
            )
            if macro in TOOL_MACROS or not (macro in fixed or guard):
                bad_conditional = bad_conditional or m
            if word != "elsif":
                depth += 1
        elif word == "endif":
            depth = max(0, depth - 1)
    if bad_directive:
        out.append(_finding(DIRECTIVE_RULE, code, bad_directive))
    if bad_conditional:
        m = bad_conditional
        end = code.find("\n", m.end())
        out.append(
            Finding(
                CONDITIONAL_RULE.name,
                CONDITIONAL_RULE.code,
                CONDITIONAL_RULE.rationale,
                _line_of(code, m.start()),
                " ".join(code[m.start() : end if end > 0 else None].split())[:80],
            )
        )
    return out


def _finding(rule: Rule, text: str, m: re.Match) -> Finding:
    excerpt = " ".join(text[m.start() : m.end()].split())[:80]
    return Finding(rule.name, rule.code, rule.rationale, _line_of(text, m.start()), excerpt)


def _hierarchical_reference(code: str, names: Iterable[str]) -> re.Match | None:
    names = sorted(set(names))
    if not names:
        return None
    alt = "|".join(map(re.escape, names))
    for m in re.finditer(rf"(?<![\w.$\\])({alt})\s*(?:\[[^\]]*\]\s*)?\.\s*[A-Za-z_]", code):
        if not _declared_scope(code, m.group(1)):
            return m
    return None


def _harness_call(code: str, names: Iterable[str]) -> re.Match | None:
    """A testbench task/function named by the candidate, which declares no task or
    function of that name itself (its own would be found first)."""
    theirs = set(names) - set(_SUBROUTINE.findall(code))
    if not theirs:
        return None
    alt = "|".join(map(re.escape, sorted(theirs)))
    return re.search(rf"(?<![\w.$\\])(?:{alt})\b", code)


# `Type [#(...)] name [ [..] ] (`: an instance; `begin : name` / `name : begin|for|if|case`:
# a named block or generate block. These are the scopes a dotted name looks into first.
_SCOPE_DECL = (
    r"\b(?P<type>[A-Za-z_]\w*)\s*(?:#\s*\([^;]*?\))?\s+{name}\s*(?:\[[^\]]*\]\s*)*\(",
    r"\bbegin\s*:\s*{name}\b",
    r"(?<![\w.$]){name}\s*:\s*(?:begin|for|if|case)\b",
)
_SCOPE_NOT_TYPES = frozenset(("module", "macromodule", "function", "task", "assign"))


def _declared_scope(code: str, name: str) -> bool:
    """The candidate declares `name` as a scope of its own (an instance, a named block),
    so `name.x` resolves inside the candidate: a simulator looks for a scope of that name
    locally before it looks upwards, and finds no scope in a wire or a genvar."""
    for pattern in _SCOPE_DECL:
        for m in re.finditer(pattern.format(name=re.escape(name)), code):
            if m.groupdict().get("type") not in _SCOPE_NOT_TYPES:
                return True
    return False
