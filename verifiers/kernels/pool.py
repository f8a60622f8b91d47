"""Warm runner processes: each imports torch (and triton / cupy) once, then runs one
candidate's jobs at a time.

A worker is `python -m verifiers.kernels.runner --serve` inside bubblewrap (no network,
read-only system, a private writable dir, the GPU device nodes bound when there is a GPU),
or with rlimits only when the caller opted out explicitly (`Limits(unconfined=True)`, the
lent H200 has no bubblewrap). Jobs go in on stdin; results come back on a pipe of their
own, which the candidate's prints cannot reach (they go to a capped log). A job that runs past its
deadline kills the worker's whole process group; a worker that failed a job is replaced
before the next candidate, because a CUDA error poisons its context for good.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
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
from dataclasses import dataclass
from pathlib import Path

from verifiers.contract import Limits
from verifiers.sandbox import (
    _RO_SYSTEM,
    _SYMLINKS,
    SANDBOX_PATH,
    Sandbox,
    sandbox_uid,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
LOG_CAP = 64 * 1024
GUEST_WORK = "/kwork"  # the worker's private dir inside the sandbox (/work may be the repo)
RECYCLE_AFTER_JOBS = 800  # about 200 candidates; a fresh process bounds any slow leak


class WorkerDied(RuntimeError):
    pass


class WorkerStartError(WorkerDied):
    """The runner could not start (never the candidate's fault)."""


class JobTimeout(RuntimeError):
    pass


@dataclass
class WorkerSpec:
    device: str  # "cuda" or "cpu"
    limits: Limits
    cache_dir: Path
    aot: bool = False  # Triton without the interpreter, for ahead-of-time compiles


SHM_MIN_BYTES = 8 * 2**30
RUNNER_FSIZE_MB = 16384  # one output file may be this large
START_TIMEOUT_S = 180.0  # importing torch and priming CUDA on a loaded node


def _free_bytes(path: str) -> int:
    try:
        st = os.statvfs(path)
    except OSError:
        return 0
    return st.f_bavail * st.f_frsize if os.access(path, os.W_OK) else 0


# bwrap --die-with-parent (PR_SET_PDEATHSIG) fires when the *thread* that started the
# process exits: runners are started from this pool's threads, which live as long as the
# process, never from a verify thread or a restart thread that ends.
_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="krunner")


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
    # no --new-session: the runner must stay in the process group the pool kills on a
    # timeout (a setsid'd runner outlived its kill and spun on, seen in the tests); its
    # stdin is a pipe, never a terminal, so there is no TIOCSTI to guard against
    cmd += ["--die-with-parent", "--clearenv", "--as-pid-1"]
    for src in _RO_SYSTEM:
        if os.path.exists(src):
            cmd += ["--ro-bind", src, src]
    for target, link in _SYMLINKS:
        if os.path.exists("/" + target):
            cmd += ["--symlink", target, link]
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


class Worker:
    def __init__(self, spec: WorkerSpec, index: int):
        self.spec, self.index = spec, index
        # outputs pass through here: memory-backed where /dev/shm is writable and large
        # (a VM's may be 64 MB, less than one output)
        shm = "/dev/shm" if _free_bytes("/dev/shm") >= SHM_MIN_BYTES else None
        self.home = Path(tempfile.mkdtemp(prefix=f"crucible-kworker{index}-", dir=shm))
        self.proc: subprocess.Popen | None = None
        self.results = None
        self.jobs_done = 0
        self.log_path = self.home / "worker.log"
        self._sandbox = Sandbox(spec.limits)  # probes bubblewrap unless unconfined
        self._uid = self._sandbox.uid
        self.work = self._sandbox.prepare_workdir(self.home / "w")
        self.start()

    # --- lifecycle ------------------------------------------------------------------
    def _command(self, fd: int) -> tuple[list[str], dict[str, str]]:
        lim = self.spec.limits
        py_paths = sorted({sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix)})
        env = {
            "PATH": f"{Path(sys.executable).parent}:{SANDBOX_PATH}",
            "PYTHONPATH": str(REPO_ROOT),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "HOME": str(self.work) if lim.unconfined else GUEST_WORK,
            # per sandbox uid: a cache entry one uid made is not writable by another
            "TRITON_CACHE_DIR": str(self.spec.cache_dir / f"triton-{self._uid}"),
            "TORCH_EXTENSIONS_DIR": str(self.spec.cache_dir / f"torch_extensions-{self._uid}"),
            "CRUCIBLE_KERNEL_CACHE": str(self.spec.cache_dir),
            # CPU workers run Triton's interpreter; an `aot` worker compiles for sm_90
            "TRITON_INTERPRET": "1" if self.spec.device == "cpu" and not self.spec.aot else "0",
            "OMP_NUM_THREADS": "1",
        }
        for var in (
            "CUDA_VISIBLE_DEVICES",
            "CUDA_HOME",
            "LD_LIBRARY_PATH",
            "NVIDIA_VISIBLE_DEVICES",
        ):
            if var in os.environ and var not in env:
                env[var] = os.environ[var]
        argv = [sys.executable, "-m", "verifiers.kernels.runner", "--serve", "--result-fd", str(fd)]
        ro = [*py_paths, str(REPO_ROOT)]
        # the runner writes each output (hundreds of MB at the timing shapes) as a file
        runner_lim = dataclasses.replace(lim, fsize_mb=max(lim.fsize_mb, RUNNER_FSIZE_MB))
        cmd = confine(
            self.work,
            runner_lim,
            env,
            ro=ro,
            rw=[str(self.spec.cache_dir)],
            gpu=self.spec.device == "cuda",
        )
        return [*cmd, *argv], env

    def start(self) -> None:
        self.spec.cache_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(self.spec.cache_dir, 0o777)  # the sandbox uid writes its caches here
        r, w = os.pipe()
        cmd, env = self._command(w)
        log = open(self.log_path, "wb")  # noqa: SIM115
        self.proc = _SPAWNER.submit(
            subprocess.Popen,
            cmd,
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=log,
            cwd=self.work,
            env=env if self.spec.limits.unconfined else {"PATH": SANDBOX_PATH},
            pass_fds=(w,),  # the result pipe keeps its fd number
            start_new_session=True,
        ).result()
        os.close(w)
        log.close()
        self.results = os.fdopen(r, "r")
        self.jobs_done = 0
        # the runner says when it has imported torch and primed CUDA / Triton
        try:
            ready = self._read_line(START_TIMEOUT_S, "start")
        except WorkerDied as e:
            raise WorkerStartError(str(e)) from None
        if not json.loads(ready).get("ready"):
            raise WorkerStartError(f"the runner did not start: {ready[:200]}")

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
        return self._sandbox.prepare_workdir(out)  # owned by the uid the runner has

    def guest_path(self, host: Path) -> str:
        """A host path under the work dir as the worker sees it."""
        if self.spec.limits.unconfined:
            return str(host)
        return f"{GUEST_WORK}/{host.relative_to(self.work)}"

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
            raise WorkerDied(f"the runner process exited: {self.log_tail()}") from None
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
                    raise WorkerDied(f"the runner did not start in {timeout_s:.0f}s")
                raise JobTimeout(f"no result in {timeout_s:.0f}s")
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if ready:
                line = self.results.readline()
                if not line:
                    code = self.proc.wait(timeout=10) if self.proc else None
                    tail = self.log_tail()
                    self.stop()
                    raise WorkerDied(f"the runner process exited (status {code}): {tail}")
                return line
            if self.proc.poll() is not None:
                tail = self.log_tail()
                code = self.proc.returncode
                self.stop()
                raise WorkerDied(f"the runner process exited (status {code}): {tail}")


class GpuLock:
    """Shared use (compiling warm-ups, correctness runs) or exclusive use (timing).

    Timing must have the GPU to itself; other work may share it. Writers go first: once a
    timing waits, new shared users wait behind it.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0

    @contextlib.contextmanager
    def shared(self):
        with self._cond:
            while self._writer or self._waiting_writers:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self):
        with self._cond:
            self._waiting_writers += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._waiting_writers -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


class WorkerPool:
    """N warm workers; `lease()` hands one out, `release()` takes it back (restarted
    first when the candidate left it dirty)."""

    def __init__(self, spec: WorkerSpec, size: int):
        self.spec, self.size = spec, size
        self._free: queue.Queue[Worker] = queue.Queue()
        self._all: list[Worker] = []
        self._lock = threading.Lock()
        self.gpu = GpuLock()  # timing alone on the GPU; everything else may share it

    def lease(self) -> Worker:
        with self._lock:
            if self._free.empty() and len(self._all) < self.size:
                w = Worker(self.spec, len(self._all))  # SandboxUnavailable propagates
                self._all.append(w)
                return w
        return self._free.get()

    def warm_up(self) -> None:
        """Start every worker now, in parallel (each imports torch: seconds)."""
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
            w = Worker(self.spec, index)
        except Exception:  # lease() starts one later and reports why
            with self._lock:
                self._all.remove(None)  # type: ignore[arg-type]
            return
        with self._lock:
            self._all[self._all.index(None)] = w  # type: ignore[arg-type]
        self._free.put(w)

    def release(self, w: Worker, dirty: bool) -> None:
        """Back to the pool; a dirty worker restarts in the background first (a restart
        imports torch again: the next candidate takes another worker meanwhile)."""
        if not (dirty or w.jobs_done >= RECYCLE_AFTER_JOBS):
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
