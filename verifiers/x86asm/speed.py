"""When a measured speedup is a speedup: a confidence interval over interleaved timed pairs
must lie above a bar that is at least the run's own noise floor.

A timed round runs three passes back to back, their order rotating: the candidate, the
baseline, and a second copy of the baseline linked elsewhere (a program: the baseline run
again). Each round gives a candidate pair (baseline / candidate) and an A/A pair (baseline
/ its copy): the same machine state for both, whatever the machine does over the run.

- The speedup is the median of the candidate pairs' ratios; its interval is the median's
  distribution-free one, from order statistics (`verifiers.stats`; of 15 rounds, the 3rd
  from either end): no assumption on the shape of the noise, and an outlier round moves
  it by one rank at most.
- The noise floor is the speedup the A/A pairs measure, read either way (their median or
  its inverse, whichever is above 1): what this harness, on this machine, in this run,
  shows between two copies of the same code at two places. Never below MIN_FLOOR: below
  1% the wall clock of a pass here resolves nothing, and an instruction saving that small
  is no speedup anyone could measure. (The median, not its interval: a few preempted A/A
  passes must not raise the floor to a 20x candidate's speedup; the random part of the
  noise is the candidate's interval's to carry.)
- A speedup is a pass only when the interval's lower end lies above the bar: the task's,
  raised to the noise floor. A median at or under the task's own bar (at least MIN_FLOOR)
  is decided: no faster, whatever the noise. Between the two (the median above the task's
  bar, the interval or the floor not clear of it) the run is inconclusive, and the verifier
  times again (`Wall.decided`): a noise floor raised by a busy machine, or a run the machine
  slowed whole, costs time, not an honest candidate's label.
- The baseline timed against itself then passes only when at least 13 of 15 rounds show
  it faster than the floor: a chance below ALPHA for noise, and a placement effect larger
  than the A/A pair's own.

Pure functions of the times: the verifier measures, this decides.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from verifiers import stats

ALPHA = 0.01  # each end of an interval misses its median at most this often
MIN_FLOOR = 1.01  # the least speedup that can be a pass, wall time or instructions


@dataclass(frozen=True)
class Wall:
    speedup: float  # median of the rounds' baseline / candidate ratios
    low: float  # its interval's ends
    high: float
    noise_floor: float  # the A/A median read either way (at least MIN_FLOOR)
    aa: float  # the A/A ratios' median (baseline / its second copy)
    aa_low: float  # its interval's ends
    aa_high: float
    bar: float  # what the interval's low end must clear: max(task bar, noise floor)
    least: float  # the task's bar, at least MIN_FLOOR: what no noise floor raised
    spread: float  # interquartile range of the ratios over their median
    rounds: int

    @property
    def clears(self) -> bool:
        return self.low > self.bar

    @property
    def decided(self) -> bool:
        """What more rounds would not change: cleared, or a median no faster than the
        task's own bar (a median above it, under a floor the machine raised, is not)."""
        return self.clears or self.speedup <= self.least

    def metrics(self) -> dict[str, object]:
        return {
            "speedup_wall": round(self.speedup, 4),
            "speedup_wall_ci": [round(self.low, 4), round(self.high, 4)],
            "noise_floor": round(self.noise_floor, 4),
            "aa_wall": round(self.aa, 4),
            "aa_wall_ci": [round(self.aa_low, 4), round(self.aa_high, 4)],
            "wall_bar_applied": round(self.bar, 4),
            "wall_spread": round(self.spread, 4),
            "wall_clears_bar": self.clears,
        }


def judge(times: list[tuple[int, int, int]], task_bar: float) -> Wall:
    """The rounds' (candidate ns, baseline ns, baseline copy ns) against the task's bar."""
    if not times:
        raise ValueError("no timed rounds")
    ratios = [b / max(1, c) for c, b, _ in times]
    aa = [b / max(1, a) for _, b, a in times]
    low, mid, high = stats.median_interval(ratios, ALPHA)
    alow, amid, ahigh = stats.median_interval(aa, ALPHA)
    floor = max(MIN_FLOOR, amid, 1 / max(amid, 1e-9))
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return Wall(
        speedup=mid,
        low=low,
        high=high,
        noise_floor=floor,
        aa=amid,
        aa_low=alow,
        aa_high=ahigh,
        bar=max(task_bar, floor),
        least=max(task_bar, MIN_FLOOR),
        spread=(q[2] - q[0]) / mid if mid else 0.0,
        rounds=len(times),
    )


def instruction_bar(task_bar: float) -> float:
    """What an instruction-count speedup must exceed: the task's bar, at least MIN_FLOOR
    (the count is exact, so no noise floor of its own: 48 fewer instructions in 394,748
    are fewer, and no faster)."""
    return max(task_bar, MIN_FLOOR)
