"""Warm kernel runners: each imports torch (and triton / cupy) once, then runs one
candidate's jobs at a time (`python -m verifiers.kernels.runner --serve`).

The process machinery is `verifiers.warm`; this adds the runner's command (the GPU device
nodes bound when there is a GPU) and the GPU lock. No cache is shared with a runner: the
nvcc cache is the host's (the runner gets cubin bytes in its job), and Triton's and torch
extensions' caches are private to one verification inside the runner's own dir (see
`runner.run_forked`). Each job runs in a child of the warm process, so a CUDA error, a
patched module or a thread the candidate left dies with that child.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from dataclasses import dataclass

from verifiers.contract import Limits
from verifiers.warm import Worker, WorkerCommand, WorkerPool

SHM_MIN_BYTES = 8 * 2**30
RUNNER_FSIZE_MB = 16384  # one output file may be this large
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


def _free_bytes(path: str) -> int:
    try:
        st = os.statvfs(path)
    except OSError:
        return 0
    return st.f_bavail * st.f_frsize if os.access(path, os.W_OK) else 0


class KernelWorker(Worker):
    prefix = "kworker"
    recycle_after_jobs = 800  # about 200 candidates

    def __init__(self, spec: WorkerSpec, index: int):
        self.spec = spec
        # outputs pass through here: memory-backed where /dev/shm is writable and large
        # (a VM's may be 64 MB, less than one output)
        # (a GPU node only: the CPU path's outputs are small, and there its dir stays under
        # the temp dir that the entry point owns and removes)
        gpu = spec.device == "cuda"
        shm = "/dev/shm" if gpu and _free_bytes("/dev/shm") >= SHM_MIN_BYTES else None
        super().__init__(spec.limits, index, scratch=shm)

    def command(self, fd: int) -> WorkerCommand:
        env = {
            **self.python_env(),
            # the warm parent must not create a CUDA context before it forks job children
            "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
            # CPU workers run Triton's interpreter; an `aot` worker compiles for sm_90
            "TRITON_INTERPRET": "1" if self.spec.device == "cpu" and not self.spec.aot else "0",
        }
        for var in (
            "CUDA_VISIBLE_DEVICES",
            "CUDA_HOME",
            "LD_LIBRARY_PATH",
            "NVIDIA_VISIBLE_DEVICES",
        ):
            if var in os.environ and var not in env:
                env[var] = os.environ[var]
        flags = ["--serve", "--result-fd", str(fd), "--device", self.spec.device]
        if not self.limits.unconfined:  # its own pid namespace: every other process is ours
            flags.append("--reap")
        argv = self.python_argv("verifiers.kernels.runner", *flags)
        # the runner writes each output (hundreds of MB at the timing shapes) as a file
        lim = dataclasses.replace(self.limits, fsize_mb=max(self.limits.fsize_mb, RUNNER_FSIZE_MB))
        return WorkerCommand(
            argv,
            env,
            ro=self.python_paths(),
            gpu=self.spec.device == "cuda",
            limits=lim,
        )


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


class KernelPool(WorkerPool):
    """Kernel runners plus the lock that gives timing the GPU alone."""

    def __init__(self, spec: WorkerSpec, size: int, gpu: GpuLock | None = None):
        super().__init__(lambda i: KernelWorker(spec, i), size)
        self.spec = spec
        # timing alone on the GPU; everything else may share it. One GPU, one lock: a
        # verifier's pools (one per distinct sandbox) share theirs
        self.gpu = gpu or GpuLock()
