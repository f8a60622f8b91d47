"""Static rules for a candidate's object file, each with its reason (a table, as the RTL
anti-cheat), and the fingerprint that tells a copy of the baseline.

The object is read on the host (`verifiers.elf`, every offset bounds-checked); its
disassembly comes from objdump run in the sandbox (it parses hostile bytes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from verifiers.elf import (
    SHF_ALLOC,
    SHF_EXECINSTR,
    SHF_WRITE,
    SHN_COMMON,
    STT_FILE,
    STT_GNU_IFUNC,
    STT_SECTION,
    Elf,
)

# sections an assembly file for a function or program may have; anything else (a
# constructor table, .init, an interpreter) runs before the driver or means nothing here
SECTION_OK = re.compile(
    r"\.(?:text|rodata|data|bss|tdata|tbss)(?:\.[\w.$]*)?\Z|\.note\.GNU-stack\Z|"
    r"\.note\.gnu\.property\Z|\.comment\Z|\.eh_frame\Z|\.debug_\w+\Z|\.rela?\..*\Z|"
    r"\.symtab\Z|\.strtab\Z|\.shstrtab\Z|\.group\Z|\.note\.gnu\.build-id\Z|\Z"
)
# (mnemonic pattern, why): instructions no optimized function or stdio program needs
FORBIDDEN_MNEMONICS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), why)
    for p, why in (
        (r"syscall|sysenter|sysexit|sysret[lq]?", "a system call: only the driver makes them"),
        (r"int[13]?|into|icebp", "a software interrupt (a system call or a trap)"),
        (r"rdtscp?|rdpmc", "reads the CPU's cycle counters: the timing is the harness's"),
    )
)  # fmt: skip
# valgrind's client-request preamble (rol $3,%rdi; rol $13,%rdi; rol $61,%rdi; rol
# $51,%rdi): code that talks to the instrumentation (zeroes or pauses its count)
CLIENT_REQUEST = bytes.fromhex("48c1c70348c1c70d48c1c73d48c1c733")
_ISA_REG = re.compile(r"%zmm\d|%k[0-7]\b|\{%k[0-7]\}|\bzmm\d|\{evex\}")
_INSN = re.compile(r"^\s*[0-9a-f]+:\s+(?P<mn>[a-z][\w.]*)(?P<ops>[^#<\n]*)", re.M)


# what a function candidate may call: the C library functions the driver checks the
# stack alignment of (tramp.S), and gcc's own runtime (libgcc) helpers
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


FUNCTION_CALLS = _words(
    "memcpy memmove memset memcmp memchr strlen strchr strcmp "
    "__popcountdi2 __popcountsi2 __clzdi2 __ctzdi2 __paritydi2 __divti3 __udivti3 __modti3 "
    "__umodti3 __muldi3 __mulodi4 __multi3 __ffsdi2 __bswapdi2 __bswapsi2"
)
# glibc's internals that an allowed function expands to in the program's own code (the
# header inlines the fast path and calls these for the rest): allowing the function means
# allowing them, and nothing else reaches them
GLIBC_INTERNAL = {
    "__uflow": "getchar_unlocked, getc_unlocked and fgetc_unlocked refill stdin's buffer",
    "__overflow": "putchar_unlocked, putc_unlocked and fputc_unlocked flush stdout's",
    "__errno_location": "errno after strtol, strtod and the maths functions",
}
# what a whole program may call: stdio, the string and memory functions, conversions,
# allocation, sorting and searching, maths; nothing that makes a process, opens a file or
# a socket, or changes signals or mappings
PROGRAM_CALLS = (
    FUNCTION_CALLS
    | _words(
        """printf fprintf sprintf snprintf vprintf vfprintf vsprintf vsnprintf puts fputs putchar
    fputc putc scanf fscanf sscanf __isoc99_scanf __isoc99_fscanf __isoc99_sscanf
    __isoc23_scanf __isoc23_sscanf getchar fgetc getc fgets ungetc fread fwrite fflush
    stdin stdout stderr __printf_chk __fprintf_chk __sprintf_chk __snprintf_chk __memcpy_chk
    __memset_chk __memmove_chk __strcpy_chk __strcat_chk __stack_chk_fail malloc calloc
    realloc free exit abort atoi atol atoll strtol strtoll strtoul strtoull strtod atof abs
    labs llabs qsort bsearch strcpy strncpy strcat strncat strncmp strrchr strstr strspn
    strcspn strtok strdup toupper tolower isdigit isalpha isspace isupper islower isalnum
    __ctype_b_loc __ctype_toupper_loc __ctype_tolower_loc sqrt sqrtf pow powf exp log log2
    log10 floor ceil fabs round fmod sin cos tan atan atan2 hypot fmin fmax
    _GLOBAL_OFFSET_TABLE_ putchar_unlocked getchar_unlocked getc_unlocked putc_unlocked
    fgetc_unlocked fputc_unlocked fread_unlocked fwrite_unlocked fputs_unlocked"""
    )
    | frozenset(GLIBC_INTERNAL)
)
# names of the C library a call may reach but the task does not allow (told apart from
# a name defined nowhere, for the taxonomy)
LIBC_NAMES = PROGRAM_CALLS | _words(
    """system execve execl execlp execv execvp fork vfork popen pclose open openat fopen
    fclose creat unlink remove rename mmap mprotect munmap socket connect bind listen
    accept send recv sendto recvfrom ptrace kill raise signal sigaction syscall dlopen dlsym
    read write close ioctl getenv setenv clock_gettime gettimeofday time sleep usleep
    nanosleep pthread_create"""
)


@dataclass(frozen=True)
class Finding:
    code: str  # taxonomy code
    detail: str


def section_findings(obj: Elf, stateful: bool) -> list[Finding]:
    out = []
    for s in obj.sections:
        if not SECTION_OK.match(s.name):
            why = (
                "runs before the driver (a constructor)"
                if re.search(r"init|fini|ctors|dtors", s.name)
                else "is not a section a function's assembly has"
            )
            out.append(Finding("forbidden_section", f"section {s.name} {why}"))
        elif s.flags & SHF_EXECINSTR and s.flags & SHF_WRITE:
            out.append(
                Finding(
                    "forbidden_section",
                    f"section {s.name} is writable and executable: code that writes itself",
                )
            )
        elif s.flags & SHF_EXECINSTR and not s.name.startswith(".text"):
            out.append(Finding("forbidden_section", f"section {s.name} holds code outside .text"))
        elif s.flags & SHF_WRITE and s.flags & SHF_ALLOC and s.size and not stateful:
            out.append(
                Finding(
                    "writable_state",
                    f"section {s.name} holds {s.size} bytes of writable data: a pure function "
                    "keeps no state between calls (tables go in .rodata)",
                )
            )
    for sym in obj.symbols:
        if sym.type == STT_GNU_IFUNC:
            out.append(
                Finding(
                    "forbidden_section",
                    f"symbol {sym.name} is an IFUNC: its resolver would run before the driver",
                )
            )
        elif sym.shndx == SHN_COMMON and not stateful:
            out.append(
                Finding("writable_state", f"symbol {sym.name} is a common (writable) variable")
            )
    return out


def entry_problem(obj: Elf, name: str) -> str | None:
    """Why `name` is not a global function in the object's code, if it is not."""
    for sym in obj.symbols:
        if sym.name != name or not sym.defined:
            continue
        if not sym.is_global:
            return f"{name} is defined but not global (add `.globl {name}`)"
        if sym.shndx >= len(obj.sections) or not obj.sections[sym.shndx].flags & SHF_EXECINSTR:
            return f"{name} is not in an executable section (put it in .text)"
        return None
    return f"the object defines no {name} (a label `{name}:` in .text, made `.globl {name}`)"


def defined_names(obj: Elf) -> list[str]:
    return [
        s.name
        for s in obj.symbols
        if s.defined and s.name and s.type not in (STT_SECTION, STT_FILE)
    ]


def disassembly_findings(text: str) -> list[Finding]:
    """Forbidden instructions and instructions outside the ISA, from `objdump -d`."""
    out = []
    for m in _INSN.finditer(text):
        mn, ops = m["mn"], m["ops"]
        for pattern, why in FORBIDDEN_MNEMONICS:
            if pattern.fullmatch(mn):
                out.append(Finding("forbidden_instruction", f"`{mn}{ops.rstrip()}`: {why}"))
        if _ISA_REG.search(ops) or mn.startswith("(bad)"):
            out.append(
                Finding(
                    "isa_not_allowed",
                    f"`{mn}{ops.rstrip()}`: outside the target ISA (AVX-512, or bytes that "
                    "decode to no instruction)",
                )
            )
    return out


def client_requests(obj: Elf) -> list[str]:
    return [s.name for s in obj.sections if CLIENT_REQUEST in obj.section_bytes(s)]


def fingerprint(obj: Elf) -> tuple:
    """What the code is, whatever its labels, comments, directives or layout of text: the
    bytes of every allocated section and the relocations into them, by symbol name, a
    local symbol by where it points (a section's name and an offset: local labels into
    mergeable constants keep their names in relocations). Two assemblies with the same
    fingerprint are the same machine code."""
    local = {
        s.name: (obj.sections[s.shndx].name if s.shndx < len(obj.sections) else "?", s.value)
        for s in obj.symbols
        if not s.is_global and s.defined and s.type not in (STT_SECTION, STT_FILE)
    }
    parts = []
    for s in obj.sections:
        if not s.flags & SHF_ALLOC or not s.size:
            continue
        relocs = tuple(
            (r.offset, r.type, local.get(r.symbol, r.symbol), r.addend) for r in obj.relocations(s)
        )
        parts.append((s.name, obj.section_bytes(s), relocs))
    return tuple(sorted(parts, key=lambda p: (p[0], p[1])))
