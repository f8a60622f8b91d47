"""What GNU as and ld said, as taxonomy codes: a table of (pattern, code), first match
wins, and the lines of the candidate's own file (never a path on the host)."""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass

_AS_LINE = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+): (?P<kind>Error|Warning): (?P<msg>.*)$", re.M
)
# (pattern on the message, code): the order matters
AS_CODES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), code)
    for p, code in (
        (r"bad register name `%(?:zmm|k[0-7])", "isa_not_allowed"),
        (r"is not supported on|not supported in 64-bit mode", "isa_not_allowed"),
        (r"no such instruction", "unknown_instruction"),
        (r"operand type mismatch|operand size mismatch|number of operands mismatch|"
         r"invalid instruction suffix|bad register name|ambiguous operand size|"
         r"invalid operand|incorrect register|operand mismatch|unsupported instruction|"
         r"no instruction mnemonic suffix", "bad_operand"),
    )
)  # fmt: skip


@dataclass(frozen=True)
class Diagnostic:
    line: int
    kind: str  # Error / Warning
    message: str

    def show(self) -> str:
        return f"line {self.line}: {self.kind.lower()}: {self.message}"


def as_diagnostics(log: str) -> list[Diagnostic]:
    return [Diagnostic(int(m["line"]), m["kind"], m["msg"].strip()) for m in _AS_LINE.finditer(log)]


def as_code(diags: list[Diagnostic]) -> str:
    """The taxonomy code of an assembly that failed: the first error's."""
    for d in diags:
        if d.kind != "Error":
            continue
        for pattern, code in AS_CODES:
            if pattern.search(d.message):
                return code
        return "syntax_error"
    return "syntax_error"


_UNDEF = re.compile(r"undefined reference to `([^']+)'")


def link_problem(log: str) -> tuple[str, str, list[str]]:
    """(code, one-line summary, missing symbols) of a link that failed."""
    missing = list(dict.fromkeys(_UNDEF.findall(log)))
    if missing:
        names = [m.removeprefix("cand.") for m in missing]
        return "undefined_symbol", f"undefined reference to {', '.join(names[:5])}", names
    first = next((ln.strip() for ln in log.splitlines() if ln.strip()), "the linker failed")
    return "compile_error", first[:300], []


# the system calls a C program's library calls may make, by number (x86-64), to name the
# one the harness refused; the rest are shown by number
SYSCALL_NAMES = {
    0: "read", 1: "write", 2: "open", 3: "close", 4: "stat", 5: "fstat", 9: "mmap",
    10: "mprotect", 11: "munmap", 12: "brk", 13: "rt_sigaction", 14: "rt_sigprocmask",
    16: "ioctl", 20: "writev", 21: "access", 28: "madvise", 39: "getpid", 41: "socket",
    56: "clone", 57: "fork", 59: "execve", 62: "kill", 63: "uname", 72: "fcntl", 89: "readlink",
    96: "gettimeofday", 97: "getrlimit", 99: "sysinfo", 102: "getuid", 186: "gettid",
    200: "tkill", 201: "time", 202: "futex", 204: "sched_getaffinity", 228: "clock_gettime",
    231: "exit_group", 234: "tgkill", 257: "openat", 262: "newfstatat", 302: "prlimit64",
    318: "getrandom",
}  # fmt: skip
_SYSCALL_LINE = re.compile(r"^crucible: syscall (\d+)$", re.M)


def refused_syscall(stderr: str) -> str:
    """The system call program.c's SIGSYS handler named on stderr: `sysinfo (99)`, or ''.
    The candidate can write stderr too: this names the call for a reader, it decides
    nothing."""
    m = _SYSCALL_LINE.search(stderr)
    if not m:
        return ""
    nr = int(m[1])
    return f"{SYSCALL_NAMES[nr]} ({nr})" if nr in SYSCALL_NAMES else f"number {nr}"


def how_it_ended(returncode: int, sig: int | None, stderr: str) -> str:
    """How a program run ended, in words (a signal by name, the refused system call by
    name), where an exit status alone would say `exit 159`."""
    if sig is None and returncode > 128:
        sig = returncode - 128
    if sig == signal.SIGSYS:
        call = refused_syscall(stderr)
        return (
            f"stopped by the harness's seccomp filter: system call {call} is not allowed"
            if call
            else "stopped by the harness's seccomp filter (a system call it does not allow)"
        )
    if sig:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return f"killed by {name}"
    return f"exit status {returncode}"
