"""The sandbox every candidate-touching tool run goes through.

bubblewrap with every namespace unshared (no network), the system read-only, a private
writable work dir bound at /work, a tmpfs /tmp, an unprivileged uid (rlimits on processes
are ignored for root), rlimits on memory / CPU / processes / file size (set by the
sandbox's pid-1 shell, not by a `preexec_fn`, which is unsafe in threaded callers such as
Ray workers), a wall-clock
timeout that kills the whole process group (the pid namespace takes every descendant with
it), and stdout/stderr read while running and capped: a flood is stopped, not buffered.

If the sandbox cannot be set up the caller gets `SandboxUnavailable`, never an unconfined
run; running unconfined takes an explicit `Limits(unconfined=True)`.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from verifiers.contract import Limits

# Candidates run as an unprivileged uid of their own per worker process: RLIMIT_NPROC
# counts processes per uid, so one shared uid (e.g. nobody) would let concurrent workers
# exhaust each other's process limit, and a fork bomb in one would fail the others.
SANDBOX_UID_BASE = 200_000
SANDBOX_UID_SPAN = 60_000


def sandbox_uid(pid: int | None = None) -> int:
    """The uid this process's sandboxes run as (stable for the process's life)."""
    return SANDBOX_UID_BASE + (os.getpid() if pid is None else pid) % SANDBOX_UID_SPAN


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


def system_binds() -> list[str]:
    """bwrap arguments for the read-only system dirs and the /bin, /lib ... symlinks."""
    args: list[str] = []
    for src in _RO_SYSTEM:
        if os.path.exists(src):
            args += ["--ro-bind", src, src]
    for target, link in _SYMLINKS:
        if os.path.exists("/" + target):
            args += ["--symlink", target, link]
    return args


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be set up on this machine; the message says how to fix it."""


@dataclass(frozen=True)
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    output_capped: bool = False  # a stream exceeded Limits.output_bytes; the run was stopped
    signal: int | None = None  # the signal that ended the command, if one did

    @property
    def sandbox_fault(self) -> str | None:
        """The sandbox's own error line when it, not the tool, failed the run."""
        if self.returncode == 0:
            return None
        m = _SANDBOX_FAULT.search(self.stderr[-4000:])
        return self.stderr[m.start() :].splitlines()[0][:200] if m else None

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


# Failures of the sandbox itself, not of the tool or the candidate: bwrap's own messages,
# and fork refused when the sandbox uid's process limit is taken.
_SANDBOX_FAULT = re.compile(
    r"^bwrap: |Can't fork|Cannot fork|fork: retry|Resource temporarily unavailable", re.M
)


def _looks_oom(stderr: str) -> bool:
    tail = stderr[-2000:].lower()
    return any(s in tail for s in ("out of memory", "bad_alloc", "cannot allocate memory"))


class Sandbox:
    """Runs argv inside the sandbox with the given limits. Reusable and thread-safe."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self._drop_uid = os.geteuid() == 0
        self.uid = sandbox_uid() if self._drop_uid else os.geteuid()
        if not limits.unconfined:
            _probe(self._drop_uid)

    def prepare_workdir(self, path: Path) -> Path:
        """Make `path` the sandbox's private writable dir (owned by the sandbox uid)."""
        path.mkdir(parents=True, exist_ok=True)
        if self._drop_uid:
            os.chown(path, self.uid, self.uid)
        return path

    def run(
        self,
        argv: Sequence[str],
        workdir: Path,
        *,
        timeout_s: float | None = None,
        cpu_s: int | None = None,
        ro_binds: Sequence[tuple[str, str]] = (),
        env: Mapping[str, str] | None = None,
    ) -> RunResult:
        """Run argv confined; `timeout_s` / `cpu_s` override the Limits for this run."""
        lim = self.limits
        timeout = lim.timeout_s if timeout_s is None else timeout_s
        confine = [] if lim.unconfined else self._bwrap(workdir, ro_binds, env)
        cmd = [*confine, *self._limits_shell(cpu_s or lim.cpu_s), *argv]
        run_env = {"PATH": SANDBOX_PATH, "LANG": "C.UTF-8", "HOME": str(workdir)}
        if lim.unconfined and env:
            run_env.update(env)
        return _run_capped(
            cmd,
            cwd=workdir,
            env=run_env,
            timeout_s=timeout,
            cap=lim.output_bytes,
            uid=self.uid if self._drop_uid else None,
        )

    def _limits_shell(self, cpu_s: int) -> list[str]:
        """A shell that sets the rlimits and runs the command as its child.

        It is the sandbox's pid 1: pid 1 ignores signals it has no handler for, so a tool
        run as pid 1 would shrug off SIGXCPU / SIGXFSZ; its child does not, and the shell
        reports the child's death by signal as 128+N. Setting the limits here rather than
        with `prlimit` outside saves an exec per run (~1 ms of a ~5 ms sandbox start).
        """
        lim = self.limits
        script = [
            f"ulimit -S -t {cpu_s}",  # the soft limit sends SIGXCPU first
            f"ulimit -H -t {cpu_s + 1}",
            f"ulimit -v {lim.memory_mb * 1024}",  # KiB
            f"ulimit -f {lim.fsize_mb * 2048}",  # 512-byte blocks in dash
            "ulimit -c 0",
        ]
        if self._drop_uid:  # RLIMIT_NPROC counts per uid: only meaningful for our own uid
            script.append(f"ulimit -p {lim.nproc}")
        return ["/bin/sh", "-c", "; ".join(script) + '; "$@"', "sh"]

    @staticmethod
    def _bwrap(
        workdir: Path, ro_binds: Sequence[tuple[str, str]], env: Mapping[str, str] | None
    ) -> list[str]:
        cmd = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]
        # No bwrap reaper as pid 1: with it, every run leaves a zombie [bwrap] for the host's
        # init to reap, and where that is slow (or absent, as in a container without an
        # init) they pile up against the sandbox uid's process limit until bwrap can no
        # longer fork. The command as pid 1 takes every process of the sandbox with it.
        cmd.append("--as-pid-1")
        cmd += system_binds()
        cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        for src, dst in ro_binds:
            cmd += ["--ro-bind", src, dst]
        cmd += ["--bind", str(workdir), "/work", "--chdir", "/work"]
        merged = {"PATH": SANDBOX_PATH, "HOME": "/work", "LANG": "C.UTF-8", "TMPDIR": "/tmp"}
        merged.update(env or {})
        for k, v in merged.items():
            cmd += ["--setenv", k, v]
        return cmd


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
        if drop_uid:
            os.chown(probe_dir, sandbox_uid(), sandbox_uid())
        cmd = [*Sandbox._bwrap(probe_dir, (), None), "/bin/sh", "-c", "echo ok > probe"]
        res = _run_capped(
            cmd,
            cwd=probe_dir,
            env={"PATH": SANDBOX_PATH},
            timeout_s=10,
            cap=65536,
            uid=sandbox_uid() if drop_uid else None,
        )
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


def _run_capped(
    cmd: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    cap: int,
    uid: int | None,
) -> RunResult:
    if uid is not None:
        # setpriv rather than Popen(user=...): changing uid in the child makes CPython fork
        # instead of vfork, ~4 ms per run from a large worker process; the exec is ~2 ms.
        cmd = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *cmd]
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, killed whole on timeout
    )
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
    )


def bufs_text(buf: bytearray) -> str:
    return buf.decode("utf-8", "replace")


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
