"""Seccomp filters for sandboxed runs, written as classic BPF (no libseccomp needed).

`no_writes()` is the filter for a run that must not create, open for writing, remove or
rename any file, whatever path it names: a tool that executes candidate code and talks to
the host on its behalf (an emulator's semihosting: open, remove, rename, system) gets
EACCES for each of those (even /dev/null cannot be opened for writing), while reading files
and writing to the descriptors it was given (its stdout and stderr pipes) still work. bwrap
loads it (`--seccomp FD`) before it runs the command, so the whole command tree inherits
it and cannot drop it.

Only the architectures listed in ARCHES are supported: elsewhere `no_writes()` raises
`SeccompUnsupported`, and a caller that needs the filter must not run without it.
"""

from __future__ import annotations

import errno
import functools
import platform
import struct
from dataclasses import dataclass

# classic BPF (linux/filter.h, linux/bpf_common.h)
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
_NR, _ARCH = 0, 4


def _arg_low(i: int) -> int:
    return 16 + 8 * i  # the low 32 bits of args[i] (little-endian hosts only)


# open flags that write: O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND | __O_TMPFILE
# (the same values in x86-64's and the generic ABI)
_WRITE_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000 | 0o20000000


@dataclass(frozen=True)
class _Arch:
    audit: int  # AUDIT_ARCH_*
    opens: dict[int, int]  # open-like syscall -> index of its flags argument
    denied: tuple[int, ...]
    x32: bool  # x86-64's x32 numbers (bit 30) exist and must be refused


# per machine: {open-like syscall: index of its flags argument}, and the syscalls refused
# outright (create, remove, rename, link, chmod/chown, io_uring, which would bypass the
# rest; openat2 keeps its flags behind a pointer: refused, so libc falls back to openat)
ARCHES = {
    "x86_64": _Arch(
        0xC000003E,
        {2: 1, 257: 2},  # open, openat
        (
            85,  # creat
            437,  # openat2
            87,  # unlink
            263,  # unlinkat
            82,  # rename
            264,  # renameat
            316,  # renameat2
            86,  # link
            265,  # linkat
            88,  # symlink
            266,  # symlinkat
            83,  # mkdir
            258,  # mkdirat
            84,  # rmdir
            76,  # truncate
            90,  # chmod
            268,  # fchmodat
            92,  # chown
            94,  # lchown
            260,  # fchownat
            133,  # mknod
            259,  # mknodat
            425,  # io_uring_setup
        ),
        x32=True,
    ),
    "aarch64": _Arch(
        0xC00000B7,
        {56: 2},  # openat
        (437, 35, 38, 276, 37, 36, 34, 45, 53, 54, 33, 425),
        x32=False,
    ),
}


class SeccompUnsupported(RuntimeError):
    """No filter is written for this machine's architecture."""


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


@functools.cache
def no_writes(machine: str | None = None) -> bytes:
    """The filter's BPF program for `machine` (default: this one's), ready for bwrap."""
    machine = machine or platform.machine()
    arch = ARCHES.get(machine)
    if arch is None:
        raise SeccompUnsupported(
            f"no seccomp filter for {machine!r} (written for {', '.join(sorted(ARCHES))})"
        )
    deny = _RET_ERRNO | errno.EACCES
    body: list[tuple[int, int, int, int]] = []
    # a jump offset of -1 means "to the deny return", resolved once its index is known
    body.append((_LD_W_ABS, 0, 0, _ARCH))
    foreign = len(body)
    body.append((_JEQ_K, 0, -1, arch.audit))  # jf -> deny (patched)
    body.append((_LD_W_ABS, 0, 0, _NR))
    jumps: list[int] = [foreign]
    if arch.x32:  # x32 syscall numbers on x86-64 have bit 30 set: none are allowed
        jumps.append(len(body))
        body.append((_JGE_K, -1, 0, 0x40000000))
    for nr in arch.denied:
        jumps.append(len(body))
        body.append((_JEQ_K, -1, 0, nr))
    # each open-like syscall: check its flags, then allow
    for nr, arg in arch.opens.items():
        body.append((_JEQ_K, 0, 3, nr))  # not this one: skip its three checks
        body.append((_LD_W_ABS, 0, 0, _arg_low(arg)))
        jumps.append(len(body))
        body.append((_JSET_K, -1, 0, _WRITE_FLAGS))
        body.append((_RET_K, 0, 0, _RET_ALLOW))
    body.append((_RET_K, 0, 0, _RET_ALLOW))
    deny_at = len(body)
    body.append((_RET_K, 0, 0, deny))
    out = []
    for i, (code, jt, jf, k) in enumerate(body):
        if i in jumps:  # a -1 offset jumps to the deny return
            jt = deny_at - i - 1 if jt == -1 else jt
            jf = deny_at - i - 1 if jf == -1 else jf
        if not (0 <= jt < 256 and 0 <= jf < 256):
            raise AssertionError(f"BPF jump out of range at {i}")
        out.append(_insn(code, jt, jf, k))
    return b"".join(out)
