"""Nothing of a `crucible` command outlives it, also when the command is SIGKILLed.

A command starts processes that do not die with it: Prefect's ephemeral API server (a
uvicorn subprocess), Ray's local cluster (gcs_server, raylet, workers, agents), verifier
workers and their sandboxes. On a normal exit each library stops its own; after a SIGKILL
of the driver nothing does, and they run on for good. So the entry point, before anything
is started, calls `guard()`:

- every process of the command carries one token in its environment (`CRUCIBLE_GUARD`),
  which whatever the driver starts inherits, across Ray's raylet and Prefect's server too;
  a process started with a cleaned environment (a sandbox) is found as a descendant of a
  marked one;
- the command's scratch files go under one directory: `TMPDIR` points there for the
  command and its children (Ray's session dir and the verifiers' worker dirs included);
- a watchdog, forked first and in a session of its own (a signal sent to the driver's
  process group does not reach it), waits on a pipe that only the driver holds open. When
  the driver ends, however it ends, the pipe reads EOF: the watchdog sends SIGTERM to every
  marked process and its descendants, SIGKILL to those still there after a grace, and
  removes the scratch directory.

On a normal exit the driver waits for that sweep (a few milliseconds when its libraries
stopped everything already), so the command returns with nothing of it left.

Tokens nest (`outer:inner`): a `crucible` started by another keeps the outer token, so the
outer command's watchdog also reaps it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import select
import shutil
import signal
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ENV = "CRUCIBLE_GUARD"
SCRATCH_PREFIX = "crucible-run-"
GRACE_S = 3.0  # SIGTERM first: Ray and Prefect flush their logs and remove sockets
SWEEP_S = 30.0  # give up on a process that survives this long (it is reported by nobody)
EXIT_WAIT_S = 15.0
# what Ray appends below the scratch dir: /ray/session_2026-12-01_10-01-56_114652_10880
# /sockets/plasma_store, with room for a longer pid
MAX_RAY_SUFFIX = 72  # a normal exit waits this long for the sweep, then leaves it running


@dataclass(frozen=True)
class Guard:
    token: str
    scratch: Path | None
    watchdog: int  # the watchdog's pid


_active: Guard | None = None


def guard(*, scratch: bool = True) -> Guard:
    """Mark this process's future children, move its scratch files into one directory
    and start the watchdog that reaps both when this process ends. Once per process.

    This mutates `os.environ` (the token, `TMPDIR`): an entry point's job, never a
    library's.
    """
    global _active
    if _active is not None:
        return _active
    token = secrets.token_hex(8)
    outer = os.environ.get(ENV, "")
    os.environ[ENV] = f"{outer}:{token}" if outer else token
    scratch_dir = None
    if scratch:
        scratch_dir = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=_scratch_parent()))
        os.environ["TMPDIR"] = str(scratch_dir)
        tempfile.tempdir = None  # this process's own tempfile calls follow TMPDIR too
    rfd, wfd = os.pipe()  # both non-inheritable: exec'd children never hold the write end
    driver = os.getpid()
    pid = os.fork()
    if pid == 0:  # the watchdog
        try:
            os.close(wfd)
            _watch(rfd, driver, token, scratch_dir)
        finally:
            os._exit(0)
    os.close(rfd)
    _active = Guard(token, scratch_dir, pid)
    atexit.register(_release, wfd, pid)
    return _active


def _scratch_parent() -> str:
    """The temp dir, unless it is too long for Ray: its session dir goes under the scratch
    dir and holds unix sockets, whose path has at most 107 bytes
    (`<scratch>/ray/session_<date>_<pid>/sockets/plasma_store`)."""
    parent = tempfile.gettempdir()
    if len(parent) + len(SCRATCH_PREFIX) + 8 + MAX_RAY_SUFFIX > 107 and os.access("/tmp", os.W_OK):
        return "/tmp"
    return parent


def _release(wfd: int, watchdog: int) -> None:
    """Normal exit: let the watchdog sweep now and wait for it (bounded)."""
    os.close(wfd)
    deadline = time.monotonic() + EXIT_WAIT_S
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            done, _ = os.waitpid(watchdog, os.WNOHANG)
            if done == 0:
                time.sleep(0.02)
                continue
        return


def _watch(rfd: int, driver: int, token: str, scratch: Path | None) -> None:
    os.setsid()  # out of the driver's process group and terminal
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTSTP):
        signal.signal(sig, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # whoever reads the driver's output must see EOF when it ends
        os.dup2(devnull, fd)
    os.closerange(3, rfd)
    os.closerange(rfd + 1, 65536)
    # EOF when the driver is gone; a forked child that kept the write end cannot hold the
    # sweep back: the parent changing (reparented) tells as well.
    while os.getppid() == driver:
        ready, _, _ = select.select([rfd], [], [], 1.0)
        if ready and not os.read(rfd, 1):
            break
    sweep(token, exclude={os.getpid(), driver}, timeout_s=SWEEP_S)
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)


# --- finding and ending the processes of a token ------------------------------------------


def marked(token: str) -> set[int]:
    """Pids whose environment carries `token` in `CRUCIBLE_GUARD` (zombies have none)."""
    want = token.encode()
    key = ENV.encode() + b"="
    found = set()
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue  # gone, or not ours to read
        for item in env.split(b"\0"):
            if item.startswith(key) and want in item[len(key) :].split(b":"):
                found.add(pid)
                break
    return found


def with_descendants(roots: Iterable[int]) -> set[int]:
    """`roots` and every process below them (by parent pid, read now)."""
    children: dict[int, list[int]] = {}
    for pid in _pids():
        ppid = _ppid(pid)
        if ppid is not None:
            children.setdefault(ppid, []).append(pid)
    out: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo += children.get(pid, ())
    return out


def processes_of(token: str) -> set[int]:
    """Every live (non-zombie) process of a guarded command."""
    return {p for p in with_descendants(marked(token)) if not _is_zombie(p)}


def sweep(token: str, *, exclude: set[int], timeout_s: float = SWEEP_S) -> set[int]:
    """SIGTERM the token's processes, SIGKILL what is left after `GRACE_S`, until none
    remain or `timeout_s` passed; returns the survivors (normally none). Looks again each
    round: a dying Ray raylet may still start a worker."""
    termed: dict[int, float] = {}
    deadline = time.monotonic() + timeout_s
    while True:
        alive = processes_of(token) - exclude
        now = time.monotonic()
        if not alive or now >= deadline:
            return alive
        for pid in alive:
            if pid not in termed:
                termed[pid] = now
                _kill(pid, signal.SIGTERM)
            elif now - termed[pid] >= GRACE_S:
                _kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def _kill(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _pids() -> list[int]:
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return None
    # the command name is in parentheses and may itself hold spaces and parentheses
    return text[text.rfind(")") + 2 :].split()


def _ppid(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[1]) if fields else None


def _is_zombie(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is None or fields[0] in ("Z", "X")
