"""C signatures of x86asm tasks: the integer types a function may take and return, and
pointers to arrays of them (stdlib only: the descriptor, the spec loader and the case
generator read these without a toolchain)."""

from __future__ import annotations

import re
from dataclasses import dataclass

# name -> (bits, signed): what the System V ABI passes in one integer register
INT_TYPES: dict[str, tuple[int, bool]] = {
    "int8_t": (8, True), "uint8_t": (8, False), "int16_t": (16, True),
    "uint16_t": (16, False), "int32_t": (32, True), "uint32_t": (32, False),
    "int64_t": (64, True), "uint64_t": (64, False), "char": (8, True),
    "signed char": (8, True), "unsigned char": (8, False), "short": (16, True),
    "unsigned short": (16, False), "int": (32, True), "unsigned": (32, False),
    "unsigned int": (32, False), "long": (64, True), "unsigned long": (64, False),
    "long long": (64, True), "unsigned long long": (64, False), "size_t": (64, False),
    "ptrdiff_t": (64, True), "intptr_t": (64, True), "uintptr_t": (64, False),
}  # fmt: skip
MAX_PARAMS = 6  # all in registers: rdi, rsi, rdx, rcx, r8, r9
_SIG = re.compile(
    r"^\s*(?P<ret>[A-Za-z_][\w\s]*?)\s*\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^()]*)\)\s*;?\s*\Z"
)
_PARAM = re.compile(
    r"^\s*(?P<const>const\s+)?(?P<type>[A-Za-z_][\w\s]*?)\s*"
    r"(?P<ptr>\*\s*(?:const\s+|restrict\s+|__restrict\s+)*)?\b(?P<name>[A-Za-z_]\w*)\s*\Z"
)
NAME = re.compile(r"[A-Za-z_]\w*\Z")


@dataclass(frozen=True)
class IntType:
    name: str
    bits: int
    signed: bool

    @property
    def size(self) -> int:
        return self.bits // 8

    @property
    def lo(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def hi(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    def wrap(self, v: int) -> int:
        """`v` as this type holds it (two's complement)."""
        v &= (1 << self.bits) - 1
        return v - (1 << self.bits) if self.signed and v >> (self.bits - 1) else v


@dataclass(frozen=True)
class Param:
    name: str
    type: IntType  # the scalar's type, or a pointer's element type
    pointer: bool = False
    const: bool = False


@dataclass(frozen=True)
class Signature:
    name: str
    ret: IntType | None  # None: void
    params: tuple[Param, ...]
    text: str

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def scalars(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if not p.pointer)

    @property
    def pointers(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.pointer)


class SignatureError(ValueError):
    pass


def int_type(text: str) -> IntType:
    name = " ".join(text.split())
    if name not in INT_TYPES:
        raise SignatureError(f"unsupported type {name!r} (integer types: {', '.join(INT_TYPES)})")
    bits, signed = INT_TYPES[name]
    return IntType(name, bits, signed)


def parse_signature(text: str) -> Signature:
    """`uint32_t crc32(const uint8_t *buf, size_t len)` -> its Signature."""
    m = _SIG.match(text)
    if not m:
        raise SignatureError(f"not a C function prototype: {text!r}")
    ret_text = " ".join(m["ret"].split())
    ret = None if ret_text == "void" else int_type(ret_text)
    params: list[Param] = []
    raw = m["params"].strip()
    if raw and raw != "void":
        for part in raw.split(","):
            pm = _PARAM.match(part)
            if not pm:
                raise SignatureError(f"cannot read parameter {part.strip()!r}")
            params.append(
                Param(pm["name"], int_type(pm["type"]), bool(pm["ptr"]), bool(pm["const"]))
            )
    if len(params) > MAX_PARAMS:
        raise SignatureError(f"{len(params)} parameters; at most {MAX_PARAMS} (all in registers)")
    if len({p.name for p in params}) != len(params):
        raise SignatureError("parameter names must be distinct")
    return Signature(m["name"], ret, tuple(params), " ".join(text.split()).rstrip(";"))
