"""The SM clock before timed runs (`verifiers.kernels.quiet.clock_up`, verifier 12): a GPU
with no context open idles at a low clock and a timing while it rises is slow (cuda
col_mean's reference 1.73x on the H100 node, then 1.00x in the same process). The quiet
check keeps the GPU busy until the clock a kernel sees is up; a clock that stays low is
the machine's (`gpu_clock_low`, infra), never a timing. No GPU here: scripted clock reads
stand in for the sleep kernel's, the host logic around them is the real one."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from verifiers.base import GateFail
from verifiers.catalog import load_task
from verifiers.contract import Status
from verifiers.kernels import quiet, runner
from verifiers.kernels import verifier as kv
from verifiers.kernels.pool import GpuLock, TimingSlot
from verifiers.kernels.quiet import CLOCK_UP, Clock, Prober, Quiet, clock_up

ROOT = Path(__file__).resolve().parents[2]
TOP = 1980.0
LOW = Clock(start_mhz=345.0, mhz=420.0, max_mhz=TOP, spun_s=1.0, seen_mhz=TOP)
UP = Clock(start_mhz=345.0, mhz=1975.0, max_mhz=TOP, spun_s=0.06, seen_mhz=1975.0)


class _Card:
    """A clock that rises by `step` MHz per spin up to `top` (0: a throttled card), and
    a fake time."""

    def __init__(self, mhz: float, step: float, top: float = TOP):
        self.mhz, self.step, self.top, self.spins, self.now = mhz, step, top, 0, 0.0

    def read(self) -> float:
        return self.mhz

    def spin(self) -> None:
        self.spins += 1
        self.now += 0.01
        self.mhz = min(self.top, self.mhz + self.step)

    def clock(self) -> float:
        return self.now


def test_an_idle_clock_is_spun_up_before_the_timed_runs():
    card = _Card(345.0, 400.0)
    c = clock_up(card.read, card.spin, TOP, clock=card.clock)
    assert c.up and c.start_mhz == 345.0 and c.mhz >= CLOCK_UP * TOP
    assert card.spins == 4  # 745, 1145, 1545, 1945: the first reading past 90 %
    warm = _Card(TOP, 0.0)
    assert clock_up(warm.read, warm.spin, TOP, clock=warm.clock).up and warm.spins == 0


def test_a_clock_that_fell_and_stays_low_is_not_ready_and_says_why():
    """A card this process saw at its top, now stuck low through a whole spin: not up."""
    card = _Card(345.0, 0.0)
    c = clock_up(card.read, card.spin, TOP, seen_mhz=TOP, limit_s=1.0, clock=card.clock)
    assert not c.up and c.mhz == 345.0 and 1.0 <= c.spun_s < 1.05 and card.spins >= 100
    assert c.max_mhz == TOP
    q = Quiet(True, 0.01, 5, 9.0, 200.0, clock=c)
    assert q.quiet and not q.ready
    assert "345 MHz" in q.describe() and "1980 MHz" in q.describe()
    assert Quiet(True, 0.01, 5, 9.0, 200.0).ready  # no clock judged: as before
    assert not Quiet(False, 5.0, 900, 2100.0, 200.0).ready
    # without NVML the highest seen is the top: a fall is caught all the same
    card = _Card(345.0, 0.0)
    assert not clock_up(card.read, card.spin, None, seen_mhz=TOP, clock=card.clock).up


def test_a_reading_that_never_reaches_the_cards_top_lowers_it_once():
    """The sleep kernel's reading of a warm card under 90 % of NVML's top (its own bias,
    an operator's cap): the whole spin, at the highest it ever saw, makes that the top;
    the card is up, and the next timing does not spin."""
    card = _Card(1700.0, 0.0, top=1700.0)
    c = clock_up(card.read, card.spin, TOP, limit_s=1.0, clock=card.clock)
    assert c.up and c.max_mhz == 1700.0 and card.spins >= 100
    card.spins = 0
    again = clock_up(card.read, card.spin, c.max_mhz, c.seen_mhz, clock=card.clock)
    assert again.up and card.spins == 0


def test_without_nvml_the_first_timing_is_not_judged():
    """No NVML (this machine: nvidia-ml-py installed, no driver): the top is the highest
    seen; a process's first reading is its own highest, nothing spins."""
    assert quiet.max_sm_mhz() is None
    card = _Card(345.0, 400.0)
    c = clock_up(card.read, card.spin, None, clock=card.clock)
    assert c.up and card.spins == 0


def test_the_quiet_check_keeps_the_top_and_the_highest_seen():
    """`Prober.ready` (the host's `gpu_quiet`) across timings of one process: the first
    spins the idle card up; a reading that fell since the card was seen high is not
    ready (`gpu_clock_low`)."""
    card = _Card(345.0, 400.0)
    spins = {"sleep": 0.0}

    def spin() -> None:
        card.spin()
        time.sleep(spins["sleep"])

    p = Prober(lambda: 10.0, card.read, spin, TOP)  # every probe under the bar: quiet
    first = p.ready()
    assert first.ready and card.spins == 4 and first.clock.start_mhz == 345.0
    assert p.seen_mhz == 1945.0 and p.top_mhz == TOP
    card.spins = 0
    assert p.ready().ready and card.spins == 0  # warm: one reading, no spin
    card.mhz, card.step, spins["sleep"] = 900.0, 0.0, 0.01  # throttled, however long it spins
    low = p.ready()
    assert low.quiet and not low.ready and low.clock.mhz == 900.0 and low.clock.spun_s >= 1.0
    assert p.top_mhz == TOP  # not lowered: the card was seen at 1945 MHz


def test_a_timing_slot_on_a_low_clock_sends_no_go():
    """Quiet, but the clock stayed low: the job gets no `go`, the GPU goes back shared,
    and the slot keeps why (`noisy`) for the timing gate's infra verdict."""
    lock = GpuLock(pause=False)
    slow = Quiet(True, 0.01, 5, 9.0, 200.0, clock=LOW)
    slot = TimingSlot(lock, lambda: True, quiet=lambda: slow)
    with lock.shared():
        assert slot.request({"slot": "timing"}, []) == {"go": False}
        assert lock.held() == "shared"
    assert not slot.granted and slot.noisy is slow and slot.checked is slow
    up = Quiet(True, 0.01, 5, 9.0, 200.0, clock=UP)
    slot = TimingSlot(lock, lambda: True, quiet=lambda: up)
    with lock.shared():
        assert slot.request({"slot": "timing"}, []) == {"go": True}
        slot.release()
    assert slot.granted and slot.noisy is None and slot.checked is up


def test_a_baseline_on_a_low_clock_is_not_timed(tmp_path, monkeypatch):
    """The task's eager baseline (the bar every candidate is judged against) is timed
    only on a clock that came up: a low one is infra `gpu_clock_low`, nothing timed; an
    up one is timed, and its clock kept with the timing."""
    import torch

    task = load_task(ROOT / "tasks" / "triton" / "relu")
    v = kv.TritonVerifier(device="cpu", cache_dir=tmp_path, workers=1)
    timed = []
    monkeypatch.setattr(v, "_reference", lambda t, small: (None, lambda x: x + 1))
    monkeypatch.setattr(v, "_inputs", lambda *a, **k: [torch.ones(4)])
    monkeypatch.setattr(kv, "_flops", lambda *a: 0)
    monkeypatch.setattr(runner, "time_cuda", lambda *a, **k: timed.append(k) or {"median_ms": 1})
    slow = Quiet(True, 0.01, 5, 9.0, 200.0, clock=LOW)
    monkeypatch.setattr(kv, "gpu_quiet", lambda: slow)
    with pytest.raises(GateFail) as e:
        v._baseline(task, with_compile=False)
    assert (e.value.status, e.value.code) == (Status.INFRA_ERROR, "gpu_clock_low")
    assert "420 MHz" in e.value.detail and e.value.metrics["gpu_clock_mhz"] == 420
    assert timed == []
    up = Quiet(True, 0.01, 5, 9.0, 200.0, clock=UP)
    monkeypatch.setattr(kv, "gpu_quiet", lambda: up)
    base = v._baseline(task, with_compile=False)
    assert len(timed) == 1 and base["eager"]["gpu_clock_mhz"] == 1975
    assert base["eager"]["gpu_clock_start_mhz"] == 345
