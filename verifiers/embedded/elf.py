"""Just enough of ELF32 (little-endian ARM) to judge a firmware and a candidate's object:
section sizes and flags, symbols (defined, undefined, functions with their addresses) and
section bytes. Stdlib only; every offset is bounds-checked, so a hostile object is a
`BadElf`, never an exception of another kind.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass

SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
SHT_SYMTAB, SHT_NOBITS = 2, 8
STT_FUNC = 2
STB_LOCAL = 0
SHN_UNDEF, SHN_ABS, SHN_COMMON = 0, 0xFFF1, 0xFFF2


class BadElf(ValueError):
    """Not an ELF32 little-endian file this module can read."""


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int


@dataclass(frozen=True)
class Symbol:
    name: str
    value: int
    size: int
    type: int
    bind: int
    shndx: int

    @property
    def defined(self) -> bool:
        return self.shndx != SHN_UNDEF

    @property
    def is_global(self) -> bool:
        return self.bind != STB_LOCAL


class Elf:
    def __init__(self, data: bytes):
        self.data = data
        if data[:4] != b"\x7fELF" or len(data) < 52:
            raise BadElf("not an ELF file")
        if data[4] != 1 or data[5] != 1:
            raise BadElf("not a 32-bit little-endian ELF")
        (shoff,) = self._u("<I", 32)
        shentsize, shnum, shstrndx = self._u("<HHH", 46)
        if shentsize != 40 or shnum > 4096:
            raise BadElf("bad section header table")
        raw = []
        for i in range(shnum):
            raw.append(self._u("<IIIIIIIIII", shoff + 40 * i))
        if shstrndx >= len(raw):
            raise BadElf("bad section name table index")
        names = raw[shstrndx]
        self.sections = [
            Section(self._str(names[4], h[0]), h[1], h[2], h[3], h[4], h[5]) for h in raw
        ]
        self._raw = raw

    @functools.cached_property
    def symbols(self) -> list[Symbol]:
        return self._symbols()

    def _u(self, fmt: str, at: int) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if at < 0 or at + size > len(self.data):
            raise BadElf("truncated ELF")
        return struct.unpack_from(fmt, self.data, at)

    def _str(self, table_off: int, at: int) -> str:
        start = table_off + at
        if start >= len(self.data):
            raise BadElf("bad string offset")
        end = self.data.find(b"\0", start)
        if end < 0:
            raise BadElf("unterminated string")
        return self.data[start:end].decode("latin-1")

    def _symbols(self) -> list[Symbol]:
        out: list[Symbol] = []
        for h in self._raw:
            if h[1] != SHT_SYMTAB:
                continue
            off, size, link, entsize = h[4], h[5], h[6], h[9]
            if entsize != 16 or link >= len(self._raw) or size > len(self.data):
                raise BadElf("bad symbol table")
            strtab = self._raw[link][4]
            for i in range(1, size // 16):
                name, value, sz, info, _other, shndx = self._u("<IIIBBH", off + 16 * i)
                out.append(Symbol(self._str(strtab, name), value, sz, info & 0xF, info >> 4, shndx))
        return out

    def section_bytes(self, s: Section) -> bytes:
        if s.type == SHT_NOBITS:
            return b""
        if s.offset + s.size > len(self.data):
            raise BadElf(f"section {s.name} runs past the file")
        return self.data[s.offset : s.offset + s.size]

    def undefined(self) -> set[str]:
        return {s.name for s in self.symbols if not s.defined and s.name}

    def defined_globals(self) -> set[str]:
        return {s.name for s in self.symbols if s.defined and s.is_global and s.name}

    def function_at(self, addr: int) -> str | None:
        """The function whose body holds `addr` ("name+0x12"), if any."""
        addr &= ~1
        for s in self.symbols:
            if s.type == STT_FUNC and s.defined and s.size:
                start = s.value & ~1
                if start <= addr < start + s.size:
                    return f"{s.name}+0x{addr - start:x}"
        return None


# Thumb BKPT 0xAB (semihosting's trap): the halfword 0xBEAB
SEMIHOSTING_TRAP = b"\xab\xbe"


def semihosting_traps(obj: Elf) -> list[str]:
    """Executable sections that hold the semihosting trap at a halfword boundary."""
    found = []
    for s in obj.sections:
        if not s.flags & SHF_EXECINSTR:
            continue
        data = obj.section_bytes(s)
        at = data.find(SEMIHOSTING_TRAP)
        while at >= 0:
            if at % 2 == 0:
                found.append(f"{s.name}+0x{at:x}")
                break
            at = data.find(SEMIHOSTING_TRAP, at + 1)
    return found
