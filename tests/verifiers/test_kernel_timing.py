"""GPU timing without a GPU: the adaptive stop rule on synthetic samples (the same loop
`runner.time_cuda` drives with CUDA events), the GPU lock's upgrade under real threads,
and the host's timing slot over a real socket pair. What the GPU itself does (the merged
correct-and-time job, its exclusive seconds) is shown by bench/bench_kernels.py."""

from __future__ import annotations

import random

from verifiers.kernels import runner


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
