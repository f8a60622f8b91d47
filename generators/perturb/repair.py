"""Offline repair: reference-guided reconstruction.

Without a model, a failed candidate is repaired from the nearest candidate of the same
task that passed verification: the line diff between the two is split into hunks and one
round applies one hunk (the first), so a candidate several edits away from any verified
variant takes several rounds, each verified on its own, which is what a repair trajectory
records. The result is re-verified like any other candidate; nothing here trusts that the
patched code works.
"""

from __future__ import annotations

import difflib

from generators.base import Generator, RepairRequest
from verifiers.contract import Candidate


def nearest(code: str, verified: tuple[Candidate, ...]) -> Candidate | None:
    """The verified candidate whose lines are most like `code` (ties: smallest id)."""
    lines = code.splitlines()
    best: tuple[float, str] | None = None
    pick = None
    for cand in verified:
        ratio = difflib.SequenceMatcher(None, lines, cand.code.splitlines(), autojunk=False)
        key = (-ratio.ratio(), cand.candidate_id)
        if best is None or key < best:
            best, pick = key, cand
    return pick


def apply_first_hunk(code: str, target: str) -> str | None:
    """`code` with its first differing hunk against `target` replaced by target's lines."""
    a = code.splitlines(keepends=True)
    b = target.splitlines(keepends=True)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            return "".join(a[:i1] + b[j1:j2] + a[i2:])
    return None  # identical


class ReconstructRepair(Generator):
    """The offline repair channel (DESIGN.md: repair with the nearest verified variant)."""

    name = "reconstruct"

    def repair(self, request: RepairRequest, *, seed: int = 0) -> list[Candidate]:
        target = nearest(request.failed.code, request.verified)
        if target is None:
            self.stats["no_verified_variant"] += 1
            return []
        fixed = apply_first_hunk(request.failed.code, target.code)
        if fixed is None or fixed == request.failed.code:
            self.stats["nothing_to_apply"] += 1
            return []
        self.stats["repaired"] += 1
        return [request.child(fixed, f"{self.name}:{target.candidate_id[:12]}")]
