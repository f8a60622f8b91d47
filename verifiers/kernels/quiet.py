"""Whether the GPU is quiet before timed runs: no other process's work left on it.

Once a timing holds the GPU no other candidate's process can submit work: every other
running job is paused whole (`GpuLock`'s pause) and a job waiting for the slot is stopped
(`Worker.still`). What a stopped process had queued before it stopped still runs, though:
a trial's kernels in flight, or as many launches as a candidate cared to queue without
waiting for them, enough to slow another candidate's timed runs (in a group judged by
relative speed, its own look better). So the GPU is checked before the timed runs, and
before a baseline's.

The check is this process's round trip of a one-element kernel. Processes' contexts share
the GPU by time slices: while another context has work queued, a probe waits for that
context's slice to end (milliseconds, by the driver's time-slice policy); on a quiet GPU
it takes tens of microseconds. Quiet: PROBES_IN_A_ROW probes in a row, each under the bar.
On a busy GPU a probe is fast only when it lands at a slice's end, so a row of them is
unlikely. The bar is QUIET_FLOOR_US, or 4x this process's median round trip measured
before any candidate ran (`calibrate`, when the verifier makes its first GPU pool: a host
whose own round trips are slow) if that is larger. Never from probes made while a
candidate's work may be queued: a busy GPU's probes would set a bar they all pass.
`bench/probe_gpu_quiet.py` measures both states on the device. Where the GPU stays busy
past QUIET_WAIT_S, the timing is not run and the verdict is the machine's (`gpu_not_quiet`,
infra, retried), never a speed label measured on a shared GPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

QUIET_FLOOR_US = 200.0
PROBES_IN_A_ROW = 5
QUIET_WAIT_S = 5.0
# A GPU with no context open idles at a low SM clock (345 MHz on the H100 node) and takes
# time to rise once work comes: a timing in that window is slow (cuda col_mean's reference
# 1.73x in the first process on an idle card, 1.00x in the same process moments later:
# bench/results/i30_slow_state_v11_h100.*). Before timed runs the GPU is kept busy until
# the clock a kernel sees (`gpu_mhz`) is CLOCK_UP of the card's top (NVML), for
# CLOCK_SPIN_S at most. A whole spin that never reaches it, at the highest clock this
# process's kernels have seen, makes that the top (the reading's own bias, or an operator's
# cap): a warm card is never failed for how it is read, and pays the spin once. Without
# NVML the top is the highest seen: a clock that fell since is still caught, a process's
# first timing on an idle card is not.
CLOCK_UP = 0.9
CLOCK_SPIN_S = 1.0


@dataclass(frozen=True)
class Clock:
    start_mhz: float  # the SM clock a kernel saw before any spin
    mhz: float  # and once the timed runs may start
    max_mhz: float | None  # the card's top (NVML, or lowered: `clock_up`), None unknown
    spun_s: float
    seen_mhz: float  # the highest this process's kernels have seen, this reading's too

    @property
    def up(self) -> bool:
        return self.mhz >= CLOCK_UP * (self.max_mhz or self.seen_mhz)


def clock_up(
    read: Callable[[], float],
    spin: Callable[[], None],
    max_mhz: float | None,
    seen_mhz: float = 0.0,
    limit_s: float = CLOCK_SPIN_S,
    clock: Callable[[], float] = time.monotonic,
) -> Clock:
    """`spin` (keep the GPU busy a moment) until `read` (the SM clock a kernel sees) is
    CLOCK_UP of `max_mhz` (of `seen_mhz`, the highest seen before, without it), for
    `limit_s` at most."""
    t0 = clock()
    start = mhz = read()
    seen = max(seen_mhz, mhz)
    while mhz < CLOCK_UP * (max_mhz or seen) and clock() - t0 < limit_s:
        spin()
        mhz = read()
        seen = max(seen, mhz)
    spun = clock() - t0
    if max_mhz and mhz < CLOCK_UP * max_mhz and spun >= limit_s and mhz >= CLOCK_UP * seen:
        max_mhz = seen  # a whole spin, at the highest seen: the top as this reading sees it
    return Clock(start, mhz, max_mhz, spun, seen)


@dataclass(frozen=True)
class Quiet:
    quiet: bool
    waited_s: float
    probes: int
    slowest_us: float  # the slowest probe seen (the busy GPU's, when there was one)
    bar_us: float
    clock: Clock | None = None  # the SM clock brought up once quiet (`gpu_quiet`)

    @property
    def ready(self) -> bool:
        """Quiet, and its clock up (or not judged): timed runs may start."""
        return self.quiet and (self.clock is None or self.clock.up)

    def describe(self) -> str:
        if self.quiet and not self.ready:
            c = self.clock
            return (
                f"the SM clock a kernel saw stayed at {c.mhz:.0f} MHz after the GPU was kept "
                f"busy {c.spun_s:.2f}s, under {CLOCK_UP:.0%} of its top, "
                f"{c.max_mhz or c.seen_mhz:.0f} MHz (a card slowed: throttled, or still "
                "waking)"
            )
        return (
            f"{self.probes} probe kernels over {self.waited_s:.2f}s; the slowest took "
            f"{self.slowest_us:.0f} us, a quiet GPU's take under {self.bar_us:.0f} us"
        )


class Prober:
    """Probes by `probe` (microseconds per round trip); with `read_mhz` (the SM clock a
    kernel sees) and `spin` (keep the GPU busy a moment), `ready` brings the clock up
    against `top_mhz` (the card's, None unknown) and the highest clock read so far."""

    def __init__(
        self,
        probe: Callable[[], float],
        read_mhz: Callable[[], float] | None = None,
        spin: Callable[[], None] | None = None,
        top_mhz: float | None = None,
    ):
        self.probe = probe
        self.read_mhz, self.spin = read_mhz, spin
        self.top_mhz = top_mhz
        self.seen_mhz = 0.0  # the highest clock this process's kernels have seen
        self.idle_us: float | None = None  # the median round trip before any candidate ran
        self._lock = threading.Lock()  # one probe series at a time: they would slow each other

    def calibrate(self, n: int = 21) -> float:
        """This process's median round trip now, kept for the bar. Only where no
        candidate's work can be on the GPU (before any job ran)."""
        with self._lock:
            self.idle_us = statistics.median(self.probe() for _ in range(n))
        return self.idle_us

    def bar_us(self, floor_us: float = QUIET_FLOOR_US) -> float:
        return max(floor_us, 4.0 * (self.idle_us or 0.0))

    def wait_quiet(
        self,
        limit_s: float = QUIET_WAIT_S,
        in_a_row: int = PROBES_IN_A_ROW,
        floor_us: float = QUIET_FLOOR_US,
        clock: Callable[[], float] = time.monotonic,
    ) -> Quiet:
        bar = self.bar_us(floor_us)
        with self._lock:
            t0 = clock()
            row = probes = 0
            slowest = 0.0
            while True:
                us = self.probe()
                probes += 1
                slowest = max(slowest, us)
                row = row + 1 if us <= bar else 0
                waited = clock() - t0
                if row >= in_a_row:
                    return Quiet(True, waited, probes, slowest, bar)
                if waited >= limit_s:
                    return Quiet(False, waited, probes, slowest, bar)

    def ready(self) -> Quiet:
        """`wait_quiet`; once quiet, the clock brought up (`clock_up`): `Quiet.ready` says
        whether timed runs may start."""
        q = self.wait_quiet()
        if not q.quiet or self.read_mhz is None or self.spin is None:
            return q
        with self._lock:
            c = clock_up(self.read_mhz, self.spin, self.top_mhz, self.seen_mhz)
            # a top lowered while the clock still rose comes back once kernels see more
            self.top_mhz = c.max_mhz and max(c.max_mhz, c.seen_mhz)
            self.seen_mhz = c.seen_mhz
        return dataclasses.replace(q, clock=c)


def max_sm_mhz() -> float | None:
    """The card's top SM clock by NVML (nvidia-ml-py): its max, or its application clock
    where that is lower; None without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(_nvml_index())
        top = float(pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM))
    except Exception:  # no NVML here (a CPU node, no driver): the clock is not judged
        return None
    # an operator's lower application clock is the card's top, not the datasheet's; not
    # every card reports one
    with contextlib.suppress(Exception):
        top = min(top, float(pynvml.nvmlDeviceGetApplicationsClock(h, pynvml.NVML_CLOCK_SM)))
    return top or None


def _nvml_index() -> int:
    """This process's GPU as NVML numbers it (NVML ignores CUDA_VISIBLE_DEVICES)."""
    import torch

    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
    here = torch.cuda.current_device()
    return int(visible[here]) if visible[0].strip().isdigit() else here


SLEEP_CYCLES = 400_000  # a clock reading: 200 us of a sleep kernel at 2 GHz
SPIN_CYCLES = 4_000_000  # one spin: 2 ms at 2 GHz, 12 ms at an idle 345 MHz


def _gpu_prober() -> Prober:
    """This process's GPU: the probe's round trip, the SM clock a kernel sees (a sleep
    kernel's cycles, `torch.cuda._sleep`, over its event time) and a spin, all on one
    stream of their own (nothing else of this process queued there), and NVML's top."""
    import torch

    x = torch.zeros(1, device="cuda")
    stream = torch.cuda.Stream()
    torch.cuda.synchronize()

    def probe() -> float:
        with torch.cuda.stream(stream):
            t0 = time.perf_counter()
            x.add_(1.0)
            stream.synchronize()
            return (time.perf_counter() - t0) * 1e6

    def read_mhz() -> float:
        t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(stream):
            t0.record()
            torch.cuda._sleep(SLEEP_CYCLES)
            t1.record()
        t1.synchronize()
        return SLEEP_CYCLES / (t0.elapsed_time(t1) * 1e3)

    def spin() -> None:
        with torch.cuda.stream(stream):
            torch.cuda._sleep(SPIN_CYCLES)
        stream.synchronize()

    return Prober(probe, read_mhz, spin, max_sm_mhz())


_GPU: Prober | None = None
_GPU_LOCK = threading.Lock()


def _gpu() -> Prober:
    global _GPU
    with _GPU_LOCK:
        if _GPU is None:
            _GPU = _gpu_prober()
        return _GPU


def gpu_calibrate() -> float:
    """`Prober.calibrate` on this process's GPU, once (later calls keep the first)."""
    p = _gpu()
    return p.idle_us if p.idle_us is not None else p.calibrate()


def gpu_quiet() -> Quiet:
    """`Prober.ready` on this process's GPU: quiet, and its clock up."""
    return _gpu().ready()


def gpu_mhz() -> float:
    """The SM clock a kernel sees now on this process's GPU (no spin)."""
    return _gpu().read_mhz()
