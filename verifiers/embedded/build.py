"""How firmware is built for the STM32F407: the compiler and linker lines, the target files,
and the harness objects (startup, harness, HAL) compiled once per toolchain.

The target files are Crucible's own (`target/`): trusted text, so their objects are built
outside the sandbox and cached by the hash of their sources and the compiler's version;
candidate text is only ever compiled inside it (verifier.py).
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import tempfile
import threading
from pathlib import Path

TARGET = Path(__file__).with_name("target")
INCLUDE = TARGET / "include"  # what a candidate's file may include (stm32f4.h, hal.h)
HARNESS_SRC = TARGET / "src"  # startup, harness, HAL sources and harness.h
LINKER_SCRIPT = TARGET / "stm32f4.ld"
HARNESS_SOURCES = ("startup.c", "harness.c", "hal.c", "periph.c")
CC = "arm-none-eabi-gcc"
ARCH_FLAGS = ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16")
# -Werror=...: what GCC 12 only warns about but a real firmware build must refuse
# (GCC 14 makes the first three errors by default)
CFLAGS = (
    *ARCH_FLAGS,
    "-std=gnu11",
    "-O2",
    "-g0",
    "-Wall",
    "-fno-common",
    "-ffunction-sections",
    "-fdata-sections",
    "-Werror=implicit-function-declaration",
    "-Werror=implicit-int",
    "-Werror=int-conversion",
    "-Werror=incompatible-pointer-types",
    "-Werror=return-type",
    "-fdiagnostics-plain-output",
    "-fno-diagnostics-show-caret",
)
LDFLAGS = (
    *ARCH_FLAGS,
    "-nostartfiles",
    "--specs=nano.specs",
    "--specs=nosys.specs",
    "-Wl,--gc-sections",
    "-Wl,--no-warn-rwx-segments",
)
FLASH = (0x08000000, 1024 * 1024)
SRAM = (0x20000000, 128 * 1024)
CCM = (0x10000000, 64 * 1024)
MIN_STACK = 0x800  # stm32f4.ld's _min_stack

_lock = threading.Lock()


def compiler_version() -> str:
    out = subprocess.run([CC, "-dumpfullversion"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or "unknown"


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(hashlib.sha256(p).digest())
    return h.hexdigest()[:20]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "crucible" / "embedded"


_built: dict[tuple[str, str, str], Path] = {}  # (name, text, version) -> its object


def compile_trusted(sources: dict[str, str], version: str) -> dict[str, Path]:
    """Objects for trusted C texts (name -> source), compiled once per (text, compiler):
    name.c -> its cached .o. Written to a temp dir and renamed into place, so a reader never
    sees half an object."""
    out: dict[str, Path] = {}
    for name, text in sources.items():
        known = _built.get((name, text, version))
        if known is not None and known.is_file():
            out[name] = known
            continue
        key = _digest(text.encode(), version.encode(), " ".join(CFLAGS).encode(), _headers())
        obj = cache_root() / key / (Path(name).stem + ".o")
        if not obj.is_file():
            with _lock:
                if not obj.is_file():
                    _compile_one(name, text, obj)
        _built[(name, text, version)] = obj
        out[name] = obj
    return out


def harness_objects(version: str) -> list[Path]:
    return list(compile_trusted(_harness_sources(), version).values())


@functools.cache
def _harness_sources() -> dict[str, str]:
    return {n: (HARNESS_SRC / n).read_text() for n in HARNESS_SOURCES}


@functools.cache
def _headers() -> bytes:
    return b"".join(
        p.read_bytes() for p in sorted([*INCLUDE.glob("*.h"), *HARNESS_SRC.glob("*.h")])
    )


def _compile_one(name: str, text: str, obj: Path) -> None:
    obj.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=obj.parent) as tmp:
        src = Path(tmp) / Path(name).name
        src.write_text(text)
        argv = [CC, *CFLAGS, "-I", str(INCLUDE), "-I", str(HARNESS_SRC), "-c", str(src)]
        res = subprocess.run(
            [*argv, "-o", str(Path(tmp) / obj.name)],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if res.returncode != 0:
            raise HarnessBuildError(f"{name} does not compile: {res.stderr.strip()[:2000]}")
        os.replace(Path(tmp) / obj.name, obj)


class HarnessBuildError(RuntimeError):
    """A trusted file (target support, a task's test main) does not compile: the task's or
    the installation's fault, never the candidate's."""


def interface_header(functions: list[str]) -> str:
    """The prototypes the candidate's file is compiled against (`-include`): a definition
    that does not match one is a compile error, as it would be against a real header."""
    return "\n".join(
        [
            "/* the task's interface, included before the candidate's file */",
            "#include <stdint.h>",
            *(p.rstrip(";") + ";" for p in functions),
            "",
        ]
    )
