"""Operator tables and the generator that runs them, shared by every language.

A language joins by supplying two tables: `Rewrite`s (semantics-preserving variants of the
reference) and `Mutation`s (the defects real models write). An operator is a pure function
`apply(source, rng) -> new source | None`; None means "no site for me in this source". All
randomness comes from the rng handed in, seeded from (task_id, operator, seed), so the same
task and seed always give the same candidates.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from generators.base import CandidateSet, Generator, seeded_rng
from verifiers.contract import Candidate, Task
from verifiers.taxonomy import CATEGORIES

Apply = Callable[[str, random.Random], str | None]


@dataclass(frozen=True)
class Rewrite:
    name: str
    description: str  # why the result behaves exactly like the input
    apply: Apply


@dataclass(frozen=True)
class Mutation:
    name: str
    description: str  # the real-model bug it imitates
    category: str  # the taxonomy category a verifier should give the result
    apply: Apply
    # a bug only at some sizes: is it one at this task's (the mutated code given)? A
    # mutation that is none there is not offered (it would be a correct program)
    shows: Callable[[Task, str], bool] | None = None

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"{self.name}: category {self.category!r} not in {CATEGORIES}")


def check_table(ops: tuple[Rewrite, ...] | tuple[Mutation, ...]) -> None:
    """Generator names end up in the lake (`perturb:<name>`), so they must be unique."""
    names = [op.name for op in ops]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"operator names used twice: {', '.join(dupes)}")


class OperatorGenerator(Generator):
    """Reference, then every applicable rewrite, then perturbations.

    `n` caps the perturbations per task. Without it each applicable mutation runs once;
    with it, mutations take turns (in an order shuffled by the seed) and later rounds
    reseed each operator so it can pick another site, until `n` are made or a whole round
    adds nothing new.
    """

    domain: ClassVar[str] = ""
    rewrites: ClassVar[tuple[Rewrite, ...]] = ()
    mutations: ClassVar[tuple[Mutation, ...]] = ()
    max_rounds: ClassVar[int] = 8

    def generate(self, task: Task, *, n: int | None = None, seed: int = 0) -> list[Candidate]:
        if task.domain != self.domain:
            raise ValueError(f"{self.name} generates {self.domain!r} tasks, not {task.domain!r}")
        if n is not None and n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        if not task.reference:
            self.stats["no_reference"] += 1
            return []
        ref = task.reference
        out = CandidateSet(task)
        out.add(ref, "reference", "catalog:reference")
        for rw in self.rewrites:
            code = rw.apply(ref, seeded_rng(task.task_id, rw.name, str(seed)))
            self._offer(out, code, "rewrite", rw.name)
        self._perturb(task, ref, out, n, seed)
        return out.candidates

    def _perturb(self, task: Task, ref: str, out: CandidateSet, n: int | None, seed: int) -> None:
        order = list(self.mutations)
        seeded_rng(task.task_id, "order", str(seed)).shuffle(order)
        made = 0
        for k in range(1 if n is None else self.max_rounds):
            before = made
            for op in order:
                if n is not None and made >= n:
                    return
                parts = (task.task_id, op.name, str(seed)) + ((str(k),) if k else ())
                code = op.apply(ref, seeded_rng(*parts))
                if code is not None and op.shows is not None and not op.shows(task, code):
                    self.stats[f"perturb:{op.name}.no_bug_at_task_sizes"] += 1
                    continue
                made += self._offer(out, code, "perturb", op.name)
            if made == before:
                return

    def _offer(self, out: CandidateSet, code: str | None, origin: str, op: str) -> bool:
        key = f"{origin}:{op}"
        if code is None:
            self.stats[f"{key}.not_applicable"] += 1
            return False
        # the reference went in first, so a copy of it is a duplicate like any other
        if not out.add(code, origin, key):
            self.stats[f"{key}.duplicate"] += 1
            return False
        self.stats[f"{key}.produced"] += 1
        return True
