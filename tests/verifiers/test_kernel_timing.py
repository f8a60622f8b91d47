"""GPU timing without a GPU: the adaptive stop rule on synthetic samples (the same loop
`runner.time_cuda` drives with CUDA events), the GPU lock's upgrade under real threads,
and the host's timing slot over a real socket pair. What the GPU itself does (the merged
correct-and-time job, its exclusive seconds) is shown by bench/bench_kernels.py."""

from __future__ import annotations

import random
import threading
import time

import pytest

from verifiers.kernels import runner
from verifiers.kernels.pool import GpuLock, GpuMemory


def _sampler(draw):
    """A `run_round` over synthetic times: n (stream ms, device ms) pairs from `draw`,
    the device-wide end 20 us after the stream's (an honest run's synchronize)."""

    def run_round(n: int) -> list[tuple[float, float]]:
        return [(t, t + 0.02) for t in (draw() for _ in range(n))]

    return run_round


def _adaptive(draw, budget_ms: float = 1e9) -> dict:
    return runner.timed_rounds(
        _sampler(draw), fixed_reps=None, budget_ms=budget_ms, min_reps=10, max_reps=100
    )


def test_tight_times_stop_at_the_floor():
    rng = random.Random(1)
    t = _adaptive(lambda: rng.gauss(1.0, 0.003))
    assert (t["stop"], t["reps"]) == ("ci", 10)
    low, high = t["ci_ms"]
    assert low <= t["median_ms"] <= high and (high - low) / 2 <= 0.02 * t["median_ms"]
    assert t["off_stream_ms"] < 0.05  # the stream's own times were judged


def test_noisy_times_run_to_the_cap():
    rng = random.Random(2)
    t = _adaptive(lambda: rng.uniform(0.5, 1.5))
    assert (t["stop"], t["reps"]) == ("cap", 100)
    assert t["ci_ms"][0] < 0.98 * t["median_ms"] or t["ci_ms"][1] > 1.02 * t["median_ms"]


def test_one_outlier_neither_keeps_it_running_nor_stops_it_early():
    # tight times with one preempted run in the first round: it stops at the floor, and
    # the median is the tight times'
    rng = random.Random(3)
    draws = iter([50.0] + [rng.gauss(1.0, 0.003) for _ in range(200)])
    t = _adaptive(lambda: next(draws))
    assert (t["stop"], t["reps"]) == ("ci", 10) and abs(t["median_ms"] - 1.0) < 0.01
    # noisy times with one huge run first: its cost does not spend the budget (the
    # budget counts runs at the median's time), so the noise still runs to the cap
    rng = random.Random(4)
    draws = iter([5000.0] + [rng.uniform(0.5, 1.5) for _ in range(200)])
    t = _adaptive(lambda: next(draws), budget_ms=200.0)
    assert (t["stop"], t["reps"]) == ("cap", 100)


def test_the_budget_ends_noisy_slow_runs_and_fixed_mode_runs_its_count():
    rng = random.Random(5)
    t = _adaptive(lambda: rng.uniform(5.0, 15.0), budget_ms=100.0)
    assert t["stop"] == "budget" and 10 <= t["reps"] < 20
    t = runner.timed_rounds(
        _sampler(lambda: rng.gauss(1.0, 0.003)),
        fixed_reps=37,
        budget_ms=100.0,
        min_reps=10,
        max_reps=100,
    )
    assert (t["stop"], t["reps"]) == ("fixed", 37)


def test_work_off_the_timed_stream_is_timed_device_wide():
    """The off-stream rule as before: the device-wide end is the time when the gap past
    the synchronize is more than half the stream's own time."""
    t = runner.timed_rounds(
        lambda n: [(0.1, 1.0)] * n, fixed_reps=None, budget_ms=1e9, min_reps=10, max_reps=100
    )
    assert t["median_ms"] == 1.0 and t["off_stream_ms"] == 0.9 and t["stop"] == "ci"


# --- the GPU lock: shared use, exclusive use, and the upgrade between them ---------------
class _Gpu:
    """Who uses the "GPU" now, counted under its own lock: a use that overlaps an
    exclusive one is a violation."""

    def __init__(self) -> None:
        self._m = threading.Lock()
        self.shared = self.exclusive = self.violations = 0
        self.exclusive_uses = 0

    def use(self, kind: str, seconds: float = 0.002) -> None:
        with self._m:
            if self.exclusive or (kind == "exclusive" and self.shared):
                self.violations += 1
            setattr(self, kind, getattr(self, kind) + 1)
            self.exclusive_uses += kind == "exclusive"
        time.sleep(seconds)
        with self._m:
            setattr(self, kind, getattr(self, kind) - 1)


def _run_threads(*targets, timeout_s: float = 20.0) -> None:
    threads = [threading.Thread(target=t, daemon=True) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s)
    stuck = [t.name for t in threads if t.is_alive()]
    assert not stuck, f"deadlocked: {stuck} still waiting after {timeout_s}s"


def test_two_upgrades_a_shared_and_an_exclusive_user_all_progress_and_exclusive_is_alone():
    lock, gpu = GpuLock(), _Gpu()
    rounds = 40

    def upgrader():
        for _ in range(rounds):
            with lock.shared():
                gpu.use("shared")  # the correctness trials
                lock.upgrade()
                assert lock.held() == "exclusive"
                gpu.use("exclusive")  # the timed runs
                lock.downgrade()
                gpu.use("shared")  # the timed run's output compared
            assert lock.held() is None

    def reader():
        for _ in range(rounds):
            with lock.shared():
                gpu.use("shared")

    def writer():
        for _ in range(rounds):
            with lock.exclusive():
                gpu.use("exclusive")

    _run_threads(upgrader, upgrader, reader, writer)
    assert gpu.violations == 0
    assert gpu.exclusive_uses == 3 * rounds


def test_an_upgrade_never_waits_on_a_job_that_waits_for_gpu_memory():
    """Job A holds the GPU shared and most of its memory, and upgrades; job B took the GPU
    shared and waits for memory only A's end frees. B sets its shared hold down while it
    waits (else A's upgrade waits for B, and B for A's memory: for ever)."""
    lock = GpuLock()
    memory = GpuMemory(capacity=10, gpu=lock)
    a_holds, a_timed = threading.Event(), threading.Event()
    b_ran = threading.Event()

    def a():
        with lock.shared(), memory.hold(8):
            a_holds.set()
            time.sleep(0.2)  # B is waiting for memory by now
            lock.upgrade()
            a_timed.set()
            lock.downgrade()

    def b():
        a_holds.wait(5)
        with lock.shared(), memory.hold(8):
            assert lock.held() == "shared" and a_timed.is_set()
            b_ran.set()

    _run_threads(a, b)
    assert a_timed.is_set() and b_ran.is_set()


def test_upgrade_and_downgrade_need_the_callers_own_hold():
    lock = GpuLock()
    with pytest.raises(RuntimeError, match="shared hold"):
        lock.upgrade()
    with lock.exclusive(), pytest.raises(RuntimeError, match="shared hold"):
        lock.upgrade()
    with lock.shared(), pytest.raises(RuntimeError, match="exclusive hold"):
        lock.downgrade()
