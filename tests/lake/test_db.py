"""DuckDB over the lake: views dedupe, and the sql/ files give exact numbers."""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest
from deltalake import write_deltalake

from lake import db
from lake.schema import TABLES, Run, to_arrow, verdict_row
from lake.store import Lake, LakeError
from lake.writer import BatchWriter
from tests.lake.conftest import make_candidate, make_task, make_verdict
from verifiers.contract import Check

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
    assert set(got) == set(TABLES)  # every table of the lake, none left out


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
    with pytest.raises(
        LakeError,
        match=r"no query named 'pass_rate'; did you mean 'pass_rates'.*known: .*gate_times",
    ):
        db.run_sql(con, "pass_rate")
    with pytest.raises(LakeError, match="no query named"):
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


# --- what a query is: names, parameters, unique columns ----------------------------------


@pytest.mark.parametrize(
    "select",
    [
        "SELECT 1 AS a, 2 AS a, 3 AS b",
        "SELECT 1 AS a, 2 AS a, 3 AS a_1",
        "SELECT 1 AS a, 2 AS A, 3 AS a, 4 AS a_2, 5 AS a_1",
        "SELECT 1 AS x_1, 2 AS x, 3 AS x",
    ],
)
def test_unique_columns_are_the_names_duckdb_gives_a_subquery(select: str) -> None:
    con = duckdb.connect()
    given = [d[0] for d in con.execute(select).description]
    duckdbs = [d[0] for d in con.execute(f"SELECT * FROM ({select})").description]
    assert db.unique_columns(given) == duckdbs
    table = db.arrow(con.execute(select))
    assert table.column_names == duckdbs
    assert list(table.to_pylist()[0].values()) == list(range(1, len(given) + 1))  # none lost


def test_every_shipped_query_has_unique_column_names(lake: Lake, scenario: dict[str, str]) -> None:
    """`arrow()` renames only duplicates: no stage reads a renamed column of a shipped query."""
    con = db.connect(lake)
    checked = 0
    for name in db.available_sql():
        text = db.sql_text(name)
        params = dict.fromkeys(db.sql_params(text))
        try:
            cur = con.execute(text, params) if params else con.execute(text)
        except duckdb.Error:  # a parameter that cannot be null (a file list): not described
            continue
        cols = [d[0].lower() for d in cur.description]
        assert len(cols) == len(set(cols)), (name, cols)
        checked += 1
    assert checked >= len(db.available_sql()) - 2


def test_sql_params_are_the_dollar_names_outside_strings_and_comments() -> None:
    text = (
        "-- $not_me in a comment\n"
        "SELECT json_extract_string(metrics, '$.equivalence') AS \"$nor_me\", /* $no */\n"
        "  $domain AS d FROM t WHERE list_contains($task_ids, task_id) AND domain = $domain"
    )
    assert db.sql_params(text) == ["domain", "task_ids"]
    assert db.sql_params(db.sql_text("candidate_artifacts")) == ["prefix"]
    assert db.sql_params(db.sql_text("unproven_passes")) == []  # its '$.key' is no parameter
    assert set(db.sql_params(db.sql_text("verified_candidates"))) == {"domain", "task_ids"}


def test_parse_params_reads_json_values_else_strings() -> None:
    got = db.parse_params(
        ["n=3", "f=0.5", "b=true", "none=null", 'ids=["a","b"]', "s=abc", 'q="123"', "e=", "k=a=b"]
    )
    assert got == {
        "n": 3,
        "f": 0.5,
        "b": True,
        "none": None,
        "ids": ["a", "b"],
        "s": "abc",
        "q": "123",
        "e": "",
        "k": "a=b",
    }
    with pytest.raises(LakeError, match="NAME=VALUE"):
        db.parse_params(["novalue"])
    with pytest.raises(LakeError, match="given twice"):
        db.parse_params(["a=1", "a=2"])


def test_check_params_names_what_the_query_takes() -> None:
    text = "SELECT * FROM t WHERE a = $a AND b = $b"
    db.check_params(text, {"a": 1, "b": None})
    with pytest.raises(LakeError, match=r"takes \$a, \$b: missing \$b \(pass --param b=\.\.\."):
        db.check_params(text, {"a": 1})
    with pytest.raises(LakeError, match=r"no parameter \$c; it takes \$a, \$b"):
        db.check_params(text, {"a": 1, "b": 2, "c": 3})
    with pytest.raises(LakeError, match=r"no parameter \$x; it takes no parameters"):
        db.check_params("SELECT 1", {"x": 1})


def test_a_query_name_is_one_identifier_like_word() -> None:
    assert db.is_query_name("pass_rates") and db.is_query_name(" gate_times ")
    for text in ("SELECT 1", "q.sql", "../x", "1abc", "pass-rates", ""):
        assert not db.is_query_name(text), text


# --- the flattened views of the list and JSON columns ------------------------------------


def test_checks_view_has_one_row_per_gate_in_order(lake: Lake) -> None:
    t = make_task("adder", "rtl", 1)
    c = make_candidate(t, "// x")
    gates = (
        Check("compile", True, 0.25, stage="build"),
        Check("simulate", False, 1.5, "mismatch at 10 ns", stage="run"),
    )
    v = make_verdict(c, t, "wrong_answer", code="sim_mismatch", checks=gates)
    with BatchWriter(lake, run_id="r1") as w:
        w.add_candidate(c, t.domain)
        w.add_verdict(v)
    got = db.connect(lake).sql(
        "SELECT verdict_id, candidate_id, domain, position, gate, stage, ok, seconds, detail "
        "FROM checks ORDER BY position"
    )
    assert got.fetchall() == [
        (v.verdict_id, c.candidate_id, "rtl", 1, "compile", "build", True, 0.25, ""),
        (
            v.verdict_id,
            c.candidate_id,
            "rtl",
            2,
            "simulate",
            "run",
            False,
            1.5,
            "mismatch at 10 ns",
        ),
    ]


def test_metrics_view_flattens_each_key_numeric_where_it_can(lake: Lake) -> None:
    t = make_task("adder", "rtl", 1)
    c = make_candidate(t, "// x")
    metrics = {"cells": 7, "area": 2.5, "latch": True, "eq": "unknown", "runs": [1, 2], "n": None}
    v = replace(make_verdict(c, t, "pass"), metrics=metrics, toolchain={"sim": "12.0"})
    with BatchWriter(lake, run_id="r1") as w:
        w.add_verdict(v)
        w.add_run(Run("r1", "test", "completed", LATER, counts={"verified": 3, "stats": {"a": 1}}))
    con = db.connect(lake)
    got = {
        r[0]: r[1:]
        for r in con.sql(
            "SELECT key, value, text, json::VARCHAR, type FROM metrics WHERE verdict_id = $v",
            params={"v": v.verdict_id},
        ).fetchall()
    }
    assert got == {
        "cells": (7.0, "7", "7", "ubigint"),
        "area": (2.5, "2.5", "2.5", "double"),
        "latch": (1.0, "true", "true", "boolean"),
        "eq": (None, "unknown", '"unknown"', "varchar"),
        "runs": (None, None, "[1,2]", "array"),
        "n": (None, None, "null", "null"),
    }
    assert con.sql("SELECT tool, version FROM toolchains").fetchall() == [("sim", "12.0")]
    counts = con.sql("SELECT key, value, json::VARCHAR FROM run_counts ORDER BY key").fetchall()
    assert counts == [("stats", None, '{"a":1}'), ("verified", 3.0, "3")]


def test_shared_views_name_no_domain_nor_gate() -> None:
    """A view keys on columns, never on one domain's facts (gate names, metric keys)."""
    from verifiers import domain as domains

    words = set(domains.names())
    for name in domains.names():
        words |= {g.lower() for g in domains.get(name).gate_names}
    for path in sorted(db.VIEWS_DIR.glob("30_*.sql")):
        text = path.read_text().lower()
        # a word followed by `(` is SQL's own function (lower(), a gate of ascendc's too)
        named = sorted(w for w in words if re.search(rf"\b{re.escape(w)}\b(?!\s*\()", text))
        assert not named, (path.name, named)


# --- docs/lake.md cannot rot --------------------------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs" / "lake.md"


def _sections(text: str) -> dict[str, str]:
    """`### `name`` headings of docs/lake.md to the text under each."""
    parts = re.split(r"^### `(\w+)`\s*$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_docs_describe_every_column_of_every_table() -> None:
    sections = _sections(DOCS.read_text())
    missing = [
        f"{name}.{col}"
        for name, spec in TABLES.items()
        for col in spec.columns
        if not re.search(rf"^\| `{col}` \|", sections.get(name, ""), re.MULTILINE)
    ]
    assert not missing, f"describe these in docs/lake.md (a row of the table's section): {missing}"
    assert set(sections) == set(TABLES), "docs/lake.md has a section for a table that is gone"


def test_docs_name_every_view_and_every_shipped_query(lake: Lake) -> None:
    text = DOCS.read_text()
    con = db.connect(lake)
    views = {
        r[0] for r in con.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    }
    views -= set(TABLES) | {f"raw_{t}" for t in TABLES}
    files = {p.name for p in db.VIEWS_DIR.glob("*.sql")}
    missing = [v for v in sorted(views) if f"| `{v}` |" not in text]
    missing += [f for f in sorted(files) if f"`{f}`" not in text]
    for name in db.available_sql():
        row = re.search(rf"^\| `{name}` \|([^|]*)\|", text, re.MULTILINE)
        params = db.sql_params(db.sql_text(name))
        if row is None or set(re.findall(r"\$(\w+)", row.group(1))) != set(params):
            missing.append(f"{name}({', '.join(params)})")
    assert not missing, f"name these in docs/lake.md (queries with their parameters): {missing}"


# --- one DuckDB instance per process: the extension loaded once, each connection its own --
def _fill(lake: Lake, n: int) -> None:
    task = make_task(f"t{n}")
    with BatchWriter(lake) as w:
        w.add_task(task)
        for i in range(n):
            w.add_candidate(make_candidate(task, f"// {i}"), "rtl")


def test_connections_share_the_instance_and_nothing_else(tmp_path: Path) -> None:
    a, b = Lake(tmp_path / "a"), Lake(tmp_path / "b")
    _fill(a, 2)
    _fill(b, 3)
    ca, cb, ca2 = db.connect(a), db.connect(b), db.connect(a)
    try:
        assert len({id(db._instance()) for _ in range(3)}) == 1  # loaded once, kept
        # each connection's views are its lake's: two lakes in one process never mix
        assert ca.execute("SELECT count(*) FROM candidates").fetchall() == [(2,)]
        assert cb.execute("SELECT count(*) FROM candidates").fetchall() == [(3,)]
        # what one connection defines or registers, no other sees
        ca.execute("CREATE OR REPLACE TEMP VIEW mine AS SELECT 1 AS x")
        ca.register("batch", duckdb.sql("SELECT 7 AS y").arrow())
        for other in (cb, ca2):
            with pytest.raises(duckdb.CatalogException):
                other.execute("SELECT * FROM mine")
            with pytest.raises(duckdb.CatalogException):
                other.execute("SELECT * FROM batch")
        # a closed connection takes only itself: the lake's next connection reads the same
        ca.close()
        assert ca2.execute("SELECT count(*) FROM candidates").fetchall() == [(2,)]
        _fill(a, 4)  # a view reads the latest version at each query
        assert ca2.execute("SELECT count(*) FROM candidates").fetchall() == [(6,)]
    finally:
        for c in (cb, ca2):
            c.close()


def _child_instance(out) -> None:
    import os

    try:
        con = db.new_connection()  # DuckDB alone: delta-rs' runtime never survives a fork
        out.put((db._shared[0], os.getpid(), con.execute("SELECT 42").fetchone()))
    except Exception as e:  # the test reads what went wrong
        out.put(("error", repr(e), None))


def test_a_forked_child_makes_its_own_instance(tmp_path: Path) -> None:
    import multiprocessing as mp
    import os

    parent = db.new_connection()  # the parent's instance exists before the fork
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_child_instance, args=(out,))
    child.start()
    owner, pid, answer = out.get(timeout=60)
    child.join(timeout=60)
    assert owner == pid and pid != os.getpid() and answer == (42,), (owner, pid, answer)
    assert db._shared[0] == os.getpid()  # the parent's own is untouched
    assert parent.execute("SELECT 1").fetchall() == [(1,)]
    parent.close()
