"""Records survive the trip into a row and back."""

from __future__ import annotations

import dataclasses

from lake.schema import (
    TABLES,
    candidate_from_row,
    candidate_row,
    task_from_row,
    task_row,
    to_arrow,
    verdict_from_row,
    verdict_row,
)
from lake.writer import FLUSH_ORDER
from tests.lake.conftest import make_candidate, make_task, make_verdict
from verifiers.contract import Artifact, Check


def test_every_table_has_its_id_and_partitioning() -> None:
    for name, spec in TABLES.items():
        assert spec.id_column in spec.columns
        assert spec.order_by in spec.columns
        assert spec.partition_by == (() if name in ("runs", "exports") else ("domain",))
        assert not spec.schema.field(spec.id_column).nullable


def test_round_trip_through_arrow() -> None:
    task = make_task()
    cand = make_candidate(task, "module m; endmodule", parent_id="p", prompt="[]", attempt=2)
    verdict = make_verdict(
        cand,
        task,
        "wrong_answer",
        checks=(Check("compile", True, 0.1), Check("simulate", False, 0.2, "t=5: y=1, want 0")),
        artifacts=(Artifact("log", "sim.log", b"x"),),
    )
    (t,) = to_arrow("tasks", [task_row(task)]).to_pylist()
    (c,) = to_arrow("candidates", [candidate_row(cand, "rtl")]).to_pylist()
    (v,) = to_arrow("verdicts", [verdict_row(verdict, "r")]).to_pylist()
    assert task_from_row(t) == task
    assert candidate_from_row(c) == cand
    assert verdict_from_row(v) == dataclasses.replace(verdict, artifacts=())
    assert v["passed"] is False
    assert v["checks"][1] == {
        "name": "simulate",
        "ok": False,
        "seconds": 0.2,
        "detail": "t=5: y=1, want 0",
    }


def test_the_writer_flushes_every_table() -> None:
    assert sorted(FLUSH_ORDER) == sorted(TABLES)
