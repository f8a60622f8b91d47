"""Warm kernel runners: each imports torch (and triton / cupy) once, then runs one
candidate's jobs at a time (`python -m verifiers.kernels.runner --serve`).

The process machinery is `verifiers.warm`; this adds the runner's command (the GPU device
nodes bound when there is a GPU), the socket its GPU jobs hand exported GPU memory over
(`devshare`: outputs never pass through host RAM), the GPU lock and the GPU memory budget
that jobs are admitted by. No cache is shared with a runner: the
nvcc cache is the host's (the runner gets cubin bytes in its job), and Triton's and torch
extensions' caches are private to one verification inside the runner's own dir (see
`runner.run_forked`). Each job runs in a child of the warm process, so a CUDA error, a
patched module or a thread the candidate left dies with that child.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifiers.contract import Limits
from verifiers.sandbox import UID_SLOTS, continue_pids, resisting, stop_tree
from verifiers.warm import Worker, WorkerCommand, WorkerPool

log = logging.getLogger(__name__)

RUNNER_FSIZE_MB = 1024  # one output file (CPU nodes: small shapes; GPUs share memory)
# Limits a runner's sandbox is not built from: each job gets them itself (its deadline,
# the CPU budget the machine rule measures it by, its output cap: `Worker.run`), or the
# host applies them (code size, feedback, which gates). Every other field shapes the
# sandbox (its rlimits, /tmp's size, confined or not) and keys the pool (`runner_limits`).
PER_JOB_LIMITS = (
    "timeout_s",
    "cpu_s",
    "output_bytes",
    "max_code_bytes",
    "feedback_chars",
    "formal_timeout_s",
    "gates",
)


def runner_limits(limits: Limits) -> Limits:
    """`limits` with the per-job fields at their defaults: what a runner's sandbox is
    built from, and so the key of its pool (calls whose limits differ only per job share
    warm runners; any other difference gets runners of its own)."""
    default = Limits()
    return dataclasses.replace(limits, **{f: getattr(default, f) for f in PER_JOB_LIMITS})


@dataclass
class WorkerSpec:
    device: str  # "cuda" or "cpu"
    limits: Limits
    aot: bool = False  # Triton without the interpreter, for ahead-of-time compiles
    # the MPS experiment (#30), decided once for the spec's runners: their jobs' pipe dir
    # (`mps_pipe`; GPU runners only), which the verifier reads too (`faults_shared`)
    mps: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.mps = mps_pipe() if self.device == "cuda" and not self.aot else None


def _world_executable(path: str) -> bool:
    """`path` (links resolved) and every dir above it executable by any uid: the
    sandbox uid (no group of the caller's) can run it."""
    p = Path(path).resolve()
    try:
        return all(q.stat().st_mode & 0o001 for q in (p, *p.parents))
    except OSError:
        return False


def build_tool(names: tuple[str, ...]) -> str | None:
    """The first of `names` that the sandbox uid may run and sees, by its real path: the
    system's (/usr/bin, always bound) first, then the caller's PATH under /usr or /opt
    (bound on GPU runners); None when there is none. A GPU image's own compiler (CC in its
    environment, /opt/gcc) may be one the sandbox cannot run: never taken as given."""
    dirs = ["/usr/bin", "/bin", *os.environ.get("PATH", "").split(":")]
    for d in dict.fromkeys(x for x in dirs if x):
        for n in names:
            cand = os.path.join(d, n)
            if not (os.path.isfile(cand) and os.access(cand, os.X_OK)):
                continue
            real = os.path.realpath(cand)
            if real.startswith(("/usr/", "/opt/")) and _world_executable(real):
                return real
    return None


@functools.lru_cache(maxsize=1)
def libcuda_dir() -> str | None:
    """The dir of the driver's libcuda.so.1 as the host's loader finds it, or None."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            ["ldconfig", "-p"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
        for line in out.splitlines():
            if line.strip().startswith("libcuda.so.1 ") and "=>" in line:
                path = line.split("=>", 1)[1].strip()
                if os.path.exists(path):
                    return os.path.dirname(os.path.realpath(path))
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/local/nvidia/lib64", "/usr/lib64"):
        if os.path.exists(os.path.join(d, "libcuda.so.1")):
            return d
    return None


def answer_share(sock: socket.socket, nonce: str, on_message) -> bool:
    """One message from a runner's exported-memory socket handed to `on_message` and its
    reply sent back; one of another job (a straggler's, a forged nonce) dropped unanswered.
    The fds that came with it are closed either way. False once the runner closed its end."""
    from verifiers.kernels import devshare

    try:
        header, fds = devshare.recv_fds(sock)
    except OSError:
        header, fds = None, []
    try:
        if header is None:
            return False
        if header.get("nonce") != nonce:
            return True
        reply = on_message(header, fds)
    finally:
        devshare.close_fds(fds)
    with contextlib.suppress(OSError):
        sock.send(json.dumps(reply).encode())
    return True


# experimental (#30): an MPS control daemon's pipe dir; GPU job children connect to it
MPS_PIPE_ENV = "CRUCIBLE_GPU_MPS_PIPE"


def mps_pipe() -> str | None:
    """The MPS experiment's pipe dir (`MPS_PIPE_ENV`, when it names a dir), else None."""
    path = os.environ.get(MPS_PIPE_ENV)
    return path if path and os.path.isdir(path) else None


class KernelWorker(Worker):
    prefix = "kworker"
    recycle_after_jobs = 800  # about 200 candidates

    def __init__(self, spec: WorkerSpec, index: int):
        self.spec = spec
        # GPU: the runner's end of the exported-memory socket (made before each start)
        self.share: socket.socket | None = None
        self._share_child: socket.socket | None = None
        super().__init__(spec.limits, index)

    def uid_slot(self) -> int:
        if self.spec.mps:
            # one MPS server serves one uid at a time, so every GPU runner takes the
            # process's tool uid (slot 0) and shares its process limit, which a runner's
            # own uid exists to keep apart (experiment only)
            return 0
        return super().uid_slot()

    def before_start(self) -> None:
        self._close_share()
        if self.spec.device == "cuda" and not self.spec.aot:
            from verifiers.kernels import devshare

            self.share, self._share_child = devshare.socket_pair()

    def start(self) -> None:
        try:
            super().start()
        finally:  # the server holds its end now (or never will)
            if self._share_child is not None:
                self._share_child.close()
                self._share_child = None

    def stop(self) -> None:
        super().stop()
        self._close_share()

    def _close_share(self) -> None:
        for sock in (self.share, self._share_child):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.close()
        self.share = self._share_child = None

    def run_shared(
        self,
        job: dict,
        timeout_s: float,
        on_message: Callable[[dict, list[int]], dict],
        **kw,
    ) -> dict:
        """`run` for a job whose runner hands GPU memory over: each message it sends
        (a JSON header and fds) goes to `on_message`, whose reply goes back (`answer_share`).
        The time `on_message` takes (a comparison, a wait for the GPU alone) is not the
        job's: its deadline moves by it, and the machine rule leaves it out of its wall."""
        if self.share is None:
            raise RuntimeError("this runner has no exported-memory socket (GPU only)")
        sock = self.share
        self._drain_share()
        nonce = os.urandom(12).hex()
        job = {**job, "nonce": nonce, "share": True}

        def handle() -> float:
            t0 = time.perf_counter()
            if not answer_share(sock, nonce, on_message):  # the runner closed its end
                self._side.pop(sock.fileno(), None)
            return time.perf_counter() - t0

        self._side = {sock.fileno(): handle}
        try:
            return self.run(job, timeout_s, **kw)
        finally:
            self._side = {}
            self._drain_share()

    def _drain_share(self) -> None:
        """Drop whatever waits on the socket (fds closed): nothing carries to a job."""
        from verifiers.kernels import devshare

        if self.share is None:
            return
        self.share.setblocking(False)
        try:
            for _ in range(1000):
                try:
                    header, fds = devshare.recv_fds(self.share)
                except (BlockingIOError, OSError):
                    break
                devshare.close_fds(fds)
                if header is None:
                    break
        finally:
            self.share.setblocking(True)

    def command(self, fd: int) -> WorkerCommand:
        env = {
            **self.python_env(),
            # the warm parent must not create a CUDA context before it forks job children
            "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
            # CPU workers run Triton's interpreter; an `aot` worker compiles for sm_90
            "TRITON_INTERPRET": "1" if self.spec.device == "cpu" and not self.spec.aot else "0",
        }
        if self.spec.device == "cuda":
            # load_inline's nvcc by its real dir (a link through /etc/alternatives,
            # which the sandbox does not bind whole, makes nvcc crash there)
            from verifiers.kernels.nvcc import find_nvcc

            nvcc = find_nvcc()  # CUDA_HOME's, when set; links resolved
            if nvcc:
                env["CUDA_HOME"] = str(Path(nvcc).parent.parent)
                env["PATH"] = f"{Path(nvcc).parent}:{env['PATH']}"
            # the compilers by path, ones the sandbox uid may run and sees (torch's
            # cpp_extension reads CXX, Triton's launcher build CC)
            for var, names in (("CXX", ("c++", "g++")), ("CC", ("gcc", "cc"))):
                tool = build_tool(names)
                if tool:
                    env[var] = tool
        ro = self.python_paths()
        if self.spec.device == "cuda" and not self.spec.aot:
            # a C++ extension's refused launch, its configuration kept (`launchrec`)
            from verifiers.kernels import launchrec
            from verifiers.kernels.nvcc import default_cache_dir

            shim = launchrec.build(default_cache_dir())
            if shim is not None:
                env["LD_PRELOAD"] = env[launchrec.ENV] = str(shim)
                ro.append(str(shim.parent))  # its own dir (the sandbox binds dirs)
        if self.spec.device == "cuda" and not self.spec.aot:
            # Triton's driver module, built once by the host: each job's cache gets a copy
            from verifiers.kernels import tritondriver
            from verifiers.kernels.nvcc import default_cache_dir

            drv = tritondriver.build(default_cache_dir())
            if drv is not None:
                env[tritondriver.ENV] = str(drv)
                ro.append(str(drv))
        if self.spec.device == "cuda" and "TRITON_LIBCUDA_PATH" not in env:
            # Triton finds libcuda with `ldconfig -p`, whose cache a sandbox may not show
            found = libcuda_dir()
            if found:
                env["TRITON_LIBCUDA_PATH"] = found
        for var in (
            "TRITON_LIBCUDA_PATH",
            "CUDA_VISIBLE_DEVICES",
            "CUDA_HOME",
            "LD_LIBRARY_PATH",
            "NVIDIA_VISIBLE_DEVICES",
        ):
            if var in os.environ and var not in env:
                env[var] = os.environ[var]
        rw: list[str] = []
        if self.spec.mps:
            # experimental (#30, bench only): job children as clients of an MPS server
            # started for the sandbox uid, its pipes and shared memory bound in
            env["CUDA_MPS_PIPE_DIRECTORY"] = self.spec.mps
            rw += [self.spec.mps, "/dev/shm"]
        flags = ["--serve", "--result-fd", str(fd), "--device", self.spec.device]
        if not self.limits.unconfined:  # its own pid namespace: every other process is ours
            flags.append("--reap")
        if self.spec.aot:
            flags.append("--aot")
        share: tuple[int, ...] = ()
        if self._share_child is not None:
            share = (self._share_child.fileno(),)
            flags += ["--share-fd", str(share[0])]
        argv = self.python_argv("verifiers.kernels.runner", *flags)
        # the runner writes each output (hundreds of MB at the timing shapes) as a file
        lim = dataclasses.replace(self.limits, fsize_mb=max(self.limits.fsize_mb, RUNNER_FSIZE_MB))
        if self.spec.mps:
            # the MPS experiment's one uid: RLIMIT_NPROC counts per uid, so it gets the sum
            # of the process limits of the runner uids it stands for (a fork bomb in one
            # runner can then starve the others: a product setting needs a pids cgroup per
            # runner instead); measured with the runners' own limit, thread creation failed
            # (cudaGetDeviceCount's error 304, the Triton launcher's gcc) in 92 of 150 jobs
            lim = dataclasses.replace(lim, nproc=lim.nproc * (UID_SLOTS - 1))
        return WorkerCommand(
            argv,
            env,
            ro=ro,
            rw=rw,
            gpu=self.spec.device == "cuda",
            limits=lim,
            pass_fds=share,
        )


PAUSE_LOG_MAX = 100_000


class GpuLock:
    """Shared use (jobs' trials, the host's comparisons) or exclusive use (timed runs, a
    reference's baseline).

    Timing must have the GPU to itself; other work may share it. Writers go one at a time,
    and first: once a timing waits, new shared users wait behind it. How a writer gets the
    GPU alone:

    - `pause` (the default): at once. Every job running under another thread's shared
      hold (`attach`: its worker) is stopped whole, all in one pass (`sandbox.stop_tree`),
      the host's own GPU work under way (`host_use`: a trial's comparison) ends, and no job
      or comparison starts until the writer gives the GPU back; then the jobs are
      continued, their deadlines and walls moved by the pause (`Worker.pause_began`). A job
      whose processes still run after the stop (they continue each other) is killed
      (`Worker.kill_resisting`: `StopResisted`, the candidate's). What the
      stopped jobs had queued on the GPU is the quiet check's (`verifiers.kernels.quiet`).
      Their CPU work stops too: nothing else of theirs runs beside a timing.
    - drain (`pause=False`, the path before): it waits until every shared user has ended
      or waits to upgrade itself; meanwhile no job starts.

    A thread holding it shared may `upgrade` (its job's timed runs, after the job's
    correctness trials) and `downgrade` back; an upgrade gives up the shared hold before it
    waits, so two upgrades at once both progress, one after the other. A shared holder that
    waits for something else (GPU memory, `GpuMemory.hold`) sets its hold down meanwhile
    (`set_down`): it uses no GPU while it waits, and an upgrade must not wait on it.
    """

    def __init__(self, pause: bool = True, settle_s: float = 2.0) -> None:
        self.pause = pause
        self.settle_s = settle_s  # how long a pause's stop may take (`sandbox.stop_tree`)
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0
        self._host_uses = 0
        self._attached: dict[int, Any] = {}  # thread -> the worker running its job
        self._paused: tuple[list, tuple[int, ...], float] | None = None  # the writer's
        self.pauses = 0  # writers that paused running jobs, and the seconds they took
        self.pause_s = 0.0
        # each pause's (stop, host, whole) seconds: stopping the jobs' processes, then
        # waiting for the host's GPU work under way, and the pause from its start to the
        # jobs continued (the first PAUSE_LOG_MAX)
        self.pause_log: list[tuple[float, float, float]] = []
        self._pause_parts = (0.0, 0.0)
        self.resisted = 0  # jobs killed because they kept running through a pause
        self._mine = threading.local()  # what this thread holds: "shared", "exclusive"

    def held(self) -> str | None:
        """What the calling thread holds: "shared", "exclusive" or None."""
        return getattr(self._mine, "mode", None)

    def _take_shared(self) -> None:
        with self._cond:
            while self._writer or self._waiting_writers:
                self._cond.wait()
            self._readers += 1

    def _take_exclusive(self, alone: bool = False) -> None:
        """Wait for the GPU alone (the caller holds nothing; `self._cond` held): in the
        drain way until every shared user has ended, and for `alone` the host's GPU work
        under way too, whichever way."""
        self._waiting_writers += 1
        while (
            self._writer
            or (self._readers and (alone or not self.pause))
            or (alone and self._host_uses)
        ):
            self._cond.wait()
        self._waiting_writers -= 1
        self._writer = True

    def _pause_others(self) -> None:
        """The writer's: every other thread's running job stopped, and the host's GPU
        work under way ended (`self._cond` not held; `_writer` set, so nothing starts)."""
        if not self.pause:
            return
        me = threading.get_ident()
        with self._cond:
            workers = [w for t, w in self._attached.items() if t != me]
        t0 = time.perf_counter()
        for w in workers:  # their deadlines stand still from now
            w.pause_began()
        self._paused = (workers, (), t0)
        try:
            roots = [r for w in workers if (r := w.root_pid()) is not None]
            self._paused = (workers, stop_tree(*roots, settle_s=self.settle_s), t0)
            left = resisting(*roots)  # a job that kept running (SIGCONT among its own): killed
            for w in workers:
                if (r := w.root_pid()) in left:
                    w.kill_resisting(left[r])
                    self.resisted += 1
            t1 = time.perf_counter()
            with self._cond:
                while self._host_uses:
                    self._cond.wait()
            self._pause_parts = (t1 - t0, time.perf_counter() - t1)
        except BaseException:
            self._continue_others()
            raise

    def _continue_others(self) -> None:
        paused, self._paused = self._paused, None
        if paused is None:
            return
        workers, pids, t0 = paused
        continue_pids(pids)
        took = time.perf_counter() - t0
        for w in workers:
            w.pause_ended()
        if workers:
            self.pauses += 1
            self.pause_s += took
            stop_s, host_s = self._pause_parts
            if len(self.pause_log) < PAUSE_LOG_MAX:
                self.pause_log.append((round(stop_s, 5), round(host_s, 5), round(took, 5)))
        self._pause_parts = (0.0, 0.0)

    def _give_back(self) -> None:
        if self.held() == "exclusive":
            self._continue_others()
        with self._cond:
            if self.held() == "exclusive":
                self._writer = False
            else:
                self._readers -= 1
            self._mine.mode = None
            self._cond.notify_all()

    def is_alone(self) -> bool:
        """Whether the calling thread is inside `alone`."""
        return getattr(self._mine, "alone", False)

    @contextlib.contextmanager
    def shared(self):
        if self.is_alone():  # the whole GPU already
            yield
            return
        self._take_shared()
        self._mine.mode = "shared"
        try:
            yield
        finally:  # whatever this thread holds by then (an upgrade not downgraded)
            self._give_back()

    @contextlib.contextmanager
    def alone(self):
        """The calling thread's whole verification with the GPU to itself, drained: every
        other thread's job has ended (not paused: a stopped job keeps its processes and its
        GPU context, and under MPS a context's fault is every client's), and none starts
        until it is over; the host's GPU work under way has ended too. Inside, the thread's
        shared and exclusive holds are this one, and `upgrade`/`downgrade` keep it. The
        caller holds nothing when it enters."""
        if self.held() is not None:
            raise RuntimeError("alone needs a thread that holds nothing of the GPU")
        with self._cond:
            self._take_exclusive(alone=True)
        self._mine.mode, self._mine.alone = "exclusive", True
        try:
            yield
        finally:
            self._mine.alone = False
            self._give_back()

    @contextlib.contextmanager
    def exclusive(self):
        if self.is_alone():
            yield
            return
        with self._cond:
            self._take_exclusive()
        self._mine.mode = "exclusive"
        try:
            self._pause_others()
            yield
        finally:
            self._give_back()

    @contextlib.contextmanager
    def attach(self, worker):
        """The calling thread's job runs on `worker` (a `Worker`: `root_pid`, `pause_began`,
        `pause_ended`): a writer stops it while it holds the GPU. Waits while a writer
        holds it: no job starts beside a timing."""
        me = threading.get_ident()
        with self._cond:
            while self._writer and self.held() != "exclusive":
                self._cond.wait()
            self._attached[me] = worker
        try:
            yield
        finally:
            with self._cond:
                self._attached.pop(me, None)

    @contextlib.contextmanager
    def host_use(self):
        """The host's own GPU work (a trial's reference and comparison): never beside
        another thread's timing, and a writer waits until the one under way ends."""
        with self._cond:
            while self._writer and self.held() != "exclusive":
                self._cond.wait()
            self._host_uses += 1
        try:
            yield
        finally:
            with self._cond:
                self._host_uses -= 1
                self._cond.notify_all()

    def upgrade(self) -> None:
        """This thread's shared hold made exclusive (it waits its turn as a writer)."""
        if self.is_alone():
            return
        if self.held() != "shared":
            raise RuntimeError("upgrade needs the calling thread's shared hold on the GPU")
        with self._cond:
            self._readers -= 1
            self._mine.mode = None
            self._cond.notify_all()
            self._take_exclusive()
            self._mine.mode = "exclusive"
        try:
            self._pause_others()
        except BaseException:
            self.downgrade()
            raise

    def downgrade(self) -> None:
        """This thread's exclusive hold made shared, at once: no other writer between."""
        if self.is_alone():
            return
        if self.held() != "exclusive":
            raise RuntimeError("downgrade needs the calling thread's exclusive hold")
        self._continue_others()
        with self._cond:
            self._writer = False
            self._readers += 1
            self._mine.mode = "shared"
            self._cond.notify_all()

    @contextlib.contextmanager
    def set_down(self):
        """This thread's shared hold given up while it waits for something else, taken
        again after (behind any waiting writer); an exclusive hold or none: as it is."""
        if self.held() != "shared":
            yield
            return
        self._give_back()
        try:
            yield
        finally:
            self._take_shared()
            self._mine.mode = "shared"


class TimingSlot:
    """The host's side of the timing slot of a job that checks a candidate and then times
    it (GPU, under a shared hold on `gpu`): once its correctness trials are over, the
    runner asks for the GPU alone (a header `{"slot": "timing"}`, no fds) and waits. The
    first ask is the only one answered `go`, and only when `ready()` (every trial handed
    over and passed): the calling thread's shared hold is made exclusive first (however
    long that waits: the host's time, not the job's). `release` gives it back, as shared,
    when the timed runs are over or the job ends: what remains (the timed run's output
    compared here, the runner's child winding down) must not overlap another candidate's
    timing, and shares the GPU with everything else.

    While it waits the job is stopped (`still`, its worker's `Worker.still`): it holds
    the GPU neither shared nor alone then, and a process that only waits must not run
    work on the GPU during another job's timed runs (a thread the candidate left could).
    With the lock's `pause` another writer stops it anyway (it is attached); with the
    drain only this does.
    Once the GPU is its own, `quiet` checks that no stopped process's queued work still
    runs there and brings its clock up (`verifiers.kernels.quiet`); a GPU still busy, or
    whose clock stays low, gets no `go`, and `noisy` says why: the timing is the machine's
    to retry, never a label. `checked` keeps what the check found."""

    def __init__(
        self,
        gpu: GpuLock,
        ready: Callable[[], bool],
        still: Callable[[], contextlib.AbstractContextManager] | None = None,
        quiet: Callable[[], Any] | None = None,
    ):
        self.gpu, self.ready = gpu, ready
        self.still = still or contextlib.nullcontext
        self.quiet = quiet
        self.asked = False
        self.granted = False
        self.noisy = None  # the `quiet.Quiet` of a GPU that stayed busy (or slow)
        self.checked = None  # the `quiet.Quiet` of the check, whatever it found
        self.quiet_s = 0.0  # checking that the GPU is quiet
        self.wait_s = 0.0  # waiting for the GPU alone
        self.exclusive_s = 0.0  # holding it
        self._since: float | None = None

    def request(self, header: dict, fds: list[int]) -> dict:
        first, self.asked = not self.asked, True
        if not first or header.get("slot") != "timing" or fds or not self.ready():
            return {"go": False}
        t0 = time.perf_counter()
        with self.still():
            self.gpu.upgrade()
            t1 = time.perf_counter()
            self.wait_s = t1 - t0
            try:
                verdict = self.quiet() if self.quiet is not None else None
            except BaseException:
                self.gpu.downgrade()  # no timed run: the job winds down sharing the GPU
                raise
            self.quiet_s = time.perf_counter() - t1
            self.checked = verdict
            if verdict is not None and not verdict.ready:
                self.noisy = verdict
                self.gpu.downgrade()  # no timed run: the job winds down sharing the GPU
                return {"go": False}
            self._since = time.perf_counter()
            self.granted = True
        return {"go": True}

    def release(self) -> None:
        if self._since is not None:
            self.exclusive_s += time.perf_counter() - self._since
            self._since = None
            self.gpu.downgrade()


class KernelPool(WorkerPool):
    """Kernel runners plus the lock that gives timing the GPU alone."""

    def __init__(self, spec: WorkerSpec, size: int, gpu: GpuLock | None = None):
        super().__init__(lambda i: KernelWorker(spec, i), size)
        self.spec = spec
        # timing alone on the GPU; everything else may share it. One GPU, one lock: a
        # verifier's pools (one per distinct sandbox) share theirs
        self.gpu = gpu or GpuLock()


class GpuMemory:
    """The GPU memory jobs may hold at once: a job is admitted when its estimate fits
    beside the jobs already running (it waits otherwise), so concurrent jobs never
    exceed the card. `capacity` is set once, from the card the first time: its free
    memory plus what this process's allocator keeps cached (the jobs' estimates count
    the verifier's own references and comparisons, and a job's admission hands what they
    left cached back to the card, so the runners can have it). `gpu`: the lock whose shared
    hold a waiting job sets down while it waits (`GpuLock.set_down`: else a job's
    upgrade, holding memory, and a job waiting for that memory, holding the GPU shared,
    would wait on each other for ever)."""

    # cached and unused past this, a job's admission returns the cache to the card (a catalog
    # task leaves less; a KernelBench-size one leaves its tensors, gigabytes)
    CACHE_KEPT = 512 * 2**20

    def __init__(self, capacity: int | None = None, gpu: GpuLock | None = None) -> None:
        self._cond = threading.Condition()
        self.capacity = capacity
        self._card = capacity is None  # measured from the card, so torch's cache is ours
        self._held = 0
        self._gpu = gpu

    def _capacity(self) -> int:
        if self.capacity is None:
            import torch

            free, _total = torch.cuda.mem_get_info()
            # what this process keeps cached is the card's too: counted as free once it
            # is handed back (`_hand_back`). Before, a verifier that had run a reference
            # at KernelBench's size (12.8 GB cached) or a second verifier in the same
            # process saw that much less for good: 19.3 GiB of an 80 GB card.
            own = torch.cuda.memory_reserved()
            # keep a margin for the contexts of the runners (about 0.5 GiB each)
            self.capacity = max(0, int((free + own) * 0.92) - 4 * 2**30)
        return self.capacity

    def _hand_back(self) -> None:
        """Return this process's cached, unused GPU memory to the card when it is more
        than `CACHE_KEPT`: the capacity counted it free for the runners."""
        if not self._card:
            return
        import torch

        if not torch.cuda.is_initialized():
            return
        if torch.cuda.memory_reserved() - torch.cuda.memory_allocated() > self.CACHE_KEPT:
            torch.cuda.empty_cache()

    def fits(self, nbytes: int) -> bool:
        return nbytes <= self._capacity()

    @contextlib.contextmanager
    def hold(self, nbytes: int):
        cap = self._capacity()
        nbytes = min(nbytes, cap)  # `fits` said whether it can run at all
        with self._cond:
            room = not self._held or self._held + nbytes <= cap
            if room:
                self._held += nbytes
        if not room:
            set_down = self._gpu.set_down() if self._gpu else contextlib.nullcontext()
            with set_down, self._cond:
                while self._held and self._held + nbytes > cap:
                    self._cond.wait()
                self._held += nbytes
        try:
            self._hand_back()  # what the jobs before left cached, before this one runs
            yield
        finally:
            with self._cond:
                self._held -= nbytes
                self._cond.notify_all()


_CARD: tuple[GpuLock, GpuMemory] | None = None
_CARD_LOCK = threading.Lock()


def card_pair(pause: bool) -> tuple[GpuLock, GpuMemory]:
    """A GPU lock and the memory budget whose waiting jobs set it down."""
    lock = GpuLock(pause=pause)
    return lock, GpuMemory(gpu=lock)


def the_card(pause: bool) -> tuple[GpuLock, GpuMemory]:
    """This process's GPU lock and memory budget, one pair for its card: every kernel
    verifier on the GPU shares them. A CUDA and a Triton verifier in one process (the
    reward service keeps one per domain) then time alone against each other's jobs too,
    and admit jobs against one card instead of each counting it whole. The first
    verifier's `timing_pause` decides how a timing gets the GPU alone for all of them (a
    later one asking the other way is logged)."""
    global _CARD
    with _CARD_LOCK:
        if _CARD is None:
            _CARD = card_pair(pause)
        elif _CARD[0].pause != pause:
            log.warning(
                "timing_pause=%s asked, but this process's GPU lock was made with %s by an "
                "earlier verifier: one lock per card, so its way stays",
                pause,
                _CARD[0].pause,
            )
        return _CARD
