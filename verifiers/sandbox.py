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
byte below (a server says it started on its own result pipe).

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
import glob
import os
import re
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from verifiers.contract import Limits

# Candidates run as an unprivileged uid of their own: RLIMIT_NPROC counts processes per
# uid, so one shared uid (e.g. nobody) would let concurrent sandboxes exhaust each other's
# process limit, and a fork bomb in one would fail the others. A process gets
# UID_SLOTS uids: slot 0 for its tool runs, one per warm worker after that.
SANDBOX_UID_BASE = 200_000
SANDBOX_UID_SPAN = 1 << 20
UID_SLOTS = 64


def sandbox_uid(pid: int | None = None, slot: int = 0) -> int:
    """The uid a sandbox of this process runs as (stable for the process's life)."""
    pid = os.getpid() if pid is None else pid
    return SANDBOX_UID_BASE + (pid % (SANDBOX_UID_SPAN // UID_SLOTS)) * UID_SLOTS + slot


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
MACHINE_CODES = ("machine_slow", "killed_externally", "gpu_memory", "tool_missing")  # infra
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


def _descendants(root: int) -> list[int]:
    """`root` and every process below it (one pass over /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(entry)) is not None:
            children.setdefault(int(st[1]), []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, ()))
    return tree


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
            if cpu + wait < BUSY_SHARE * self.wall_s:
                return "timeout"  # it slept or blocked
            if self.wall_s >= self.budget_s:
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
    script = script if status else []
    if cpu_s is not None:
        script += [f"ulimit -S -t {cpu_s}", f"ulimit -H -t {cpu_s + 1}"]  # SIGXCPU first
    if status:  # a tool run; servers set their children's address space themselves
        script.append(f"ulimit -v {lim.memory_mb * 1024}")  # KiB
    script += [f"ulimit -f {lim.fsize_mb * 2048}", "ulimit -c 0"]  # 512-byte blocks in dash
    run = '"$@"'
    if uid is not None:  # RLIMIT_NPROC counts per uid: only meaningful for a uid of our own
        script.append(f"ulimit -p {lim.nproc}")
        drop = f"setpriv --reuid={uid} --regid={uid} --clear-groups --no-new-privs"
        run = f'{drop} --inh-caps=-all --bounding-set=-all "$@"'
    if real:
        run = f"exec {PERL} -e '{PID1}' -- {run}"
    return ["/bin/sh", "-c", "; ".join([*script, run]), "sh"]


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
    ) -> RunResult:
        """Run argv confined; `timeout_s` / `cpu_s` override the Limits for this run.
        `ro_binds`: (host, guest) pairs; `ro_dirs`: host dirs seen at their own path (pick
        a `guest_work` that is not above one of them: the work dir's bind would hide it).
        `self_signal`: argv runs the candidate's code as a process (not a tool reading its
        text), which may SIGKILL itself: `Stop.self_signal`."""
        lim = self.limits
        timeout = lim.timeout_s if timeout_s is None else timeout_s
        c = Confinement(
            workdir, guest_work, ro=tuple(ro_dirs), ro_files=tuple(ro_binds), env=dict(env or {})
        )
        budget = cpu_s or lim.cpu_s
        shell = limits_shell(lim, budget, self.drop_uid, status=True)
        return run_capped(
            [*confined_argv(c, lim, self._drop_uid), *shell, *argv],
            cwd=workdir,
            env=host_env(c, lim),
            timeout_s=timeout,
            cap=lim.output_bytes,
            cpu_budget_s=budget,
            self_signal=self_signal,
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
) -> RunResult:
    """Run `cmd` (a `limits_shell` command) with its output capped and its time bounded.
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
        )
    finally:
        os.close(status_w)
    born = time.perf_counter()  # the tree's wall clock starts here
    bufs = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    sel = selectors.DefaultSelector()
    for stream in bufs:
        os.set_blocking(stream.fileno(), False)
        sel.register(stream, selectors.EVENT_READ)
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
    os.set_blocking(status_r, False)
    try:
        said = os.read(status_r, 64)
    except BlockingIOError:
        said = b""
    finally:
        os.close(status_r)
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
        stop = Stop(wall, True, use, cpu_budget_s, oom_kills=oom)
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


def bufs_text(buf: bytearray) -> str:
    return buf.decode("utf-8", "replace")


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
