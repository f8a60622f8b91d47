"""Records survive the trip into a row and back."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from lake import db, store
from lake.schema import (
    CHECK_TYPE,
    TABLES,
    candidate_from_row,
    candidate_row,
    task_from_row,
    task_row,
    to_arrow,
    verdict_from_row,
    verdict_row,
)
from lake.store import MARKER, Lake, LakeError
from lake.writer import FLUSH_ORDER, BatchWriter
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
        checks=(
            Check("compile", True, 0.1, stage="build"),
            Check("simulate", False, 0.2, "t=5: y=1, want 0", stage="run"),
        ),
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
        "stage": "run",
    }
    # a row read from before checks had a stage: the stage is ""
    old = {
        **v,
        "checks": [{k: c[k] for k in ("name", "ok", "seconds", "detail")} for c in v["checks"]],
    }
    assert [c.stage for c in verdict_from_row(old).checks] == ["", ""]


def test_the_writer_flushes_every_table() -> None:
    assert sorted(FLUSH_ORDER) == sorted(TABLES)


# --- lake format 1 (checks without a stage) -> 2 -------------------------------------------

OLD_CHECK = pa.struct([f for f in CHECK_TYPE if f.name != "stage"])
OLD_VERDICTS = pa.schema(
    [
        pa.field("checks", pa.list_(OLD_CHECK)) if f.name == "checks" else f
        for f in TABLES["verdicts"].schema
    ]
)


def _old_row(domain: str, i: int, checks: list[tuple[str, bool]] | None) -> dict:
    task = make_task(domain=domain)
    cand = make_candidate(task, f"code {domain} {i}")
    row = verdict_row(make_verdict(cand, task, "wrong_answer"), "old")
    row["checks"] = (
        None
        if checks is None
        else [{"name": n, "ok": ok, "seconds": 0.5, "detail": f"d{i}"} for n, ok in checks]
    )
    return row


def format_1_lake(root: Path) -> list[dict]:
    """A lake as Crucible wrote it before checks had a stage: the old `checks` struct,
    marker format 1; verdicts of two known domains and one no descriptor knows, in two
    commits (several files per partition)."""
    Lake(root)
    path = root / "tables" / "verdicts"
    shutil.rmtree(path)
    DeltaTable.create(str(path), OLD_VERDICTS, partition_by=["domain"], name="verdicts")
    rows = [
        _old_row("rtl", 0, [("format", True), ("compile", True), ("simulate", False)]),
        _old_row("rtl", 1, [("format", True), ("compile", True), ("synthesize", False)]),
        _old_row("cad", 2, [("format", True), ("anticheat", True), ("build", False)]),
        _old_row("rtl", 3, []),
        _old_row("rtl", 4, None),
        _old_row("gone_domain", 5, [("format", True), ("assemble", True)]),
        _old_row("rtl", 6, [("format", True), ("no_such_gate", True)]),
    ]
    for part in (rows[:3], rows[3:]):
        write_deltalake(str(path), pa.Table.from_pylist(part, schema=OLD_VERDICTS), mode="append")
    (root / MARKER).write_text(json.dumps({"format": 1}) + "\n")
    return rows


def _checks(lake: Lake) -> dict[str, list | None]:
    rows = lake.table("verdicts").to_pyarrow_table().to_pylist()
    return {r["verdict_id"]: r["checks"] for r in rows}


def test_a_format_1_lake_is_migrated_when_opened_writable(tmp_path: Path) -> None:
    rows = format_1_lake(tmp_path / "lake")
    with pytest.raises(LakeError, match=r"has format 1.*open it once without readonly"):
        Lake(tmp_path / "lake", readonly=True)
    lake = Lake(tmp_path / "lake")
    assert json.loads((lake.root / MARKER).read_text()) == {"format": store.LAKE_FORMAT}
    assert lake.table("verdicts").schema().to_arrow().names == list(TABLES["verdicts"].columns)
    got = _checks(lake)
    assert sorted(got) == sorted(r["verdict_id"] for r in rows)  # no row lost or added
    stages = {
        vid: None if cs is None else [(c["name"], c["stage"]) for c in cs]
        for vid, cs in got.items()
    }
    ids = [r["verdict_id"] for r in rows]
    assert stages[ids[0]] == [("format", "build"), ("compile", "build"), ("simulate", "run")]
    assert stages[ids[1]][-1] == ("synthesize", "build")
    assert stages[ids[2]] == [("format", "build"), ("anticheat", "build"), ("build", "build")]
    assert stages[ids[3]] == [] and stages[ids[4]] is None
    assert stages[ids[5]] == [("format", ""), ("assemble", "")]  # no descriptor: ""
    assert stages[ids[6]] == [("format", "build"), ("no_such_gate", "")]
    # everything else of each check and row is as it was
    old = {r["verdict_id"]: r for r in rows}
    for vid, cs in got.items():
        if cs is not None:
            assert [{k: c[k] for k in OLD_CHECK.names} for c in cs] == old[vid]["checks"]
    # SQL reads the stage; the writer appends with the new schema; a reopen changes nothing
    version = lake.version("verdicts")
    con = db.connect(lake)
    try:
        (n,) = con.execute(
            "SELECT count(*) FROM verdicts WHERE list_contains("
            "list_transform(checks, lambda c: c.stage), 'run')"
        ).fetchone()
    finally:
        con.close()
    assert n == 1
    task = make_task()
    with BatchWriter(lake) as w:
        w.add_verdict(make_verdict(make_candidate(task, "new"), task, "pass"))
    assert Lake(lake.root).version("verdicts") == version + 1


def test_a_failed_migration_changes_nothing_and_the_next_open_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = format_1_lake(tmp_path / "lake")
    before = DeltaTable(str(tmp_path / "lake" / "tables" / "verdicts")).version()

    def crash(*args, **kwargs):
        raise OSError("simulated crash in the middle of the rewrite")

    monkeypatch.setattr(store, "_with_stages", crash)
    with pytest.raises(LakeError, match=r"cannot migrate table 'verdicts'.*nothing was changed"):
        Lake(tmp_path / "lake")
    dt = DeltaTable(str(tmp_path / "lake" / "tables" / "verdicts"))
    assert dt.version() == before and dt.to_pyarrow_table().num_rows == len(rows)
    assert json.loads((tmp_path / "lake" / MARKER).read_text()) == {"format": 1}
    monkeypatch.undo()
    lake = Lake(tmp_path / "lake")
    assert len(_checks(lake)) == len(rows)
    assert json.loads((lake.root / MARKER).read_text()) == {"format": store.LAKE_FORMAT}


def test_a_crash_after_the_rewrite_only_moves_the_marker(tmp_path: Path) -> None:
    # the table was rewritten but the process died before the marker moved
    format_1_lake(tmp_path / "lake")
    Lake(tmp_path / "lake")
    (tmp_path / "lake" / MARKER).write_text(json.dumps({"format": 1}))
    version = DeltaTable(str(tmp_path / "lake" / "tables" / "verdicts")).version()
    lake = Lake(tmp_path / "lake")
    assert lake.version("verdicts") == version  # nothing rewritten twice
    assert json.loads((lake.root / MARKER).read_text()) == {"format": store.LAKE_FORMAT}


def test_an_empty_format_1_verdicts_table_is_migrated(tmp_path: Path) -> None:
    Lake(tmp_path / "lake")
    path = tmp_path / "lake" / "tables" / "verdicts"
    shutil.rmtree(path)
    DeltaTable.create(str(path), OLD_VERDICTS, partition_by=["domain"], name="verdicts")
    (tmp_path / "lake" / MARKER).write_text(json.dumps({"format": 1}))
    lake = Lake(tmp_path / "lake")
    field = pa.schema(lake.table("verdicts").schema().to_arrow()).field("checks")
    assert "stage" in [f.name for f in field.type.value_type]
    assert lake.table("verdicts").metadata().partition_columns == ["domain"]
