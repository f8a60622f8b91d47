"""The firmware side of ELF: the semihosting trap a candidate's object must not hold. The
reader itself is shared (`verifiers.elf`).
"""

from __future__ import annotations

from verifiers.elf import (  # noqa: F401 (the embedded verifier's names for them)
    SHF_ALLOC,
    SHF_EXECINSTR,
    SHF_WRITE,
    SHT_NOBITS,
    SHT_SYMTAB,
    STT_FUNC,
    BadElf,
    Elf,
    Section,
    Symbol,
)

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
