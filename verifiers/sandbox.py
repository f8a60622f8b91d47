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
"""

from __future__ import annotations

import contextlib
import glob
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
    stdin, then give the command /dev/null (a server keeps its stdin: the job pipe).
    """
    script = ["printf s >&0", "exec 0</dev/null"] if status else []
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
    if root:
        cmd = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
        cmd.append("--unshare-cgroup-try")
    else:
        cmd = ["bwrap", "--unshare-all"]
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

    @property
    def sandbox_fault(self) -> str | None:
        """Why the sandbox, not the tool, failed the run (None once the tool started)."""
        if self.started:
            return None
        first = next((ln for ln in self.stderr.splitlines() if ln.strip()), "")
        return (first or f"the sandbox did not start (exit {self.returncode})")[:200]

    @property
    def limit_hit(self) -> str | None:
        """Which limit ended the run: taxonomy code or None."""
        if self.timed_out:
            return "timeout"
        if self.output_capped:
            return "output_limit"
        if self.signal == signal.SIGXCPU:
            return "cpu_limit"
        if self.signal == signal.SIGXFSZ:
            return "file_size_limit"
        if self.returncode != 0 and _looks_oom(self.stderr):
            return "memory_limit"
        return None


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
    ) -> RunResult:
        """Run argv confined; `timeout_s` / `cpu_s` override the Limits for this run.
        `ro_binds`: (host, guest) pairs; `ro_dirs`: host dirs seen at their own path (pick
        a `guest_work` that is not above one of them: the work dir's bind would hide it)."""
        lim = self.limits
        timeout = lim.timeout_s if timeout_s is None else timeout_s
        c = Confinement(
            workdir, guest_work, ro=tuple(ro_dirs), ro_files=tuple(ro_binds), env=dict(env or {})
        )
        shell = limits_shell(lim, cpu_s or lim.cpu_s, self.drop_uid, status=True)
        return run_capped(
            [*confined_argv(c, lim, self._drop_uid), *shell, *argv],
            cwd=workdir,
            env=host_env(c, lim),
            timeout_s=timeout,
            cap=lim.output_bytes,
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
) -> RunResult:
    """Run `cmd` (a `limits_shell` command) with its output capped and its time bounded."""
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
    bufs = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    sel = selectors.DefaultSelector()
    for stream in bufs:
        os.set_blocking(stream.fileno(), False)
        sel.register(stream, selectors.EVENT_READ)
    deadline = start + timeout_s
    timed_out = capped = False
    open_streams = 2
    while open_streams:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            timed_out = True
            break
        for key, _ in sel.select(min(remaining, 1.0)):
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
        proc.wait(timeout=max(0.1, deadline - time.perf_counter()))
    except subprocess.TimeoutExpired:  # closed its pipes but kept running
        timed_out = True
        _kill_group(proc)
        proc.wait()
    sel.close()
    for stream in bufs:
        stream.close()
    os.set_blocking(status_r, False)
    try:
        started = os.read(status_r, 1) == b"s"
    except BlockingIOError:
        started = False
    finally:
        os.close(status_r)
    seconds = time.perf_counter() - start
    rc = proc.returncode
    sig = -rc if rc < 0 else (rc - 128 if rc > 128 else None)
    return RunResult(
        returncode=rc,
        stdout=bufs_text(bufs[proc.stdout]),
        stderr=bufs_text(bufs[proc.stderr]),
        seconds=seconds,
        timed_out=timed_out,
        output_capped=capped and not timed_out,
        signal=sig,
        started=started,
    )


def bufs_text(buf: bytearray) -> str:
    return buf.decode("utf-8", "replace")


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
