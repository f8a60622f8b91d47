"""One job per candidate on a GPU (`KernelSettings.one_gpu_job`): the compile gate's job
goes on into the trials and the timed runs.

What CI can run of it: the runner's rule that a launch the dry run refused ends the job
before any trial (a real sandboxed runner, Triton's interpreter), and the host's rule for
which gate a job cut short belongs to. The whole path runs on a GPU (`bench/bench_kernels.py`
and `--two-gpu-jobs`: the same statuses as two jobs, side by side).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from verifiers.base import Context, GateFail
from verifiers.catalog import load_task
from verifiers.contract import Limits, Status
from verifiers.kernels.quiet import Clock, Quiet
from verifiers.kernels.verifier import TritonVerifier
from verifiers.sandbox import Sandbox

from .test_kernels import ROOT, TRITON_GRID_Y, TRITON_RELU


def _ctx(task, code: str, tmp_path: Path) -> Context:
    limits = Limits()
    return Context(task, code, limits, Sandbox(limits), tmp_path)


def _run(v: TritonVerifier, ctx: Context, steps: list[str]) -> dict:
    trials = [{"seed": 7, "small": True}]
    try:
        return v._job(ctx, steps, 300.0, trials=trials)
    finally:
        v.pool(ctx.limits).release(ctx.state.pop("worker"), dirty=False)


def test_a_refused_launch_ends_the_job_before_any_trial(triton_v, relu_t, tmp_path):
    ctx = _ctx(relu_t, TRITON_GRID_Y, tmp_path)
    res = _run(triton_v, ctx, ["load", "launch", "outputs"])
    assert res["ok"], res.get("error")
    assert "gridDim.y" in res["launch"]["violation"]["message"]
    assert "outputs" not in res and "outputs" not in res["seconds"]
    # the same job with the honest kernel runs its trial
    ctx = _ctx(relu_t, TRITON_RELU, tmp_path)
    res = _run(triton_v, ctx, ["load", "launch", "outputs"])
    assert res["ok"] and not res["launch"].get("violation"), res
    assert len(res["outputs"]) == 1 and "outputs" in res["seconds"]


class _Scripted(TritonVerifier):
    """The host's side only: the GPU job replaced by a script that hands `trials_done`
    trials over, then is cut short (its deadline). Everything else is the verifier's."""

    def __init__(self, trials_done: int):
        super().__init__(device="cuda", workers=1)
        self.trials_done = trials_done

    def _cost(self, task):
        return {"seconds": 0.01, "bytes": 1, "out": [4], "small_out": [4]}

    def _correct_and_time(self, ctx, checker, cost, timeout, first=("load",)):
        assert list(first) == ["load", "launch", "warm"]
        checker.done = self.trials_done
        raise GateFail(Status.TIMEOUT, "kernel_timeout", "load/launch/warm/outputs/time: 9s")


@pytest.mark.parametrize(("done", "gate"), [(0, "compile"), (2, "correct")])
def test_a_job_cut_short_is_the_gate_it_was_in(relu_t, tmp_path, done, gate):
    v = _Scripted(done)
    ctx = _ctx(relu_t, TRITON_RELU, tmp_path)
    ctx.state["gpu_budget"] = 0
    assert v._one_job(ctx)
    if gate == "compile":  # nothing was handed over: load, the dry run or the warm-up
        with pytest.raises(GateFail) as e:
            v._compile_and_run(ctx)
        assert e.value.code == "kernel_timeout"
        assert "ran" not in ctx.state
        return
    res = v._compile_and_run(ctx)  # the compile gate passes; its dry run is not known
    assert res["ok"] and res["launch"]["checked"] is False
    with pytest.raises(GateFail) as e:
        v.gate_correct(ctx)
    assert (e.value.status, e.value.code) == (Status.TIMEOUT, "kernel_timeout")


def test_one_job_is_only_for_a_verification_that_wants_the_trials(relu_t, tmp_path):
    v = _Scripted(0)
    ctx = _ctx(relu_t, TRITON_RELU, tmp_path)
    assert v._one_job(ctx)
    ctx.limits = Limits(gates=("parse", "anticheat", "compile", "launch"))
    assert not v._one_job(ctx)
    assert not TritonVerifier(device="cuda", one_gpu_job=False)._one_job(_ctx(relu_t, "", tmp_path))


def test_a_job_cut_short_in_its_timed_runs_passes_the_trials_and_fails_timing(relu_t, tmp_path):
    """The timing slot was granted (every trial passed) when the job was cut short: the
    trials' gate passes, the timing gate gets the failure (`_correct_and_time`)."""

    class Timed(_Scripted):
        def _correct_and_time(self, ctx, checker, cost, timeout, first=("load",)):
            checker.done = len(checker.trials)
            ctx.state["timed"] = {"failure": GateFail(Status.TIMEOUT, "kernel_timeout", "t")}
            return {"ok": True}

    v = Timed(0)
    ctx = _ctx(relu_t, TRITON_RELU, tmp_path)
    res = v._compile_and_run(ctx)
    assert res["launch"]["checked"] is False
    assert v.gate_correct(ctx).startswith(f"{len(ctx.state['ran']['checker'].trials)} trials")
    with pytest.raises(GateFail) as e:
        v.gate_timing(ctx)
    assert e.value.code == "kernel_timeout"


BUSY = Quiet(False, 5.0, 812, 2400.0, 200.0)
LOW_CLOCK = Quiet(
    True, 0.01, 5, 9.0, 200.0, clock=Clock(345.0, 420.0, 1980.0, spun_s=1.0, seen_mhz=1980.0)
)


@pytest.mark.parametrize(
    "noisy, code, says, metric",
    [
        (BUSY, "gpu_not_quiet", "2400 us", ("gpu_quiet_probes", 812)),
        (LOW_CLOCK, "gpu_clock_low", "420 MHz", ("gpu_clock_spun_s", 1.0)),
    ],
    ids=["busy", "clock_low"],
)
def test_a_gpu_not_ready_for_timed_runs_is_the_machines_never_a_speed_label(
    relu_t, tmp_path, noisy, code, says, metric
):
    """Every trial passed, but the GPU was not ready for the timed runs: it never went
    quiet (another process's work still queued), or quiet, its SM clock stayed low after
    it was kept busy (`quiet.clock_up`). No timed run was made; the timing gate is infra."""

    class NotReady(_Scripted):
        def _correct_and_time(self, ctx, checker, cost, timeout, first=("load",)):
            checker.done = len(checker.trials)
            res = {"ok": True, "launch": {"checked": True, "launches": []}, "seconds": {}}
            ctx.state["timed"] = {"res": res, "checker": checker, "noisy": noisy}
            return res

    v = NotReady(0)
    ctx = _ctx(relu_t, TRITON_RELU, tmp_path)
    v._compile_and_run(ctx)
    assert v.gate_correct(ctx).startswith(f"{len(ctx.state['ran']['checker'].trials)} trials")
    with pytest.raises(GateFail) as e:
        v.gate_timing(ctx)
    assert (e.value.status, e.value.code) == (Status.INFRA_ERROR, code)
    assert says in e.value.detail and e.value.metrics[metric[0]] == metric[1]


def test_a_read_past_the_end_whose_nan_the_math_drops_is_caught(triton_v):
    """The cross-entropy kernel with its loads' masks dropped reads past each row; only
    the last row's read leaves the tensor. On the GPU that read's NaN zone bytes vanish
    in `tl.maximum` (the GPU's max drops a NaN operand, and logsumexp does not care how
    large its shift is): the H100 node passed it. Here the same loss of the NaN is
    spelled out (a `where(x == x, ...)` after the load). One trial's zones hold huge
    finite values instead: the max becomes one of them and the loss is wrong."""
    task = load_task(ROOT / "tasks/triton/cross_entropy_rows")
    code = task.reference
    load = 'x = tl.load(row + offs, mask=mask, other=-float("inf"))'
    assert code.count(load) == 2
    code = code.replace(
        load, 'x = tl.load(row + offs)\n        x = tl.where(x == x, x, -float("inf"))', 1
    ).replace(load, "x = tl.load(row + offs)")
    v = triton_v.verify(task, code, Limits(gates=("parse", "anticheat", "compile", "correct")))
    assert (v.status, v.code) == (Status.WRONG_ANSWER, "numeric_mismatch"), v.feedback
    assert "huge finite values" in v.feedback
    honest = triton_v.verify(task, task.reference, Limits(gates=("parse", "compile", "correct")))
    assert honest.status is Status.PASS, honest.feedback
