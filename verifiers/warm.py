"""Warm worker processes: a long-lived Python process that imports a domain's heavy
library once (torch, cadquery) and then takes jobs, one at a time.

A worker runs inside bubblewrap (no network, read-only system, a private writable dir at
GUEST_WORK), or with rlimits only when the caller opted out explicitly
(`Limits(unconfined=True)`). Jobs go in on stdin as JSON lines; results come back on a pipe
of their own, which the candidate's prints cannot reach (they go to a capped log). A job
that runs past its deadline kills the worker's whole process group. A domain subclasses
`Worker` with the command that starts its server (`command()`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import glob
import json
import os
import queue
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifiers.contract import Limits
from verifiers.sandbox import SANDBOX_PATH, Sandbox, sandbox_uid, system_binds

REPO_ROOT = Path(__file__).resolve().parents[1]
LOG_CAP = 64 * 1024
GUEST_WORK = "/kwork"  # the worker's private dir inside the sandbox (/work may be the repo)
START_TIMEOUT_S = 180.0  # importing torch and priming CUDA on a loaded node


class WorkerDied(RuntimeError):
    pass


class WorkerStartError(WorkerDied):
    """The worker could not start (never the candidate's fault)."""


class JobTimeout(RuntimeError):
    pass


# bwrap --die-with-parent (PR_SET_PDEATHSIG) fires when the *thread* that started the
# process exits: workers are started from this pool's threads, which live as long as the
# process, never from a verify thread or a restart thread that ends.
_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="warm-spawner")


def _gpu_device_nodes() -> list[str]:
    return sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri/*"))


def confine(
    work: Path,
    lim: Limits,
    env: dict[str, str],
    *,
    ro: list[str] = (),
    rw: list[str] = (),
    gpu: bool = False,
) -> list[str]:
    """The argv prefix that runs a command confined, with `work` as its private dir
    (at GUEST_WORK) and `ro` / `rw` host dirs at their own paths.

    As root, bwrap sets up the mounts itself (so it can reach a Python under /root, mode
    700) without a user namespace, and setpriv then drops to the sandbox uid with no
    capability left, so RLIMIT_NPROC applies. As another user, bwrap is unprivileged.
    `Limits(unconfined=True)` gives rlimits only: the caller's explicit opt-out.
    """
    shell = ["/bin/sh", "-c", f'ulimit -c 0; ulimit -f {lim.fsize_mb * 2048}; exec "$@"', "sh"]
    if lim.unconfined:
        return shell
    root = os.geteuid() == 0
    if root:
        cmd = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
        cmd.append("--unshare-cgroup-try")
    else:
        cmd = ["bwrap", "--unshare-all"]
    # no --new-session: the worker must stay in the process group the pool kills on a
    # timeout (a setsid'd worker outlived its kill and spun on, seen in the tests); its
    # stdin is a pipe, never a terminal, so there is no TIOCSTI to guard against
    cmd += ["--die-with-parent", "--clearenv", "--as-pid-1", *system_binds()]
    cmd += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp"]
    made: set[str] = set()
    for path, kind in [*((p, "--ro-bind") for p in ro), *((p, "--bind") for p in rw)]:
        if not os.path.isdir(path) or path.startswith("/usr"):
            continue
        for parent in reversed(Path(path).parents):
            p = str(parent)
            if p != "/" and p not in made:
                made.add(p)
                cmd += ["--perms", "0755", "--dir", p]
        cmd += [kind, path, path]
    if gpu:
        for node in _gpu_device_nodes():
            cmd += ["--dev-bind", node, node]
        for extra in ("/opt", "/usr/local/nvidia", "/sys"):
            if os.path.exists(extra) and extra not in made:
                cmd += ["--ro-bind", extra, extra]
    cmd += ["--bind", str(work), GUEST_WORK, "--chdir", GUEST_WORK]
    for k, v in env.items():
        cmd += ["--setenv", k, v]
    if root:
        uid = str(sandbox_uid())
        cmd += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        cmd += ["--no-new-privs", "--inh-caps=-all", "--bounding-set=-all"]
        shell[2] = f"ulimit -p {lim.nproc}; " + shell[2]
    return [*cmd, *shell]


@dataclass
class WorkerCommand:
    """How a domain starts its server: argv, its environment, the host dirs it reads and
    writes, and the rlimits it runs under."""

    argv: list[str]
    env: dict[str, str]
    ro: list[str] = field(default_factory=list)
    rw: list[str] = field(default_factory=list)
    gpu: bool = False
    limits: Limits | None = None  # the worker's own limits, when not the candidate's


class Worker:
    """One warm server process. A domain subclasses it with `command()`."""

    prefix = "worker"
    recycle_after_jobs = 800  # a fresh process bounds any slow leak

    def __init__(self, limits: Limits, index: int, scratch: str | None = None):
        self.limits, self.index = limits, index
        self.home = Path(tempfile.mkdtemp(prefix=f"crucible-{self.prefix}{index}-", dir=scratch))
        self.proc: subprocess.Popen | None = None
        self.results = None
        self.jobs_done = 0
        self.log_path = self.home / "worker.log"
        self._sandbox = Sandbox(limits)  # probes bubblewrap unless unconfined
        self._uid = self._sandbox.uid
        self.work = self._sandbox.prepare_workdir(self.home / "w")
        self.start()

    # --- what a domain supplies ---------------------------------------------------------
    def command(self, fd: int) -> WorkerCommand:
        """The server's argv (`fd` is the result pipe's number) and what it needs."""
        raise NotImplementedError

    def before_start(self) -> None:
        """Prepare host dirs the server needs (called before every start)."""

    # --- lifecycle ------------------------------------------------------------------
    def python_env(self) -> dict[str, str]:
        """The environment every Python server starts with."""
        return {
            "PATH": f"{Path(sys.executable).parent}:{SANDBOX_PATH}",
            "PYTHONPATH": str(REPO_ROOT),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "HOME": str(self.work) if self.limits.unconfined else GUEST_WORK,
            "OMP_NUM_THREADS": "1",
        }

    @staticmethod
    def python_paths() -> list[str]:
        """Host dirs a Python server reads: the interpreter's prefixes and the repo."""
        prefixes = {sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix)}
        return [*sorted(prefixes), str(REPO_ROOT)]

    def start(self) -> None:
        self.before_start()
        r, w = os.pipe()
        spec = self.command(w)
        cmd = confine(
            self.work, spec.limits or self.limits, spec.env, ro=spec.ro, rw=spec.rw, gpu=spec.gpu
        )
        log = open(self.log_path, "wb")  # noqa: SIM115
        self.proc = _SPAWNER.submit(
            subprocess.Popen,
            [*cmd, *spec.argv],
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=log,
            cwd=self.work,
            env=spec.env if self.limits.unconfined else {"PATH": SANDBOX_PATH},
            pass_fds=(w,),  # the result pipe keeps its fd number
            start_new_session=True,
        ).result()
        os.close(w)
        log.close()
        self.results = os.fdopen(r, "r")
        self.jobs_done = 0
        # the server says when it has imported its library and primed itself
        try:
            ready = self._read_line(START_TIMEOUT_S, "start")
        except WorkerDied as e:
            raise WorkerStartError(str(e)) from None
        if not json.loads(ready).get("ready"):
            raise WorkerStartError(f"the worker did not start: {ready[:200]}")

    def stop(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        with contextlib.suppress(Exception):
            self.proc.stdin.close()
        with contextlib.suppress(Exception):
            self.results.close()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.home, ignore_errors=True)

    # --- jobs -----------------------------------------------------------------------
    def log_tail(self, n: int = 2000) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-n:].decode("utf-8", "replace")

    def fresh_outdir(self) -> Path:
        out = self.work / "out"
        shutil.rmtree(out, ignore_errors=True)
        return self._sandbox.prepare_workdir(out)  # owned by the uid the worker has

    def guest_path(self, host: Path) -> str:
        """A host path under the work dir as the worker sees it."""
        if self.limits.unconfined:
            return str(host)
        return f"{GUEST_WORK}/{host.relative_to(self.work)}"

    def host_path(self, guest: str) -> Path:
        """A path the worker reported, as this side of the sandbox sees it."""
        if self.limits.unconfined or not guest.startswith(GUEST_WORK + "/"):
            return Path(guest)
        return self.work / guest[len(GUEST_WORK) + 1 :]

    def run(self, job: dict, timeout_s: float) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        with contextlib.suppress(OSError):  # keep the candidate's prints capped
            if self.log_path.stat().st_size > LOG_CAP:
                os.truncate(self.log_path, 0)
        try:
            self.proc.stdin.write((json.dumps(job) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerDied(f"the worker process exited: {self.log_tail()}") from None
        line = self._read_line(timeout_s, "job")
        self.jobs_done += 1
        return json.loads(line)

    def _read_line(self, timeout_s: float, what: str) -> str:
        deadline = time.monotonic() + timeout_s
        fd = self.results.fileno()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                if what == "start":
                    raise WorkerDied(f"the worker did not start in {timeout_s:.0f}s")
                raise JobTimeout(f"no result in {timeout_s:.0f}s")
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if ready:
                line = self.results.readline()
                if not line:
                    code = self.proc.wait(timeout=10) if self.proc else None
                    tail = self.log_tail()
                    self.stop()
                    raise WorkerDied(f"the worker process exited (status {code}): {tail}")
                return line
            if self.proc.poll() is not None:
                tail = self.log_tail()
                code = self.proc.returncode
                self.stop()
                raise WorkerDied(f"the worker process exited (status {code}): {tail}")


class WorkerPool:
    """N warm workers; `lease()` hands one out, `release()` takes it back (restarted
    first when the candidate left it dirty)."""

    def __init__(self, make: Callable[[int], Worker], size: int):
        self.make, self.size = make, size
        self._free: queue.Queue[Worker] = queue.Queue()
        self._all: list[Worker] = []
        self._lock = threading.Lock()

    def lease(self) -> Worker:
        with self._lock:
            if self._free.empty() and len(self._all) < self.size:
                w = self.make(len(self._all))  # SandboxUnavailable propagates
                self._all.append(w)
                return w
        return self._free.get()

    def warm_up(self) -> None:
        """Start every worker now, in parallel (each imports its library: seconds)."""
        with self._lock:
            missing = self.size - len(self._all)
        threads = [threading.Thread(target=self._add_one, daemon=True) for _ in range(missing)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def _add_one(self) -> None:
        with self._lock:
            if len(self._all) >= self.size:
                return
            index = len(self._all)
            self._all.append(None)  # type: ignore[arg-type]  # the slot, reserved
        try:
            w = self.make(index)
        except Exception:  # lease() starts one later and reports why
            with self._lock:
                self._all.remove(None)  # type: ignore[arg-type]
            return
        with self._lock:
            self._all[self._all.index(None)] = w  # type: ignore[arg-type]
        self._free.put(w)

    def release(self, w: Worker, dirty: bool) -> None:
        """Back to the pool; a dirty worker restarts in the background first (a restart
        imports the library again: the next candidate takes another worker meanwhile)."""
        if not (dirty or w.jobs_done >= w.recycle_after_jobs):
            self._free.put(w)
            return

        def restart() -> None:
            try:
                w.restart()
            except Exception:  # a worker that cannot restart is dropped
                with self._lock:
                    self._all.remove(w)
                w.close()
                return
            self._free.put(w)

        threading.Thread(target=restart, daemon=True).start()

    def close(self) -> None:
        for w in self._all:
            if w is not None:
                w.close()
        self._all.clear()


def verify_on_pool(
    verify: Callable[..., Any], pool: WorkerPool, items: Sequence[tuple[Any, Any]], limits: Any
) -> list[Any]:
    """`verify(task, code, limits)` for every item, one per warm worker at a time, all the
    pool's workers busy (started together first); verdicts in input order."""
    if len(items) <= 1:
        return [verify(t, c, limits) for t, c in items]
    pool.warm_up()
    with concurrent.futures.ThreadPoolExecutor(max_workers=pool.size) as ex:
        return list(ex.map(lambda tc: verify(tc[0], tc[1], limits), items))
