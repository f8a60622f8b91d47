"""The x86-64 toolchain: gcc, GNU as, objcopy, objdump and valgrind, the flags Crucible
uses with them, and the builds of trusted text (the drivers, a task's reference C and
baselines), which run on the host and are cached by content.

Trusted text is only ever Crucible's own files or a task's C; candidate text is only ever
assembled, inspected and linked inside the sandbox (verifier.py). The cache
(`verifiers.hostcache`) is the host's alone and never bound into a sandbox.
"""

from __future__ import annotations

import base64
import functools
import os
import re
import subprocess
import tempfile
import threading
from pathlib import Path

from verifiers.contract import content_id
from verifiers.hostcache import SealedCache

GCC, AS, OBJCOPY, OBJDUMP, VALGRIND = "gcc", "as", "objcopy", "objdump", "valgrind"
INSTALL = "bash infra/install-toolchains.sh x86asm"
DRIVER_DIR = Path(__file__).with_name("driver")
DRIVER_FILES = ("common.h", "driver.c", "program.c", "tramp.S")
# the instruction sets a task may target: GNU as's -march (what a candidate may assemble)
# and gcc's (what its reference is compiled for)
ISAS: dict[str, tuple[str, str]] = {
    "x86-64-v3": ("generic64+sse4.2+popcnt+avx2+bmi+bmi2+fma+lzcnt+movbe+f16c+xsave", "x86-64-v3"),
    "x86-64-v2": ("generic64+sse4.2+popcnt", "x86-64-v2"),
    "x86-64": ("generic64", "x86-64"),
}
DEFAULT_ISA = "x86-64-v3"
# the baselines: what `gcc -O0/-O3 -S` gives, without the unwind tables and ident line
# that make a listing longer and say nothing about speed
ASM_FLAGS = ("-S", "-fno-asynchronous-unwind-tables", "-fno-ident")
DRIVER_CFLAGS = ("-O2", "-fno-stack-protector", "-fno-asynchronous-unwind-tables", "-w")
LINK_FLAGS = ("-static", "-z", "noexecstack", "-Wl,--no-warn-rwx-segments")
# sections whose code the C runtime runs before main, that is before the driver installs
# its filter and says it started: dropped from a candidate's object at the link (the static
# gate refuses them first; this holds without it)
BEFORE_MAIN = (".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors", ".init", ".fini")
# what the library functions a function candidate may call are reached through (tramp.S)
HELPER_PREFIX = "crucible_w_"
# every timed function's code (the candidate's, the baseline's and its second copy's) starts
# on a page of its own: where code sits within a page moves its time (a loop across a fetch
# boundary), by 1.6x for the memmove baseline here, and unaligned it fell wherever the
# candidate's code before it happened to end. Page-aligned, the baseline and its copy sit
# alike, and the candidate's luck of place is the baseline's
ALIGN_TEXT = ("--set-section-alignment", ".text=4096")
_lock = threading.Lock()


class ToolchainError(RuntimeError):
    """A trusted build failed (a task's C that does not compile, a broken install): the
    task's or the machine's fault, never the candidate's."""


@functools.cache
def version(tool: str) -> str:
    argv = {GCC: [GCC, "-dumpfullversion"], VALGRIND: [VALGRIND, "--version"]}.get(
        tool, [tool, "--version"]
    )
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "missing"
    return (out.stdout or out.stderr).strip().splitlines()[0] if out.stdout or out.stderr else "?"


def as_label() -> str:
    """GNU as's version: `GNU as 2.40`."""
    found = re.findall(r"\d+\.\d+(?:\.\d+)?", version(AS))
    return f"GNU as {found[-1]}" if found else "GNU as"


def gcc_label() -> str:
    """How a task records the compiler of its baselines: `gcc 12.2.0`."""
    return f"gcc {version(GCC)}"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "crucible" / "x86asm"


@functools.cache
def cache() -> SealedCache:
    return SealedCache(cache_root() / "sealed")


def _run(argv: list[str], cwd: Path, what: str) -> None:
    try:
        res = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise ToolchainError(f"{argv[0]} is not installed: {INSTALL}") from None
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"{what}: {argv[0]} ran past 120 s") from None
    if res.returncode != 0:
        raise ToolchainError(
            f"{what}: {' '.join(argv[:3])} ... failed: {res.stderr.strip()[:2000]}"
        )


def _cached_build(kind: str, text: str, flags: tuple[str, ...], build) -> bytes:
    """`build(tmpdir) -> bytes` once per (kind, text, flags, toolchain)."""
    key = content_id("x86asm", kind, text, " ".join(flags), version(GCC), version(AS))
    hit = cache().read(key)
    if hit is not None:
        return base64.b64decode(hit["data"])
    with tempfile.TemporaryDirectory(prefix="crucible-x86asm-build-") as tmp:
        data = build(Path(tmp))
    cache().write(key, {"data": base64.b64encode(data).decode()})
    return data


def compile_asm(c_text: str, flags: tuple[str, ...], name: str = "f.c") -> str:
    """The assembly gcc writes for trusted C (`flags`: -O3, -march=... and the like);
    `name` is the file name its `.file` line gives."""

    def build(tmp: Path) -> bytes:
        (tmp / name).write_text(c_text)
        _run([GCC, *flags, *ASM_FLAGS, name, "-o", "f.s"], tmp, f"compiling {name}")
        return (tmp / "f.s").read_bytes()

    return _cached_build("asm", c_text, (*flags, name), build).decode()


def compile_object(c_text: str, flags: tuple[str, ...], name: str = "f.c") -> bytes:
    """An object file of trusted C."""

    def build(tmp: Path) -> bytes:
        for f in DRIVER_FILES:  # the drivers include common.h
            (tmp / f).write_text((DRIVER_DIR / f).read_text())
        (tmp / name).write_text(c_text)
        _run([GCC, *flags, "-c", name, "-o", "f.o"], tmp, f"compiling {name}")
        return (tmp / "f.o").read_bytes()

    return _cached_build("obj", c_text + _driver_sources(), (*flags, name), build)


def assemble_trusted(asm_text: str) -> bytes:
    """An object file of trusted assembly (a task's baseline)."""

    def build(tmp: Path) -> bytes:
        (tmp / "f.s").write_text(asm_text)
        _run([AS, "--64", "f.s", "-o", "f.o"], tmp, "assembling a baseline")
        return (tmp / "f.o").read_bytes()

    return _cached_build("as", asm_text, ("--64",), build)


@functools.cache
def _driver_sources() -> str:
    return "".join((DRIVER_DIR / f).read_text() for f in DRIVER_FILES)


@functools.cache
def driver_objects(program: bool = False) -> dict[str, bytes]:
    """The driver's objects: {file name: bytes} (driver.o or program.o, and tramp.o), built
    once per process (the driver's sources and the compiler do not change under it)."""
    main = "program.c" if program else "driver.c"
    with _lock:
        return {
            Path(main).with_suffix(".o").name: compile_object(
                (DRIVER_DIR / main).read_text(), DRIVER_CFLAGS, main
            ),
            "tramp.o": compile_object((DRIVER_DIR / "tramp.S").read_text(), (), "tramp.S"),
        }


def redefine_syms(defined: list[str], undefined: list[str], prefix: str, helpers: set[str]) -> str:
    """objcopy's --redefine-syms file: every symbol the object defines gets `prefix.`
    (nothing of it can then stand for a driver or C library symbol, or be the region
    callgrind counts), and each call to a checked library function goes through its
    alignment check (tramp.S)."""
    lines = [f"{n} {prefix}.{n}" for n in sorted(set(defined))]
    lines += [f"{n} {HELPER_PREFIX}{n}" for n in sorted(set(undefined) & helpers)]
    return "\n".join(lines) + "\n"
