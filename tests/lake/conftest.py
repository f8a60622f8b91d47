"""A real lake in a temp dir and small factories of hand-made records."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake.store import Lake
from verifiers.contract import Artifact, Candidate, Check, Task, Verdict


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    return Lake(tmp_path / "lake")


def make_task(name: str = "adder", domain: str = "rtl", level: int = 1) -> Task:
    return Task(
        name=name,
        domain=domain,
        family="arith",
        level=level,
        requirement=f"Write {name}.",
        interface={"ports": [{"name": "a", "width": 8, "dir": "in"}]},
        platform={"target": "generic"},
        reference="module m; endmodule",
        harness={"trials": 4},
    )


def make_candidate(task: Task, code: str, origin: str = "llm", **kw: object) -> Candidate:
    return Candidate(task_id=task.task_id, code=code, origin=origin, generator="test", **kw)


def make_verdict(
    candidate: Candidate,
    task: Task,
    status: str,
    *,
    code: str = "",
    category: str = "",
    version: str = "1",
    created_at: str = "2025-01-01T00:00:00.000+00:00",
    checks: tuple[Check, ...] = (Check("compile", True, 0.25, stage="build"),),
    artifacts: tuple[Artifact, ...] = (),
) -> Verdict:
    return Verdict(
        candidate_id=candidate.candidate_id,
        task_id=task.task_id,
        domain=task.domain,
        verifier=task.domain,
        verifier_version=version,
        status=status,
        checks=checks,
        metrics={"cells": 7},
        feedback="" if status == "pass" else f"{status}: see log",
        category=category,
        code=code,
        created_at=created_at,
        artifacts=artifacts,
    )
