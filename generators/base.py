"""The generator family base: a candidate producer has a stable `name` and one method.

`generate(task, n=..., seed=...)` returns candidates for one task. It is deterministic: the
same task and seed give the same codes, hence the same `candidate_id`s, so re-running a
generation stage appends nothing new to the lake. `run_id` is left empty; the stage that
runs the generator stamps it with `dataclasses.replace`.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import ClassVar

from verifiers.contract import ORIGINS, Candidate, Task, content_id


def seeded_rng(*parts: str) -> random.Random:
    """A private RNG whose state depends only on `parts` (never on the process or time)."""
    return random.Random(int(content_id(*parts)[:16], 16))


class Generator:
    """A candidate producer. Subclasses set `name` and implement `generate`."""

    name: ClassVar[str] = ""

    def __init__(self) -> None:
        # Counters instead of log lines: a stage reads them after a run (datatrove style).
        self.stats: Counter[str] = Counter()

    def generate(self, task: Task, *, n: int | None = None, seed: int = 0) -> list[Candidate]:
        raise NotImplementedError


class CandidateSet:
    """Collects one task's candidates in order, dropping any whose code was already seen.

    A second candidate with the same code would have the same `candidate_id`; keeping only
    the first makes the earlier, more trustworthy channel (reference before rewrite before
    perturbation) the one that is recorded.
    """

    def __init__(self, task: Task) -> None:
        self.task = task
        self.candidates: list[Candidate] = []
        self._seen: set[str] = set()

    def add(self, code: str, origin: str, generator: str) -> bool:
        if origin not in ORIGINS:
            raise ValueError(f"origin {origin!r} is not one of {', '.join(ORIGINS)}")
        if code in self._seen:
            return False
        self._seen.add(code)
        self.candidates.append(
            Candidate(task_id=self.task.task_id, code=code, origin=origin, generator=generator)
        )
        return True
