"""The one sandbox: every process that runs candidate code, or a tool over candidate text,
is started through `confined_argv`, audited here once.

bubblewrap with every namespace unshared (no network), the system read-only, a private
writable work dir, a size-capped tmpfs /tmp (tmpfs pages are not in the process's address
space, so an uncapped one was a way round the memory limit), an unprivileged uid of its
own (rlimits on processes are ignored for root), rlimits on memory / CPU / processes /
file size (set by the sandbox's own shell, not by a `preexec_fn`, which is unsafe in
threaded callers such as Ray workers), a wall-clock timeout that kills the whole process
group (the pid namespace takes every descendant with it), and stdout/stderr read while
running and capped: a flood is stopped, not buffered.

Two users, one builder: `Sandbox.run` (one tool run: iverilog, yosys, nvcc, ...) and the
warm workers of `verifiers.warm` (a long-lived Python server). Both get the same mounts,
namespaces, pid 1 (`limits_shell`), uid drop and environment; they differ only in what
they bind, in the address-space limit (a server sets its children's) and in the started
byte below (a server says it started on its own result pipe). `Sandbox.session` runs a
candidate's tool runs one after another in one such sandbox, each under the rlimits and
uid drop of `limits_shell`, with nothing of one run alive when the next starts
(`SandboxSession`).

Whether the sandbox itself failed is never read from text the candidate can print: the
sandbox's shell writes one byte on a pipe of its own (the run's stdin, which it then
closes and replaces with /dev/null) before it starts the command. No byte means bwrap or
the uid drop failed (`RunResult.sandbox_fault`, infra); after the byte, everything is the
tool's, and so the candidate's.

If the sandbox cannot be set up the caller gets `SandboxUnavailable`, never an unconfined
run; running unconfined takes an explicit `Limits(unconfined=True)`.

Machine or candidate (`Stop`, the one rule for every domain): a run stopped by its wall
clock is measured by the host through /proc before the kill (the candidate cannot forge
it): its process tree's CPU and the time its threads waited for a CPU. It is the machine's
(`machine_slow`, infra) unless the candidate spent its CPU budget or mostly slept. How a
tool died is reported by the sandbox's pid 1 on the status pipe (the real wait status, not
an exit code a tool can choose); a SIGKILL the sandbox did not send, short of the CPU
limit, is `killed_externally` (infra). Warm workers (`verifiers.warm`) and the CAD build
server measure their jobs the same way and ask the same `Stop`.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import logging
import os
import re
import select
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from verifiers.contract import Limits

log = logging.getLogger(__name__)

# Candidates run as an unprivileged uid of their own: RLIMIT_NPROC counts processes per
# uid, so one shared uid (e.g. nobody) would let concurrent sandboxes exhaust each other's
# process limit, and a fork bomb in one would fail the others (a neighbour's own fork then
# fails: "Cannot fork", the neighbour's label). Sandbox uids come in ranges of UID_SLOTS,
# each held by one process of the machine at a time (an flock on its file in
# UID_LOCK_DIR, let go when the process ends): slot 0 for the process's tool runs, one
# slot per warm worker after that (`claim_slot`), across all its pools and domains, and
# further ranges when one is used up. Before, the range was the pid's mod 16384 (200
# actor processes of a node with pids at random share one with odds ~70 %; every
# container's worker, pid 1-ish in its own pid namespace, the same) and a worker's slot
# its index in its pool (two pools of one process, the reward service's domains, shared
# worker 0's uid).
SANDBOX_UID_BASE = 200_000
SANDBOX_UID_SPAN = 1 << 20
UID_SLOTS = 64
UID_RANGES = SANDBOX_UID_SPAN // UID_SLOTS
UID_LOCK_DIR = os.environ.get("CRUCIBLE_UID_LOCK_DIR", "/run/lock/crucible-sandbox-uids")
_uids_lock = threading.Lock()
_uids_pid = 0  # the process the ranges below were claimed by (a fork claims its own)
_ranges: list[int] = []  # this process's uid ranges, by claim order
_range_fds: list[int] = []  # their lock files, held open for the process's life
_slots_taken = 1  # slot 0 is the tool runs'; the next slot never handed out
_slots_free: list[int] = []  # handed back by closed workers (`release_slot`)


def uid_lock_dir() -> str:
    """The dir of the uid ranges' lock files, made if missing: UID_LOCK_DIR, or where it
    cannot be made (a read-only /run) /tmp's, said once: the processes of one machine
    must agree on it (a container of the container backend is given the host's)."""
    global _lock_dir_said
    try:
        os.makedirs(UID_LOCK_DIR, mode=0o755, exist_ok=True)
        return UID_LOCK_DIR
    except OSError as e:
        fallback = "/tmp/crucible-sandbox-uids"
        if not _lock_dir_said:
            _lock_dir_said = True
            log.warning(
                "sandbox uid ranges: %s cannot be made (%s); using %s, which every "
                "verifier process of this machine must use too (CRUCIBLE_UID_LOCK_DIR)",
                UID_LOCK_DIR,
                e,
                fallback,
            )
        try:
            os.makedirs(fallback, mode=0o755, exist_ok=True)
        except OSError as e2:
            raise SandboxUnavailable(
                f"no dir for the sandbox uid ranges' lock files: {UID_LOCK_DIR} ({e}), "
                f"{fallback} ({e2}); set CRUCIBLE_UID_LOCK_DIR to a writable dir that every "
                "verifier process of this machine shares"
            ) from None
        return fallback


_lock_dir_said = False


def _claim_range(start: int, taken: Iterable[int] = ()) -> tuple[int, int]:
    """(a uid range no other process of this machine holds, its lock file's fd), the
    first free one from `start` on."""
    import fcntl

    where = uid_lock_dir()
    skip = set(taken)
    for k in range(UID_RANGES):
        r = (start + k) % UID_RANGES
        if r in skip:
            continue
        fd = os.open(os.path.join(where, str(r)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return r, fd
    raise SandboxUnavailable(
        f"every sandbox uid range of this machine ({UID_RANGES}, in {where}) is held "
        "by a live process: stop some verifier processes"
    )


def _forked() -> None:
    """A forked child holds its parent's lock fds, not its ranges: it claims its own
    (`_uids_lock` held)."""
    global _uids_pid, _ranges, _range_fds, _slots_taken, _slots_free
    if _uids_pid != os.getpid():
        _uids_pid, _ranges, _range_fds, _slots_taken, _slots_free = os.getpid(), [], [], 1, []


def _range(i: int) -> int:
    """This process's `i`-th uid range, claimed on first use (`_uids_lock` held)."""
    _forked()
    while len(_ranges) <= i:
        r, fd = _claim_range((os.getpid() + len(_ranges)) % UID_RANGES, _ranges)
        _ranges.append(r)
        _range_fds.append(fd)
    return _ranges[i]


def sandbox_uid(slot: int = 0) -> int:
    """The uid of this process's sandbox `slot` (slot 0: its tool runs; a worker's from
    `claim_slot`), stable for the process's life and no other process's meanwhile."""
    with _uids_lock:
        return SANDBOX_UID_BASE + _range(slot // UID_SLOTS) * UID_SLOTS + slot % UID_SLOTS


def claim_slot() -> int:
    """A sandbox slot of this process no other holder has: a warm worker's own uid, for
    its life and its restarts, until it hands it back (`release_slot`)."""
    global _slots_taken
    with _uids_lock:  # no range claimed yet: a caller that is not root never needs one
        _forked()
        if _slots_free:
            return _slots_free.pop()
        slot = _slots_taken
        _slots_taken += 1
        return slot


def release_slot(slot: int) -> None:
    """A closed worker's slot, free for the next once no process runs as its uid (a
    sandbox's pid 1 takes its whole pid namespace with it, within moments); one still
    running keeps the slot taken for good."""
    uid = sandbox_uid(slot) if os.geteuid() == 0 else None
    deadline = time.monotonic() + 2.0
    while uid is not None and _runs_as(uid):
        if time.monotonic() > deadline:
            return
        time.sleep(0.02)
    with _uids_lock:
        _forked()
        if 0 < slot < _slots_taken and slot not in _slots_free:
            _slots_free.append(slot)
            _slots_free.sort(reverse=True)  # the lowest first: the ranges held stay few


def _runs_as(uid: int) -> bool:
    """Whether a process of this machine (this pid namespace's view) runs as `uid`."""
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{name}").st_uid == uid:
                    return True
    return False


def own_sandbox_uids() -> set[int]:
    """Every uid this process's sandboxes run as, or may (its ranges, whole)."""
    with _uids_lock:
        _range(0)
        return {SANDBOX_UID_BASE + r * UID_SLOTS + k for r in _ranges for k in range(UID_SLOTS)}


SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
INSTALL_HINT = "apt-get install -y bubblewrap util-linux"
# Read-only system dirs bound into the sandbox when they exist. /etc is not bound whole
# (it may hold secrets); tools here need only the loader cache and the alternatives links.
_RO_SYSTEM = ("/usr", "/etc/alternatives", "/etc/ld.so.cache", "/opt/verilator")
_SYMLINKS = (
    ("usr/bin", "/bin"),
    ("usr/sbin", "/sbin"),
    ("usr/lib", "/lib"),
    ("usr/lib64", "/lib64"),
    ("usr/lib32", "/lib32"),
)
TMP_MIN_MB = 16
TMP_MAX_MB = 512


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be set up on this machine; the message says how to fix it."""


# --- machine or candidate: the one rule -----------------------------------------------------

# A run its wall clock stopped is the candidate's `timeout` when its process tree used at
# least CPU_SPENT of its CPU budget (a busy loop at the default 20 s wall / 20 s CPU reaches
# ~19.9 s), or when it neither ran nor waited for a CPU for BUSY_SHARE of the wall (it slept
# or blocked: a hang). Otherwise it wanted the CPU and was cut off short of its budget:
# the machine was slow (starved, or a wall limit too short for its budget), `machine_slow`.
CPU_SPENT = 0.9
BUSY_SHARE = 0.5
STARVED_SHARE = 0.5  # of the CPU it fell short by, the share its CPU wait must explain
CONTEND_S = 0.05  # a thread that waited this long for a CPU was runnable, not idle
CORES = os.cpu_count() or 1
SAMPLE_S = 0.5  # how often a long tool run's CPU waits are read
MACHINE_CODES = (  # infra
    "machine_slow",
    "killed_externally",
    "gpu_memory",
    "gpu_unavailable",
    "draw_disturbed",
    "tool_missing",
)
_HZ = os.sysconf("SC_CLK_TCK")
# CONFIG_SCHED_INFO: without it the CPU wait is unknown and only a run that had the CPU for
# BUSY_SHARE of its wall can be `machine_slow` (a starved one stays the candidate's timeout)
SCHEDSTAT = os.path.exists(f"/proc/self/task/{threading.get_native_id()}/schedstat")


class MachineFault(RuntimeError):
    """The machine, not the candidate, ended a run (`code` is one of MACHINE_CODES). A gate
    that meets one fails the verification as infra (`verifiers.base` catches it)."""

    def __init__(self, code: str, detail: str):
        super().__init__(detail)
        self.code, self.detail = code, detail


@dataclass(frozen=True)
class Usage:
    """What a process tree used, read from /proc: CPU seconds (utime + stime, with the
    children it reaped) and seconds its threads were runnable but not running (schedstat's
    run_delay; None where the kernel has no /proc/<pid>/task/<tid>/schedstat)."""

    cpu_s: float
    wait_s: float | None
    # threads that each waited at least CONTEND_S for a CPU: more of them than the machine
    # has cores means the tree starved itself (a fork bomb, a thread storm), not the machine
    contenders: int = 0


def contenders(waits: Iterable[float]) -> int:
    return sum(1 for w in waits if w >= CONTEND_S)


@dataclass(frozen=True)
class TreeSnapshot:
    """A process tree's counters at one moment (`tree_snapshot`)."""

    cpu_s: float
    waits: Mapping[int, float]  # tid -> run_delay seconds
    pids: tuple[int, ...]
    schedstat: bool

    def since(self, earlier: TreeSnapshot | None = None) -> Usage:
        """Usage from `earlier` (a snapshot of the same tree) to this one; from the tree's
        start without one. A thread gone in between takes its wait with it (undercounted)."""
        if earlier is None:
            deltas = list(self.waits.values())
            cpu = self.cpu_s
        else:
            deltas = [max(0.0, w - earlier.waits.get(t, 0.0)) for t, w in self.waits.items()]
            cpu = max(0.0, self.cpu_s - earlier.cpu_s)
        if not self.schedstat:
            return Usage(cpu, None)
        return Usage(cpu, sum(deltas), contenders(deltas))


def _stat(pid: int | str) -> list[bytes] | None:
    """/proc/<pid>/stat after the command name: [state, ppid, ...]."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2 :].split()


def _children() -> dict[int, list[int]]:
    """ppid -> its child pids (one pass over /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(entry)) is not None:
            children.setdefault(int(st[1]), []).append(int(entry))
    return children


def _descendants(*roots: int, children: dict[int, list[int]] | None = None) -> list[int]:
    """`roots` and every process below them (one pass over /proc, or `children`)."""
    children = _children() if children is None else children
    tree, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, ()))
    return tree


def stop_tree(*roots: int, settle_s: float = 2.0) -> tuple[int, ...]:
    """SIGSTOP each of `roots` and every process below them, until the trees hold no
    process that could still run: the pids stopped (for `continue_pids`). A process
    forking as it is stopped is caught by the next pass; the last pass is made after every
    stopped pid shows state T (a SIGSTOP lands at the target's next return to user mode),
    so none forked after it was listed. A candidate cannot catch or ignore SIGSTOP, and in
    a sandbox's pid namespace an orphan is re-parented to its pid 1, inside the tree. A
    stopped process that runs again (another of the tree sent it SIGCONT, or its tracer let
    the stop go before it was stopped itself) is stopped again, until none is left to
    continue it; `resisting` says whose tree still ran at `settle_s`. One pass over /proc
    serves every root."""
    stopped: set[int] = set()
    seen: set[int] = set()  # stopped, or gone (or not ours) when signalled
    deadline = time.monotonic() + settle_s
    while roots and time.monotonic() < deadline:
        new = [p for p in _descendants(*roots) if p not in seen]
        for pid in new:
            seen.add(pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP)
                stopped.add(pid)
        if new:
            continue
        running = [p for p in stopped if not _states(p) <= _HELD]
        if not running:
            if all(p in seen for p in _descendants(*roots)):  # listed after all stopped
                break
            continue
        for pid in running:  # not landed yet, or continued since: again (it is idempotent)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP)
        time.sleep(0.001)
    return tuple(sorted(stopped))


def resisting(*roots: int) -> dict[int, list[int]]:
    """The processes of each root's tree that run or sleep though `stop_tree` stopped it: a
    SIGSTOP lands at once on both, so after its settle time they were continued (by
    another of the tree) or outran its passes. Not counted: one in uninterruptible sleep
    (D: in the kernel, a driver call), and one whose SIGSTOP is still pending (a machine
    so loaded that it was not scheduled since: a SIGCONT would have discarded it); their
    stop lands when they next run. Root -> its such pids, for the roots that have any (one
    pass over /proc for them all)."""
    children = _children()
    found = {
        r: [p for p in _descendants(r, children=children) if _states(p) & _RUNS] for r in roots
    }
    return {
        r: left for r, pids in found.items() if (left := [p for p in pids if not _stop_pending(p)])
    }


_HELD = {b"T", b"t", b"Z", b"X"}  # stopped (by a signal, by a tracer), or ended
_RUNS = {b"R", b"S"}  # running, or asleep where a signal wakes it


def _states(pid: int) -> set[bytes]:
    """The states of `pid`'s threads (b"R", b"S", b"D", b"T", ...; none when it is gone). The
    leader's alone unless it shows Z: a leader whose thread ended while its other threads
    run (pthread_exit from main) is listed as a zombie, and they are what runs."""
    st = _stat(pid)
    if st is None:
        return set()
    if st[0] != b"Z":
        return {st[0]}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return {st[0]}
    return {t[0] for tid in tids if (t := _stat(f"{pid}/task/{tid}")) is not None} or {st[0]}


def _stop_pending(pid: int) -> bool:
    """Whether a SIGSTOP waits to be delivered to `pid` (/proc/<pid>/status: SigPnd for
    the thread, ShdPnd for the process)."""
    bit = 1 << (signal.SIGSTOP - 1)
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("SigPnd:", "ShdPnd:")) and int(line.split()[1], 16) & bit:
                    return True
    except (OSError, ValueError, IndexError):
        pass
    return False


def continue_pids(pids: Iterable[int]) -> None:
    """SIGCONT to each of `pids` (a pid gone meanwhile is skipped)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGCONT)


def empty_dir(root: str | os.PathLike[str], keep: Iterable[str] = ()) -> bool:
    """Remove everything a candidate left under `root` (inside the sandbox: its work dir,
    /tmp, /dev/shm) but the names in `keep`. Never into a mount: the host's code, venv or
    tools bound in read-only lie below /tmp when the checkout does (a clone in /tmp), and
    are the sandbox's, not the candidate's; a dir that holds one stays. Dirs the candidate
    made unreadable are opened up first. False when something of the candidate's stayed,
    or `root` is not a dir (a link there is never followed: it could lead anywhere)."""
    try:
        st = os.lstat(root)
        if not stat.S_ISDIR(st.st_mode):
            return False
        dev = st.st_dev
        names = os.listdir(root)
    except OSError:
        return False
    left = {os.fspath(n) for n in keep}
    ok = True
    for name in names:
        if name not in left:
            try:
                ok = _remove_beneath(os.path.join(root, name), dev) is not None and ok
            except RecursionError:  # deeper than Python recurses: replace the process
                ok = False
    return ok


def _remove_beneath(path: str, dev: int) -> str | None:
    """ "gone", "mount" (a mount, or dirs holding only mounts, stayed) or None (failed)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "gone"
    except OSError:
        return None
    if st.st_dev != dev:
        return "mount"
    try:
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(path)
            return "gone"
        with contextlib.suppress(OSError):
            os.chmod(path, 0o700)
        got = [_remove_beneath(os.path.join(path, n), dev) for n in os.listdir(path)]
        if None in got:
            return None
        if "mount" in got:
            return "mount"
        os.rmdir(path)
        return "gone"
    except OSError as e:
        return "gone" if e.errno == errno.ENOENT else None


def tree_snapshot(
    root: int, pids: Sequence[int] | None = None, *, skip: Sequence[int] = ()
) -> TreeSnapshot:
    """The CPU and CPU-wait counters of `root`'s process tree (or of `pids`, when the
    caller knows them), less the processes in `skip`. Processes that vanish while read are
    left out; their CPU is in the parent that reaps them."""
    cpu, waits, found = 0.0, {}, []
    for pid in _descendants(root) if pids is None else pids:
        if pid in skip or (st := _stat(pid)) is None:
            continue
        found.append(pid)
        own = (int(st[11]) + int(st[12])) / _HZ  # utime + stime, in clock ticks
        ran = 0.0  # the same from its live threads' schedstat, in ns (ticks miss short runs)
        if SCHEDSTAT:
            with contextlib.suppress(OSError):
                for tid in os.listdir(f"/proc/{pid}/task"):
                    try:
                        with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                            on_cpu, delay = f.read().split()[:2]
                    except (OSError, ValueError):
                        continue
                    ran += int(on_cpu) / 1e9
                    waits[int(tid)] = int(delay) / 1e9
        cpu += max(own, ran) + (int(st[13]) + int(st[14])) / _HZ  # + cutime + cstime
    return TreeSnapshot(cpu, waits, tuple(found), SCHEDSTAT)


def oom_kills() -> int | None:
    """The machine's OOM-killer kill count so far (/proc/vmstat), None where not shown."""
    try:
        with open("/proc/vmstat", "rb") as f:
            m = re.search(rb"^oom_kill (\d+)$", f.read(), re.M)
    except OSError:
        return None
    return int(m[1]) if m else None


@dataclass(frozen=True)
class Stop:
    """How one run ended (a tool run, a warm worker's job, a CAD build), as the host
    measured it; `code()` is the one rule that says whose doing it was."""

    wall_s: float
    wall_kill: bool = False  # stopped by its wall clock (the harness's kill)
    usage: Usage | None = None  # the run's tree: at the kill, or when it ended
    budget_s: float | None = None  # the CPU it may spend (RLIMIT_CPU's soft limit)
    signal: int | None = None  # the signal that ended it, known to be real
    oom_kills: int | None = None  # OOM-killer kills on this machine while it ran
    # candidate code runs there as a process, free to signal itself: a SIGKILL is then
    # only the machine's with the OOM killer's count as evidence
    self_signal: bool = False
    # seconds of `wall_s` before the sandbox's own shell started the command (bwrap's
    # namespaces and mounts: blocked in the kernel, neither CPU nor CPU wait, and longer on
    # a loaded machine); the candidate's code had not run, so the rule judges the rest
    setup_s: float = 0.0

    def code(self) -> str | None:
        """`timeout` / `machine_slow` after a wall-clock kill; `cpu_limit` /
        `killed_externally` after a SIGKILL the harness did not send; else None."""
        cpu = self.usage.cpu_s if self.usage else None
        spent = cpu is not None and self.budget_s is not None and cpu >= CPU_SPENT * self.budget_s
        if self.wall_kill:
            if cpu is None or not self.budget_s or spent:
                return "timeout"  # no measure or no budget: the candidate's, as it always was
            if self.usage.contenders > CORES:
                return "timeout"  # its own threads kept each other waiting
            wait = self.usage.wait_s or 0.0
            ran = max(0.0, self.wall_s - self.setup_s)
            if cpu + wait < BUSY_SHARE * ran:
                return "timeout"  # it slept or blocked
            if ran >= self.budget_s:
                # it had the wall time for its whole budget: the machine is to blame only
                # if the CPU it was denied (its wait) explains its shortfall; time it spent
                # blocked (I/O, a lock) is its own
                short = CPU_SPENT * self.budget_s - cpu
                return "machine_slow" if wait >= STARVED_SHARE * short else "timeout"
            return "machine_slow"  # a wall far shorter than its budget cut it off
        if self.signal == signal.SIGKILL:
            if spent:
                return "cpu_limit"  # RLIMIT_CPU's hard limit (it ignored SIGXCPU)
            if not self.self_signal or (self.oom_kills or 0) > 0:
                return "killed_externally"
        return None

    def own_timer(self, limit_s: float) -> Stop:
        """This run judged as stopped by the tool's own timer of `limit_s` (yosys `sat
        -timeout`, ABC `pdr -T`) instead of the sandbox's: a wall-clock stop whose CPU
        budget is that limit (a run that had the CPU for it: the candidate's)."""
        return replace(self, wall_kill=True, budget_s=limit_s, signal=None)

    def describe(self) -> str:
        """The measured numbers, for a verdict's detail."""
        parts = []
        if self.usage is not None:
            budget = f" of a {self.budget_s:g}s budget" if self.budget_s else ""
            parts.append(f"CPU {self.usage.cpu_s:.2f}s{budget}")
        parts.append(f"wall {self.wall_s:.2f}s")
        if self.setup_s >= 0.005:
            parts.append(f"sandbox start {self.setup_s:.2f}s of it")
        if self.usage is not None and self.usage.wait_s is not None:
            parts.append(f"CPU wait {self.usage.wait_s:.2f}s")
        elif self.wall_kill:
            parts.append("CPU wait unknown (no schedstat)")
        if self.signal is not None:
            try:
                parts.append(f"signal {signal.Signals(self.signal).name}")
            except ValueError:
                parts.append(f"signal {self.signal}")
        if self.oom_kills:
            parts.append(f"OOM-killer kills meanwhile: {self.oom_kills}")
        return ", ".join(parts)

    def fault(self, what: str) -> MachineFault | None:
        """A MachineFault when the machine ended this run, else None."""
        code = self.code()
        if code not in MACHINE_CODES:
            return None
        why = (
            "stopped by its wall clock short of its CPU budget: the machine was slow"
            if code == "machine_slow"
            else "killed by a signal it did not cause"
        )
        return MachineFault(code, f"{what}: {why} ({self.describe()})")


@dataclass(frozen=True)
class Confinement:
    """What one sandbox holds: its private writable dir and the host dirs it may see.

    `ro` / `rw` are host dirs bound at their own path (their parents are made as empty
    dirs); `ro_files` are (host, guest) pairs. Everything else of the host is absent.
    """

    work: Path
    guest_work: str = "/work"
    ro: Sequence[str] = ()
    rw: Sequence[str] = ()
    ro_files: Sequence[tuple[str, str]] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    gpu: bool = False
    # a tool run gets a session of its own; a warm server stays in the process group its
    # pool kills on a time-out (a setsid'd worker outlived its kill, seen in the tests)
    new_session: bool = True


def _gpu_device_nodes() -> list[str]:
    return sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri/*"))


def tmp_mb(lim: Limits) -> int:
    """The sandbox /tmp's size: one largest file, within the memory budget."""
    return max(TMP_MIN_MB, min(lim.fsize_mb, lim.memory_mb // 4, TMP_MAX_MB))


# The tool run's pid 1 after its shell set the limits: runs the command as its child (fd 3,
# the status pipe, closed in it), reaps every process that ends up its child meanwhile, as
# the shell did, and reports the command's wait status on fd 3; exits as a shell would.
PERL = "/usr/bin/perl" if os.access("/usr/bin/perl", os.X_OK) else None
PID1 = (
    "$k = fork; exit 126 unless defined $k; "
    'if (!$k) { open(S, ">&=", 3) and close(S); exec { $ARGV[0] } @ARGV; '
    'print STDERR "$ARGV[0]: $!\\n"; exit 127 } '
    "$s = 0; while ((my $p = wait) > 0) { if ($p == $k) { $s = $?; last } } "
    'open(S, ">&=", 3) and syswrite(S, "w$s\\n"); '
    "exit($s & 127 ? 128 + ($s & 127) : $s >> 8)"
)


def limits_shell(lim: Limits, cpu_s: int | None, uid: int | None, *, status: bool) -> list[str]:
    """The sandbox's pid 1: a shell that sets the rlimits, drops to `uid`, and runs the
    command as its child.

    The shell keeps the uid it was started with (root, when the host is root) and stays
    pid 1 of the pid namespace: bwrap's parent-death signal reaches it (a process that
    changed uid would have lost it, and a signal from the dropped bwrap to another uid is
    refused), so a killed bwrap or host takes the namespace, and every process of the
    candidate's with it, setsid'd or not. As pid 1 it also reaps orphans at once, and
    ignores the signals a candidate could send it (it has no handlers, and another uid
    cannot signal it anyway). The command, its child, gets SIGXCPU / SIGXFSZ as usual;
    the shell reports its death by signal as 128+N.

    `status`: first write the started byte on the status pipe that `run_capped` gives as
    stdin, then give the command /dev/null (a server keeps its stdin: the job pipe). Where
    perl is installed (Debian's perl-base is essential) the shell then becomes it (`PID1`):
    it keeps the pipe, which the command never gets, and writes the command's real wait
    status on it ("w<status>"): a shell's 137 is both `exit 137` and a SIGKILL.
    """
    real = status and PERL is not None
    script = ["printf s >&0", "exec 3>&0 0</dev/null" if real else "exec 0</dev/null"]
    limits, run = _limits(lim, cpu_s, uid, address_space=status)
    script = [*(script if status else []), *limits]
    if real:
        run = f"exec {PERL} -e '{PID1}' -- {run}"
    return ["/bin/sh", "-c", "; ".join([*script, run]), "sh"]


def _limits(
    lim: Limits, cpu_s: int | None, uid: int | None, *, address_space: bool
) -> tuple[list[str], str]:
    """The shell lines that set a run's rlimits, and the command line that drops to `uid`
    and runs "$@": the one piece a tool run (`limits_shell`), a session's job
    (`SandboxSession`) and a warm server share. `address_space`: a tool run; a server
    sets its children's itself."""
    script = []
    if cpu_s is not None:
        script += [f"ulimit -S -t {cpu_s}", f"ulimit -H -t {cpu_s + 1}"]  # SIGXCPU first
    if address_space:
        script.append(f"ulimit -v {lim.memory_mb * 1024}")  # KiB
    script += [f"ulimit -f {lim.fsize_mb * 2048}", "ulimit -c 0"]  # 512-byte blocks in dash
    run = '"$@"'
    if uid is not None:  # RLIMIT_NPROC counts per uid: only meaningful for a uid of our own
        script.append(f"ulimit -p {lim.nproc}")
        drop = f"setpriv --reuid={uid} --regid={uid} --clear-groups --no-new-privs"
        run = f'{drop} --inh-caps=-all --bounding-set=-all "$@"'
    return script, run


def confined_argv(c: Confinement, lim: Limits, root: bool) -> list[str]:
    """The bwrap argv for `c`, up to the command (`limits_shell` comes next).

    As root (`root`), bwrap sets up the mounts itself without a user namespace (so it can
    reach a Python under /root, mode 700) and the limits shell drops to the sandbox uid
    with no capability left, so RLIMIT_NPROC applies. As another user, bwrap is
    unprivileged and everything runs as that user.
    """
    if lim.unconfined:
        return []
    # by its path: the system's (SANDBOX_PATH, the fixed PATH the sandbox starts with),
    # else the one on the caller's PATH (a bwrap unpacked under /opt or a user's prefix)
    bwrap = shutil.which("bwrap", path=SANDBOX_PATH) or shutil.which("bwrap") or "bwrap"
    if root:
        cmd = [bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
        cmd.append("--unshare-cgroup-try")
    else:
        cmd = [bwrap, "--unshare-all"]
    # the limits shell is pid 1: no bwrap init, which is left a zombie for the host's
    # init to reap after every run (where that is slow, or absent in a container, they
    # pile up)
    cmd += ["--die-with-parent", "--clearenv", "--as-pid-1"]
    if c.new_session:
        cmd.append("--new-session")
    for src in _RO_SYSTEM:
        if os.path.exists(src):
            # a parent bwrap would make itself (/etc) is mode 0700: the sandbox uid could not
            # reach what is bound under it (/etc/alternatives, the arm toolchain's headers)
            for parent in reversed(Path(src).parents[:-1]):
                cmd += ["--perms", "0755", "--dir", str(parent)]
            cmd += ["--ro-bind", src, src]
    for target, link in _SYMLINKS:
        if os.path.exists("/" + target):
            cmd += ["--symlink", target, link]
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    cmd += ["--perms", "1777", "--size", str(tmp_mb(lim) * 2**20), "--tmpfs", "/tmp"]
    made: set[str] = set()
    for path, kind in [*((p, "--ro-bind") for p in c.ro), *((p, "--bind") for p in c.rw)]:
        if not os.path.isdir(path) or path.startswith("/usr"):
            continue
        for parent in reversed(Path(path).parents):
            p = str(parent)
            if p != "/" and p not in made:
                made.add(p)
                cmd += ["--perms", "0755", "--dir", p]
        cmd += [kind, path, path]
    for src, dst in c.ro_files:
        cmd += ["--ro-bind", src, dst]
    if c.gpu:
        for node in _gpu_device_nodes():
            cmd += ["--dev-bind", node, node]
        for extra in ("/opt", "/usr/local/nvidia", "/sys"):
            if os.path.exists(extra) and extra not in made:
                cmd += ["--ro-bind", extra, extra]
    cmd += ["--bind", str(c.work), c.guest_work, "--chdir", c.guest_work]
    env = {"PATH": SANDBOX_PATH, "HOME": c.guest_work, "LANG": "C.UTF-8", "TMPDIR": "/tmp"}
    # the sandbox uid has no passwd entry: tools that ask who they are (getpass, nvcc,
    # torch's caches) read these instead of failing
    env.update(USER="crucible", LOGNAME="crucible")
    env.update(c.env)
    for k, v in env.items():
        cmd += ["--setenv", k, v]
    return cmd


def host_env(c: Confinement, lim: Limits) -> dict[str, str]:
    """The environment the host starts the sandbox with (bwrap clears it inside)."""
    if lim.unconfined:
        return {"PATH": SANDBOX_PATH, "LANG": "C.UTF-8", "HOME": str(c.work), **c.env}
    return {"PATH": SANDBOX_PATH}


@dataclass(frozen=True)
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    output_capped: bool = False  # a stream exceeded Limits.output_bytes; the run was stopped
    signal: int | None = None  # the signal that ended the command, if one did
    started: bool = True  # the sandbox's shell said it started the command
    stop: Stop | None = None  # what the host measured of it (the machine-or-candidate rule)

    @property
    def sandbox_fault(self) -> str | None:
        """Why the sandbox, not the tool, failed the run (None once the tool started,
        and None for a run the wall clock stopped first: `limit_hit` says `machine_slow`)."""
        if self.started or self.timed_out:
            return None
        first = next((ln for ln in self.stderr.splitlines() if ln.strip()), "")
        return (first or f"the sandbox did not start (exit {self.returncode})")[:200]

    @property
    def limit_hit(self) -> str | None:
        """Which limit ended the run: taxonomy code or None. `machine_slow` and
        `killed_externally` (MACHINE_CODES) are the machine's, not the candidate's."""
        if self.timed_out:
            if not self.started:  # nothing of the candidate's had run yet
                return "machine_slow"
            return self.stop.code() if self.stop else "timeout"
        if self.output_capped:
            return "output_limit"
        if self.signal == signal.SIGXCPU:
            return "cpu_limit"
        if self.signal == signal.SIGXFSZ:
            return "file_size_limit"
        if self.stop and (code := self.stop.code()):
            return code  # a SIGKILL: RLIMIT_CPU's hard limit, or from outside
        if self.returncode != 0 and _looks_oom(self.stderr):
            return "memory_limit"
        return None

    def machine_fault(self, what: str) -> MachineFault | None:
        """A MachineFault when the machine, not the tool, ended this run."""
        hit = self.limit_hit
        if hit not in MACHINE_CODES:
            return None
        measured = self.stop.describe() if self.stop else f"wall {self.seconds:.2f}s"
        if self.timed_out and not self.started:
            why = "the wall clock ran out before the sandbox started it"
            return MachineFault(hit, f"{what}: {why}: the machine was slow ({measured})")
        return self.stop.fault(what) if self.stop else MachineFault(hit, f"{what}: {measured}")


def _looks_oom(stderr: str) -> bool:
    tail = stderr[-2000:].lower()
    return any(s in tail for s in ("out of memory", "bad_alloc", "cannot allocate memory"))


class Sandbox:
    """Runs argv inside the sandbox with the given limits. Reusable and thread-safe."""

    def __init__(self, limits: Limits, slot: int = 0):
        self.limits = limits
        self._drop_uid = os.geteuid() == 0
        self.uid = sandbox_uid(slot=slot) if self._drop_uid else os.geteuid()
        if not limits.unconfined:
            _probe(self._drop_uid)

    @property
    def drop_uid(self) -> int | None:
        """The uid the sandbox drops to (None when it runs as the caller)."""
        return self.uid if self._drop_uid else None

    def prepare_workdir(self, path: Path) -> Path:
        """Make `path`, a dir the host just made, the sandbox's private writable dir."""
        path.mkdir(parents=True, exist_ok=True)
        if self._drop_uid:
            # by descriptor, refusing a link: never chown what a candidate put in its place
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            try:
                os.fchown(fd, self.uid, self.uid)
            finally:
                os.close(fd)
        return path

    def run(
        self,
        argv: Sequence[str],
        workdir: Path,
        *,
        timeout_s: float | None = None,
        cpu_s: int | None = None,
        ro_binds: Sequence[tuple[str, str]] = (),
        ro_dirs: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        guest_work: str = "/work",
        self_signal: bool = False,
        seccomp: bytes | None = None,
    ) -> RunResult:
        """Run argv confined; `timeout_s` / `cpu_s` override the Limits for this run.
        `ro_binds`: (host, guest) pairs; `ro_dirs`: host dirs seen at their own path (pick
        a `guest_work` that is not above one of them: the work dir's bind would hide it).
        `self_signal`: argv runs the candidate's code as a process (not a tool reading its
        text), which may SIGKILL itself: `Stop.self_signal`. `seccomp`: a BPF program
        (`verifiers.seccomp`) bwrap loads for the whole command tree; refused unconfined."""
        lim = self.limits
        timeout = lim.timeout_s if timeout_s is None else timeout_s
        c = Confinement(
            workdir, guest_work, ro=tuple(ro_dirs), ro_files=tuple(ro_binds), env=dict(env or {})
        )
        budget = cpu_s or lim.cpu_s
        shell = limits_shell(lim, budget, self.drop_uid, status=True)
        confined = confined_argv(c, lim, self._drop_uid)
        fds: tuple[int, ...] = ()
        if seccomp is not None:
            if lim.unconfined:
                raise SandboxUnavailable(
                    "this run needs its seccomp filter, which only the sandbox (bwrap) loads: "
                    "run it confined"
                )
            fd = os.memfd_create("crucible-seccomp")
            os.write(fd, seccomp)
            os.lseek(fd, 0, os.SEEK_SET)
            fds = (fd,)
            confined[1:1] = ["--seccomp", str(fd)]
        try:
            return run_capped(
                [*confined, *shell, *argv],
                cwd=workdir,
                env=host_env(c, lim),
                timeout_s=timeout,
                cap=lim.output_bytes,
                cpu_budget_s=budget,
                self_signal=self_signal,
                pass_fds=fds,
            )
        finally:
            for fd in fds:
                os.close(fd)

    def session(
        self,
        workdir: Path,
        *,
        ro_dirs: Sequence[str] = (),
        ro_binds: Sequence[tuple[str, str]] = (),
        env: Mapping[str, str] | None = None,
        guest_work: str = "/work",
    ) -> SandboxSession:
        """One sandbox for a series of runs in `workdir` (one candidate's), a context
        manager: its `run` is this `run`, without a bwrap started per run."""
        return SandboxSession(
            self, workdir, ro_dirs=ro_dirs, ro_binds=ro_binds, env=env, guest_work=guest_work
        )


_probed: dict[bool, str | None] = {}
_probe_lock = threading.Lock()  # verifiers probe from several threads at once


def _probe(drop_uid: bool) -> None:
    """Start one empty sandbox; raise SandboxUnavailable with the fix if that fails."""
    with _probe_lock:
        if drop_uid not in _probed:
            _probed[drop_uid] = _probe_once(drop_uid)
    if _probed[drop_uid]:
        raise SandboxUnavailable(_probed[drop_uid])


def _probe_once(drop_uid: bool) -> str | None:
    for tool in ("bwrap", "setpriv"):
        if shutil.which(tool) is None:
            return (
                f"the sandbox needs `{tool}`, which is not installed: {INSTALL_HINT} "
                "(or opt out of the sandbox explicitly with --unconfined, unsafe)"
            )
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    probe_dir = Path(tempfile.mkdtemp(prefix=f"crucible-sandbox-probe-{os.getpid()}-", dir=tmp))
    try:
        uid = sandbox_uid() if drop_uid else None
        if uid is not None:
            os.chown(probe_dir, uid, uid)
        lim = Limits()
        c = Confinement(probe_dir)
        shell = limits_shell(lim, None, uid, status=True)
        cmd = [*confined_argv(c, lim, drop_uid), *shell, "/bin/sh", "-c", "echo ok > probe"]
        res = run_capped(cmd, cwd=probe_dir, env=host_env(c, lim), timeout_s=10, cap=65536)
        if res.returncode != 0 or not (probe_dir / "probe").exists():
            return (
                "bubblewrap could not start a sandbox "
                f"(exit {res.returncode}: {res.stderr.strip()[:300]}). Unprivileged user "
                "namespaces must be enabled (sysctl kernel.unprivileged_userns_clone=1, "
                "user.max_user_namespaces>0). To run candidates without a sandbox (unsafe), "
                "opt out explicitly with --unconfined."
            )
        return None
    finally:
        shutil.rmtree(probe_dir, ignore_errors=True)


def run_capped(
    cmd: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    cap: int,
    cpu_budget_s: float | None = None,
    self_signal: bool = False,
    pass_fds: Sequence[int] = (),
) -> RunResult:
    """Run `cmd` (a `limits_shell` command) with its output capped and its time bounded.
    `pass_fds`: descriptors the sandbox itself reads (bwrap's `--seccomp FD`).
    A wall-clock kill is measured first (`tree_snapshot`), the end by `wait4`'s rusage
    (the whole tree, every process reaped by its parent): `RunResult.stop`."""
    oom0 = oom_kills()
    start = time.perf_counter()
    status_r, status_w = os.pipe()
    try:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=dict(env),
            stdin=status_w,  # the sandbox's shell writes its started byte here
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, killed whole on timeout
            pass_fds=tuple(pass_fds),
        )
    finally:
        os.close(status_w)
    born = time.perf_counter()  # the tree's wall clock starts here
    bufs = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    sel = selectors.DefaultSelector()
    for stream in bufs:
        os.set_blocking(stream.fileno(), False)
        sel.register(stream, selectors.EVENT_READ)
    # the status pipe is read as it comes: its started byte says when the sandbox was up
    # and the command began (only the sandbox's shell holds it; the command never does)
    said = bytearray()
    began: float | None = None
    os.set_blocking(status_r, False)
    sel.register(status_r, selectors.EVENT_READ)
    deadline = start + timeout_s
    timed_out = capped = False
    at_kill: tuple[float, TreeSnapshot] | None = None
    # every SAMPLE_S the tree's CPU waits are read: a run that ends on its own (a tool's
    # own timer) is then measured too, up to the last sample
    waits: dict[int, float] = {}
    sample_at = born + SAMPLE_S
    open_streams = 2
    while open_streams:
        now = time.perf_counter()
        remaining = deadline - now
        if remaining <= 0:
            timed_out = True
            at_kill = (now - born, _sampled(proc.pid, waits))
            break
        if now >= sample_at:
            _sampled(proc.pid, waits)
            sample_at = now + SAMPLE_S
        for key, _ in sel.select(min(remaining, 1.0, max(0.0, sample_at - now))):
            if key.fileobj == status_r:
                chunk = _read_some(status_r)
                if chunk and began is None:
                    began = time.perf_counter()
                said += chunk[: max(0, 64 - len(said))]
                if not chunk:
                    sel.unregister(status_r)
                continue
            chunk = os.read(key.fileobj.fileno(), 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                open_streams -= 1
                continue
            buf = bufs[key.fileobj]
            buf += chunk[: max(0, cap - len(buf))]
            if len(chunk) and len(buf) >= cap:
                capped = True
        if capped:
            break
    if timed_out or capped:
        _kill_group(proc)
    try:
        cpu = _wait4(proc, max(0.1, deadline - time.perf_counter()))
    except subprocess.TimeoutExpired:  # closed its pipes but kept running
        timed_out = True
        at_kill = (time.perf_counter() - born, _sampled(proc.pid, waits))
        _kill_group(proc)
        cpu = _wait4(proc, None)
    sel.close()
    for stream in bufs:
        stream.close()
    try:
        said += _read_some(status_r)[: max(0, 64 - len(said))]
    finally:
        os.close(status_r)
    said = bytes(said)
    started = said[:1] == b"s"
    seconds = time.perf_counter() - start
    rc = proc.returncode
    # `signal` reads the exit code as a shell does (128+N: a tool's own child killed by
    # SIGXFSZ counts); what the machine did is judged only from a signal known to be real:
    # the wait status pid 1 saw, or bwrap's own death
    sig = -rc if rc < 0 else (rc - 128 if rc > 128 else None)
    real = re.fullmatch(rb"sw(\d+)\n", said)
    if real:
        status = int(real[1])
        known = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    else:  # no pid 1 report (no perl, or the sandbox died)
        known = sig if rc < 0 else None
    oom1 = oom_kills()
    oom = oom1 - oom0 if oom0 is not None and oom1 is not None else None
    wait = sum(waits.values()) if SCHEDSTAT and (waits or at_kill) else None
    rivals = contenders(waits.values())
    if at_kill is not None:
        wall, snap = at_kill
        use = Usage(snap.cpu_s, wait, rivals)
        # stopped before its shell started it: the whole wall went to setting the sandbox up
        setup = wall if began is None else min(wall, max(0.0, began - born))
        stop = Stop(wall, True, use, cpu_budget_s, oom_kills=oom, setup_s=setup)
    else:
        use = Usage(cpu, wait, rivals)
        stop = Stop(seconds, False, use, cpu_budget_s, known, oom, self_signal)
    return RunResult(
        returncode=rc,
        stdout=bufs_text(bufs[proc.stdout]),
        stderr=bufs_text(bufs[proc.stderr]),
        seconds=seconds,
        timed_out=timed_out,
        output_capped=capped and not timed_out,
        signal=sig,
        started=started,
        stop=stop,
    )


def _sampled(root: int, waits: dict[int, float]) -> TreeSnapshot:
    """A snapshot of `root`'s tree; its threads' CPU waits merged into `waits` (threads
    that ended keep the last value seen)."""
    snap = tree_snapshot(root)
    waits.update(snap.waits)
    return snap


def _wait4(proc: subprocess.Popen, timeout_s: float | None) -> float:
    """Reap `proc` (as Popen.wait would) and return the CPU seconds of its whole tree."""
    end = None if timeout_s is None else time.monotonic() + timeout_s
    pause = 0.0005
    while True:
        pid, status, ru = os.wait4(proc.pid, 0 if end is None else os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return ru.ru_utime + ru.ru_stime
        if time.monotonic() >= end:
            raise subprocess.TimeoutExpired(proc.args, timeout_s)
        time.sleep(pause)
        pause = min(pause * 2, 0.02)


def _read_some(fd: int) -> bytes:
    """What a non-blocking pipe holds now (b"" at EOF or when nothing is there yet)."""
    try:
        return os.read(fd, 64)
    except BlockingIOError:
        return b""


def bufs_text(buf: bytearray) -> str:
    return buf.decode("utf-8", "replace")


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


# --- one sandbox for a candidate's runs -------------------------------------------------

# A session's pid 1 (`SandboxSession`). One job a line on stdin: the limits script and
# argv, each hex-encoded after an "x". Each job runs as its child (`/bin/sh -c script sh
# argv...`) with stdin /dev/null, neither the job nor the status pipe, and the session's
# stdout / stderr pipes reopened through /proc (open files of its own: a flag it sets on
# them, O_NONBLOCK, reaches no later job); pid 1 reaps what ends up its child meanwhile,
# as PID1 does. Once the command is dead, every other process of the namespace is killed
# (kill -1 from pid 1: all but itself) and reaped, /tmp is emptied and SysV IPC objects
# removed (as a run of its own would leave them: gone), and only then does
# "w<wait status> <CPU seconds of what it reaped>" go on the status pipe (fd ARGV[0]):
# all the job wrote is in the output pipes by then, and nothing of it runs on.
SESSION_PID1 = (
    'open(S, ">&=", $ARGV[0]) or exit 126; syswrite(S, "r\\n"); '
    "while (defined(my $job = <STDIN>)) { "
    "my ($sh, @argv) = map { pack 'H*', substr($_, 1) } split ' ', $job; "
    "my @t = times; syswrite(S, 's'); my $k = fork; "
    'if (defined $k && !$k) { close(S); open(STDIN, "<", "/dev/null"); '
    'for my $h (*STDOUT, *STDERR) { open(my $d, ">&", $h) or exit 126; '
    'open($h, ">", "/proc/self/fd/" . fileno($d)) or exit 126; close($d) } '
    'exec { "/bin/sh" } "sh", "-c", $sh, "sh", @argv; print STDERR "sh: $!\\n"; exit 127 } '
    "my $s = 126 << 8; "
    "if (defined $k) { while ((my $p = wait) > 0) { if ($p == $k) { $s = $?; last } } } "
    "while (kill('KILL', -1)) { 1 while wait() > 0 } "
    # /tmp emptied, never into a mount below it (the host's dirs bound in: see empty_dir)
    'if (opendir(my $d, "/tmp")) { my $v = (lstat "/tmp")[0]; '
    'my @e = grep { !/^[.][.]?$/ && (lstat "/tmp/$_")[0] == $v } readdir $d; closedir $d; '
    'system "/bin/rm", "-rf", "--one-file-system", "--", map { "/tmp/$_" } @e if @e } '
    'system "ipcrm", "--all" if grep { open(F, "<", "/proc/sysvipc/$_") '
    "&& (() = <F>) > 1 } qw(shm msg sem); close(F); "
    "my @u = times; my $c = $u[2] + $u[3] - $t[2] - $t[3]; "
    'syswrite(S, sprintf("w%d %.2f\\n", $s, $c > 0 ? $c : 0)) }'
)
_STATUS = re.compile(rb"sw(\d+) (\d+\.\d+)\n")
_DRAIN_CHUNKS = 64  # 4 MiB: more than a pipe holds (its writers are dead by then)


@dataclass
class _Job:
    """One session run as the host sees it."""

    start: float
    timeout_s: float
    budget_s: int
    self_signal: bool
    oom0: int | None
    sample_at: float = 0.0
    # bwrap and pid 1 when it began; None for the run that started the session: its
    # tree's CPU counts from bwrap's start, as a `run_capped` tree's does (its wall does)
    base: TreeSnapshot | None = None
    fresh: bool = False
    said: bytearray = field(default_factory=bytearray)  # the status pipe, for this job
    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)
    waits: dict[int, float] = field(default_factory=dict)  # tid -> run_delay, as sampled
    sampled: bool = False
    at_kill: tuple[float, TreeSnapshot] | None = None  # its wall clock's kill
    capped: bool = False
    at_end: TreeSnapshot | None = None  # the tree when the session was killed under it
    end_cpu: float = 0.0  # bwrap's reaped children, once it ended (all the session's CPU)
    rc: int = 0  # bwrap's exit status, once it ended

    def usage(self, cpu_s: float, snap: TreeSnapshot | None = None) -> Usage:
        """Usage of `cpu_s`, with the CPU waits since the job began (the session's own
        processes had theirs before); `snap`: the tree at a kill, its CPU less theirs."""
        before = self.base.waits if self.base else {}
        if snap is not None:
            cpu_s = max(0.0, snap.cpu_s - (self.base.cpu_s if self.base else 0.0))
            self.waits.update(snap.waits)
        deltas = [max(0.0, w - before.get(t, 0.0)) for t, w in self.waits.items()]
        known = SCHEDSTAT and (self.sampled or snap is not None)
        return Usage(cpu_s, sum(deltas) if known else None, contenders(deltas))


class SandboxSession:
    """One sandbox for one candidate's tool runs: `run` is `Sandbox.run` (the same
    RunResult, rlimits, uid drop and `Stop`) without a bwrap per run (5-12 ms each: its
    namespaces and mounts). Its pid 1 (`SESSION_PID1`) runs one job at a time and, before
    it reports one, kills whatever is left of it and empties /tmp: no process of one run
    lives into the next (the RTL harness puts its private files in the work dir only
    while a tool that does not run the design reads them), nor does a tool's temp file.
    What carries over is the work dir, as between two `Sandbox.run`s.

    Entered as a context manager, it starts its bwrap at once (set up while the caller
    prepares its first run, whose wall clock then waits for it). A run stopped by its
    wall clock or its output cap takes the session with it, as `run_capped` kills its
    bwrap; a session that died, or ended on its own, is started again by the next run;
    one that cannot start sends its runs to `Sandbox.run`, which says why.

    Without the uid drop (a host that is not root) a job would run as pid 1's own uid
    and could reach its pipes through /proc/1/fd, and unconfined or without perl there
    is no pid 1 of ours: then every run is a `Sandbox.run`.

    Runs are serialised; bwrap's parent-death signal follows the thread that started the
    session, so it belongs to one candidate on one thread."""

    def __init__(
        self,
        sandbox: Sandbox,
        workdir: Path,
        *,
        ro_dirs: Sequence[str] = (),
        ro_binds: Sequence[tuple[str, str]] = (),
        env: Mapping[str, str] | None = None,
        guest_work: str = "/work",
    ):
        self.sandbox, self.workdir = sandbox, workdir
        self._where = {
            "ro_dirs": tuple(ro_dirs),
            "ro_binds": tuple(ro_binds),
            "env": dict(env or {}),
            "guest_work": guest_work,
        }
        lim = sandbox.limits
        self.served = not lim.unconfined and PERL is not None and sandbox.drop_uid is not None
        self.starts = 0  # sessions started so far
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._pid1 = 0  # pid 1's pid on the host
        self._jobs = self._status = self._out = self._err = -1
        self._sel: selectors.BaseSelector | None = None
        self._ready = False  # pid 1 said it reads jobs

    def __enter__(self) -> SandboxSession:
        if self.served:
            with self._lock:
                self._spawn()  # bwrap sets up while the caller prepares its first run
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the session (its pid 1 takes the namespace with it)."""
        with self._lock:
            self._end(kill=False)

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float | None = None,
        cpu_s: int | None = None,
        self_signal: bool = False,
    ) -> RunResult:
        """`Sandbox.run(argv, workdir, ...)` in this session."""
        if not self.served:
            return self.sandbox.run(
                argv,
                self.workdir,
                timeout_s=timeout_s,
                cpu_s=cpu_s,
                self_signal=self_signal,
                **self._where,
            )
        if any("\0" in a for a in argv):
            raise ValueError("embedded null byte")  # as Popen says
        with self._lock:
            lim = self.sandbox.limits
            timeout = lim.timeout_s if timeout_s is None else timeout_s
            job = _Job(time.perf_counter(), timeout, cpu_s or lim.cpu_s, self_signal, oom_kills())
            job.sample_at = job.start + SAMPLE_S
            if self._proc is not None and self._proc.poll() is not None:
                self._end(kill=True)  # one that died: its pipes
            if self._proc is None and not self._spawn():
                self.served = False
            elif not self._ready:
                how = self._await_ready(job)
                if how == "failed":
                    self.served = False
                elif how == "late":
                    return self._result(job, "late")
            if self.served:
                return self._job(job, argv)
        return self.run(argv, timeout_s=timeout_s, cpu_s=cpu_s, self_signal=self_signal)

    # --- the session ------------------------------------------------------------------
    def _spawn(self) -> bool:
        """Start a fresh session's bwrap (False: it could not be started)."""
        lim, w = self.sandbox.limits, self._where
        c = Confinement(
            self.workdir, w["guest_work"], ro=w["ro_dirs"], ro_files=w["ro_binds"], env=w["env"]
        )
        jobs_r, self._jobs = os.pipe()
        self._status, status_w = os.pipe()
        self._out, out_w = os.pipe()
        self._err, err_w = os.pipe()
        cmd = [*confined_argv(c, lim, True), PERL, "-e", SESSION_PID1, "--", str(status_w)]
        try:
            self._proc = subprocess.Popen(
                cmd,
                cwd=self.workdir,
                env=host_env(c, lim),
                stdin=jobs_r,
                stdout=out_w,
                stderr=err_w,
                pass_fds=(status_w,),
                start_new_session=True,  # its own process group, killed whole
            )
        except OSError:
            self._proc = None
        finally:
            for fd in (jobs_r, status_w, out_w, err_w):
                os.close(fd)
        if self._proc is None:
            self._end(kill=True)
            return False
        self.starts += 1
        self._sel = selectors.DefaultSelector()
        for fd in (self._status, self._out, self._err):
            os.set_blocking(fd, False)
            self._sel.register(fd, selectors.EVENT_READ)
        return True

    def _await_ready(self, job: _Job) -> str:
        """pid 1's ready line, within the first job's wall clock: 'ready', 'late' or
        'failed' (bwrap or pid 1 did not start)."""
        how = self._collect(job)
        if how == "line" and job.said == b"r\n":
            self._ready, self._pid1 = True, self._child_of(self._proc.pid)
            job.said.clear()
            job.out.clear()
            job.err.clear()
            job.fresh = True
            return "ready"
        self._end(kill=True, job=job)
        return "late" if how == "late" else "failed"

    def _job(self, job: _Job, argv: Sequence[str]) -> RunResult:
        lim, proc = self.sandbox.limits, self._proc
        limits, run = _limits(lim, job.budget_s, self.sandbox.drop_uid, address_space=True)
        script = "; ".join([*limits, f"exec {run}"])
        line = b" ".join(b"x" + os.fsencode(a).hex().encode() for a in (script, *argv))
        if not job.fresh:
            job.base = tree_snapshot(proc.pid, [proc.pid, self._pid1])
        try:
            view = memoryview(line + b"\n")
            while view:
                view = view[os.write(self._jobs, view) :]
        except OSError:
            pass  # pid 1 is gone: the status pipe says so
        how = self._collect(job)
        if how == "line" and not _STATUS.fullmatch(job.said):
            how = "garbled"  # not pid 1's words: the session is not trusted further
        if how == "line":
            self._drain(job)  # all it printed is in the pipes: its writers are dead
        else:
            self._end(kill=how != "eof", job=job)
        return self._result(job, how)

    def _collect(self, job: _Job) -> str:
        """Read the status pipe up to its next line while draining the output pipes
        (capped) and sampling the tree's CPU waits: 'line', 'eof', 'late' or 'capped'."""
        cap = self.sandbox.limits.output_bytes
        bufs = {self._out: job.out, self._err: job.err}
        while True:
            now = time.perf_counter()
            remaining = job.start + job.timeout_s - now
            if remaining <= 0:
                job.at_kill = (now - job.start, tree_snapshot(self._proc.pid))
                return "late"
            if now >= job.sample_at:
                job.waits.update(tree_snapshot(self._proc.pid).waits)
                job.sampled = True
                job.sample_at = now + SAMPLE_S
            wait = min(remaining, 1.0, max(0.0, job.sample_at - now))
            for key, _ in self._sel.select(wait):
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if key.fd == self._status:
                    if not chunk:
                        return "eof"
                    job.said += chunk
                    if b"\n" in job.said:
                        return "line"
                    continue
                if not chunk:  # the output pipes close only with the session
                    self._sel.unregister(key.fd)
                    continue
                buf = bufs[key.fd]
                buf += chunk[: max(0, cap - len(buf))]
                if len(buf) >= cap:
                    job.capped = True
                    return "capped"

    def _drain(self, job: _Job) -> None:
        """What the output pipes hold now, into the job's output (capped: the rest is
        read and dropped, never left for the next job)."""
        cap = self.sandbox.limits.output_bytes
        for fd, buf in ((self._out, job.out), (self._err, job.err)):
            for _ in range(_DRAIN_CHUNKS):
                try:
                    chunk = os.read(fd, 65536)
                except (BlockingIOError, OSError):
                    break
                if not chunk:
                    break
                buf += chunk[: max(0, cap - len(buf))]
                job.capped = job.capped or len(buf) >= cap

    def _result(self, job: _Job, how: str) -> RunResult:
        """The RunResult `run_capped` gives for the same end (`how`, from `_collect`)."""
        seconds = time.perf_counter() - job.start
        oom1 = oom_kills()
        oom = oom1 - job.oom0 if job.oom0 is not None and oom1 is not None else None
        stop, timed_out = None, how == "late"
        if m := _STATUS.fullmatch(job.said):
            status = int(m[1])
            sig_n = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            rc = 128 + sig_n if sig_n else os.WEXITSTATUS(status)  # as pid 1 would exit
            use = job.usage(float(m[2]))
            stop = Stop(seconds, False, use, job.budget_s, sig_n, oom, job.self_signal)
        else:
            rc = job.rc
            if job.at_kill is not None:  # its wall clock
                wall, snap = job.at_kill
                stop = Stop(wall, True, job.usage(0.0, snap), job.budget_s, oom_kills=oom)
                timed_out = True
            else:  # its output cap, or the session died under it
                known = -rc if rc < 0 else None
                if job.at_end is not None:
                    use = job.usage(0.0, job.at_end)
                else:
                    use = job.usage(max(0.0, job.end_cpu - (job.base.cpu_s if job.base else 0)))
                stop = Stop(seconds, False, use, job.budget_s, known, oom, job.self_signal)
        sig = -rc if rc < 0 else (rc - 128 if rc > 128 else None)
        return RunResult(
            returncode=rc,
            stdout=bufs_text(job.out),
            stderr=bufs_text(job.err),
            seconds=seconds,
            timed_out=timed_out,
            output_capped=job.capped and not timed_out,
            signal=sig,
            started=job.said[:1] == b"s",
            stop=stop,
        )

    def _end(self, *, kill: bool, job: _Job | None = None) -> None:
        """Stop the session: killed (its bwrap's process group, as `run_capped` does; pid
        1's parent-death signal takes the namespace), or ended (no more jobs: pid 1
        exits). Then bwrap is reaped, and after a kill pid 1 is waited for: the
        namespace's last process. `job`: the run it ended under (its exit, its output)."""
        proc, pid1 = self._proc, self._pid1
        self._proc, self._pid1, self._ready = None, 0, False
        if proc is not None:
            if kill and job is not None and job.at_kill is None:
                job.at_end = tree_snapshot(proc.pid)
            if not kill:
                with contextlib.suppress(OSError):
                    os.close(self._jobs)
                self._jobs = -1
                kill = not self._status_closed(2.0)  # bwrap and pid 1 gone with it
            if kill and proc.returncode is None:  # a reaped one's pid may be another's now
                _kill_group(proc)
            cpu = 0.0
            if proc.returncode is None:
                try:
                    cpu = _wait4(proc, None if kill else 2.0)
                except subprocess.TimeoutExpired:
                    kill = True
                    _kill_group(proc)
                    cpu = _wait4(proc, None)
            if kill and pid1:
                _wait_gone(pid1)
            if job is not None:
                job.rc, job.end_cpu = proc.returncode, cpu
                if not kill:
                    self._drain(job)  # it died on its own: what it printed first
        if self._sel is not None:
            self._sel.close()
            self._sel = None
        for fd in (self._jobs, self._status, self._out, self._err):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._jobs = self._status = self._out = self._err = -1

    def _status_closed(self, limit_s: float) -> bool:
        """Until the status pipe's end-of-file (its writers, pid 1 and bwrap, exited)."""
        end = time.monotonic() + limit_s
        while (left := end - time.monotonic()) > 0:
            if select.select([self._status], [], [], left)[0]:
                try:
                    if not os.read(self._status, 65536):
                        return True
                except BlockingIOError:
                    continue
        return False

    @staticmethod
    def _child_of(pid: int) -> int:
        """bwrap's one child, the session's pid 1."""
        try:
            with open(f"/proc/{pid}/task/{pid}/children", "rb") as f:
                kids = f.read().split()
        except OSError:  # no CONFIG_PROC_CHILDREN
            kids = [str(p).encode() for p in _descendants(pid)[1:2]]
        return int(kids[0]) if kids else 0


def _wait_gone(pid: int, limit_s: float = 2.0) -> None:
    """Until `pid` has exited (gone, or a zombie), at most `limit_s`."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        st = _stat(pid)
        if st is None or st[0] == b"Z":
            return
        time.sleep(0.001)
