"""Just enough of ELF (32- and 64-bit, little-endian) to judge an object or an executable a
candidate produced: sections with their flags and bytes, symbols (defined, undefined,
functions with their addresses) and relocations. Stdlib only; every offset is
bounds-checked, so a hostile file is a `BadElf`, never an exception of another kind.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass

SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
SHT_SYMTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 2, 4, 8, 9
STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE, STT_GNU_IFUNC = 0, 1, 2, 3, 4, 10
STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
SHN_UNDEF, SHN_ABS, SHN_COMMON = 0, 0xFFF1, 0xFFF2
MAX_SECTIONS = 4096


class BadElf(ValueError):
    """Not a little-endian ELF file this module can read."""


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int = 0
    info: int = 0


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


@dataclass(frozen=True)
class Reloc:
    offset: int
    type: int
    symbol: str  # the symbol's name, or its section's for a section symbol
    addend: int


# per class: (header format at 16, section header format and size, symbol entry format
# and size, relocation entry formats, how r_info splits)
_LAYOUT = {
    1: ("<HHIIIIIHHHHHH", "<IIIIIIIIII", 40, "<IIIBBH", 16, ("<Ii", "<II"), 8),
    2: ("<HHIQQQIHHHHHH", "<IIQQQQIIQQ", 64, "<IBBHQQ", 24, ("<QQq", "<QQ"), 32),
}


class Elf:
    def __init__(self, data: bytes, bits: int | None = None):
        self.data = data
        if data[:4] != b"\x7fELF" or len(data) < 52:
            raise BadElf("not an ELF file")
        if data[4] not in _LAYOUT or data[5] != 1:
            raise BadElf("not a little-endian 32- or 64-bit ELF")
        if bits is not None and data[4] != bits // 32:
            raise BadElf(f"not a {bits}-bit ELF")
        self.elfclass = data[4]
        hdr, shfmt, shsize, *_ = _LAYOUT[self.elfclass]
        fields = self._u(hdr, 16)
        self.type, self.machine = fields[0], fields[1]
        shoff, shentsize, shnum, shstrndx = fields[5], fields[10], fields[11], fields[12]
        if shentsize != shsize or shnum > MAX_SECTIONS:
            raise BadElf("bad section header table")
        raw = [self._u(shfmt, shoff + shsize * i) for i in range(shnum)]
        if shnum and shstrndx >= len(raw):
            raise BadElf("bad section name table index")
        names_off = raw[shstrndx][4] if shnum else 0
        # (name, type, flags, addr, offset, size, link, info): the same order in both classes
        self.sections = [
            Section(self._str(names_off, h[0]), h[1], h[2], h[3], h[4], h[5], h[6], h[7])
            for h in raw
        ]

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

    def _table(self, s: Section, entsize: int) -> range:
        if s.offset + s.size > len(self.data) or s.size % entsize:
            raise BadElf(f"bad table {s.name}")
        return range(s.offset, s.offset + s.size, entsize)

    def _symtab(self) -> Section | None:
        return next((s for s in self.sections if s.type == SHT_SYMTAB), None)

    def _symbols(self) -> list[Symbol]:
        *_, symfmt, symsize, _rel, _ = _LAYOUT[self.elfclass]
        tab = self._symtab()
        if tab is None:
            return []
        if tab.link >= len(self.sections):
            raise BadElf("bad symbol table")
        strtab = self.sections[tab.link].offset
        out: list[Symbol] = []
        for at in list(self._table(tab, symsize))[1:]:
            if self.elfclass == 1:
                name, value, size, info, _other, shndx = self._u(symfmt, at)
            else:
                name, info, _other, shndx, value, size = self._u(symfmt, at)
            out.append(Symbol(self._str(strtab, name), value, size, info & 0xF, info >> 4, shndx))
        return out

    def section_bytes(self, s: Section) -> bytes:
        if s.type == SHT_NOBITS:
            return b""
        if s.offset + s.size > len(self.data):
            raise BadElf(f"section {s.name} runs past the file")
        return self.data[s.offset : s.offset + s.size]

    def relocations(self, target: Section) -> list[Reloc]:
        """The relocations applied to section `target` (an object file's)."""
        *_, (rela, rel), shift = _LAYOUT[self.elfclass]
        index = self.sections.index(target)
        syms = [Symbol("", 0, 0, 0, 0, 0), *self.symbols]
        out = []
        for s in self.sections:
            if s.type not in (SHT_RELA, SHT_REL) or s.info != index:
                continue
            fmt = rela if s.type == SHT_RELA else rel
            for at in self._table(s, struct.calcsize(fmt)):
                offset, info, *addend = self._u(fmt, at)
                sym_i, rtype = info >> shift, info & ((1 << shift) - 1)
                if sym_i >= len(syms):
                    raise BadElf(f"relocation against symbol {sym_i} of {len(syms)}")
                sym = syms[sym_i]
                name = sym.name
                if sym.type == STT_SECTION and sym.shndx < len(self.sections):
                    name = self.sections[sym.shndx].name
                out.append(Reloc(offset, rtype, name, addend[0] if addend else 0))
        return out

    def undefined(self) -> set[str]:
        return {s.name for s in self.symbols if not s.defined and s.name}

    def defined_globals(self) -> set[str]:
        return {s.name for s in self.symbols if s.defined and s.is_global and s.name}

    def function_at(self, addr: int) -> str | None:
        """The function whose body holds `addr` ("name+0x12"), if any (Thumb's low bit
        ignored in 32-bit files)."""
        mask = ~1 if self.elfclass == 1 else ~0
        addr &= mask
        for s in self.symbols:
            if s.type == STT_FUNC and s.defined and s.size:
                start = s.value & mask
                if start <= addr < start + s.size:
                    return f"{s.name}+0x{addr - start:x}"
        return None
