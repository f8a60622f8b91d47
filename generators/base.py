"""The generator family base: a candidate producer has a stable `name` and one method.

`generate(task, n=..., seed=...)` returns candidates for one task. It is deterministic: the
same task and seed give the same codes, hence the same `candidate_id`s, so re-running a
generation stage appends nothing new to the lake. `run_id` is left empty; the stage that
runs the generator stamps it with `dataclasses.replace`.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from verifiers.contract import ORIGINS, Candidate, Task, Verdict, content_id


def seeded_rng(*parts: str) -> random.Random:
    """A private RNG whose state depends only on `parts` (never on the process or time)."""
    return random.Random(int(content_id(*parts)[:16], 16))


class Generator:
    """A candidate producer. Subclasses set `name` and implement `generate`."""

    name: ClassVar[str] = ""
    # The origins this generator writes: a generate stage counts a task's existing
    # candidates of these origins (and this generator's label) to know what is left to do.
    origins: ClassVar[tuple[str, ...]] = ("llm",)
    # Deterministic generators (the same task and seed give the same codes) are asked once
    # per task; sampling ones are topped up to the number of candidates wanted.
    deterministic: ClassVar[bool] = False

    @property
    def candidates_like(self) -> str:
        """A LIKE pattern on `candidates.generator` matching what this generator wrote."""
        return f"{self.name}:%"

    def __init__(self) -> None:
        # Counters instead of log lines: a stage reads them after a run (datatrove style).
        self.stats: Counter[str] = Counter()

    def generate(self, task: Task, *, n: int | None = None, seed: int = 0) -> list[Candidate]:
        raise NotImplementedError

    def repair(self, request: RepairRequest, *, seed: int = 0) -> list[Candidate]:
        """Fixes for one failed candidate: origin `repair`, `parent_id` the failed one,
        `attempt` one more than its. Empty when this generator has no fix to offer."""
        raise NotImplementedError(f"generator {self.name!r} does not repair")

    # Batch forms: a stage hands a generator all its work at once so that a remote one can
    # overlap requests. Results come back in input order. The defaults just loop.
    def generate_many(
        self, tasks: Sequence[Task], *, n: int | None = None, seed: int = 0
    ) -> Iterator[tuple[Task, list[Candidate]]]:
        for task in tasks:
            yield task, self.generate(task, n=n, seed=seed)

    def repair_many(
        self, requests: Sequence[RepairRequest], *, seed: int = 0
    ) -> Iterator[tuple[RepairRequest, list[Candidate]]]:
        for req in requests:
            yield req, self.repair(req, seed=seed)


@dataclass(frozen=True)
class RepairRequest:
    """One failed candidate to fix: what the repair stage selected from the lake.

    `verified` holds the task's candidates that passed (the offline repair rebuilds from
    the nearest of them; a model never sees them).
    """

    task: Task
    failed: Candidate
    verdict: Verdict
    verified: tuple[Candidate, ...] = ()

    def child(self, code: str, generator: str, prompt: str | None = None) -> Candidate:
        return Candidate(
            task_id=self.task.task_id,
            code=code,
            origin="repair",
            generator=generator,
            prompt=prompt,
            parent_id=self.failed.candidate_id,
            attempt=self.failed.attempt + 1,
        )


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
