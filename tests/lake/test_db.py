"""DuckDB over the lake: views dedupe, and the sql/ files give exact numbers."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest
from deltalake import write_deltalake

from lake import db
from lake.schema import to_arrow, verdict_row
from lake.store import Lake, LakeError
from lake.writer import BatchWriter
from tests.lake.conftest import make_candidate, make_task, make_verdict

LATER = "2025-02-01T00:00:00.000+00:00"


@pytest.fixture
def scenario(lake: Lake) -> dict[str, str]:
    """Hand-made tasks, candidates and verdicts with known pass rates and failures."""
    t1, t2 = make_task("adder", "rtl", 1), make_task("fifo", "rtl", 2)
    t3, t4 = make_task("gemm", "cuda", 3), make_task("softmax", "cuda", 4)
    plan = [
        # name, task, origin, status, category, code
        ("c1", t1, "llm", "pass", "", ""),
        ("c2", t1, "llm", "wrong_answer", "functional", "sim_mismatch"),
        ("c3", t1, "llm", "infra_error", "infra", "tool_missing"),
        ("c4", t1, "perturb", "compile_error", "syntax", "syntax_error"),
        ("c5", t1, "perturb", "pass", "", ""),
        ("c6", t2, "llm", "pass", "", ""),
        ("c7", t2, "llm", "timeout", "timeout", "sim_timeout"),
        ("c8", t3, "llm", "compile_error", "api", "undefined_symbol"),
        ("c9", t3, "llm", "infra_error", "infra", "tool_crash"),
        ("c10", t4, "llm", "infra_error", "infra", "tool_missing"),
        ("c11", t1, "llm", "pass", "", ""),  # its candidate row is never written
    ]
    ids: dict[str, str] = {}
    with BatchWriter(lake, run_id="r1") as w:
        for task in (t1, t2, t3, t4):
            w.add_task(task)
        for name, task, origin, status, category, code in plan:
            c = make_candidate(task, f"// {name}", origin)
            ids[name] = c.candidate_id
            if name != "c11":
                w.add_candidate(c, task.domain)
            w.add_verdict(make_verdict(c, task, status, category=category, code=code))
            if name == "c2":  # re-verified by verifier version 2, later: now it passes
                w.add_verdict(make_verdict(c, task, "pass", version="2", created_at=LATER))
    # An at-least-once copy of c1's verdict, appended around the writer (a retry, later).
    c1 = make_candidate(t1, "// c1", "llm")
    dup = verdict_row(make_verdict(c1, t1, "pass", created_at=LATER), run_id="retry")
    write_deltalake(lake.table_uri("verdicts"), to_arrow("verdicts", [dup]), mode="append")
    return ids


def test_views_dedupe_by_id(lake: Lake, scenario: dict[str, str]) -> None:
    con = db.connect(lake)
    raw = con.sql("SELECT count(*) FROM raw_verdicts").fetchone()
    deduped = con.sql("SELECT count(*) FROM verdicts").fetchone()
    assert (raw, deduped) == ((13,), (12,))
    kept = con.sql(
        "SELECT run_id FROM verdicts WHERE candidate_id = $c", params={"c": scenario["c1"]}
    )
    assert kept.fetchall() == [("r1",)]  # the earliest copy wins


def test_pass_rates(lake: Lake, scenario: dict[str, str]) -> None:
    got = db.rows(db.connect(lake), "pass_rates")
    cols = ("domain", "level", "origin", "verifier_version")
    counts = ("candidates", "infra_errors", "judged", "passed", "pass_rate")
    table = {tuple(r[c] for c in cols): tuple(r[c] for c in counts) for r in got}
    assert table == {
        ("cuda", 3, "llm", "1"): (2, 1, 1, 0, 0.0),
        ("cuda", 4, "llm", "1"): (1, 1, 0, 0, None),  # nothing judged: no rate, not 0
        ("rtl", 1, "llm", "1"): (3, 1, 2, 1, 0.5),
        ("rtl", 1, "llm", "2"): (1, 0, 1, 1, 1.0),
        ("rtl", 1, "perturb", "1"): (2, 0, 2, 1, 0.5),
        ("rtl", 1, None, "1"): (1, 0, 1, 1, 1.0),  # verdict without a candidate row
        ("rtl", 2, "llm", "1"): (2, 0, 2, 1, 0.5),
    }
    assert [r["domain"] for r in got] == sorted(r["domain"] for r in got)


def test_error_taxonomy_over_latest_verdicts(lake: Lake, scenario: dict[str, str]) -> None:
    got = db.rows(db.connect(lake), "error_taxonomy")
    ids = scenario
    assert got == [
        {
            "status": "infra_error",
            "category": "infra",
            "code": "tool_missing",
            "count": 2,
            "share": 2 / 6,
            "example_candidate_id": min(ids["c3"], ids["c10"]),
        },
        *(
            {
                "status": status,
                "category": category,
                "code": code,
                "count": 1,
                "share": 1 / 6,
                "example_candidate_id": ids[name],
            }
            for status, category, code, name in [
                ("compile_error", "api", "undefined_symbol", "c8"),
                ("compile_error", "syntax", "syntax_error", "c4"),
                ("infra_error", "infra", "tool_crash", "c9"),
                ("timeout", "timeout", "sim_timeout", "c7"),
            ]
        ),
    ]  # c2's first verdict (sim_mismatch) is superseded by its later pass


def test_gate_times(lake: Lake, scenario: dict[str, str]) -> None:
    got = db.rows(db.connect(lake), "gate_times")
    assert [(r["domain"], r["gate"], r["runs"], r["stopped"], r["median_s"]) for r in got] == [
        ("cuda", "compile", 3, 0, 0.25),
        ("rtl", "compile", 9, 0, 0.25),
    ]


def test_lake_counts(lake: Lake, scenario: dict[str, str]) -> None:
    got = {r["table"]: (r["rows"], r["raw_rows"]) for r in db.rows(db.connect(lake), "lake_counts")}
    assert got["verdicts"] == (12, 13)
    assert got["candidates"] == (10, 10)
    assert got["tasks"] == (4, 4)


def test_views_see_commits_made_after_connect(lake: Lake) -> None:
    con = db.connect(lake)
    assert con.sql("SELECT count(*) FROM candidates").fetchone() == (0,)
    task = make_task()
    with BatchWriter(lake) as w:
        w.add_candidate(make_candidate(task, "x"), "rtl")
    assert con.sql("SELECT count(*) FROM candidates").fetchone() == (1,)


def test_connect_accepts_a_path(tmp_path: Path) -> None:
    con = db.connect(tmp_path / "lake")
    assert con.sql("SELECT count(*) FROM latest_verdicts").fetchone() == (0,)


def test_unknown_sql_name_lists_the_available_ones(lake: Lake) -> None:
    con = db.connect(lake)
    with pytest.raises(LakeError, match=r"no SQL named 'pass_rate'; available: .*pass_rates"):
        db.run_sql(con, "pass_rate")
    with pytest.raises(LakeError, match="no SQL named"):
        db.run_sql(con, "../pyproject")


def test_run_sql_binds_parameters(
    lake: Lake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sql_dir = tmp_path / "sql"
    sql_dir.mkdir()
    (sql_dir / "by_domain.sql").write_text("SELECT count(*) AS n FROM tasks WHERE domain = $domain")
    monkeypatch.setattr(db, "SQL_DIR", sql_dir)
    with BatchWriter(lake) as w:
        w.add_task(make_task("a", "rtl"))
        w.add_task(make_task("b", "cuda"))
    assert db.rows(db.connect(lake), "by_domain", domain="rtl") == [{"n": 1}]


def test_missing_extension_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "duckdb_extension_delta", None)  # import now fails
    with pytest.raises(LakeError, match=r"pip install 'duckdb-extension-delta==1\.5\.5'"):
        db.delta_extension_path()


def test_mismatched_extension_version_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(duckdb, "__version__", "9.9.9")
    with pytest.raises(
        LakeError, match=r"no delta extension for DuckDB 9\.9\.9 .*found: .*v1\.5\.5"
    ):
        db.delta_extension_path()
