"""A job that shares its GPU's faults (the runners' jobs as MPS clients, #30): a failure a
neighbour could have caused is verified again with the GPU drained and held alone, and
that verdict is kept. The lock's `alone` runs under real threads; the verifier's rule runs
the real CPU path (Triton's interpreter), with MPS itself, which needs a GPU, stood in for
by `faults_shared` and by a first verdict a neighbour's fault would give."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.verifiers.test_kernel_timing import _run_threads
from verifiers import base
from verifiers.catalog import load_task
from verifiers.contract import Limits, Status
from verifiers.kernels.pool import GpuLock
from verifiers.kernels.verifier import RERUN_ALONE, TritonVerifier

ROOT = Path(__file__).resolve().parents[2]
CPU_GATES = ("parse", "anticheat", "compile", "launch", "correct")


@pytest.mark.parametrize("pause", [True, False])
def test_alone_waits_for_running_jobs_to_end_and_starts_none_meanwhile(pause):
    """Drained, not paused (a stopped MPS client keeps its context, and its fault is every
    client's), whatever the lock's way of timing; a shared user that asks meanwhile waits
    until it is over."""
    lock = GpuLock(pause=pause)
    order: list[str] = []
    running, asked = threading.Event(), threading.Event()

    def waiting_writer() -> None:  # `alone` has asked (a loaded host may take a while)
        deadline = time.monotonic() + 10
        while not lock._waiting_writers and time.monotonic() < deadline:
            time.sleep(0.01)

    def job():
        with lock.shared():
            running.set()
            asked.wait(5)
            waiting_writer()
            time.sleep(0.1)
            order.append("job ends")

    def rerun():
        running.wait(5)
        asked.set()
        with lock.alone():
            order.append("alone starts")
            time.sleep(0.2)  # the late job has asked by now
            order.append("alone ends")

    def late_job():
        running.wait(5)
        asked.wait(5)
        waiting_writer()
        with lock.shared():
            order.append("late job starts")

    _run_threads(job, rerun, late_job)
    assert order == ["job ends", "alone starts", "alone ends", "late job starts"], order
    assert lock.pauses == 0  # nothing was stopped: the job ended


def test_inside_alone_every_hold_is_that_one_and_nothing_waits():
    """A verification's gates take the GPU shared, upgrade for the timed runs, attach
    their jobs and compare on the host: inside `alone` all of that goes through at once,
    and the lock is free after."""
    lock = GpuLock(pause=True)

    def whole():
        with lock.alone():
            assert lock.held() == "exclusive" and lock.is_alone()
            with lock.shared():
                assert lock.held() == "exclusive"
                lock.upgrade()
                lock.downgrade()
                with lock.set_down(), lock.attach(object()), lock.host_use():
                    pass
            with lock.exclusive():
                assert lock.held() == "exclusive"
            assert lock.held() == "exclusive"
        assert lock.held() is None and not lock.is_alone()
        with lock.exclusive():  # free again
            pass
        with pytest.raises(RuntimeError, match="holds nothing"), lock.shared(), lock.alone():
            pass

    _run_threads(whole)


class _Shared(TritonVerifier):
    """The CPU verifier with its jobs' faults shared (`faults_shared`: MPS's, which needs a
    GPU), and the first verification's verdict given by `first` when set: what a
    neighbour's fault gives a correct candidate."""

    first = None

    def __init__(self):
        super().__init__(device="cpu", workers=1)
        self.calls: list[bool] = []  # per verification: whether it ran with the GPU alone

    def faults_shared(self, limits) -> bool:
        return True

    def _run_gates(self, ctx, checks):
        self.calls.append(self._gpu.is_alone())
        if len(self.calls) == 1 and self.first is not None:
            raise base.GateFail(*self.first)
        super()._run_gates(ctx, checks)


@pytest.fixture
def task():
    return load_task(ROOT / "tasks/triton/relu")


NEIGHBOUR = (
    Status.RUNTIME_ERROR,
    "cuda_error",
    "outputs: AcceleratorError: CUDA error: an illegal memory access was encountered",
)


def _raises(task) -> str:
    """The reference, its forward raising after the launch: its own fault, every time."""
    code = task.reference.replace(
        "        return y", '        raise RuntimeError("its own fault, every time")'
    )
    assert code != task.reference
    return code


def test_a_neighbours_fault_is_verified_again_alone_and_the_candidate_keeps_its_pass(task):
    v = _Shared()
    v.first = NEIGHBOUR
    try:
        vd = v.verify(task, task.reference, Limits(gates=CPU_GATES))
    finally:
        v.close()
    assert vd.status is Status.PASS, vd.feedback
    assert v.calls == [False, True]  # shared first, then alone
    assert vd.metrics["shared_verdict"]["code"] == "cuda_error"


def test_its_own_fault_recurs_alone_and_stands(task):
    v = _Shared()
    try:
        vd = v.verify(task, _raises(task), Limits(gates=CPU_GATES))
        assert vd.status is Status.RUNTIME_ERROR and "its own fault" in vd.feedback
        assert v.calls == [False, True]
        assert vd.metrics["shared_verdict"]["status"] == "runtime_error"
        # a wrong value is never a neighbour's (each MPS client's memory is its own): once
        v.calls.clear()
        wrong = task.reference.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 0.5)")
        assert wrong != task.reference
        vd = v.verify(task, wrong, Limits(gates=CPU_GATES))
        assert vd.status is Status.WRONG_ANSWER and v.calls == [False], (vd.status, vd.code)
        assert "shared_verdict" not in vd.metrics
        # nor an error the code names itself (48 of such a batch's 52 errors on the H100)
        v.calls.clear()
        unnamed = task.reference.replace("tl.maximum(x, 0.0)", "tl.maximum(x, zero)")
        vd = v.verify(task, unnamed, Limits(gates=CPU_GATES))
        assert vd.status is Status.COMPILE_ERROR and v.calls == [False], (vd.status, vd.code)
        assert vd.code not in RERUN_ALONE and "shared_verdict" not in vd.metrics
    finally:
        v.close()


def test_without_shared_faults_nothing_is_verified_twice(task):
    """Time-sliced (no MPS: a fault stays its own process's, 0 of 15 neighbours failed),
    the first verdict is the verdict."""
    v = TritonVerifier(device="cpu", workers=1)
    try:
        assert not v.faults_shared(Limits())
        vd = v.verify(task, _raises(task), Limits(gates=CPU_GATES))
    finally:
        v.close()
    assert vd.status is Status.RUNTIME_ERROR and "shared_verdict" not in vd.metrics


def test_the_verifier_reads_the_mps_decision_its_runners_were_made_with(tmp_path, monkeypatch):
    """One decision per pool (`WorkerSpec.mps`): the runners' MPS pipe and the verifier's
    rerun rule come from it, so an environment changed later changes neither; no pool
    (no job ran) shares nothing; off a GPU nothing is MPS."""
    from verifiers.kernels.pool import MPS_PIPE_ENV
    from verifiers.kernels.verifier import CudaVerifier

    monkeypatch.setenv(MPS_PIPE_ENV, str(tmp_path))
    gpu, cpu = CudaVerifier(device="cuda", workers=1), CudaVerifier(device="cpu", workers=1)
    try:
        assert not gpu.faults_shared(Limits())  # no pool yet
        assert gpu.pool(Limits()).spec.mps == str(tmp_path)
        monkeypatch.delenv(MPS_PIPE_ENV)
        assert gpu.faults_shared(Limits())
        cpu.pool(Limits())
        monkeypatch.setenv(MPS_PIPE_ENV, str(tmp_path))
        assert not cpu.faults_shared(Limits())
    finally:
        gpu.close()
        cpu.close()
