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

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

QUIET_FLOOR_US = 200.0
PROBES_IN_A_ROW = 5
QUIET_WAIT_S = 5.0


@dataclass(frozen=True)
class Quiet:
    quiet: bool
    waited_s: float
    probes: int
    slowest_us: float  # the slowest probe seen (the busy GPU's, when there was one)
    bar_us: float

    def describe(self) -> str:
        return (
            f"{self.probes} probe kernels over {self.waited_s:.2f}s; the slowest took "
            f"{self.slowest_us:.0f} us, a quiet GPU's take under {self.bar_us:.0f} us"
        )


class Prober:
    """Probes by `probe` (microseconds per round trip)."""

    def __init__(self, probe: Callable[[], float]):
        self.probe = probe
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


def _gpu_round_trip() -> Callable[[], float]:
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

    return probe


_GPU: Prober | None = None
_GPU_LOCK = threading.Lock()


def _gpu() -> Prober:
    global _GPU
    with _GPU_LOCK:
        if _GPU is None:
            _GPU = Prober(_gpu_round_trip())
        return _GPU


def gpu_calibrate() -> float:
    """`Prober.calibrate` on this process's GPU, once (later calls keep the first)."""
    p = _gpu()
    return p.idle_us if p.idle_us is not None else p.calibrate()


def gpu_quiet() -> Quiet:
    """`Prober.wait_quiet` on this process's GPU."""
    return _gpu().wait_quiet()
