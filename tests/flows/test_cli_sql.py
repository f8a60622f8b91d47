"""`crucible sql`: query names and parameters, unique headers in every format, cut cells,
the shell, and a lake path that is not a lake."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from lake.store import Lake
from lake.writer import BatchWriter
from tests.lake.conftest import make_candidate, make_task, make_verdict
from verifiers.contract import Check

runner = CliRunner()
WIDE = {"COLUMNS": "250"}  # rich wraps to the terminal: keep a row on one line
LONG = "module m;\n" + "  assign y = a + b; // the long line of a real design\n" * 40


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One task, a failing candidate with long code and a passing one."""
    root = tmp_path_factory.mktemp("sql") / "lake"
    t = make_task("adder", "rtl", 1)
    bad, good = make_candidate(t, LONG), make_candidate(t, "module m; endmodule", "reference")
    gates = (
        Check("compile", True, 0.25, stage="build"),
        Check("simulate", False, 1.5, stage="run"),
    )
    with BatchWriter(Lake(root), run_id="r1") as w:
        w.add_task(t)
        for c in (bad, good):
            w.add_candidate(c, t.domain)
        w.add_verdict(make_verdict(bad, t, "wrong_answer", code="sim_mismatch", checks=gates))
        w.add_verdict(make_verdict(good, t, "pass"))
    return {
        "root": str(root),
        "bad": bad.candidate_id,
        "good": good.candidate_id,
        "task": t.task_id,
    }


def sql(lake: dict[str, str], *args: str, stdin: str | None = None):
    return runner.invoke(app, ["sql", *args, "--lake", lake["root"]], input=stdin, env=WIDE)


def one_line(res) -> str:
    """What a refused command said: one line, no traceback."""
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in res.output, res.output
    return lines[0]


def table_rows(output: str) -> list[list[str]]:
    """The header and body cells of a rich table (lines with box-drawing separators)."""
    return [
        [c.strip() for c in line.strip().strip("┃│").split("┃" if "┃" in line else "│")]
        for line in output.splitlines()
        if line.strip().startswith(("┃", "│"))
    ]


def test_duplicate_column_names_get_duckdbs_suffix_in_every_format(lake) -> None:
    q = "SELECT 1 AS a, 2 AS a, 3 AS b"
    res = sql(lake, q)
    assert res.exit_code == 0, res.output
    assert table_rows(res.output) == [["a", "a_1", "b"], ["1", "2", "3"]]
    res = sql(lake, q, "--json")
    assert [json.loads(line) for line in res.output.splitlines()] == [{"a": 1, "a_1": 2, "b": 3}]
    res = sql(lake, q, "--csv")
    assert list(csv.reader(io.StringIO(res.output))) == [["a", "a_1", "b"], ["1", "2", "3"]]
    res = sql(lake, "SELECT true AS ok, NULL AS n, [1, 2] AS l, {'k': 'v'} AS s", "--csv")
    assert res.output.splitlines()[1] == 'true,,"[1,2]","{""k"":""v""}"'


def test_a_join_shows_both_code_columns_under_their_own_headers(lake) -> None:
    q = (
        "SELECT c.code, v.code FROM candidates c JOIN latest_verdicts v USING (candidate_id) "
        f"WHERE candidate_id = '{lake['bad']}'"
    )
    (row,) = [json.loads(line) for line in sql(lake, q, "--json").output.splitlines()]
    assert row == {"code": LONG, "code_1": "sim_mismatch"}
    header, body = table_rows(sql(lake, q).output)
    assert header == ["code", "code_1"] and body[1] == "sim_mismatch"


def test_long_cells_are_cut_with_a_marker_and_shown_whole_on_request(lake) -> None:
    q = f"SELECT code FROM candidates WHERE candidate_id = '{lake['bad']}'"
    res = sql(lake, q)
    (_, (cell,)) = table_rows(res.output)
    assert cell == "module m;…"  # one line, marked as cut
    said = " ".join(res.output.split())
    assert "cells cut at 60 characters: --wide, --json or --csv shows them whole" in said
    wide = sql(lake, q, "--wide")
    assert wide.output.count("the long line of a real design") == 40
    assert "cells cut" not in wide.output


def test_floats_are_rounded_and_nested_values_are_compact_json(lake) -> None:
    q = (
        "SELECT 2.0/3 AS third, 0.00001234 AS tiny, {'k': [1, 2]} AS s, [{'x': 'y'}] AS l, "
        f"checks FROM verdicts WHERE candidate_id = '{lake['bad']}'"
    )
    (_, row) = table_rows(sql(lake, q, "--wide").output)
    assert row[:4] == ["0.667", "1.23e-05", '{"k":[1,2]}', '[{"x":"y"}]']
    assert row[4].startswith('[{"name":"compile","ok":true,"seconds":0.25,')
    (exact,) = [json.loads(line) for line in sql(lake, q, "--json").output.splitlines()]
    assert exact["third"] == pytest.approx(2 / 3, abs=1e-12)  # --json keeps every digit


def test_param_binds_a_shipped_querys_parameters(lake) -> None:
    res = sql(lake, "candidate_artifacts", "--param", f"prefix={lake['good'][:8]}", "--json")
    assert res.exit_code == 0, res.output
    assert {json.loads(line)["candidate_id"] for line in res.output.splitlines()} == {lake["good"]}
    # a list parses as JSON; null is SQL's NULL
    ids = json.dumps([lake["task"]])
    res = sql(lake, "verified_candidates", "-p", "domain=rtl", "-p", f"task_ids={ids}", "--json")
    assert res.exit_code == 0, res.output
    got = {json.loads(line)["candidate_id"] for line in res.output.splitlines()}
    assert got == {lake["good"]}
    res = sql(lake, "SELECT $n + 1 AS m, $s AS s", "-p", "n=41", "-p", "s=x y", "--json")
    assert json.loads(res.output) == {"m": 42, "s": "x y"}


def test_a_missing_or_unknown_parameter_says_what_the_query_takes(lake) -> None:
    res = sql(lake, "candidate_artifacts")
    said = " ".join(res.output.split())
    assert (
        res.exit_code == 2 and "query 'candidate_artifacts' takes $prefix: missing $prefix" in said
    )
    res = sql(lake, "candidate_artifacts", "-p", "prefix=ab", "-p", "colour=red")
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "has no parameter $colour; it takes $prefix" in said
    res = sql(lake, "pass_rates", "-p", "oops")
    assert res.exit_code == 2 and "NAME=VALUE" in res.output


def test_a_misspelt_query_name_is_refused_with_a_suggestion(lake) -> None:
    res = sql(lake, "pass_rate")
    said = one_line(res)
    assert res.exit_code == 2, res.output
    assert "no query named 'pass_rate'; did you mean 'pass_rates'" in said
    assert "known: " in said and "gate_times" in said and "Parser Error" not in said
    res = sql(lake, "tasks")  # a table's name is not a query: say how to see it
    assert res.exit_code == 2 and "SELECT * FROM tasks" in " ".join(res.output.split())
    res = sql(lake, "missing.sql")
    assert res.exit_code == 2 and "no file missing.sql" in res.output


def test_a_shipped_query_runs_by_name(lake) -> None:
    res = sql(lake, "pass_rates", "--json")
    assert res.exit_code == 0, res.output
    assert sum(json.loads(line)["candidates"] for line in res.output.splitlines()) == 2


def test_no_query_opens_a_shell_that_reads_statements_from_stdin(lake) -> None:
    script = (
        ".tables\n"
        "SELECT gate, ok\n  FROM checks\n  ORDER BY position;\n"
        "SELECT 1 AS a, 2 AS a; SELECT count(*) AS n FROM metrics;\n"
        "SELECT 40 + 2 AS answer\n"  # the last statement may lack its `;`
    )
    res = sql(lake, stdin=script)
    assert res.exit_code == 0, res.output
    rows = table_rows(res.output)
    assert ["gate", "ok"] in rows and ["simulate", "false"] in rows
    assert ["a", "a_1"] in rows and ["answer"] in rows and ["42"] in rows
    # `.tables` prints the names first, wrapped at the terminal's width: up to the first table
    listing = res.output.split("┏", 1)[0]
    tables = listing.split()
    assert {"tasks", "checks", "metrics", "latest_verdicts", "raw_verdicts"} <= set(tables)
    res = sql(lake, stdin="SELECT nope;\nSELECT 7 AS seven;\n.quit\nSELECT 8 AS eight;\n")
    assert res.exit_code == 1  # a failed statement, reported, the rest still ran
    assert "query failed" in res.output and "seven" in res.output and "eight" not in res.output
    res = sql(lake, stdin=".queries\n")
    assert "candidate_artifacts $prefix" in res.output.splitlines()
    res = sql(lake, "--json", stdin="SELECT 1 AS a, 2 AS a;")
    assert json.loads(res.output) == {"a": 1, "a_1": 2}


def test_a_lake_path_that_is_no_lake_is_refused_and_not_created(tmp_path: Path) -> None:
    typo = tmp_path / "typo"
    for args in (["pass_rates"], ["SELECT 1"], []):
        res = runner.invoke(app, ["sql", *args, "--lake", str(typo)], input="SELECT 1;\n")
        assert res.exit_code == 2, res.output
        assert one_line(res).startswith(f"lake error: no lake at {typo}")
        assert not typo.exists()


def test_a_long_result_shows_its_first_rows_and_says_how_many(lake) -> None:
    q = "SELECT range AS i FROM range(100)"
    res = sql(lake, q)
    assert res.exit_code == 0, res.output
    assert "first 40 of 100 rows shown" in res.output
    assert table_rows(res.output)[1:] == [[str(i)] for i in range(40)]
    res = sql(lake, q, "--max-rows", "3")
    assert "first 3 of 100 rows" in res.output and len(table_rows(res.output)) == 4
    res = sql(lake, q, "--max-rows", "0")
    assert "first" not in res.output
    assert len(table_rows(res.output)) == 101
    res = sql(lake, q, "--json")  # a machine format is the whole result
    assert len(res.output.splitlines()) == 100


def test_the_shell_has_schema_mode_and_maxrows(lake) -> None:
    res = sql(lake, stdin=".schema tasks\n")
    assert res.exit_code == 0, res.output
    cols = dict(r[:2] for r in table_rows(res.output)[1:])
    assert cols["task_id"] == "VARCHAR" and "domain" in cols
    res = sql(lake, stdin=".schema\n")
    assert res.exit_code == 0, res.output
    flat = " ".join(res.output.split())
    assert "latest_verdicts(" in flat and "raw_verdicts(" in flat and "candidate_id VARCHAR" in flat
    script = ".mode json\nSELECT 1 AS a;\n.mode csv\nSELECT 2 AS b;\n.maxrows 2\n.mode table\n"
    script += "SELECT range AS i FROM range(5);\n.mode\n.maxrows\n"
    res = sql(lake, stdin=script)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[:3] == ['{"a": 1}', "b", "2"]
    assert "first 2 of 5 rows shown" in res.output and lines[-2:] == ["table", "2"]
    for bad in (".schema nope\n", ".mode xml\n", ".maxrows many\n", ".frobnicate\n"):
        res = sql(lake, stdin=bad)
        assert res.exit_code == 1, (bad, res.output)  # a script's bad command fails the run


def test_the_duckdb_script_opens_the_lake_in_plain_duckdb(lake, tmp_path: Path) -> None:
    """The script runs in a Python that has only duckdb (no Crucible on its path, no
    network): the same views, the same rows."""
    import subprocess
    import sys

    res = sql(lake, "--duckdb-script")
    assert res.exit_code == 0, res.output
    script = tmp_path / "lake.sql"
    script.write_text(res.output)
    probe = (
        "import duckdb, sys; con = duckdb.connect(); con.execute(open(sys.argv[1]).read()); "
        "print(con.execute('SELECT count(*) FROM latest_verdicts').fetchone()[0], "
        "con.execute('SELECT count(*) FROM candidates').fetchone()[0])"
    )
    p = subprocess.run([sys.executable, "-I", "-c", probe, str(script)], capture_output=True,
                       text=True, cwd=tmp_path, timeout=120)  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["2", "2"]
    res = sql(lake, "--duckdb-script", "SELECT 1")
    assert res.exit_code == 2 and "takes no QUERY" in one_line(res)
