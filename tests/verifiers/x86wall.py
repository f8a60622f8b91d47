"""x86asm verdicts on the suite's shared, loaded host: a candidate that is faster in
instructions can still be `slow` for want of a clear wall-time interval (its interval's
low end under the noise floor: one clean-clone run measured the baseline against a copy
of itself at 1.289x), even after the verifier's own retimes (`TIMED_RUNS`). That is the
verifier's rule for a speedup inside the noise, and right; a test that needs the
reference's `pass` measures again."""

from __future__ import annotations

from verifiers.contract import Status

# memory-bound references: their passes write more than L1 holds (mem_fill_u32 1.5 MB),
# so L2's bandwidth caps their real gain (4.5x fewer instructions) at ~1.25x in wall time,
# and a loaded host's noise can hide it. Verifier 2 left them `slow` in about 1 of 3
# verifications here; verifier 3 times an inconclusive run again (up to 8 runs), and 16 of
# 16 passed beside 3-4 CPU hogs, but a test of them still allows the rule's `slow`
WALL_MARGINAL = frozenset({"mem_fill_u32", "mem_move"})


def inconclusive_wall(v) -> bool:
    """`slow` only for want of a clear wall interval: faster in instructions past the bar,
    the wall interval's low end not clearing the wall bar."""
    m = v.metrics
    return (
        (v.status, v.code) == (Status.SLOW, "slow")
        and m.get("speedup", 0) > m.get("instruction_bar_applied", float("inf"))
        and not m.get("wall_clears_bar", True)
    )


def reference_ok(task, v) -> bool:
    """A catalog reference's verdict as a test may require it: `pass`, or for the tasks
    of WALL_MARGINAL, `slow` for want of a clear wall interval (after `verify_settled`)."""
    if v.status is Status.PASS:
        return True
    return task.name in WALL_MARGINAL and inconclusive_wall(v)


def verify_settled(verifier, task, code, limits=None, tries: int = 3):
    """The verdict, measured again (up to `tries` in all) while it is `inconclusive_wall`:
    a reference that is never measurably faster still ends `slow`."""
    for _ in range(tries):
        v = verifier.verify(task, code, limits)
        if not inconclusive_wall(v):
            break
    return v
