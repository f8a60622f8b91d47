"""GPU timing without a GPU: the adaptive stop rule on synthetic samples (the same loop
`runner.time_cuda` drives with CUDA events), the GPU lock's upgrade under real threads,
and the host's timing slot over a real socket pair. What the GPU itself does (the merged
correct-and-time job, its exclusive seconds) is shown by bench/bench_kernels.py."""

from __future__ import annotations

import contextlib
import json
import os
import random
import threading
import time
from pathlib import Path

import pytest

from verifiers.contract import Limits
from verifiers.kernels import devshare, runner
from verifiers.kernels.pool import GpuLock, GpuMemory, TimingSlot, answer_share
from verifiers.kernels.quiet import Quiet
from verifiers.kernels.verifier import _CorrectThenTimed, _SharedTrials


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


# --- the GPU sleep queued before each timed run ------------------------------------------
def test_the_rule_sleeps_the_runs_estimate_clamped_and_ignores_the_launch():
    assert runner.sleep_us_for(0.01, 5.0, "rule") == 50.0  # a tiny kernel: the floor
    assert runner.sleep_us_for(0.12, 5.0, "rule") == 120.0
    assert runner.sleep_us_for(3.0, 0.0, "rule") == 200.0  # a long kernel: the cap


def test_issue_sleeps_past_the_slowest_launch_seen_never_less_than_the_rule():
    """On the H100 node the Triton references' times moved 1.3-4x between runs while the
    CUDA ones' agreed (30 of 32 within 10 %): a Triton forward's Python launch outlasting
    the rule's 50-200 us lets the GPU wait on the host inside the timed interval."""
    assert runner.sleep_us_for(0.04, 0.15, "issue") == 350.0  # 2 x 150 us + 50
    assert runner.sleep_us_for(0.12, 0.01, "issue") == 120.0  # a fast launch: the rule's
    assert runner.sleep_us_for(0.04, 5.0, "issue") == runner.SLEEP_MAX_US  # capped
    with pytest.raises(ValueError, match="timing sleep 'long'"):
        runner.sleep_us_for(0.04, 0.1, "long")


class _FakeCuda:
    """A stand-in for torch.cuda (no GPU can exist here): every forward adds 0.1 ms of
    "device time" to a clock that events read; `_sleep` records the cycles it is asked."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[int] = []
        parent = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.at = 0.0

            def record(self) -> None:
                self.at = parent.now

            def elapsed_time(self, other) -> float:
                return other.at - self.at

        self.Event = Event

    def get_device_properties(self, _device):
        return type("Props", (), {"L2_cache_size": 1 << 20})()

    def current_device(self) -> int:
        return 0

    def synchronize(self) -> None:
        pass

    def _sleep(self, cycles: int) -> None:
        self.slept.append(cycles)


def _time_with_fake_gpu(monkeypatch, launch_s: float, how: str) -> tuple[dict, list[int]]:
    import types

    cuda = _FakeCuda()
    flush = types.SimpleNamespace(zero_=lambda: None)
    fake = types.SimpleNamespace(
        cuda=cuda,
        empty=lambda *a, **k: flush,
        int8=None,
        no_grad=contextlib.nullcontext,
    )
    monkeypatch.setattr(runner, "torch", fake)

    def forward():
        time.sleep(launch_s)  # the host's side of the launch
        cuda.now += 0.1

    return runner.time_cuda(forward, [], sleep=how), cuda.slept


def test_time_cuda_sleeps_as_told_and_says_when_the_launch_outlasted_it(monkeypatch):
    """time_cuda's own plumbing on a stand-in GPU: a forward whose host side takes 1 ms
    is launch-bound under the rule's 200 us at most, not under `issue`'s 2 ms; the
    cycles queued are the sleep reported."""
    timing, slept = _time_with_fake_gpu(monkeypatch, 0.001, "rule")
    assert timing["median_ms"] == pytest.approx(0.1)
    cycles = 100e-6 * runner.SLEEP_CLOCK_HZ  # the run's estimate, 0.1 ms
    assert timing["sleep_us"] == 100.0 and all(abs(c - cycles) <= 1 for c in slept)
    assert timing["host_issue_ms"] >= 1.0 and timing["launch_bound"] is True
    timing, slept = _time_with_fake_gpu(monkeypatch, 0.001, "issue")
    assert timing["sleep_us"] == runner.SLEEP_MAX_US and timing["launch_bound"] is False
    cycles = runner.SLEEP_MAX_US * 1e-6 * runner.SLEEP_CLOCK_HZ
    assert slept and all(abs(c - cycles) <= 1 for c in slept)


def test_timing_sleep_is_a_setting_the_job_and_the_baseline_take(tmp_path, monkeypatch):
    """A candidate and its task's eager baseline are timed with the same sleep: the
    setting reaches the runner's job and the host's baseline timing (a stand-in for the
    GPU calls the baseline makes: no GPU can exist here)."""

    import torch

    from verifiers.catalog import load_task
    from verifiers.kernels import verifier as kv
    from verifiers.kernels.pool import KernelWorker
    from verifiers.settings import SettingsError

    with pytest.raises(SettingsError, match="timing_sleep must be one of rule, issue"):
        kv.TritonVerifier(device="cpu", timing_sleep="longer")
    with pytest.raises(ValueError, match="timing sleep"):
        runner.time_cuda(lambda: None, [], sleep="longer")
    assert kv.TritonVerifier(device="cpu", cache_dir=tmp_path).timing_sleep == "issue"
    task = load_task(Path(__file__).resolve().parents[2] / "tasks" / "triton" / "relu")
    # the value that is not the default: what arrives was passed, not defaulted
    v = kv.TritonVerifier(device="cpu", timing_sleep="rule", cache_dir=tmp_path, workers=1)
    jobs, real_run = [], KernelWorker.run

    def run_spy(self, job, *a, **k):
        jobs.append(job)
        return real_run(self, job, *a, **k)

    monkeypatch.setattr(KernelWorker, "run", run_spy)
    try:
        v.verify(task, task.reference, Limits(gates=("parse", "anticheat", "compile")))
    finally:
        v.close()
    assert jobs and {j["timing_sleep"] for j in jobs} == {"rule"}
    timed = []
    monkeypatch.setattr(kv, "gpu_quiet", lambda: Quiet(True, 0.0, 5, 9.0, 200.0))
    monkeypatch.setattr(v, "_reference", lambda t, small: (None, lambda x: x + 1))
    monkeypatch.setattr(v, "_inputs", lambda *a, **k: [torch.ones(4)])
    monkeypatch.setattr(kv, "_flops", lambda *a: 0)
    monkeypatch.setattr(runner, "time_cuda", lambda *a, **k: timed.append(k) or {"median_ms": 1})
    v._baseline(task, with_compile=False)
    assert [k["sleep"] for k in timed] == ["rule"]


# --- the GPU lock: shared use, exclusive use, and the upgrade between them ---------------
# (the drain, `pause=False`: a writer waits for the shared users; the pause is below)
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
    lock, gpu = GpuLock(pause=False), _Gpu()
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
    lock = GpuLock(pause=False)
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


class _StandInCard:
    """Stand-in for torch.cuda's memory queries (no GPU can exist on this machine): a card
    with `free` bytes free and this process's allocator holding `reserved`, of which
    `allocated` in use; `empty_cache` hands the rest back as the real one does."""

    def __init__(self, free: int, reserved: int, allocated: int) -> None:
        self.free, self.reserved, self.allocated = free, reserved, allocated
        self.emptied = 0

    def install(self, monkeypatch) -> None:
        import torch

        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (self.free, 80 * GIB))
        monkeypatch.setattr(torch.cuda, "memory_reserved", lambda *a: self.reserved)
        monkeypatch.setattr(torch.cuda, "memory_allocated", lambda *a: self.allocated)
        monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
        monkeypatch.setattr(torch.cuda, "empty_cache", self.empty_cache)

    def empty_cache(self) -> None:
        self.emptied += 1
        self.free += self.reserved - self.allocated
        self.reserved = self.allocated


GIB = 2**30


def test_gpu_memory_counts_its_own_cache_as_the_cards_and_hands_it_back(monkeypatch):
    """The verifier ran a KernelBench-size reference (and another verifier in this process
    ran more): its allocator keeps 55 GiB cached of an 80 GiB card. The capacity is the
    card's, not the 25 GiB left free (the old reading gave 19.3 GiB, and every such task
    was infra `gpu_memory` on an H100), and a job's admission hands the cache back to the
    card before the job runs, so the runner the capacity promised it to can have it."""
    card = _StandInCard(free=25 * GIB, reserved=55 * GIB, allocated=1 * GIB)
    card.install(monkeypatch)
    memory = GpuMemory()
    assert memory.fits(50 * GIB)  # ReLU at KernelBench's size asks 50 GiB
    assert memory.capacity == int(80 * GIB * 0.92) - 4 * GIB
    with memory.hold(50 * GIB):
        assert card.emptied == 1 and card.free == 79 * GIB
    # a catalog task leaves little cached: the cache is kept (no device sync per job)
    card.reserved += 100 * 2**20
    with memory.hold(1 * GIB):
        pass
    assert card.emptied == 1


def test_gpu_memory_given_its_capacity_leaves_the_cache_alone(monkeypatch):
    card = _StandInCard(free=25 * GIB, reserved=55 * GIB, allocated=1 * GIB)
    card.install(monkeypatch)
    memory = GpuMemory(capacity=10 * GIB)
    assert not memory.fits(11 * GIB)
    with memory.hold(5 * GIB):
        pass
    assert card.emptied == 0 and memory.capacity == 10 * GIB


def test_upgrade_and_downgrade_need_the_callers_own_hold():
    lock = GpuLock(pause=False)
    with pytest.raises(RuntimeError, match="shared hold"):
        lock.upgrade()
    with lock.exclusive(), pytest.raises(RuntimeError, match="shared hold"):
        lock.upgrade()
    with lock.shared(), pytest.raises(RuntimeError, match="exclusive hold"):
        lock.downgrade()


# --- the timing slot, over a real socket pair -----------------------------------------------
NONCE = "n0"


def _ask(sock, header: dict, fds=(), timeout_s: float = 5.0) -> dict | None:
    """The runner's side: one message, then its answer (None: none came in time)."""
    devshare.send_fds(sock, header, list(fds))
    sock.settimeout(timeout_s)
    try:
        raw = sock.recv(devshare.MAX_MESSAGE)
    except TimeoutError:
        return None
    return json.loads(raw.decode())


def _host(lock: GpuLock, share, host_sock, messages: int, seen: list) -> threading.Thread:
    """The verifier's side, holding the GPU shared as the gate does: answers `messages`
    messages, noting what this thread held after each."""

    def serve():
        with lock.shared():
            for _ in range(messages):
                answer_share(host_sock, NONCE, share)
                seen.append(lock.held())

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


def _other_job(lock: GpuLock) -> threading.Event:
    """Another candidate's trials, sharing the GPU until the event returned is set."""
    holds, may_go = threading.Event(), threading.Event()

    def other_job():
        with lock.shared():
            holds.set()
            may_go.wait(10)

    threading.Thread(target=other_job, daemon=True).start()
    holds.wait(5)
    return may_go


def _merged(lock: GpuLock, trials: list[dict]) -> _CorrectThenTimed:
    # trials the host never has to compare: none (all passed) or not one handed over yet
    checker = _SharedTrials(None, None, trials)
    return _CorrectThenTimed(
        checker, TimingSlot(lock, checker.passed), _SharedTrials(None, None, [])
    )


def test_the_slot_is_granted_only_once_the_gpu_is_exclusive_and_given_back_after_the_timed_run():
    lock = GpuLock(pause=False)
    share = _merged(lock, [])
    runner_sock, host_sock = devshare.socket_pair()
    other_may_go = _other_job(lock)
    seen: list = []
    host = _host(lock, share, host_sock, 2, seen)
    # no answer while the other job still shares the GPU
    assert _ask(runner_sock, {"nonce": NONCE, "slot": "timing"}, timeout_s=0.5) is None
    assert not share.slot.granted
    other_may_go.set()
    runner_sock.settimeout(5)
    assert json.loads(runner_sock.recv(devshare.MAX_MESSAGE)) == {"go": True}
    # the host thread notes what it holds just after it answers: wait for that note (the
    # full suite once read `seen` between the two)
    deadline = time.monotonic() + 5
    while not seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert share.slot.granted and seen == ["exclusive"]
    # a shared user now waits until the timed run's outputs are in
    got_in = threading.Event()

    def late_reader():
        with lock.shared():
            got_in.set()

    late = threading.Thread(target=late_reader, daemon=True)
    late.start()
    assert not got_in.wait(0.3)
    assert _ask(runner_sock, {"nonce": NONCE, "trial": "timed", "outputs": []}) == {"go": False}
    host.join(5)
    assert seen == ["exclusive", "shared"] and got_in.wait(5)
    assert share.slot.exclusive_s >= 0.3  # held while the late reader waited
    assert lock.held() is None


def test_a_forged_or_early_ask_gets_no_go():
    lock = GpuLock(pause=False)
    cases = [
        # before every trial has passed (one not handed over yet)
        ([{"seed": 1, "small": False}], {"slot": "timing"}, False),
        # a slot that is not the timing slot
        ([], {"slot": "everything"}, False),
        # fds with it (closed by the host)
        ([], {"slot": "timing"}, True),
    ]
    for trials, header, with_fds in cases:
        share = _merged(lock, trials)
        runner_sock, host_sock = devshare.socket_pair()
        seen: list = []
        host = _host(lock, share, host_sock, 1, seen)
        fds = [os.open(os.devnull, os.O_RDONLY)] if with_fds else []
        try:
            assert _ask(runner_sock, {"nonce": NONCE, **header}, fds) == {"go": False}, header
        finally:
            devshare.close_fds(fds)
        host.join(5)
        assert seen == ["shared"] and not share.slot.granted, header
    # asked once: a second ask gets no go, nor do timed outputs without a granted slot
    share = _merged(lock, [{"seed": 1, "small": False}])
    runner_sock, host_sock = devshare.socket_pair()
    seen = []
    host = _host(lock, share, host_sock, 3, seen)
    assert _ask(runner_sock, {"nonce": NONCE, "slot": "timing"}) == {"go": False}
    share.trials.done = 1  # the trial passed after all: the ask was still spent
    assert _ask(runner_sock, {"nonce": NONCE, "slot": "timing"}) == {"go": False}
    assert _ask(runner_sock, {"nonce": NONCE, "trial": "timed", "outputs": []}) == {"go": False}
    host.join(5)
    assert seen == ["shared"] * 3 and share.slot.exclusive_s == 0.0


def test_another_jobs_ask_is_dropped_unanswered():
    lock = GpuLock(pause=False)
    share = _merged(lock, [])
    runner_sock, host_sock = devshare.socket_pair()
    seen: list = []
    host = _host(lock, share, host_sock, 2, seen)
    assert _ask(runner_sock, {"nonce": "straggler", "slot": "timing"}, timeout_s=0.3) is None
    assert not share.slot.asked  # its own ask is still to come
    assert _ask(runner_sock, {"nonce": NONCE, "slot": "timing"}) == {"go": True}
    host.join(5)
    assert seen == ["shared", "exclusive"]

    # the host thread left the gate's shared block still exclusive: the lock is free again
    def timing():
        with lock.exclusive():
            pass

    _run_threads(timing, timeout_s=5)


# --- the waiting job stopped, the GPU checked quiet ----------------------------------------
class _Still:
    """A job's `Worker.still` as the slot sees it: when it was stopped and continued."""

    def __init__(self, lock: GpuLock):
        self.lock, self.log = lock, []

    @contextlib.contextmanager
    def __call__(self):
        self.log.append(("stopped", self.lock._readers))
        try:
            yield ()
        finally:
            self.log.append(("continued", self.lock.held()))


def _slot_share(lock: GpuLock, still, quiet) -> _CorrectThenTimed:
    checker = _SharedTrials(None, None, [])
    slot = TimingSlot(lock, checker.passed, still=still, quiet=quiet)
    return _CorrectThenTimed(checker, slot, _SharedTrials(None, None, []))


def test_a_job_waiting_for_the_gpu_alone_is_stopped_until_it_is_granted():
    """The asker is stopped before it stops counting as a GPU user (it held the GPU
    shared until then) and stays stopped through its wait and the quiet check; it is
    continued, holding the GPU alone, before its `go` is sent."""
    lock = GpuLock(pause=False)
    still = _Still(lock)
    checks = []
    share = _slot_share(
        lock, still, lambda: checks.append(lock.held()) or Quiet(True, 0, 3, 9, 200)
    )
    runner_sock, host_sock = devshare.socket_pair()
    other_may_go = _other_job(lock)
    seen: list = []
    host = _host(lock, share, host_sock, 1, seen)
    assert _ask(runner_sock, {"nonce": NONCE, "slot": "timing"}, timeout_s=0.4) is None
    deadline = time.monotonic() + 10  # the host thread takes the ask (a loaded machine)
    while not still.log and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # and waits
    # stopped while both jobs still held the GPU shared, and not continued while it waits
    assert still.log == [("stopped", 2)] and checks == []
    other_may_go.set()
    runner_sock.settimeout(5)
    assert json.loads(runner_sock.recv(devshare.MAX_MESSAGE)) == {"go": True}
    host.join(5)
    assert checks == ["exclusive"] and still.log == [("stopped", 2), ("continued", "exclusive")]
    assert share.slot.granted and share.slot.noisy is None


def test_a_gpu_that_stays_busy_gets_no_timed_run_and_says_why():
    lock = GpuLock(pause=False)
    busy = Quiet(False, 5.0, 900, 2100.0, 200.0)
    share = _slot_share(lock, _Still(lock), lambda: busy)
    runner_sock, host_sock = devshare.socket_pair()
    seen: list = []
    host = _host(lock, share, host_sock, 1, seen)
    assert _ask(runner_sock, {"nonce": NONCE, "slot": "timing"}) == {"go": False}
    host.join(5)
    # given back as shared at once: the job winds down with the others, nothing timed
    assert seen == ["shared"] and not share.slot.granted and share.slot.noisy is busy
    assert share.slot.exclusive_s == 0.0 and lock.held() is None

    def timing():
        with lock.exclusive():
            pass

    _run_threads(timing, timeout_s=5)


def test_verifiers_on_a_gpu_share_the_process_lock_and_memory(monkeypatch, caplog):
    """A CUDA and a Triton verifier in one process on one GPU (the reward service keeps one
    per domain): one's timed runs must have the GPU alone against the other's jobs too,
    and both admit jobs against one card. Before, each made a lock of its own (a CUDA
    timing ran beside Triton jobs) and counted the whole card for itself."""
    from verifiers.kernels import pool
    from verifiers.kernels.verifier import CudaVerifier, TritonVerifier

    monkeypatch.setattr(pool, "_CARD", None)  # this test's card, not the process's
    cuda = CudaVerifier(device="cuda", workers=1, timing_pause=False)
    triton = TritonVerifier(device="cuda", workers=1, timing_pause=False)
    assert cuda._gpu is triton._gpu and cuda._gpu_mem is triton._gpu_mem
    order: list[str] = []
    shared, go = threading.Event(), threading.Event()

    def triton_job():
        with triton._gpu.shared():
            shared.set()
            go.wait(5)
            time.sleep(0.2)  # the timing below has asked by now
            order.append("triton job ends")

    def cuda_timing():
        shared.wait(5)
        go.set()
        with cuda._gpu.exclusive():
            order.append("cuda timing")

    _run_threads(triton_job, cuda_timing)
    assert order == ["triton job ends", "cuda timing"]
    # another timing_pause later keeps the card's lock, and says so
    with caplog.at_level("WARNING", logger="verifiers.kernels.pool"):
        later = TritonVerifier(device="cuda", workers=1, timing_pause=True)
        assert later._gpu is cuda._gpu and later._gpu.pause is False
    assert "one lock per card" in caplog.text
    # verifiers off a GPU keep their own (nothing of theirs runs on one)
    cpu_a, cpu_b = CudaVerifier(device="cpu", workers=1), TritonVerifier(device="cpu", workers=1)
    assert cpu_a._gpu is not cpu_b._gpu and cpu_a._gpu is not cuda._gpu
