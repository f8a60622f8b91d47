"""The median and its distribution-free interval, from order statistics (stdlib only: the
kernel runner imports it inside its sandbox, the x86asm judge on the host).

No assumption on the shape of the noise: of n samples, the interval's ends are the k-th
from either end, k the largest rank at which a sample lies below (above) the median with
chance at most alpha; an outlier moves either end by one rank at most.
"""

from __future__ import annotations

import math
import statistics


def rank(n: int, alpha: float) -> int:
    """The 0-based rank k of a sorted sample of n whose value lies above the median with
    chance at most alpha (it does when at most k of the n lie below the median:
    P(Binomial(n, 1/2) <= k) <= alpha), k as large as that allows; 0, the minimum, when n
    is too small for any rank to hold that."""
    total, k = 0.0, -1
    while k + 1 < n:
        total += math.comb(n, k + 1) / 2**n  # P(exactly k + 1 below the median)
        if total > alpha:
            break
        k += 1
    return max(k, 0)


def median_interval(xs: list[float], alpha: float) -> tuple[float, float, float]:
    """(low, median, high): the median and its order-statistic interval, each end
    missing with chance at most alpha."""
    s = sorted(xs)
    k = rank(len(s), alpha)
    return s[k], statistics.median(s), s[len(s) - 1 - k]
