"""The CUDA and Triton verifiers: gates parse, anticheat, compile, launch, correct, timing.

Where the candidate's code runs (`runner.py`, in warm sandboxed worker processes, one
forked child per job) and what decides the verdict (this process) are kept apart:
reference outputs are computed here and compared here with the output files the runner
wrote, read without following links and only at the size the reference's own outputs
have. The runner gets the problem without the reference's forward (`redact`), and nothing
it reports can make a verdict `infra_error` (`errors.classify_python`).

With a GPU: nvcc (device path) and Triton's JIT compile run in parallel across workers;
correctness shares the GPU, and when timing is wanted the same job (one load of the
candidate) then times it with the GPU alone, one candidate at a time (`TimingSlot`).
Without one: Triton runs on CPU tensors under its interpreter (small shapes) and is
compiled ahead of time for sm_90; CUDA is compiled for sm_90 with the ptxas report; the
launch check dry-runs forward at the timing shapes; the gates that need a GPU end the
verdict as `infra_error` / `no_gpu` naming them, so it is retried on a GPU node and never
passes here.
"""

from __future__ import annotations

import ast
import base64
import collections
import contextlib
import dataclasses
import functools
import hashlib
import importlib.util
import itertools
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from verifiers import domain as domains
from verifiers import pyast
from verifiers.base import Context, GateFail, Tool, Verifier
from verifiers.contract import Limits, Status, Task, Verdict
from verifiers.kernels import anticheat, tritondriver
from verifiers.kernels.domain import CUDA, KernelSettings
from verifiers.kernels.errors import classify_python, feedback_from, nvcc_failure
from verifiers.kernels.extension import EXTENSION_BUILD_S
from verifiers.kernels.limits import DeviceLimits
from verifiers.kernels.nvcc import INSTALL_HINT as NVCC_INSTALL_HINT
from verifiers.kernels.nvcc import compile_cubin, default_cache_dir, find_nvcc
from verifiers.kernels.pool import (
    GpuLock,
    GpuMemory,
    KernelPool,
    TimingSlot,
    WorkerSpec,
    card_pair,
    runner_limits,
    the_card,
)
from verifiers.kernels.quiet import gpu_calibrate, gpu_quiet
from verifiers.kernels.redact import runner_problem
from verifiers.sandbox import MachineFault, Sandbox, oom_kills
from verifiers.taxonomy import category_of
from verifiers.warm import (
    JobTimeout,
    OutputFlood,
    OutputRefused,
    StopResisted,
    WorkerDied,
    WorkerStartError,
    read_beneath,
    verify_on_pool,
)

# a build node's Triton compiles kept for candidates to come: at most this many, and this
# many bytes (base64) in all, the oldest dropped first (their kernels compile here)
TRITON_SEEDS_KEPT = 4096
TRITON_SEEDS_BYTES = 512 << 20
PEAK_BYTES_PER_S = 4.8e12  # H200 HBM3e, datasheet: a kernel cannot move bytes faster
# H200 dense FP8 tensor peak (datasheet, 1,979 TFLOPS): above any dtype's real peak, so a
# FLOP floor built from it never rejects an honest kernel
PEAK_FLOPS = 1.979e15
IMPLAUSIBLE_SPEEDUP = 50.0
# the task's eager baseline timed again beside a slow measure taken again, past this
# fraction slower than at first: the machine slowed, the verdict is infra (`_slow_stands`,
# version 11); timed again beside 13 slow verdicts of a catalog batch it came out 0.989-1.002x
BASELINE_DRIFT = 0.10
GPU_ONLY_GATES = ("correct", "timing")
# What the CPU path (no GPU) can run, judged from the task's sizes before anything runs:
# the runner's memory holds the model, the inputs and outputs, their red-zoned copies and
# the files they are saved to (CPU_MEMORY_COPIES of them against Limits.memory_mb); the
# interpreter runs ~1 ms per 1024-element program instance (FACTS: 0.5-1 ms), so a trial
# costs about CPU_ELEMENT_S per element, and all trials must fit in half the job's CPU
# budget (Limits.cpu_s). Past either, the gates that would run the kernels are infra_error /
# no_gpu: a KernelBench-size task never ends as the candidate's timeout or memory_limit
# on a node that could not have run the reference either.
CPU_MEMORY_COPIES = 4
CPU_ELEMENT_S = 1e-6
# torch's random generators are the process's: every kernel verifier's seeding and drawing
# (a trial's inputs, the reference's weights) holds this one lock, whatever its domain (a
# CUDA and a Triton verifier side by side drew into each other's seeds: on the H100 node 7
# of 43 candidates of such a batch came out `inputs_mutated`, a correct (`slow`) one too)
TORCH_RNG = threading.Lock()


@dataclass(frozen=True)
class Speed:
    speedup: float
    slow: bool
    implausible: bool
    note: str
    impossible: bool = False  # faster than the card's peaks allow: never a pass


def judge_speed(ms: float, eager_ms: float, bar: float | None, floor_ms: float = 0.0) -> Speed:
    """`impossible` when faster than moving the inputs and outputs once at the memory's
    peak bandwidth, or doing the reference's FLOPs at the card's peak, allows (`floor_ms`;
    work the timing did not see: a side stream, a reused result); `implausible` (a flag,
    recorded) past IMPLAUSIBLE_SPEEDUP; `slow` below the task's bar (None or 0: no bar,
    KernelBench's convention: correctness decides, the speed is recorded)."""
    speedup = eager_ms / ms if ms > 0 else float("inf")
    impossible = floor_ms > 0 and ms < 0.9 * floor_ms
    implausible = impossible or speedup > IMPLAUSIBLE_SPEEDUP
    slow = bool(bar) and speedup < bar
    if impossible:
        note = (
            f"implausible speedup {speedup:.1f}x: {ms:.4f} ms, but the card's peaks need at "
            f"least {floor_ms:.4f} ms to move the inputs and outputs once or do the "
            "reference's FLOPs: work the timed stream did not see (a side stream, a reused "
            "result)"
        )
    elif slow:
        note = (
            f"correct but slow: median {ms:.4f} ms vs eager {eager_ms:.4f} ms "
            f"({speedup:.2f}x); the task needs at least {bar}x"
        )
    elif implausible:
        note = f"flag: speedup {speedup:.1f}x over eager ({ms:.4f} ms vs {eager_ms:.4f} ms)"
    else:
        note = ""
    return Speed(speedup, slow, implausible, note, impossible)


def _device_kind() -> str:
    """cuda when torch sees a GPU, cpu without one, none without torch."""
    try:
        import torch
    except ImportError:
        return "none"
    return "cuda" if torch.cuda.is_available() else "cpu"


def cuda_src(code: str) -> str | None:
    """The module-level `CUDA_SRC` string literal of a candidate, if it has one."""
    try:
        tree = pyast.parse(code)
    except SyntaxError:
        return None
    for node in tree.body:
        named = isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "CUDA_SRC" for t in node.targets
        )
        if named and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return node.value.value
    return None


def cuda_path(code: str) -> str | None:
    """`device` (module-level CUDA_SRC literal), `extension` (load_inline), or None."""
    if cuda_src(code) is not None:
        return "device"
    return "extension" if "load_inline" in code else None


# the codes a neighbour sharing a job's GPU faults and process limit (MPS) can give it: a
# GPU fault (cuda_error), a fork or a thread that failed (kernel_exception; a build tool
# that could not run, compile_error with no error of the code's own named; the process
# limit, memory_limit), a run starved past its deadline. Never a wrong value (each
# client's memory is its own), an error the code names itself (a syntax error, a name,
# an API, a launch past the device's limits: on the H100 node 48 of a batch's 52 runtime
# and compile errors, verified again for nothing, cost a quarter of its rate), a static
# gate's or a timing's (the timed runs hold the GPU alone)
RERUN_ALONE = frozenset(
    {
        "cuda_error",
        "kernel_exception",
        "compile_error",
        "kernel_timeout",
        "tool_timeout",
        "cpu_limit",
        "memory_limit",
    }
)


class KernelVerifier(Verifier):
    # 2: an output flood is the candidate's resource_limit (it passed before); a spent
    # CPU budget is a timeout; the machine rule (machine_slow, killed_externally)
    # 3: red zones on the GPU and around inputs (out_of_bounds_write where a stray store
    # passed); a task past the CPU path's reach is no_gpu (it was timeout/memory_limit); a
    # task without [harness.small] gets its tail trial at its sizes made ragged
    # 4: timing stops adaptively (the median's interval within 2%, 10-100 runs); a CPU node
    # compiles an extension's C++ unit too (a broken cpp_sources passed compile before)
    # 5: a node whose CC is outside the sandbox (a GPU image's /opt/gcc) no longer gives
    # every CUDA extension compile_error (torch wrote that CC as nvcc's -ccbin)
    # 6: one more small trial's red zones hold huge finite values
    # 7: a timed run pauses the other jobs instead of draining them, on a GPU checked quiet
    # first (gpu_not_quiet: infra); a job whose processes keep running through the pause
    # (SIGCONT among its own) is resisted_stop, where its own timing may have passed before
    # 8: the timed runs' GPU sleep outlasts the forward's host-side issue (`timing_sleep`
    # issue, the default): on a busy H100 node the rule's 50-200 us was outlasted in 11 of
    # 16 Triton references, whose times then held the launch (`bench/results/i30_sleep_*`)
    # 9: every kernel verifier of a process draws under one lock (`TORCH_RNG`); a CUDA and
    # a Triton verifier side by side (the reward service) could each reseed torch inside
    # the other's draw: inputs_mutated, or a reference built from the wrong weights (every
    # candidate of its task numeric_mismatch), where judged-once verdicts kept them
    # 10: a `slow` verdict stands only once measured again (`confirm_slow`): the
    # machine's disturbances only slow a timed run (10 of 600 timed renames of a passing
    # reference in the H100 node's stored batches came out slow, 1 of 287 since version 8)
    # 11: a measure taken again that is slow sets the task's eager baseline timed again
    # beside it; that baseline past BASELINE_DRIFT slower than at first, the verdict is
    # infra (`timing_drift`): cuda col_mean's rename of its reference timed 1.52x the
    # reference's time in two fresh jobs in a row on the H100 node (1.00x before and since)
    # 12: the quiet check before timed runs (a candidate's and a baseline's) brings the
    # GPU's SM clock up first (`quiet.clock_up`), and a clock that stays low is infra
    # (`gpu_clock_low`): the first timing on a GPU that had no context open timed cuda
    # col_mean's reference 1.73x, the same process 1.00x moments later
    # 13: a second measure that passes is the verdict (no third: a disturbance only slows,
    # a fast measure is never the machine's), and a verdict slow twice stands only where
    # the task's own reference, verified again in a fresh job, passes its bar
    # (`_reference_again`; else `timing_drift`): Triton col_mean's rename of its reference
    # timed 0.182, 0.110, 0.172 ms in three fresh jobs with the SM clock up and the eager
    # baseline unchanged, and version 12's median of three kept `slow`
    # 14: each GPU job's CUDA context has one hardware queue (`gpu_connections` 1, was the
    # driver's 8): 16 contexts made at once took 2.5 s each at 8 and 0.89 s at 1; the
    # catalog batch on the H100 node ran at 431 a minute against 225, 592 of 595 verdicts
    # the same (two races, one candidate on its bar) and speedups 0.999x (median)
    version = "14"
    resource = "GPU"
    # no GPU node: the CPU gates still run (Triton's interpreter, nvcc compile-only), and
    # the GPU-only gates end the verdict as infra_error / no_gpu, to be retried on a GPU
    cpu_fallback = True
    partial_versions = True
    gates = CUDA.gate_names  # Triton has the same gates
    always = ("parse", "anticheat")
    requires: ClassVar[dict[str, tuple[str, ...]]] = {
        "compile": ("parse",),
        "launch": ("compile",),
        "correct": ("launch",),
        "timing": ("correct",),
    }

    def __init__(
        self,
        keep_workdirs: Path | None = None,
        *,
        settings: KernelSettings | Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> None:
        """`settings`: `KernelSettings` or its dict; its fields may also be given by name
        (`CudaVerifier(device="cpu", workers=1)`). A `cache_dir` Path is taken as its str."""
        if isinstance(overrides.get("cache_dir"), Path):
            overrides["cache_dir"] = str(overrides["cache_dir"])
        super().__init__(keep_workdirs, settings=settings, **overrides)
        s: KernelSettings = self.settings  # type: ignore[assignment]
        self._device = s.device
        self._workers = s.workers
        self.cache_dir = Path(s.cache_dir) if s.cache_dir else default_cache_dir()
        self.compile_timeout_s = s.compile_timeout_s
        # by the limits the runners' sandboxes are built from (`runner_limits`), and aot
        self._pools: dict[tuple[Limits, bool], KernelPool] = {}
        self._pool_lock = threading.Lock()
        # shared by every pool: one GPU, timed alone (running jobs paused meanwhile), and
        # what GPU jobs may hold at once on it; on a GPU, by every verifier of this process
        # (`_card`)
        self._card_pair: tuple[GpuLock, GpuMemory] | None = None
        self._card_lock = threading.Lock()
        self._costs: dict[str, dict] = {}
        self._refs: dict[tuple, Any] = {}
        # torch's RNG is process-wide: seeding and drawing inputs (or initial weights) must
        # not interleave between the threads that verify candidates side by side, of this
        # verifier or of another in the process (`TORCH_RNG`)
        self._rng = TORCH_RNG
        self._baselines: dict[str, dict] = {}
        # a build node's Triton compiles, by candidate (`seed`, `TritonVerifier.prebuild`)
        self._triton_seeds: collections.OrderedDict[str, dict] = collections.OrderedDict()
        self.compile_baseline = s.compile_baseline
        # a candidate and its task's eager baseline are timed the same way
        self.timing_mode = s.timing
        self.timing_sleep = s.timing_sleep
        self.gpu_connections = s.gpu_connections
        self._again = threading.local()  # `on`: this thread measures a slow verdict again

    # --- environment ------------------------------------------------------------------
    @property
    def device(self) -> str:
        if self._device is None:
            self._device = _device_kind()
        return self._device

    @property
    def install_hint(self) -> str:
        """How to install this domain's toolchain (its descriptor's)."""
        return domains.get(self.domain).install

    def python_tool(self, module: str) -> Tool:
        return Tool(module, "python3", ("python3", "--version"), self.install_hint)

    def missing_tools(self) -> list[Tool]:
        missing = super().missing_tools()
        if self.device == "none":
            missing.append(self.python_tool("torch"))
        return missing

    def toolchain(self) -> dict[str, str]:
        if self._toolchain is None:
            tc: dict[str, str] = {}
            try:
                import torch

                tc["torch"] = torch.__version__
                if self.device == "cuda":
                    tc["gpu"] = torch.cuda.get_device_name(0)
                    tc["cuda"] = str(torch.version.cuda)
            except ImportError:
                pass
            tc.update(self._extra_toolchain())
            tc["device"] = self.device
            self._toolchain = tc
        return self._toolchain

    def _extra_toolchain(self) -> dict[str, str]:
        return {}

    def pool(self, limits: Limits, aot: bool = False) -> KernelPool:
        """The warm runners for `limits`: one pool per distinct sandbox (every Limits
        field but the per-job ones, `pool.runner_limits`), so a call's memory, process
        and file limits are its own, never an earlier call's."""
        key = (runner_limits(limits), aot)
        with self._pool_lock:
            pool = self._pools.get(key)
            if pool is None:
                n = self._workers
                if not n:
                    cores = os.cpu_count() or 2
                    n = min(8, cores) if self.device == "cuda" else min(2, cores)
                spec = WorkerSpec(self.device, key[0], aot=aot)
                if self.device == "cuda" and not self._pools:  # before any job ran here
                    with contextlib.suppress(Exception):  # no GPU: the gates say so
                        gpu_calibrate()
                pool = KernelPool(spec, n, gpu=self._gpu)
                self._pools[key] = pool
            return pool

    def _card(self) -> tuple[GpuLock, GpuMemory]:
        """The GPU lock and memory budget this verifier's jobs use: on a GPU the process's
        one pair (`the_card`: a CUDA and a Triton verifier side by side time alone against
        each other), else a pair of its own (nothing runs on a GPU)."""
        with self._card_lock:
            if self._card_pair is None:
                pause = self.settings.timing_pause  # type: ignore[attr-defined]
                self._card_pair = the_card(pause) if self.device == "cuda" else card_pair(pause)
            return self._card_pair

    @property
    def _gpu(self) -> GpuLock:
        return self._card()[0]

    @property
    def _gpu_mem(self) -> GpuMemory:
        return self._card()[1]

    def close(self) -> None:
        with self._pool_lock:  # a verify thread may be making a pool meanwhile
            pools = list(self._pools.values())
            self._pools.clear()
        for pool in pools:
            pool.close()

    @functools.cached_property
    def _device_limits(self) -> DeviceLimits:
        if self.device != "cuda":
            return DeviceLimits()
        try:
            import cupy

            a = cupy.cuda.Device(0).attributes
            return DeviceLimits(
                name=f"{self.toolchain().get('gpu', 'GPU')} (sm_90)",
                max_grid=(a["MaxGridDimX"], a["MaxGridDimY"], a["MaxGridDimZ"]),
                max_block=(a["MaxBlockDimX"], a["MaxBlockDimY"], a["MaxBlockDimZ"]),
                max_threads_per_block=a["MaxThreadsPerBlock"],
                shared_per_block=a["MaxSharedMemoryPerBlock"],
                shared_per_block_optin=a["MaxSharedMemoryPerBlockOptin"],
                regs_per_block=a["MaxRegistersPerBlock"],
            )
        except Exception:
            return DeviceLimits()

    def device_limits(self) -> DeviceLimits:
        """The launch limits of this node's GPU (read once), or sm_90's without one."""
        return self._device_limits

    # --- one, and again alone -------------------------------------------------------------
    def faults_shared(self, limits: Limits) -> bool:
        """Whether the GPU jobs of `limits`' runners share one another's faults and process
        limit: they are clients of one MPS server (`CRUCIBLE_GPU_MPS_PIPE`, as their pool's
        spec decided it once; no pool yet, no job ran). Under
        MPS one client's GPU fault ends every client's context (measured: 15 of 15
        neighbours failed, 0 of 15 time-sliced), and every runner runs as one uid, so one
        job's processes count against all of theirs."""
        pool = self._pools.get((runner_limits(limits), False))
        return pool is not None and pool.spec.mps is not None

    def verify(self, task: Task, code: Any, limits: Limits | None = None) -> Verdict:
        """The verdict (`_verify_once`); a `slow` one measured again before it stands
        (`confirm_slow`, the setting). A disturbance (a clock, a neighbour's queued work, a
        descheduled launch, a state of the job that outlasts it) only ever slows a timed
        run: a slow measure may be the machine's, a fast one never is. So a second measure
        that passes is the verdict, as a first that passes is; slow in two fresh jobs, the
        faster is kept and it stands only while (`_slow_stands`) the task's eager baseline,
        timed again beside the second, has not slowed, and (`_reference_again`) the task's
        own reference, verified again in a fresh job, still passes its bar: else the
        machine cannot time this task's kernels now (`timing_drift`, infra). A measure that
        is no timing (a wrong answer a race gave, the machine's infra) ends it there and
        is the verdict. Every measure's time is kept in the metrics (`timing_measures`),
        and the verdict's duration is all of theirs."""
        v = self._verify_once(task, code, limits)
        if v.status is not Status.SLOW or not self.settings.confirm_slow:  # type: ignore[attr-defined]
            return v
        timed = [v, self._measure_again(task, code, limits)]
        kept, ref = timed[1], None
        if kept.status is Status.SLOW:  # slow twice: the faster (a disturbance only slows)
            kept = min(timed, key=lambda x: x.metrics.get("time_ms", float("inf")))
            kept, ref = self._reference_again(task, code, kept, limits)
        metrics = {**kept.metrics, "timing_measures": [_measure(x) for x in timed]}
        if ref is not None:
            metrics["reference_again"] = {**_measure(ref), "feedback": ref.feedback[:300]}
        return dataclasses.replace(
            kept,
            metrics=metrics,
            duration_ms=sum(x.duration_ms for x in timed) + (ref.duration_ms if ref else 0.0),
        )

    def _reference_again(
        self, task: Task, code: Any, slow: Verdict, limits: Limits | None
    ) -> tuple[Verdict, Verdict | None]:
        """A verdict slow twice stands only where the task's own reference, verified again
        now in a fresh job as a candidate is, passes its bar: the same kernel family on
        the same machine in the same minute. Not passing (slow, or the machine's infra),
        the machine is in a state that slows this task's kernels (Triton col_mean's rename
        of its reference timed 0.182, 0.110, 0.172 ms in three fresh jobs on the H100
        node, the reference 0.110, the eager baseline unchanged): `timing_drift`, infra,
        measured again later. The verdict to keep, and the reference's (None: the task
        has no reference, and no such check). Where the
        candidate is the reference (the reference check's own verification), this is a
        third measure of it, and one that passes is its verdict."""
        if not task.reference:
            return slow, None
        ref = self._verify_once(task, task.reference, limits)
        if ref.status is Status.PASS:
            return (ref if code == task.reference else slow), ref
        what = f"{ref.status.value}/{ref.code}"
        if ref.metrics.get("speedup") is not None:
            what += f", {ref.metrics['speedup']:.2f}x its eager baseline"
        note = (
            f"slow in two fresh jobs ({slow.metrics.get('speedup', 0):.2f}x its eager "
            f"baseline), but the task's own reference, verified again now, is {what}: the "
            "machine cannot time this task's kernels at their bar now; measured again later, "
            "never a speed label"
        )
        checks = tuple(
            dataclasses.replace(c, detail=note) if c.name == "timing" and not c.ok else c
            for c in slow.checks
        )
        infra = dataclasses.replace(
            slow,
            status=Status.INFRA_ERROR,
            code="timing_drift",
            category=category_of("timing_drift"),
            feedback=note,
            checks=checks,
            verdict_id="",  # an infra verdict's id is salted with its time (retried)
            created_at="",
        )
        return infra, ref

    def _measure_again(self, task: Task, code: Any, limits: Limits | None) -> Verdict:
        """`_verify_once`, as a measure taken again of a slow verdict: a slow time there is
        set beside the task's eager baseline timed again (`_slow_stands`)."""
        self._again.on = True
        try:
            return self._verify_once(task, code, limits)
        finally:
            self._again.on = False

    def _slow_stands(self, ctx: Context, eager_ms: float) -> None:
        """On a measure taken again (`_measure_again`), a slow time stands only where the
        task's eager baseline, timed again now on the GPU alone (`_eager_now`), is no more
        than BASELINE_DRIFT slower than when first measured (`eager_ms`). Slower than that,
        the machine slowed since the bar was set (a state that outlasted two fresh jobs:
        the first measure's and this one's): the verdict is its infra (`timing_drift`,
        retried), never a speed label. A baseline faster now changes nothing: the verdict
        is slow against the faster too."""
        if not getattr(self._again, "on", False):
            return
        now = self._eager_now(ctx)
        ctx.metrics["eager_again_ms"] = round(now, 5)
        if now > (1 + BASELINE_DRIFT) * eager_ms:
            raise GateFail(
                Status.INFRA_ERROR,
                "timing_drift",
                f"slow against the task's eager baseline as first measured ({eager_ms:.4f} "
                f"ms), but that baseline times {now:.4f} ms now ({now / eager_ms:.2f}x): "
                "the machine slowed, not only the candidate; measured again later, never "
                "a speed label",
            )

    def _eager_now(self, ctx: Context) -> float:
        """The task's eager baseline timed again, with the GPU alone (checked quiet)."""
        with self.pool(ctx.limits).gpu.exclusive():
            return self._time_eager(ctx.task, "the baseline's timing again")[0]["median_ms"]

    def _time_eager(self, task: Task, what: str) -> tuple[dict, Any, list]:
        """The task's reference (eager) timed as candidates are, on the GPU the caller
        holds alone, checked quiet first (`what` names the timing where it is not): its
        `time_cuda` result, the model and the inputs it ran on."""
        from verifiers.kernels import runner

        # the caller holds the GPU alone; no one else's work still runs, its clock is up
        quiet = gpu_quiet()
        if not quiet.ready:
            raise _not_quiet(quiet, what)
        problem, model = self._reference(task, False)
        inputs = self._inputs(problem, 2024, "cuda")
        timing = runner.time_cuda(model, inputs, mode=self.timing_mode, sleep=self.timing_sleep)
        timing.update(_clock_metrics(quiet))
        return timing, model, inputs

    def _verify_once(self, task: Task, code: Any, limits: Limits | None = None) -> Verdict:
        """One verdict; where the GPU's jobs share their faults (`faults_shared`), a failure
        a neighbour could have caused (RERUN_ALONE: a GPU fault, a failed fork or thread, a
        starved run; never an error the code names itself) is verified again with the GPU
        drained and held alone for the whole verification (`GpuLock.alone`), and that
        verdict is kept: the candidate's own fault recurs alone, a neighbour's does not.
        The first verdict is kept in the metrics (`shared_verdict`)."""
        v = super().verify(task, code, limits)
        shared = not v.status.is_infra and v.code in RERUN_ALONE
        if not (shared and self.faults_shared(limits or Limits())):
            return v
        with self._gpu.alone():
            again = super().verify(task, code, limits)
        first = {"status": v.status.value, "code": v.code, "feedback": v.feedback[:300]}
        return dataclasses.replace(again, metrics={**again.metrics, "shared_verdict": first})

    # --- many at once -------------------------------------------------------------------
    def verify_many(
        self, items: Sequence[tuple[Task, str]], limits: Limits | None = None
    ) -> list[Verdict]:
        """Verify in parallel: compiles overlap, the GPU gates take turns. One candidate
        per runner: a thread past the runners would wait for one while it holds the GPU
        shared and its memory admission (the compile gate takes both before it leases),
        and a runner's owner waiting to upgrade for timing would wait on it for ever
        (seen on the H200 with twice as many threads as runners)."""
        return verify_on_pool(self.verify, self.pool(limits or Limits()), items, limits)

    # --- what a build node built ----------------------------------------------------------
    def seed(self, artifacts: Sequence[Any]) -> dict[str, int]:
        """Write a build node's entries (`CudaVerifier.prebuild`) into this node's caches,
        sealed under this host's key: the compile gate then finds them as its own. Each
        is checked as the cache's read checks it (a sha256 key, the fields' types, the
        blob's sha256); one that fails is dropped and counted, never written. An entry
        under a key this node never asks for (another toolchain's) is written and never
        read: the node builds for itself, as without a build node."""
        from verifiers.kernels.build import BuildCache
        from verifiers.kernels.nvcc import HostCache

        caches = {"cubin": HostCache(self.cache_dir), "inline": BuildCache(self.cache_dir)}
        counts = {"seeded": 0, "refused": 0}
        for a in artifacts:
            if isinstance(a, dict) and a.get("cache") == "triton":
                good = self._seed_triton(a.get("key"), a.get("body"))
                counts["seeded" if good else "refused"] += 1
                continue
            cache = caches.get(a.get("cache")) if isinstance(a, dict) else None
            good = cache is not None and cache.seed(a.get("key"), a.get("body"))
            counts["seeded" if good else "refused"] += 1
        return counts

    def _seed_triton(self, key: Any, body: Any) -> bool:
        """A build node's Triton compiles of one candidate, kept in memory (the newest,
        TRITON_SEEDS_KEPT and TRITON_SEEDS_BYTES) for its jobs here (`_job`:
        `tritondriver.seed_triton`)."""
        if not (isinstance(key, str) and re.fullmatch(r"[0-9a-f]{64}", key)):
            return False
        files = body.get("files") if isinstance(body, dict) else None
        if not isinstance(files, dict) or not files or len(files) > tritondriver.SEED_MAX_FILES:
            return False
        files = {
            k: v
            for k, v in files.items()
            if isinstance(k, str) and isinstance(v, str) and tritondriver.seed_name_ok(k)
            if _is_base64(v)
        }
        if not files:
            return False
        with self._pool_lock:
            self._triton_seeds[key] = files
            self._triton_seeds.move_to_end(key)
            kept = sum(len(x) for f in self._triton_seeds.values() for x in f.values())
            while len(self._triton_seeds) > 1 and (
                len(self._triton_seeds) > TRITON_SEEDS_KEPT or kept > TRITON_SEEDS_BYTES
            ):
                _, old = self._triton_seeds.popitem(last=False)
                kept -= sum(len(x) for x in old.values())
        return True

    # --- gates ----------------------------------------------------------------------------
    def _run_gates(self, ctx: Context, checks: list) -> None:
        try:
            super()._run_gates(ctx, checks)
        finally:
            # only a runner whose own job went wrong restarts: the other one's jobs ran in
            # children that ended and were reaped, as every clean candidate's do
            dirty = ctx.state.get("dirty", set())
            for slot, aot in (("worker", False), ("aot_worker", True)):
                worker = ctx.state.pop(slot, None)
                if worker is not None:
                    self.pool(ctx.limits, aot).release(worker, dirty=slot in dirty)

    def gate_parse(self, ctx: Context) -> str:
        try:
            tree = pyast.parse(ctx.code)
        except SyntaxError as e:
            line = (e.text or "").rstrip()
            raise GateFail(
                Status.COMPILE_ERROR,
                "syntax_error",
                f"Python syntax error at line {e.lineno}: {e.msg}",
                feedback=f"line {e.lineno}: {e.msg}\n{line}",
            ) from None
        entry = ctx.task.interface.get("entry", "ModelNew")
        if not any(isinstance(n, ast.ClassDef) and n.name == entry for n in ast.walk(tree)):
            raise GateFail(
                Status.FORMAT_ERROR,
                "missing_entry_point",
                f"the candidate defines no class `{entry}`",
                feedback=f"define `class {entry}(torch.nn.Module)` with the same __init__ "
                "and forward signatures as the reference Model",
            )
        return self.parse_domain(ctx)

    def parse_domain(self, ctx: Context) -> str:
        return ""

    def gate_anticheat(self, ctx: Context) -> str:
        entry = ctx.task.interface.get("entry", "ModelNew")
        findings = anticheat.check(ctx.code, ctx.task.harness.get("problem", ""), entry=entry)
        if findings:
            first = findings[0]
            raise GateFail(
                Status.REJECTED,
                first.code,
                f"anti-cheat: {first.what} (line {first.line})",
                feedback="\n".join(f.message() for f in findings[:5]),
                metrics={"anticheat": [f.code for f in findings]},
            )
        return f"{len(anticheat.RULES)} rules, none tripped"

    def gate_compile(self, ctx: Context) -> str:
        detail = self.compile_domain(ctx)
        if ctx.state.get("skip_runner"):
            return detail
        if self.device != "cuda":
            reach = self._cpu_reach(ctx)
            if not reach["load"]:  # not even the model fits: nothing runs here
                ctx.state["skip_runner"] = True
                ctx.state["beyond_cpu"] = reach["why"]
                return f"{detail}; the candidate is not loaded here: {reach['why']}"
            if not reach["run"]:
                ctx.state["beyond_cpu"] = reach["why"]
        # load the candidate, dry-run its launches at the timing shapes (meta tensors);
        # on a GPU the same job then runs one real forward, which compiles Triton's
        # kernels (outside the timing lock): at the timing shapes, or the small ones when
        # the dry run found an over-limit launch
        gpu = self.device == "cuda"
        if gpu and self._one_job(ctx):
            res = self._compile_and_run(ctx)
        else:
            steps = ["load", "launch", "warm"] if gpu else ["load", "launch"]
            admit = self._admit(ctx, self._cost(ctx.task)) if gpu else contextlib.nullcontext()
            with self.pool(ctx.limits).gpu.shared(), admit:
                res = self._job(ctx, steps, self._build_timeout(ctx))
        ctx.state["prepare"] = res
        if not res["ok"] and res["step"] in ("setup", "load"):
            self._fail_from(ctx, res)
        if gpu and not res["ok"] and res["step"] == "warm":
            status, _ = classify_python("warm", res["error"])
            if status is Status.COMPILE_ERROR:
                self._fail_from(ctx, res)
            ctx.state["run_error"] = res  # reported by the gate it belongs to
        if self.device == "cpu" and self.domain == "triton":
            records = (res.get("launch") or {}).get("launches", [])
            aot = self._job(ctx, ["aot"], self._build_timeout(ctx), records=records, aot=True)
            if not aot["ok"]:
                self._fail_from(ctx, aot)
            ctx.metrics["triton_aot"] = aot["aot"]
            detail += f"; {len(aot['aot'])} kernel specialization(s) compiled for sm_90"
        return detail

    def compile_domain(self, ctx: Context) -> str:
        return ""

    def gate_launch(self, ctx: Context) -> str:
        if ctx.state.get("path") == "extension":
            # C++ launches cannot be dry-run: those whose configuration the source spells
            # out are checked against the device's limits here, on any node
            from verifiers.kernels.extension import launch_violations

            found = launch_violations(ctx.code, self.device_limits())
            if found:
                raise GateFail(
                    Status.RUNTIME_ERROR,
                    "launch_exceeds_limit",
                    found[0][:300],
                    feedback="\n".join(found[:5]) + "\n" + self.device_limits().describe(),
                    metrics={"launch_violations": found[:8]},
                )
        res = ctx.state.get("prepare")
        if res is None and ctx.state.get("beyond_cpu"):
            self._need_gpu(ctx, "launch")
        if res is None:
            return "not checked: " + ctx.state.get("launch_note", "no dry run for this path")
        launch = res.get("launch")
        for refusal in ("violation", "arg_error"):  # a refused launch, or its arguments
            if launch and launch.get(refusal):
                err = launch[refusal]
                status, code = classify_python("launch", err)
                limits = f"\nDevice limits: {self.device_limits().to_dict()}"
                raise GateFail(
                    status,
                    code,
                    err["message"][:300],
                    feedback=feedback_from(err) + (limits if refusal == "violation" else ""),
                    metrics={"launches": launch.get("launches", [])[:8]},
                )
        if not res["ok"] and res["step"] == "launch":
            self._fail_from(ctx, res)
        run_error = ctx.state.get("run_error")
        if run_error and classify_python(run_error["step"], run_error["error"])[1] in (
            "launch_exceeds_limit",
            "launch_arg_mismatch",
        ):
            self._fail_from(ctx, run_error)
        ctx.metrics["launches"] = [
            {k: x[k] for k in ("kernel", "grid", "block") if k in x}
            for x in (launch or {}).get("launches", [])[:8]
        ]
        if launch and not launch.get("checked"):
            return f"dry run inconclusive ({launch.get('why', '')}); checked at run time"
        n = len((launch or {}).get("launches", []))
        return f"{n} launch(es) at the timing shapes within the device limits"

    def gate_correct(self, ctx: Context) -> str:
        self._need_gpu(ctx, "correct")
        if ctx.state.get("run_error"):  # the warm-up forward already failed at run time
            self._fail_from(ctx, ctx.state["run_error"])
        ran = ctx.state.get("ran")
        if ran is not None:  # the trials ran in the compile gate's job (`_one_job`)
            if ran.get("failure") is not None:
                raise ran["failure"]
            return self._judge_trials(ctx, ran["checker"], ran["res"])
        trials = self._trials(ctx)
        if self.device == "cuda":
            return self._correct_on_gpu(ctx, trials)
        # the interpreter is slow: a longer deadline on the CPU
        timeout = ctx.limits.timeout_s * 6
        with self.pool(ctx.limits).gpu.shared():
            res = self._job(ctx, ["load", "outputs"], timeout, trials=trials)
            if not res["ok"]:
                self._fail_from(ctx, res)
            return self._compare(ctx, trials, res)

    def _trials(self, ctx: Context) -> list[dict]:
        """The correctness trials' seeds and sizes, fresh for each verification."""
        h = ctx.task.harness
        small_only = self.device == "cpu"
        trials = [
            {"seed": int.from_bytes(os.urandom(4), "little"), "small": small_only}
            for _ in range(h.get("trials", 5))
        ]
        if not small_only:  # plus one tail trial at awkward small sizes
            trials.append({"seed": int.from_bytes(os.urandom(4), "little"), "small": True})
        # and one whose red zones hold huge finite values, not NaNs: a read past a
        # tensor's end whose NaN the kernel's math drops (the GPU's max does) moves a max
        # or a sum there (a tail trial on a GPU; on the CPU, where all are, the last one)
        if small_only and len(trials) >= 2:
            trials[-1]["zones"] = "finite"
        else:
            seed = int.from_bytes(os.urandom(4), "little")
            trials.append({"seed": seed, "small": True, "zones": "finite"})
        if h.get("shift"):
            # every floating input shifted (e.g. all-negative rows, where a max started at
            # 0 shows); skipped if the reference itself is not finite there
            seed = int.from_bytes(os.urandom(4), "little")
            trials.append({"seed": seed, "small": small_only, "shift": float(h["shift"])})
        ctx.metrics["trial_seeds"] = [t["seed"] for t in trials]
        if self.device == "cuda":
            cost = self._cost(ctx.task)
            for t in trials:  # sized so the allocator's next blocks can be poisoned
                t["out_bytes"] = cost["small_out" if t["small"] else "out"]
        return trials

    def _trials_timeout(self, ctx: Context, trials: list[dict]) -> float:
        """The trials' step limit: it scales with what the reference itself costs."""
        cost = self._cost(ctx.task)
        return max(ctx.limits.timeout_s * 3, 30.0 + len(trials) * 20.0 * cost["seconds"])

    def _one_job(self, ctx: Context) -> bool:
        """On a GPU, whether the compile gate's job goes on into the trials (and the timed
        runs): one process, one CUDA context and one load (one JIT) of the candidate
        for every gate, instead of a second job for the trials."""
        return (
            self.settings.one_gpu_job
            and "correct" in self._wanted(ctx.limits)
            and not ctx.state.get("skip_runner")
        )

    def _compile_and_run(self, ctx: Context) -> dict:
        """The compile gate's job on a GPU when it also runs the trials (`_one_job`):
        load, launch dry run, warm-up forward, then the trials (and the timed runs) as
        `_correct_on_gpu` runs them. The runner stops before the trials when the dry run
        refused a launch. Each later gate judges what this job left (`ctx.state["ran"]`,
        `["timed"]`); a job cut short (its deadline, a died runner) is the compile gate's
        when no trial was handed over yet, else the trials' gate's."""
        trials = self._trials(ctx)
        checker = _SharedTrials(self, ctx, trials)
        timeout = self._build_timeout(ctx) + self._trials_timeout(ctx, trials)
        steps = ["load", "launch", "warm"]
        cost = self._cost(ctx.task)
        ran: dict[str, Any] = {"checker": checker}
        try:
            if "timing" in self._wanted(ctx.limits):
                res = self._correct_and_time(ctx, checker, cost, timeout, steps)
            else:
                with self.pool(ctx.limits).gpu.shared(), self._admit(ctx, cost):
                    steps.append("outputs")
                    res = self._job(ctx, steps, timeout, trials=trials, on_share=checker)
        except GateFail as f:
            if checker.done == 0 and checker.failure is None:
                raise  # nothing reached the trials: load, the dry run or the warm-up
            ran["failure"], res = f, {"ok": True}
        ran["res"] = res
        ctx.state["ran"] = ran
        if "launch" not in res:  # cut short after the trials began: its report is lost
            why = "the job was cut short after its trials began (no launch was refused)"
            res = {**res, "seconds": {}, "launch": {"checked": False, "why": why}}
        return res

    def _correct_on_gpu(self, ctx: Context, trials: list[dict]) -> str:
        """The trials run one at a time in the runner; each hands its inputs and outputs
        over as GPU memory (`devshare`), compared here on the GPU before the next runs."""
        cost = self._cost(ctx.task)
        checker = _SharedTrials(self, ctx, trials)
        timeout = self._trials_timeout(ctx, trials)
        if "timing" in self._wanted(ctx.limits):
            res = self._correct_and_time(ctx, checker, cost, timeout)
        else:
            with self.pool(ctx.limits).gpu.shared(), self._admit(ctx, cost):
                res = self._job(ctx, ["load", "outputs"], timeout, trials=trials, on_share=checker)
        return self._judge_trials(ctx, checker, res)

    def _judge_trials(self, ctx: Context, checker: _SharedTrials, res: dict) -> str:
        """The correctness verdict of a job's trials, compared here as they were handed
        over (`_SharedTrials`)."""
        trials = checker.trials
        ctx.metrics["trials_host_s"] = round(checker.host_s, 4)
        ctx.metrics["trials_host_wait_s"] = round(checker.host_wait_s, 4)
        checker.raise_failure()
        if not res["ok"] and not (res["step"] == "time" and checker.passed()):
            self._fail_from(ctx, res)
        if checker.done < len(trials):
            raise GateFail(
                Status.WRONG_ANSWER,
                "shape_mismatch",
                f"trial {checker.done + 1}/{len(trials)}: the runner handed over no outputs",
                feedback="forward returned, but its outputs never reached the verifier",
            )
        ctx.metrics["max_abs_err"] = checker.worst
        return f"{len(trials)} trials pass (GPU, compared on the device); max abs error " + (
            f"{checker.worst:.3g}"
        )

    def _correct_and_time(
        self,
        ctx: Context,
        checker: _SharedTrials,
        cost: dict,
        timeout: float,
        first: Sequence[str] = ("load",),
    ) -> dict:
        """The trials, then the timed runs, in one job (one load of the candidate): the
        GPU shared for the trials, alone only for the timed runs (the runner asks for
        it: `TimingSlot`). What goes wrong once the GPU was granted (every trial passed)
        is kept for the timing gate (`ctx.state["timed"]`). `first`: the job's steps
        before the timed runs (the compile gate's too, `_compile_and_run`)."""
        pool = self.pool(ctx.limits)
        # fresh inputs, and the last timed run's output checked: a timed run is a trial
        seed = int.from_bytes(os.urandom(4), "little")
        last = {"seed": seed, "small": False, "key": "timed", "where": "the last timed run"}
        timed = _SharedTrials(self, ctx, [last])
        # the job stopped while it waits for the GPU alone, and the GPU checked quiet
        # before its timed runs (`TimingSlot`)
        slot = TimingSlot(
            pool.gpu, checker.passed, still=lambda: ctx.state["worker"].still(), quiet=gpu_quiet
        )
        timeout += max(ctx.limits.timeout_s * 3, 30.0 + 150.0 * cost["seconds"])
        steps = [*first, "outputs", "time"]
        share = _CorrectThenTimed(checker, slot, timed)
        try:
            t0 = time.perf_counter()
            with pool.gpu.shared(), self._admit(ctx, cost):
                # before the job starts: another's timed runs (a drain: no job may start
                # while one waits for the GPU alone) or the card's memory
                ctx.metrics["gpu_admit_wait_s"] = round(time.perf_counter() - t0, 4)
                try:
                    res = self._job(
                        ctx,
                        steps,
                        timeout,
                        trials=checker.trials,
                        timing_seed=seed,
                        timing_slot=True,
                        on_share=share,
                    )
                finally:
                    slot.release()
        except GateFail as f:
            if not slot.granted:
                raise
            # every trial had passed: the correctness gate passes, the timing gate fails
            ctx.state["timed"] = {"failure": f, "checker": timed}
            return {"ok": True}
        finally:
            ctx.metrics["gpu_exclusive_s"] = round(slot.exclusive_s, 4)
            if slot.granted or slot.noisy is not None:
                ctx.metrics["timing_slot_wait_s"] = round(slot.wait_s, 4)
                ctx.metrics["gpu_quiet_check_s"] = round(slot.quiet_s, 4)
                ctx.metrics.update(_clock_metrics(slot.checked))
        ctx.state["timed"] = {"res": res, "checker": timed, "noisy": slot.noisy}
        return res

    def gate_timing(self, ctx: Context) -> str:
        self._need_gpu(ctx, "timing")
        # the timed runs ran in the correctness gate's job, once every trial had passed
        timed = ctx.state["timed"]
        if timed.get("failure") is not None:
            raise timed["failure"]
        checker, res = timed["checker"], timed["res"]
        # the GPU stayed busy, or its clock low: no timed run, no label
        if timed.get("noisy") is not None:
            raise _not_quiet(timed["noisy"], "the candidate's timed runs")
        checker.raise_failure()
        if not res["ok"]:
            self._fail_from(ctx, res)
        if checker.done < 1 or "timing" not in res:
            raise GateFail(
                Status.WRONG_ANSWER,
                "shape_mismatch",
                "the last timed run handed over no outputs to check",
            )
        base = self._baselines.get(ctx.task.task_id)
        if base is None:  # once per task, with the GPU alone (nothing else held here)
            with self.pool(ctx.limits).gpu.exclusive():
                base = self._baseline(ctx.task)
        cand = res["timing"]
        ms = cand["median_ms"]
        eager = base["eager"]["median_ms"]
        bar = ctx.task.harness.get("speed_bar", 0.8)
        floor_ms = (
            max(base.get("bytes", 0) / PEAK_BYTES_PER_S, base.get("flops", 0) / PEAK_FLOPS) * 1e3
        )
        speed = judge_speed(ms, eager, bar, floor_ms)
        speedup = speed.speedup
        ctx.metrics.update(
            time_ms=round(ms, 5),
            timing=cand,
            eager_ms=round(eager, 5),
            speedup=round(speedup, 4),
            floor_ms=round(floor_ms, 6),
        )
        compiled = base.get("compile")
        if compiled:
            ctx.metrics["compile_ms"] = round(compiled["median_ms"], 5)
            ctx.metrics["speedup_vs_compile"] = round(compiled["median_ms"] / ms, 4)
        if speed.impossible:
            ctx.metrics["implausible_speedup"] = True
            raise GateFail(Status.REJECTED, "implausible_speedup", speed.note, feedback=speed.note)
        if speed.implausible:
            ctx.metrics["implausible_speedup"] = True
            ctx.notes.append(speed.note)
        if speed.slow:
            self._slow_stands(ctx, eager)
            raise GateFail(Status.SLOW, "slow", speed.note, feedback=speed.note)
        return f"{ms:.4f} ms, {speedup:.2f}x eager" + (
            f", {ctx.metrics['speedup_vs_compile']:.2f}x torch.compile" if compiled else ""
        )

    # --- helpers --------------------------------------------------------------------------
    def _need_gpu(self, ctx: Context, gate: str) -> None:
        if self.device == "cuda":
            return
        # Triton's interpreter is a faithful CPU path for correctness, at sizes it can run
        beyond = ctx.state.get("beyond_cpu")
        cpu_ok = set()
        if self.domain == "triton" and self.device == "cpu" and not beyond:
            cpu_ok = {"correct"}
        if gate in cpu_ok:
            return
        gates = ("launch", *GPU_ONLY_GATES) if gate == "launch" else GPU_ONLY_GATES
        wanted = [g for g in gates if g in self._wanted(ctx.limits) and g not in cpu_ok]
        why = f" ({beyond})" if beyond else ""
        raise GateFail(
            Status.INFRA_ERROR,
            "no_gpu",
            f"{gate} needs a GPU and this node has none{why}"[:300],
            feedback=f"not run without a GPU: {', '.join(wanted)}{why}; every gate before "
            f"{gate} passed on the CPU. Verify on a GPU node, or ask only for the CPU gates "
            "(Limits.gates) to accept a result without them.",
            metrics={"gates_not_run": wanted, **({"beyond_cpu": beyond} if beyond else {})},
        )

    def _cpu_reach(self, ctx: Context) -> dict:
        """What this task's sizes let the CPU path run (`load`: the model built at the
        timing sizes for the launch dry run; `run`: the trials at the small sizes), from
        the sizes alone: tensors made on the meta device, nothing allocated."""
        fp = self._footprint(ctx.task)
        budget = ctx.limits.memory_mb * 2**20
        h = ctx.task.harness
        trials = h.get("trials", 5) + (1 if h.get("shift") else 0)
        seconds = trials * fp["small_elements"] * CPU_ELEMENT_S
        # half the job's CPU budget (what the candidate's process may spend), not its wall
        # clock: a slow machine's short wall limit is the machine's, judged as such later
        deadline = ctx.limits.cpu_s / 2
        gib = 2**30
        if CPU_MEMORY_COPIES * fp["params"] > budget:
            why = (
                f"the model's weights are {fp['params'] / gib:.2f} GiB at the timing sizes, "
                f"past what a {ctx.limits.memory_mb} MB CPU runner can hold"
            )
            return {"load": False, "run": False, "why": why}
        if CPU_MEMORY_COPIES * fp["small_bytes"] > budget:
            why = (
                f"the trials' tensors are {fp['small_bytes'] / gib:.2f} GiB, past what a "
                f"{ctx.limits.memory_mb} MB CPU runner can hold"
            )
            return {"load": True, "run": False, "why": why}
        if self.domain == "triton" and seconds > deadline:
            why = (
                f"{fp['small_elements']:.3g} elements a trial: about {seconds:.0f} s of "
                f"Triton's interpreter for {trials} trials, past half the job's CPU budget "
                f"({ctx.limits.cpu_s} s)"
            )
            return {"load": True, "run": False, "why": why}
        return {"load": True, "run": True, "why": ""}

    def _footprint(self, task: Task) -> dict:
        """Bytes of the model's weights at the timing sizes; bytes (weights, inputs,
        outputs) and elements (inputs, outputs) of one trial at the small sizes."""
        key = ("footprint", task.task_id)
        if key in self._costs:
            return self._costs[key]
        fp = {"params": _meta_sizes(task, False)["params"]}
        small = _meta_sizes(task, True)
        fp["small_bytes"] = small["params"] + small["data"]
        fp["small_elements"] = small["elements"]
        self._costs[key] = fp
        return fp

    def _tolerance(self, task: Task):
        """(atol, rtol) by output dtype: the task's override, else its dtype's row."""
        from verifiers.kernels import spec

        h = task.harness
        return lambda dtype: spec.tolerance(h, dtype)

    def _cost(self, task: Task) -> dict:
        """What the reference costs at this task's sizes, measured here once: seconds to
        draw the inputs and run forward (step limits scale with it), and the bytes of
        inputs and outputs at the timing and the small shapes (GPU memory budgets)."""
        if task.task_id in self._costs:
            return self._costs[task.task_id]
        import torch

        from verifiers.kernels import runner

        cost: dict[str, Any] = {}
        for small in (False, True):
            problem, model = self._reference(task, small)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            inputs = self._inputs(problem, 1, "cuda")
            with torch.no_grad():
                outs = runner.as_outputs(model(*inputs))
            torch.cuda.synchronize()
            tag = "small_" if small else ""
            cost[tag + "out"] = [_nbytes([o]) for o in outs]
            cost[tag + "bytes"] = _nbytes([*inputs, *outs])
            if not small:
                cost["seconds"] = time.perf_counter() - t0
            del inputs, outs
        self._costs[task.task_id] = cost
        return cost

    @contextlib.contextmanager
    def _admit(self, ctx: Context, cost: dict):
        """Hold this job's GPU memory estimate (the runner's inputs, outputs, their
        exported copies and the candidate's working set; the reference and the
        comparison here) until it ends; a job that cannot fit even alone is infra."""
        need = int(4 * cost["bytes"] + 2 * 2**30)
        ctx.state["gpu_budget"] = need
        if not self._gpu_mem.fits(need):
            raise GateFail(
                Status.INFRA_ERROR,
                "gpu_memory",
                f"this task needs about {need / 2**30:.1f} GiB of GPU memory; this card "
                f"has {self._gpu_mem.capacity / 2**30:.1f} GiB for jobs",
            )
        with self._gpu_mem.hold(need):
            yield

    def _build_timeout(self, ctx: Context) -> float:
        if ctx.state.get("path") == "extension":
            return EXTENSION_BUILD_S
        return max(ctx.limits.timeout_s * 3, self.compile_timeout_s)

    def _job(
        self,
        ctx: Context,
        steps: list[str],
        timeout_s: float,
        *,
        aot: bool = False,
        on_share=None,
        **extra,
    ) -> dict:
        pool = self.pool(ctx.limits, aot)
        slot = "aot_worker" if aot else "worker"
        worker = ctx.state.get(slot)
        if worker is None:
            try:
                worker = ctx.state[slot] = pool.lease()
            except WorkerDied as e:
                raise GateFail(
                    Status.INFRA_ERROR, "harness_error", f"no runner process: {e}"[:300]
                ) from None
        h = ctx.task.harness
        # one token per verification: the runner's private caches for this candidate only
        session = ctx.state.setdefault("session", os.urandom(16).hex())
        job = {
            "steps": steps,
            "session": session,
            "domain": self.domain,
            "device": self.device,
            "problem": _runner_problem(h["problem"]),
            "kernels": anticheat.claimed_kernels(ctx.code) if self.domain == "triton" else [],
            "small": small_sizes(ctx.task),
            "code": ctx.code,
            "entry": ctx.task.interface.get("entry", "ModelNew"),
            "init_seed": 42,
            "device_limits": self.device_limits().to_dict(),
            "timing_mode": self.timing_mode,
            "timing_sleep": self.timing_sleep,
            **ctx.state.get("job_extra", {}),
            **extra,
        }
        if self.device == "cuda" and not aot and self.gpu_connections is not None:
            job["gpu_connections"] = self.gpu_connections  # the child's context, made fresh
            ctx.metrics["gpu_connections"] = self.gpu_connections
        if self.domain == "triton" and not aot and self._triton_seeds:
            seeded = self._triton_seeds.get(triton_seed_key(ctx.task.task_id, ctx.code))
            if seeded:  # compiled on a build node: the JIT finds them in its cache
                job["triton_seed"] = seeded
                ctx.metrics["triton_seeded_files"] = len(seeded)
        if "outputs" in steps and on_share is None:  # outputs as files (CPU nodes)
            out = worker.fresh_outdir()
            job["out_dir"] = ctx.state["out_dir"] = worker.guest_path(out)
        if self.device == "cuda" and ctx.state.get("gpu_budget"):
            import torch

            total = torch.cuda.get_device_properties(0).total_memory
            job["gpu_fraction"] = min(1.0, ctx.state["gpu_budget"] / total)
        t0 = time.perf_counter()
        oom_before = oom_kills()
        # on a GPU the job runs attached to the GPU lock: another's timing pauses it whole,
        # and it does not start during one (`GpuLock`)
        gpu_job = self.device == "cuda" and not aot
        try:
            kw = {"cpu_s": ctx.limits.cpu_s, "output_bytes": ctx.limits.output_bytes}
            with pool.gpu.attach(worker) if gpu_job else contextlib.nullcontext():
                if on_share is not None:
                    res = worker.run_shared(job, timeout_s, on_share, **kw)
                else:
                    res = worker.run(job, timeout_s, **kw)
        except MachineFault:  # the machine, not the candidate: infra (verifiers.base)
            ctx.state.setdefault("dirty", set()).add(slot)
            raise
        except OutputFlood as e:  # the runner was stopped at the cap
            ctx.state.setdefault("dirty", set()).add(slot)
            raise GateFail(
                Status.RESOURCE_LIMIT,
                "output_limit",
                f"{'/'.join(steps)}: {e}",
                feedback=f"the candidate printed more than {e.cap} bytes on its {e.stream} "
                f"during {'/'.join(steps)}; print less (or nothing)",
            ) from None
        except JobTimeout as e:
            ctx.state.setdefault("dirty", set()).add(slot)
            raise GateFail(
                Status.TIMEOUT,
                "kernel_timeout",
                f"{'/'.join(steps)}: {e}",
                feedback=f"the candidate did not finish {'/'.join(steps)} in {timeout_s:.0f}s",
            ) from None
        except WorkerStartError as e:
            ctx.state.setdefault("dirty", set()).add(slot)
            raise GateFail(
                Status.INFRA_ERROR, "harness_error", f"the runner did not start: {e}"[:300]
            ) from None
        except StopResisted as e:
            ctx.state.setdefault("dirty", set()).add(slot)
            raise GateFail(
                Status.RUNTIME_ERROR,
                "resisted_stop",
                f"{'/'.join(steps)}: {e}"[:300],
                feedback="the candidate's processes sent each other SIGCONT (or let a stop go) "
                "while the host had stopped them; a kernel has no reason to signal processes",
            ) from None
        except WorkerDied as e:
            ctx.state.setdefault("dirty", set()).add(slot)
            raise GateFail(
                Status.RUNTIME_ERROR,
                "kernel_exception",
                f"the runner process died during {'/'.join(steps)}",
                feedback=str(e)[-1500:],
            ) from None
        finally:
            ctx.tool_seconds += time.perf_counter() - t0
        if not isinstance(res.get("seconds"), dict):
            res["seconds"] = {}
        self._machine_or_candidate(ctx, res, oom_before, slot)
        ctx.metrics.setdefault("runner_seconds", {}).update(res["seconds"])
        # a failed job leaves nothing behind: it ran in a child of the runner, now gone
        return res

    def _machine_or_candidate(
        self, ctx: Context, res: dict, oom_before: int | None, slot: str = "worker"
    ) -> None:
        """A job whose runner child died, ran out of GPU memory or had no working GPU: the
        machine's doing (MachineFault: infra, retried) when the node's OOM killer struck
        while the child was within its memory budget, the card was full, or the runner
        says the child's GPU failed before the candidate's code was read; else the
        candidate's."""
        if res.get("ok") or not isinstance(res.get("error"), dict):
            return
        err, died = res["error"], res.get("died")
        if res.get("gpu_unavailable") is True:  # the runner's own word (`run_forked`)
            raise MachineFault(
                "gpu_unavailable",
                "the job's process could not use the GPU before the candidate's code ran: "
                + f"{err.get('type')}: {err.get('message')}"[:260],
            )
        if isinstance(died, dict) and died.get("signal") == "SIGKILL":
            now = oom_kills()
            struck = now is not None and oom_before is not None and now > oom_before
            rss_mb = int(died.get("peak_rss_kb") or 0) // 1024
            if struck and rss_mb < ctx.limits.memory_mb:
                ctx.state.setdefault("dirty", set()).add(slot)
                raise MachineFault(
                    "killed_externally",
                    f"the node's OOM killer killed the runner (its peak RSS {rss_mb} MB, "
                    f"within its {ctx.limits.memory_mb} MB)",
                )
            if struck:
                err["type"], err["types"] = "MemoryError", ["builtins.MemoryError"]
                err["message"] = (
                    f"the candidate's process grew to {rss_mb} MB of host memory "
                    f"(budget {ctx.limits.memory_mb} MB) and the OOM killer stopped it"
                )
        if err.get("type") == "OutOfMemoryError" and oom_was_the_card(err.get("message", "")):
            raise MachineFault(
                "gpu_memory",
                f"{res.get('step')}: the card had no room for the job: "
                f"{str(err.get('message'))[:240]}",
            )
        if _BUILD_TOOL_MISSING.search(str(err.get("message", ""))):  # the node's toolchain
            raise MachineFault(
                "tool_missing",
                "load_inline could not run the build toolchain in the sandbox: "
                + str(err.get("message", ""))[-300:],
            )
        if err.get("type") == "ShareError":  # exported GPU memory failed: the driver's
            raise MachineFault("gpu_memory", f"sharing GPU memory: {err.get('message')}"[:300])

    def _fail_from(self, ctx: Context, res: dict) -> None:
        err = res["error"]
        status, code = classify_python(res["step"], err)
        feedback = feedback_from(err)
        if code == "launch_exceeds_limit":  # the limit it broke, whatever raised it
            feedback += "\n" + self.device_limits().describe()
        raise GateFail(
            status,
            code,
            f"{res['step']}: {err['type']}: {err['message'][:240]}",
            feedback=feedback,
        )

    # reference outputs, computed here (never in the candidate's process)
    def _reference(self, task: Task, small: bool):
        from verifiers.kernels import runner

        key = (task.task_id, self.device, small)
        with self._rng:
            if key not in self._refs:
                h = task.harness
                tag = f"ref_{'s' if small else 'f'}"
                problem = runner.problem_module(
                    h["problem"], small_sizes(task) if small else None, tag
                )
                model = runner.build_reference(problem, 42, "cpu")
                # built twice (once a task): the weights every trial's outputs come from
                # must be seed 42's, not what a draw elsewhere in the process left
                if not _same_state(model, runner.build_reference(problem, 42, "cpu")):
                    raise MachineFault(
                        "draw_disturbed",
                        f"the reference of {task.name} built twice from seed 42 came out "
                        "different: something else in this process draws from torch's "
                        "random generators meanwhile",
                    )
                self._refs[key] = (problem, model.to(self.device))
        return self._refs[key]

    def _inputs(self, problem, seed: int, device: str, shift: float = 0.0) -> list:
        from verifiers.kernels import runner

        # no synchronize inside: a CUDA draw's kernel takes its generator's seed and offset
        # when it is launched (torch's philox state is read on the host then), so the next
        # thread's reseed cannot reach a draw already launched. Waiting here for the GPU
        # (on a shared card, for this process's turn there) kept every other verify
        # thread's draw waiting too.
        with self._rng:
            return runner.make_inputs(problem, seed, device, shift)

    def _mutated(self, ctx: Context, trial: dict, inputs: list, where: str, k: int, x):
        """The candidate's `inputs_mutated`, once this verifier's own draw of the trial's
        inputs is shown to be the seed's: drawn again, it must come out the same bits. One
        that does not was disturbed by a draw elsewhere in the process (a caller's own
        torch code beside the reward service): the machine's, `draw_disturbed` (infra,
        retried). Without room for a second draw the verdict stands (the verifiers' own
        draws never interleave: `TORCH_RNG`)."""
        import torch

        from verifiers.kernels.compare import same_bits

        problem, _ = self._reference(ctx.task, trial["small"])
        device = next((y.device.type for y in inputs if isinstance(y, torch.Tensor)), "cpu")
        try:
            again = self._inputs(problem, trial["seed"], device, trial.get("shift", 0.0))
        except torch.OutOfMemoryError:
            return inputs_mutated(where, k, x)
        for a, b in zip(inputs, again, strict=True):
            same = (
                same_bits(a, b)
                if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                else type(a) is type(b) and a == b
            )
            if not same:
                raise MachineFault(
                    "draw_disturbed",
                    f"{where}: the verifier's own draw of seed {trial['seed']}'s inputs came "
                    "out different twice: something else in this process draws from "
                    "torch's random generators meanwhile",
                )
        return inputs_mutated(where, k, x)

    def _compare(self, ctx: Context, trials: list[dict], res: dict) -> str:
        import torch

        from verifiers.kernels.compare import compare, same_bits

        worst = 0.0
        for i, trial in enumerate(trials):
            drawn = self._trial_reference(ctx, trial, self.device)
            if drawn is None:
                continue
            inputs, want = drawn
            tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
            try:
                files = res["outputs"][i]
                if not isinstance(files, dict):
                    raise ValueError("no outputs and inputs listed")
                got = self._read_outputs(ctx, files.get("outputs"), want)
                after = self._read_outputs(ctx, files.get("inputs"), tensors, "input")
            except (OutputRefused, ValueError, TypeError, KeyError, IndexError) as e:
                raise GateFail(
                    Status.WRONG_ANSWER, "shape_mismatch", f"trial {i + 1}: unreadable output: {e}"
                ) from None
            for k, (x, y) in enumerate(zip(tensors, after, strict=True)):
                if not same_bits(y, x):
                    raise self._mutated(ctx, trial, inputs, f"trial {i + 1}/{len(trials)}", k, x)
            verdict = compare(got, want, tol=self._tolerance(ctx.task))
            if not verdict.ok:
                where = trial_where(trial)
                raise GateFail(
                    Status.WRONG_ANSWER,
                    verdict.code,
                    f"trial {i + 1}/{len(trials)} ({where}): {verdict.summary}",
                    feedback=f"trial {i + 1} of {len(trials)} at the {where}, seed "
                    f"{trial['seed']}: {verdict.detail}",
                    metrics={"failed_trial": i, "max_abs_err": verdict.max_abs_err},
                )
            worst = max(worst, verdict.max_abs_err)
        ctx.metrics["max_abs_err"] = worst
        where = "CPU interpreter, small shapes" if self.device == "cpu" else "GPU"
        return f"{len(trials)} trials pass ({where}); max abs error {worst:.3g}"

    def _trial_reference(self, ctx: Context, trial: dict, device: str):
        """(inputs, reference outputs) of one trial, drawn here; None for a shifted trial
        where the reference itself is not finite (skipped, noted in the metrics)."""
        import torch

        from verifiers.kernels import runner

        problem, model = self._reference(ctx.task, trial["small"])
        inputs = self._inputs(problem, trial["seed"], device, trial.get("shift", 0.0))
        with torch.no_grad():
            want = runner.as_outputs(model(*inputs))
        if trial.get("shift") and not all(
            bool(torch.isfinite(w).all()) for w in want if w.is_floating_point()
        ):
            ctx.metrics["shifted_trial"] = "skipped: the reference is not finite there"
            return None
        return inputs, want

    def _read_outputs(self, ctx: Context, metas: list, want: list, what: str = "output") -> list:
        """The runner's output (or after-forward input) files for one trial, read by the
        host: only a plain file (no link anywhere on its path) of exactly the size of the
        reference's tensor."""
        from verifiers.kernels import runner

        if not isinstance(metas, list) or len(metas) != len(want):
            n = len(metas) if isinstance(metas, list) else "no"
            raise ValueError(f"forward returned {n} {what}(s); the reference has {len(want)}")
        worker, out_dir = ctx.state["worker"], ctx.state["out_dir"]
        got = []
        for k, (meta, w) in enumerate(zip(metas, want, strict=True)):
            dtype, shape = str(w.dtype).removeprefix("torch."), list(w.shape)
            if meta.get("dtype") != dtype or [int(s) for s in meta.get("shape", [])] != shape:
                raise ValueError(
                    f"{what} {k} is a {meta.get('dtype')}{meta.get('shape')}, "
                    f"expected a {dtype}{shape}"
                )
            nbytes = runner.raw_nbytes(w.dtype, shape)
            name = Path(str(meta["file"])).name  # never a path the candidate chose
            data = worker.read_output(f"{out_dir}/{name}", nbytes)
            got.append(runner.tensor_from_bytes(data, w.dtype, shape, self.device))
        return got

    def prepare_baselines(
        self,
        tasks: Sequence[Task],
        limits: Limits | None = None,
        compile_for: set[str] | None = None,
    ) -> None:
        """Measure the reference timings of these tasks now (a bench does this before it
        times verification, so torch.compile's minutes stay out of the throughput);
        `compile_for` names the tasks that also get a torch.compile baseline."""
        if self.device != "cuda":
            return
        pool = self.pool(limits or Limits())
        for task in tasks:
            with pool.gpu.exclusive():
                want = self.compile_baseline or (
                    compile_for is not None and task.name in compile_for
                )
                self._baseline(task, want)

    def _baseline(self, task: Task, with_compile: bool | None = None) -> dict:
        """Eager (and torch.compile) timings of the reference, measured here once per task."""
        if task.task_id in self._baselines:
            return self._baselines[task.task_id]
        if with_compile is None:
            with_compile = self.compile_baseline
        import torch

        from verifiers.kernels import runner

        eager, model, inputs = self._time_eager(task, "the reference's baseline timing")
        with torch.no_grad():
            outs = runner.as_outputs(model(*inputs))
        nbytes = sum(x.numel() * x.element_size() for x in [*inputs, *outs] if hasattr(x, "numel"))
        base: dict[str, Any] = {
            "eager": eager,
            "bytes": nbytes,
            "flops": _flops(model, inputs),
        }
        if with_compile:
            try:
                compiled = torch.compile(model)
                base["compile"] = runner.time_cuda(
                    compiled, inputs, mode=self.timing_mode, sleep=self.timing_sleep
                )
            except Exception as e:
                base["compile_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        self._baselines[task.task_id] = base
        return base


class TritonVerifier(KernelVerifier):
    """Triton compiles a kernel in the candidate's own process at its first launch (JIT,
    specialised on the run-time arguments). A build node's `prebuild` runs the candidate's
    forward on meta tensors in a sandboxed runner of its own, where each launch compiles
    for sm_90 and nothing launches (`runner.precompile`); the verifying GPU node seeds that
    candidate's job cache with the files (`seed`), and its JIT finds the kernels compiled."""

    domain = "triton"
    name = "triton-verifier"

    def prebuild(self, task: Task, code: str, limits: Limits | None = None) -> list[dict]:
        """This candidate's Triton kernels compiled for sm_90 here (a build node: no GPU),
        in an aot runner's sandbox (the candidate's forward runs there, on meta tensors),
        returned as one entry ({"cache": "triton", "key", "body": {"files"}}) for the
        verifying node's `seed`. Nothing compiled, compile not among the gates, or no
        Triton here: []. The verifying node still runs every gate; a kernel it launches
        differently from here compiles there."""
        limits = limits or Limits()
        if "compile" not in self._wanted(limits) or self.missing_tools():
            return []
        workdir = Path(tempfile.mkdtemp(prefix="crucible-triton-prebuild-"))
        ctx = Context(task, code, limits, Sandbox(limits), workdir)
        pool = self.pool(limits, aot=True)
        try:
            res = self._job(ctx, ["precompile"], self._build_timeout(ctx), aot=True)
            worker = ctx.state.get("aot_worker")
            if not res.get("ok") or worker is None:
                return []
            files = _read_triton_cache(worker.work / f".session-{ctx.state['session']}/triton")
        except (GateFail, MachineFault):  # the GPU node compiles it, as without a build node
            return []
        finally:
            worker = ctx.state.pop("aot_worker", None)
            if worker is not None:
                pool.release(worker, dirty="aot_worker" in ctx.state.get("dirty", set()))
            shutil.rmtree(workdir, ignore_errors=True)
        if not files:
            return []
        done = res["precompiled"]
        body = {
            "files": files,
            "kernels": [k for k in done if "hash" in k],
            "stopped": [k for k in done if "stopped" in k],  # forwards that read a value
        }
        return [{"cache": "triton", "key": triton_seed_key(task.task_id, code), "body": body}]

    def missing_tools(self) -> list[Tool]:
        missing = super().missing_tools()
        try:
            found = importlib.util.find_spec("triton") is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(self.python_tool("triton"))
        return missing

    def _extra_toolchain(self) -> dict[str, str]:
        try:
            import triton

            return {"triton": triton.__version__}
        except ImportError:
            return {}

    def parse_domain(self, ctx: Context) -> str:
        if "triton" not in ctx.code or "jit" not in ctx.code:
            raise GateFail(
                Status.FORMAT_ERROR,
                "missing_entry_point",
                "no @triton.jit kernel in the candidate",
                feedback="write the kernels as @triton.jit functions launched from forward",
            )
        return "Python parses; ModelNew and a @triton.jit kernel present"

    def compile_domain(self, ctx: Context) -> str:
        return "Triton JIT" if self.device == "cuda" else "Triton interpreter + AOT for sm_90"


class CudaVerifier(KernelVerifier):
    domain = "cuda"
    name = "cuda-verifier"
    tools = (
        Tool(
            "nvcc",
            "nvcc",
            ("nvcc", "--version"),
            NVCC_INSTALL_HINT,
        ),
    )

    def missing_tools(self) -> list[Tool]:
        # nvcc is often off PATH (/usr/local/cuda/bin): find_nvcc looks there too
        missing = [t for t in super().missing_tools() if t.name != "nvcc"]
        if find_nvcc() is None:
            nvcc = self.tools[0]
            hint = f"{nvcc.install}; the {self.domain} toolchain: {self.install_hint}"
            missing.append(dataclasses.replace(nvcc, install=hint))
        return missing

    def _extra_toolchain(self) -> dict[str, str]:
        from verifiers.kernels.nvcc import nvcc_version

        nvcc = find_nvcc()
        return {"nvcc": nvcc_version(nvcc)} if nvcc else {}

    def parse_domain(self, ctx: Context) -> str:
        src = ctx.state["cuda_src"] = cuda_src(ctx.code)
        path = "device" if src is not None else cuda_path(ctx.code)
        if path is None:
            raise GateFail(
                Status.FORMAT_ERROR,
                "missing_entry_point",
                "no CUDA source: neither a module-level CUDA_SRC string nor load_inline",
                feedback='put the kernels in a module-level string CUDA_SRC = r"""..."""'
                ' (extern "C" __global__) and launch them with cuda_kernel(name), or build '
                "them with torch.utils.cpp_extension.load_inline",
            )
        ctx.state["path"] = path
        ctx.metrics["path"] = path
        return f"Python parses; {path} path"

    def prebuild(self, task: Task, code: str, limits: Limits | None = None) -> list[dict]:
        """What this candidate's compile gate would build, built here (a build node: CPU
        only, no runner, no candidate code run): the cubin (device path) or every
        load_inline call (linked where this torch can link), returned as the entries its
        caches hold, for the verifying node's `seed`. Only the parse the paths need runs
        first; the verifying node still runs every gate, these only spare it the compiles.
        Nothing to build (no CUDA source, a call spelled at run time, compile not among
        the gates, no nvcc): []. A build cut short (timeout, crash) leaves no entry."""
        limits = limits or Limits()
        if "compile" not in self._wanted(limits) or find_nvcc() is None:
            return []
        src = cuda_src(code)
        if src is not None:
            from verifiers.kernels.nvcc import HostCache

            res = compile_cubin(
                src, Sandbox(limits), cache_dir=self.cache_dir, timeout_s=self.compile_timeout_s
            )
            return _entries("cubin", HostCache(self.cache_dir), [res.key])
        from verifiers.kernels import build

        specs = build.inline_specs(code) if "load_inline" in code else None
        if not specs:
            return []
        builder = build.Builder(
            limits, self.cache_dir, pch=self.settings.pch, timeout_s=EXTENSION_BUILD_S
        )
        link = build.torch_can_link()  # a build node has no GPU, but may have CUDA torch
        for spec in specs:
            if not builder.build(spec, link=link).ok:  # the gate stops there too
                break
        return _entries("inline", builder.cache, builder.keys)

    def compile_domain(self, ctx: Context) -> str:
        if ctx.state["path"] == "device":
            src = ctx.state["cuda_src"]
            res = compile_cubin(
                src, ctx.sandbox, cache_dir=self.cache_dir, timeout_s=self.compile_timeout_s
            )
            ctx.tool_seconds += res.seconds
            ctx.metrics["nvcc_seconds"] = round(res.seconds, 4)
            ctx.metrics["nvcc_cached"] = res.cached
            if res.timed_out:
                raise GateFail(Status.TIMEOUT, "tool_timeout", res.log)
            if res.output_capped:  # its messages about the candidate's source: a flood
                raise GateFail(Status.RESOURCE_LIMIT, "output_limit", res.log)
            if res.crashed:  # the compiler died: the toolchain's fault, retried
                raise GateFail(Status.INFRA_ERROR, "tool_crash", f"nvcc crashed: {res.log[-300:]}")
            if not res.ok:
                raise nvcc_failure(res.log)
            ctx.metrics["ptxas"] = {
                k: {"registers": r.registers, "smem": r.static_shared, "spills": r.spill_stores}
                for k, r in res.resources.items()
            }
            cubin = res.cubin if self.device == "cuda" else None
            ctx.state["job_extra"] = {
                "cuda_src": src,
                "cubin_b64": base64.b64encode(cubin).decode() if cubin else None,
                "kernel_resources": {k: dataclasses.asdict(r) for k, r in res.resources.items()},
            }
            kernels = ", ".join(
                f"{k} {r.registers} regs {r.static_shared} B smem" for k, r in res.resources.items()
            )
            cached = " (cached)" if res.cached else ""
            return f"nvcc sm_90 cubin in {res.seconds:.2f}s{cached}: {kernels}"
        # extension: built here, off the GPU and outside any GPU admission, when every
        # load_inline call can be read from the source (`verifiers.kernels.build`)
        from verifiers.kernels import build

        specs = build.inline_specs(ctx.code)
        if specs is None:  # a call spelled at run time: load_inline builds in the runner
            if self.device == "cuda":
                return "load_inline (built in the runner: its arguments are made at run time)"
            from verifiers.kernels.extension import compile_only

            detail = compile_only(ctx)
        else:
            detail = self._build_inline(ctx, specs)
        if self.device != "cuda":
            ctx.state["skip_runner"] = True  # C++ launches cannot be dry-run
            ctx.state["launch_note"] = "C++ launches of an extension are checked on the GPU only"
        return detail

    def _build_inline(self, ctx: Context, specs: list[dict]) -> str:
        """Every load_inline call built by the host (cached by content, the C++ unit on a
        precompiled torch/extension.h); linked where this torch can (a GPU node), its
        library handed to the runner in the job. A CPU node compiles every unit."""
        from verifiers.kernels import build

        link = self.device == "cuda" and build.torch_can_link()
        builder = build.Builder(
            ctx.limits, self.cache_dir, pch=self.settings.pch, timeout_s=EXTENSION_BUILD_S
        )
        prebuilt: dict[str, dict] = {}
        report = []
        for spec in specs:
            res = builder.build(spec, link=link)
            ctx.tool_seconds += res.seconds
            report.append(
                {
                    "name": spec["name"],
                    "seconds": round(res.seconds, 3),
                    "cached": res.cached,
                    "units_cached": res.units,
                    "pch": res.pch,
                }
            )
            ctx.metrics["extension_build"] = report
            if res.timed_out:
                raise GateFail(
                    Status.TIMEOUT, "tool_timeout", f"the build of {spec['name']} did not finish"
                )
            if res.output_capped:  # the compilers' messages about its sources: a flood
                raise GateFail(
                    Status.RESOURCE_LIMIT,
                    "output_limit",
                    f"the compilers printed more than {ctx.limits.output_bytes} bytes about "
                    f"{spec['name']}'s sources; stopped",
                    feedback=res.log[-2000:],
                )
            if res.crashed:  # the compiler died: the toolchain's fault, retried
                raise GateFail(
                    Status.INFRA_ERROR, "tool_crash", f"the compiler crashed: {res.log[-300:]}"
                )
            if not res.ok:
                raise nvcc_failure(res.log)
            if res.library is not None:
                key = build.spec_key(spec, build.toolchain())
                so_b64 = base64.b64encode(res.library).decode()
                prebuilt[key] = {"name": spec["name"], "so_b64": so_b64}
        if link:
            ctx.state["job_extra"] = {"prebuilt": prebuilt, "toolchain": build.toolchain()}
        seconds = sum(r["seconds"] for r in report)
        where = "built and linked" if link else "every unit compiled (no link on this node)"
        cached = sum(bool(r["cached"]) or all(r["units_cached"].values()) for r in report)
        return (
            f"{len(specs)} load_inline extension(s) {where} for sm_90 in {seconds:.1f}s "
            f"({cached} from the build cache)"
        )


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except ValueError:
        return False
    return True


def triton_seed_key(task_id: str, code: str) -> str:
    """The key a build node's Triton compiles of one candidate go by (`TritonVerifier.
    prebuild`, `KernelVerifier.seed`): only that candidate's jobs are seeded with them."""
    h = hashlib.sha256(task_id.encode() + b"\0" + code.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _read_triton_cache(root: Path, max_bytes: int = tritondriver.SEED_MAX_BYTES) -> dict[str, str]:
    """A job's Triton cache as {"<key>/<file>": base64}: each kernel's metadata and cubin
    (`tritondriver.seed_name_ok`: what a launch loads; not the IR, nor the group file,
    which names the build node's paths), regular files only, never through a link,
    SEED_MAX_FILES and SEED_MAX_BYTES in all. The files came from the candidate's
    sandbox: they only ever seed its own jobs."""
    out: dict[str, str] = {}
    total = 0
    looked = 0  # names looked at: a cache of a million empty dirs is not read whole
    try:
        dirs = _first_entries(root, 2 * tritondriver.SEED_MAX_FILES)
    except OSError:
        return {}
    for d in dirs:
        if not d.is_dir(follow_symlinks=False):
            continue
        try:
            entries = _first_entries(Path(d.path), tritondriver.SEED_MAX_FILES)
        except OSError:
            continue
        for f in entries:
            looked += 1
            if looked > 2 * tritondriver.SEED_MAX_FILES or len(out) >= tritondriver.SEED_MAX_FILES:
                return out
            rel = f"{d.name}/{f.name}"
            if not (f.is_file(follow_symlinks=False) and tritondriver.seed_name_ok(rel)):
                continue
            try:
                data = read_beneath(root, Path(f.path), max_bytes - total)
            except (OSError, OutputRefused):
                return out  # past the cap: what fits (a kernel missing compiles there)
            total += len(data)
            out[rel] = base64.b64encode(data).decode("ascii")
    return out


def _first_entries(path: Path, n: int) -> list[os.DirEntry]:
    """The first `n` entries of a dir, in the order the file system gives them."""
    with os.scandir(path) as it:
        return list(itertools.islice(it, n))


def _entries(name: str, cache, keys: Sequence[str]) -> list[dict]:
    """The cache entries under `keys` as `KernelVerifier.seed` takes them (JSON-safe)."""
    out = []
    for key in dict.fromkeys(k for k in keys if k):
        body = cache.body(key)
        if body is not None:
            out.append({"cache": name, "key": key, "body": body})
    return out


def small_sizes(task: Task) -> dict:
    """The sizes of the tail trial: the task's [harness.small], or, for a task without one
    (a KernelBench import: its sizes are powers of two, so every block is full and a
    dropped tail guard or store mask never shows), its timing sizes made ragged."""
    h = task.harness
    if h.get("small"):
        return dict(h["small"])
    return dict(_ragged_sizes(h["problem"]))


@functools.lru_cache(maxsize=256)
def _ragged_sizes(problem_text: str) -> tuple[tuple[str, int], ...]:
    """Each even size of at least 64 one less (odd: no block size divides it, so the last
    block of every launch over it is partial; memory as at the timing sizes). Smaller ones
    (heads, kernel widths, channels) stay: they are often structural. Kept only if the
    reference still runs there (on the meta device: nothing allocated); else none."""
    import torch

    from verifiers.kernels import runner
    from verifiers.kernels.spec import problem_facts

    try:
        sizes = problem_facts(problem_text, "problem.py")["sizes"]
    except Exception:  # not a layout we can read: no tail trial of our own
        return ()
    ragged = {
        k: v - 1
        for k, v in sizes.items()
        if isinstance(v, int) and not isinstance(v, bool) and v >= 64 and v % 2 == 0
    }
    if not ragged:
        return ()
    try:
        problem = runner.problem_module(problem_text, ragged, "ragged")
        with torch.device("meta"), torch.no_grad():
            inputs = problem.get_inputs()
            problem.Model(*problem.get_init_inputs())(*inputs)
    except Exception:  # the reference needs those sizes as they were (a divisibility)
        return ()
    return tuple(sorted(ragged.items()))


def _meta_sizes(task: Task, small: bool) -> dict:
    """The problem's weights, inputs and outputs at the timing (or small) sizes, made on
    the meta device: their bytes and elements without allocating them. An output that
    the meta device cannot compute counts as large as the inputs."""
    import torch

    from verifiers.kernels import runner

    h = task.harness
    problem = runner.problem_module(h["problem"], small_sizes(task) if small else None, "meta")
    with torch.device("meta"):
        inputs = [x for x in problem.get_inputs() if isinstance(x, torch.Tensor)]
        model = problem.Model(*problem.get_init_inputs())
    weights = [*model.parameters(), *model.buffers()]
    try:
        with torch.no_grad():
            outs = [o for o in runner.as_outputs(model(*inputs)) if o.device.type == "meta"]
    except Exception:  # an op without a meta kernel: as large as the inputs
        outs = inputs
    return {
        "params": _nbytes(weights),
        "data": _nbytes(inputs) + _nbytes(outs),
        "elements": sum(x.numel() for x in [*inputs, *outs]),
    }


def _flops(model, inputs) -> int:
    """The reference's FLOPs as torch counts them (matmuls, convolutions; 0 for what it
    does not count): the compute half of the floor under a plausible time."""
    try:
        import torch
        from torch.utils.flop_counter import FlopCounterMode

        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model(*inputs)
        return int(counter.get_total_flops())
    except Exception:  # a counter that cannot follow the model: no compute floor
        return 0


def _same_state(a, b) -> bool:
    """Two modules' parameters and buffers, bit for bit."""
    from verifiers.kernels.compare import same_bits

    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(same_bits(sa[k], sb[k]) for k in sa)


def inputs_mutated(where: str, k: int, x) -> GateFail:
    return GateFail(
        Status.WRONG_ANSWER,
        "inputs_mutated",
        f"{where}: forward changed its input {k} ({x.dtype}{list(x.shape)})",
        feedback=f"{where}: forward wrote into input {k}; a kernel must leave its inputs "
        "as it got them (write results into new tensors)",
    )


def _nbytes(xs) -> int:
    return sum(x.numel() * x.element_size() for x in xs if hasattr(x, "element_size"))


_OOM = re.compile(
    r"Tried to allocate ([\d.]+) ([KMGT]i?B).*?of which ([\d.]+) ([KMGT]i?B) is free", re.S
)
_UNIT = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
# ninja could not start the compiler itself (exit 126/127): the node's, not the source's
_BUILD_TOOL_MISSING = re.compile(
    r"Error building extension.*?(FAILED: \[code=12[67]\]|"
    r"(c\+\+|g\+\+|gcc|cc|nvcc|ninja): (Permission denied|not found))",
    re.S,
)


def oom_was_the_card(message: str) -> bool:
    """torch's CUDA out-of-memory message: True when the card had less free memory than
    the allocation asked for (other jobs held it: the machine's), False when it had room
    and the runner's own share refused it (the candidate's excess)."""
    m = _OOM.search(message or "")
    if not m:
        return False
    want = float(m[1]) * _UNIT[m[2][0]]
    free = float(m[3]) * _UNIT[m[4][0]]
    return free < want


class _SharedTrials:
    """The verifier's side of a GPU job's trials: the runner hands each trial's inputs
    and outputs over as exported GPU memory (a header naming the trial, and fds); this
    computes the reference for that trial here, checks the inputs came back unchanged and
    compares the outputs on the GPU, then tells the runner to go on or stop. The first
    failure is kept (`raise_failure`) for the gate to raise once the job is over."""

    def __init__(self, verifier: KernelVerifier, ctx: Context, trials: list[dict]):
        self.v, self.ctx, self.trials = verifier, ctx, trials
        self.done = 0
        self.worst = 0.0
        self.failure: GateFail | None = None
        # the host's side of the trials: waiting to use the GPU (another's timing), and
        # checking them (drawing each reference, comparing)
        self.host_wait_s = 0.0
        self.host_s = 0.0

    def raise_failure(self) -> None:
        if self.failure is not None:
            raise self.failure

    def passed(self) -> bool:
        """Every trial handed over and passed."""
        return self.failure is None and self.done >= len(self.trials)

    def __call__(self, header: dict, fds: list[int]) -> dict:
        if self.failure is not None or self.done >= len(self.trials):
            return {"go": False}
        t0 = time.perf_counter()
        try:
            with self.v._gpu.host_use():  # never beside a timing (one lock per card)
                t1 = time.perf_counter()
                try:
                    self._check(header, fds)
                finally:
                    self.host_wait_s += t1 - t0
                    self.host_s += time.perf_counter() - t1
            self.done += 1
            return {"go": self.done < len(self.trials)}
        except GateFail as f:
            self.failure = f
        except MachineFault as e:
            self.failure = GateFail(Status.INFRA_ERROR, e.code, e.detail)
        except Exception as e:  # the verifier's own trouble (CUDA, a bug): never a label
            self.failure = GateFail(
                Status.INFRA_ERROR,
                "harness_error",
                f"comparing trial {self.done + 1}: {type(e).__name__}: {str(e)[:240]}",
            )
        return {"go": False}

    def _where(self, i: int, trial: dict) -> str:
        if trial.get("where"):
            return trial["where"]
        return f"trial {i + 1}/{len(self.trials)} ({trial_where(trial)})"

    def _check(self, header: dict, fds: list[int]) -> None:
        import torch

        from verifiers.kernels.compare import compare, same_bits

        i = self.done
        trial = self.trials[i]
        where = self._where(i, trial)
        key = trial.get("key", i)
        if header.get("trial") != key:
            raise GateFail(
                Status.WRONG_ANSWER,
                "shape_mismatch",
                f"{where}: the runner handed over {str(header.get('trial'))[:40]!r}, not it",
            )
        v, ctx = self.v, self.ctx
        drawn = v._trial_reference(ctx, trial, "cuda")
        if drawn is None:
            return
        inputs, want = drawn
        tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
        metas = header.get("outputs")
        n_in = header.get("inputs")
        if not isinstance(metas, list) or len(metas) != len(want):
            n = len(metas) if isinstance(metas, list) else "no"
            raise GateFail(
                Status.WRONG_ANSWER,
                "shape_mismatch",
                f"{where}: forward returned {n} output(s); the reference returns {len(want)}",
            )
        if n_in != len(tensors) or len(fds) != len(tensors) + len(want):
            raise GateFail(
                Status.WRONG_ANSWER,
                "shape_mismatch",
                f"{where}: the runner handed over {len(fds)} tensors, not "
                f"{len(tensors)} inputs and {len(want)} outputs",
            )
        for k, (meta, w) in enumerate(zip(metas, want, strict=True)):
            dtype, shape = str(w.dtype).removeprefix("torch."), list(w.shape)
            if (
                not isinstance(meta, dict)
                or meta.get("dtype") != dtype
                or meta.get("shape") != shape
            ):
                got = f"{meta.get('dtype')}{meta.get('shape')}" if isinstance(meta, dict) else "?"
                raise GateFail(
                    Status.WRONG_ANSWER,
                    "shape_mismatch",
                    f"{where}: output {k} is a {got}, expected a {dtype}{shape}",
                )
        opened: list = []
        try:
            for k, (x, fd) in enumerate(zip(tensors, fds, strict=False)):
                imp = self._open(fd, x, where, f"input {k}")
                opened.append(imp)
                if not same_bits(imp.tensor(x.dtype, x.shape), x):
                    raise v._mutated(ctx, trial, inputs, where, k, x)
            got = []
            for k, (w, fd) in enumerate(zip(want, fds[len(tensors) :], strict=True)):
                imp = self._open(fd, w, where, f"output {k}")
                opened.append(imp)
                got.append(imp.tensor(w.dtype, w.shape))
            verdict = compare(got, want, tol=v._tolerance(ctx.task))
            del got
            torch.cuda.synchronize()
        finally:
            for imp in opened:
                imp.close()
        if not verdict.ok:
            raise GateFail(
                Status.WRONG_ANSWER,
                verdict.code,
                f"{where}: {verdict.summary}",
                feedback=f"{where}, seed {trial['seed']}: {verdict.detail}",
                metrics={"failed_trial": i, "max_abs_err": verdict.max_abs_err},
            )
        self.worst = max(self.worst, verdict.max_abs_err)

    @staticmethod
    def _open(fd: int, like, where: str, what: str):
        from verifiers.kernels import devshare

        try:
            return devshare.Imported(fd, _nbytes([like]))
        except devshare.ShareError as e:
            if "CUresult 2" in str(e):  # CUDA_ERROR_OUT_OF_MEMORY: the card, not the code
                raise MachineFault("gpu_memory", f"{where}: mapping {what}: {e}") from None
            raise GateFail(
                Status.WRONG_ANSWER,
                "shape_mismatch",
                f"{where}: {what} could not be read as a {like.dtype}{list(like.shape)}: {e}",
            ) from None


class _CorrectThenTimed:
    """The verifier's side of a job that checks and then times (`_correct_and_time`):
    its messages go to the correctness trials until the runner asks for the timing slot,
    then (the GPU given back as shared first: the timed runs are over) to the check of
    the last timed run's outputs, which only a granted slot's runs may hand over."""

    def __init__(self, trials: _SharedTrials, slot: TimingSlot, timed: _SharedTrials):
        self.trials, self.slot, self.timed = trials, slot, timed

    def __call__(self, header: dict, fds: list[int]) -> dict:
        if "slot" in header:
            return self.slot.request(header, fds)
        if not self.slot.asked:
            return self.trials(header, fds)
        self.slot.release()
        if not self.slot.granted:
            return {"go": False}
        return self.timed(header, fds)


def _measure(v: Verdict) -> dict:
    """One measure of a verdict measured again (`timing_measures`): its verdict and its
    timing's median, fastest and 90th-percentile run, and how many runs it took (a slow
    median whose fastest run passes: some runs were disturbed; all slow: a steady state)."""
    t = v.metrics.get("timing") or {}
    return {
        "status": v.status.value,
        "code": v.code,
        "time_ms": v.metrics.get("time_ms"),
        "speedup": v.metrics.get("speedup"),
        "eager_again_ms": v.metrics.get("eager_again_ms"),
        "min_ms": t.get("min_ms"),
        "p90_ms": t.get("p90_ms"),
        "reps": t.get("reps"),
    }


def _clock_metrics(quiet) -> dict:
    """The SM clock the quiet check brought up (`quiet.Quiet.clock`), as metrics."""
    c = getattr(quiet, "clock", None)
    if c is None:
        return {}
    return {
        "gpu_clock_mhz": round(c.mhz),
        "gpu_clock_start_mhz": round(c.start_mhz),
        "gpu_clock_top_mhz": c.max_mhz,
        "gpu_clock_spun_s": round(c.spun_s, 4),
    }


def _not_quiet(quiet, what: str) -> GateFail:
    """The machine's verdict when the GPU stayed busy with another process's work, or
    its clock stayed low (`verifiers.kernels.quiet`): infra, retried; never a speed
    label."""
    if quiet.quiet:  # quiet, but its clock did not come up
        return GateFail(
            Status.INFRA_ERROR,
            "gpu_clock_low",
            f"{what} were not run: {quiet.describe()}",
            metrics=_clock_metrics(quiet),
        )
    return GateFail(
        Status.INFRA_ERROR,
        "gpu_not_quiet",
        f"{what} were not run: the GPU stayed busy with another process's work "
        f"({quiet.describe()})",
        metrics={"gpu_quiet_probes": quiet.probes, "gpu_slowest_probe_us": quiet.slowest_us},
    )


def trial_where(trial: dict) -> str:
    """A trial's sizes and inputs, as its feedback names them."""
    where = "small tail shapes" if trial["small"] else "timing shapes"
    if trial.get("shift"):
        where += f", inputs shifted by {trial['shift']:g}"
    if trial.get("zones") == "finite":
        where += (
            ", huge finite values (not NaNs) around every tensor: an output that moves "
            "with them read past a tensor's end"
        )
    return where


@functools.lru_cache(maxsize=256)
def _runner_problem(source: str) -> str:
    return runner_problem(source)


__all__ = ["CudaVerifier", "KernelVerifier", "TritonVerifier"]
