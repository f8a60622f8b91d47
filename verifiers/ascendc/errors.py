"""bisheng's build log -> the paper's failure classes, and what a repair prompt shows.

bisheng is clang-based: its diagnostics are clang's `file:line:col: error: message` lines,
with clang's message texts. The ones the table relies on (clang's
include/clang/Basic/DiagnosticSemaKinds.td, by diagnostic name):

- api_signature: err_ovl_no_viable_function_in_call "no matching function for call to
  %0", err_ovl_no_viable_member_function_in_call "no matching member function for call to
  %0", err_typecheck_call_too_many_args / _too_few_args "too many / too few arguments to
  function call, expected %0, have %1", err_no_member "no member named %0 in %1" when %1
  is namespace 'AscendC' (a hallucinated API), err_no_template / err_no_member_template
  "no template named %0 [in %1]", err_ovl_ambiguous_call "call to %0 is ambiguous";
- scope_lifetime: err_undeclared_var_use "use of undeclared identifier %0" (and its
  `; did you mean %1?` form), err_redefinition "redefinition of %0",
  err_unknown_typename "unknown type name %0", err_undeclared_use "use of undeclared %0";
- memory_object: err_no_member naming a LocalTensor / GlobalTensor / TQue / TQueBind /
  TBuf / TPipe type, err_ovl_deleted_init "call to deleted constructor of %0",
  err_ovl_deleted_special_init "call to implicitly-deleted copy constructor of %0",
  err_deleted_function_use "attempt to use a deleted function", and any other error
  whose message names one of those types;
- type_cast: err_init_conversion_failed "cannot initialize a variable of type %1 with an
  lvalue of type %3", err_typecheck_convert_incompatible "assigning to %0 from
  incompatible type %1", err_typecheck_nonviable_condition "no viable conversion from %0
  to %1", err_typecheck_invalid_operands "invalid operands to binary expression (%0 and
  %1)", err_bad_cxx_cast_generic "static_cast from %1 to %2 is not allowed" (and the
  other named casts), err_bad_reinterpret_cast_*, "cannot convert";
- anything else: compile_error.

The order matters: scope before API (an undeclared AscendC name is a typo or a missing
`using namespace`), memory objects before types (a LocalTensor<half> assigned a
LocalTensor<float> is the tensor's API misused, not a scalar cast).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from verifiers.ascendc import api

_DIAG = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+):\s*(?P<kind>error|fatal error|note|warning):"
    r"\s*(?P<msg>.*)$",
    re.M,
)
_OBJECTS = r"(?:LocalTensor|GlobalTensor|TQue|TQueBind|TBuf|TPipe|TBufPool)\b"
# (code, patterns on the message): the first code with a matching pattern names the error
CODES: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...] = tuple(
    (code, tuple(re.compile(p) for p in pats))
    for code, pats in (
        ("scope_lifetime", (
            r"use of undeclared identifier",
            r"use of undeclared ",
            r"^redefinition of",
            r"unknown type name",
            r"declared in an outer scope|out of scope|not captured",
            r"^variable '[^']+' cannot be implicitly captured",
        )),
        ("api_signature", (
            r"no member named '[^']+' in namespace 'AscendC'",
            r"no (?:matching|viable) (?:member )?function for call to",
            r"too (?:many|few) arguments to function call",
            r"no template named",
            r"call to '[^']+' is ambiguous|call to [\w:]+ is ambiguous",
            r"no matching constructor for initialization of '(?!.*" + _OBJECTS + ")",
        )),
        ("memory_object", (
            r"no member named '[^']+' in '(?:AscendC::)?" + _OBJECTS,
            r"call to (?:implicitly-)?deleted (?:copy )?constructor",
            r"attempt to use a deleted function",
            _OBJECTS,
        )),
        ("type_cast", (
            r"cannot initialize",
            r"no viable conversion",
            r"incompatible type",
            r"invalid operands to binary expression",
            r"(?:static|reinterpret|const|dynamic)_cast from",
            r"C-style cast from",
            r"cannot convert",
            r"non-constant-expression cannot be narrowed",
        )),
    )
)  # fmt: skip


@dataclass(frozen=True)
class Diagnostic:
    file: str
    line: int
    col: int
    kind: str
    message: str

    def show(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: {self.kind}: {self.message}"


@dataclass(frozen=True)
class BuildError:
    code: str  # taxonomy code
    first: str  # the first error line, as bisheng wrote it (paths made the candidate's)
    file: str  # the candidate's file it points at ('' if none of them)
    line: int | None
    source_line: str  # the candidate's line there
    declaration: str  # the API's declaration, if the error names one

    def feedback(self) -> str:
        out = [self.first]
        if self.source_line:
            out.append(f"  {self.line} | {self.source_line.strip()}")
        if self.declaration:
            out.append("the API is declared:\n" + self.declaration)
        return "\n".join(out)


def diagnostics(log: str) -> list[Diagnostic]:
    return [
        Diagnostic(m["file"].strip(), int(m["line"]), int(m["col"]), m["kind"], m["msg"].strip())
        for m in _DIAG.finditer(log)
    ]


def code_of(message: str) -> str:
    for code, patterns in CODES:
        if any(p.search(message) for p in patterns):
            return code
    return "compile_error"


def _own(path: str, files: dict[str, str]) -> str | None:
    """The candidate's file a diagnostic's path is (by its tail), or None (a CANN header)."""
    for name in files:
        if (
            path == name
            or path.endswith("/" + name)
            or path.endswith("/" + name.rsplit("/", 1)[-1])
        ):
            return name
    return None


def classify(log: str, files: dict[str, str]) -> BuildError:
    """The first error of a failed build, classified, at the candidate's line: an error
    inside a CANN header is placed at the candidate's line that instantiated it (the
    `note: in instantiation ... requested here` / `note: candidate ...` lines after it)."""
    diags = diagnostics(log)
    errors = [i for i, d in enumerate(diags) if d.kind in ("error", "fatal error")]
    if not errors:
        first = next((ln.strip() for ln in log.splitlines() if ln.strip()), "bisheng failed")
        return BuildError("compile_error", first[:300], "", None, "", "")
    i = errors[0]
    d = diags[i]
    own = _own(d.file, files)
    where = d
    if own is None:
        for later in diags[i + 1 :]:
            if later.kind in ("error", "fatal error"):
                break
            if _own(later.file, files):
                where, own = later, _own(later.file, files)
                break
    source_line = ""
    if own is not None:
        lines = files[own].splitlines()
        if 1 <= where.line <= len(lines):
            source_line = lines[where.line - 1]
    shown = (
        d.show()
        if own is None or where is not d
        else (f"{own}:{d.line}:{d.col}: {d.kind}: {d.message}")
    )
    found = api.find(d.message, source_line)
    return BuildError(
        code_of(d.message),
        shown[:400],
        own or "",
        where.line if own else None,
        source_line,
        found.show() if found else "",
    )
