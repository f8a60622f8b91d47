"""arm-none-eabi-gcc and ld diagnostics -> taxonomy codes, and the fault reports of the
harness -> readable feedback."""

from __future__ import annotations

import re
from dataclasses import dataclass

# "cand.c:12:5: error: 'x' undeclared (first use in this function)"
_DIAG = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*"
    r"(?P<kind>error|fatal error):\s*(?P<msg>.*)$",
    re.M,
)
_QUOTED = re.compile(r"[\u2018'`]([^\u2019'`]+)[\u2019'`]")
# (code, patterns): the first code whose pattern matches a compiler error names it
_COMPILE_CODES = (
    ("undefined_symbol", (r"implicit declaration of function",)),
    (
        "wrong_api",
        (
            r"has no member named",
            r"No such file or directory",
            r"unknown type name \u2018?'?(?:GPIO|USART|TIM|RCC|UART)",
            r"header not allowed",
        ),
    ),
    ("undeclared_identifier", (r"undeclared", r"not declared")),
    (
        "type_error",
        (
            r"conflicting types",
            r"incompatible",
            r"invalid operands",
            r"makes (?:pointer|integer) from",
            r"too (?:many|few) arguments",
            r"int-conversion",
            r"lvalue required",
            r"invalid type argument",
            r"assignment of read-only",
            r"request for member",
            r"subscripted value",
            r"void value not ignored",
            r"return-type",
            r"with no value, in function returning",
            r"implicit-int",
            r"type defaults to",
        ),
    ),
    (
        "syntax_error",
        (
            r"expected ",
            r"stray ",
            r"unterminated",
            r"missing terminating",
            r"before ",
            r"at end of input",
        ),
    ),
)


@dataclass(frozen=True)
class Diagnostic:
    line: int
    message: str

    def show(self) -> str:
        return f"line {self.line}: {self.message}"


def compile_errors(log: str, source: str = "cand.c") -> list[Diagnostic]:
    return [
        Diagnostic(int(m["line"]), m["msg"].strip())
        for m in _DIAG.finditer(log)
        if m["file"].endswith(source)
    ]


def compile_code(diags: list[Diagnostic]) -> tuple[str, str]:
    """(taxonomy code, the name it is about: a symbol, a member, "") of the first error."""
    for d in diags:
        for code, patterns in _COMPILE_CODES:
            if any(re.search(p, d.message) for p in patterns):
                names = _QUOTED.findall(d.message)
                return code, names[0] if names else ""
    return "compile_error", ""


_UNDEFINED = re.compile(r"undefined reference to [`\u2018']([^'\u2019]+)[\u2019']")
_MULTIPLE = re.compile(r"multiple definition of [`\u2018']([^'\u2019]+)[\u2019']")
_OVERFLOW = re.compile(
    r"region [`\u2018']?(\w+)[\u2019']? overflowed|RAM overflow|will not fit in region"
)


def link_problem(log: str) -> tuple[str, str, list[str]]:
    """(code, summary, symbols) of a failed link."""
    undefined = sorted(set(_UNDEFINED.findall(log)))
    if undefined:
        return "undefined_symbol", "undefined reference to " + ", ".join(undefined), undefined
    if _OVERFLOW.search(log):
        return "firmware_too_large", "the firmware does not fit the STM32F407's memory", []
    multiple = sorted(set(_MULTIPLE.findall(log)))
    if multiple:
        return "compile_error", "multiple definition of " + ", ".join(multiple), multiple
    return "compile_error", "the link failed", []


# CFSR bits (ARMv7-M B3.2.15): MMFSR [7:0], BFSR [15:8], UFSR [31:16]
CFSR_BITS = {
    0: "IACCVIOL (instruction access violation)",
    1: "DACCVIOL (data access violation)",
    3: "MUNSTKERR",
    4: "MSTKERR",
    7: "MMARVALID",
    8: "IBUSERR (instruction bus error)",
    9: "PRECISERR (precise data bus error)",
    10: "IMPRECISERR (imprecise data bus error)",
    11: "UNSTKERR",
    12: "STKERR",
    15: "BFARVALID",
    16: "UNDEFINSTR (undefined instruction)",
    17: "INVSTATE (invalid state: a branch to an even address?)",
    18: "INVPC",
    19: "NOCP (coprocessor access: FPU disabled?)",
    24: "UNALIGNED",
    25: "DIVBYZERO",
}
HFSR_BITS = {1: "VECTTBL", 30: "FORCED (escalated from a configurable fault)", 31: "DEBUGEVT"}
_FAULT = re.compile(
    r"!fault (?P<name>\w+) CFSR=0x(?P<cfsr>[0-9a-f]{8}) HFSR=0x(?P<hfsr>[0-9a-f]{8}) "
    r"MMFAR=0x(?P<mmfar>[0-9a-f]{8}) BFAR=0x(?P<bfar>[0-9a-f]{8}) PC=0x(?P<pc>[0-9a-f]{8}) "
    r"LR=0x(?P<lr>[0-9a-f]{8})"
)
_UNHANDLED = re.compile(r"!unhandled_irq (-?\d+)")


def fault_report(uart: str) -> dict[str, int | str] | None:
    """The last fault the harness's handler reported, if any (values as ints)."""
    found = list(_FAULT.finditer(uart))
    if not found:
        return None
    m = found[-1]
    return {
        "name": m["name"],
        **{k: int(m[k], 16) for k in ("cfsr", "hfsr", "mmfar", "bfar", "pc", "lr")},
    }


def describe_fault(f: dict, where: str | None) -> str:
    cfsr, hfsr = int(f["cfsr"]), int(f["hfsr"])
    bits = [v for b, v in CFSR_BITS.items() if cfsr >> b & 1]
    bits += [v for b, v in HFSR_BITS.items() if hfsr >> b & 1]
    lines = [
        f"{f['name']} at PC=0x{int(f['pc']):08x}" + (f" ({where})" if where else ""),
        f"CFSR=0x{cfsr:08x} HFSR=0x{hfsr:08x}" + (": " + ", ".join(bits) if bits else ""),
    ]
    if cfsr >> 7 & 1:
        lines.append(f"MMFAR=0x{int(f['mmfar']):08x} (the address it accessed)")
    if cfsr >> 15 & 1:
        lines.append(f"BFAR=0x{int(f['bfar']):08x} (the address it accessed)")
    return "\n".join(lines)


def unhandled_irq(uart: str) -> int | None:
    found = _UNHANDLED.findall(uart)
    return int(found[-1]) if found else None


_OOB = re.compile(
    r"!oob first=0x(?P<first>[0-9a-f]{8}) last=0x(?P<last>[0-9a-f]{8}) "
    r"(?P<kind>painted|zone)=0x(?P<lo>[0-9a-f]{8})-0x(?P<hi>[0-9a-f]{8})"
)
_PERIPH = re.compile(r"!periph_unsupported PC=0x([0-9a-f]{8}) ADDR=0x([0-9a-f]{8})")


def oob_report(uart: str) -> dict[str, int | str] | None:
    """The harness's report of painted RAM or a test buffer's red zone found changed (the
    last one: it exits after it); `kind` says which."""
    found = list(_OOB.finditer(uart))
    if not found:
        return None
    m = found[-1]
    return {"kind": m["kind"], **{k: int(m[k], 16) for k in ("first", "last", "lo", "hi")}}


def periph_unsupported(uart: str) -> tuple[int, int] | None:
    found = _PERIPH.findall(uart)
    return (int(found[-1][0], 16), int(found[-1][1], 16)) if found else None
