"""The `crucible` command as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from flows.cli import app

CATALOG = Path(__file__).resolve().parents[2] / "tasks"
runner = CliRunner()


def test_help_explains_commands():
    res = runner.invoke(app, ["--help"])
    assert res.exit_code == 0
    for cmd in ("run", "verify", "tasks", "import-verilogeval", "sql", "dedup", "export",
                "serve", "server"):  # fmt: skip
        assert cmd in res.output


def test_verify_reference_passes_and_json_has_the_whole_verdict(tmp_path):
    ref = CATALOG / "rtl" / "mux4" / "ref.sv"
    res = runner.invoke(app, ["verify", "--task", "mux4", str(ref)])
    assert res.exit_code == 0, res.output
    assert "pass" in res.output and "simulate" in res.output
    res = runner.invoke(app, ["verify", "--task", "mux4", str(ref), "--json"])
    assert res.exit_code == 0
    verdict = json.loads(res.output)
    assert verdict["status"] == "pass" and verdict["passed"] is True
    assert [c["name"] for c in verdict["checks"]][:4] == ["format", "static", "compile", "lint"]


def test_verify_wrong_design_fails_with_feedback(tmp_path):
    ref = (CATALOG / "rtl" / "mux4" / "ref.sv").read_text()
    bad = tmp_path / "bad.sv"
    bad.write_text(_all_outputs_zero(ref))  # same interface, outputs stuck at 0
    res = runner.invoke(app, ["verify", "--task", "mux4", str(bad), "--json"])
    assert res.exit_code == 1, res.output
    v = json.loads(res.output)
    assert v["status"] == "wrong_answer" and v["code"] in (
        "sim_mismatch",
        "equivalence_counterexample",
    )
    assert v["feedback"]


def _all_outputs_zero(ref: str) -> str:
    import tomllib

    spec = tomllib.loads((CATALOG / "rtl" / "mux4" / "task.toml").read_text())
    ports = spec["interface"]["ports"]
    decl = ", ".join(f"{p['direction']} [{p['width'] - 1}:0] {p['name']}" for p in ports)
    outs = [p["name"] for p in ports if p["direction"] == "output"]
    return (
        f"module mux4({decl});\n" + "".join(f"  assign {o} = '0;\n" for o in outs) + "endmodule\n"
    )


def test_verify_unknown_task_says_how_to_find_one(tmp_path):
    f = tmp_path / "x.sv"
    f.write_text("module x; endmodule\n")
    res = runner.invoke(app, ["verify", "--task", "no_such_task", str(f)])
    assert res.exit_code == 2
    assert "crucible tasks" in res.output


def test_verify_empty_file_is_format_error(tmp_path):
    f = tmp_path / "empty.sv"
    f.write_text("")
    res = runner.invoke(app, ["verify", "--task", "mux4", str(f), "--json"])
    assert res.exit_code == 1
    assert json.loads(res.output)["code"] == "empty_code"


def test_tasks_lists_the_catalog():
    res = runner.invoke(app, ["tasks"])
    assert res.exit_code == 0, res.output
    assert "mux4" in res.output


def test_sql_on_a_bad_lake_path_is_a_clear_error(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    res = runner.invoke(app, ["sql", "pass_rates", "--lake", str(f)])
    assert res.exit_code == 2
    assert "lake error" in res.output


def test_bad_pipeline_options_are_refused_before_any_work(tmp_path):
    lake = tmp_path / "lake"
    cases = [
        (["run", "--stages", "generate,bogus"], "unknown stage(s) bogus"),
        (["run", "--generator", "openai"], "needs --model"),
        (["run", "--generator", "gpt"], "choose one of perturb, openai, vllm"),
        (["run", "--mix", "{not json"], "not JSON"),
        (["run", "--mix", '{"colour": {"red": 1}}'], "weights"),
        (["serve", "--cron", "every hour"], "not a cron line"),
        (["export", "--kinds", "sft_direct,poetry"], "pick distinct ones"),
    ]
    for args, message in cases:
        res = runner.invoke(app, [*args, "--lake", str(lake)])
        assert res.exit_code == 2, (args, res.output)
        assert message in " ".join(res.output.split()), (args, res.output)
    assert not lake.exists()  # nothing was started, nothing was written


def test_export_before_dedup_says_what_to_run(tmp_path):
    from lake.store import Lake
    from lake.writer import BatchWriter
    from verifiers.catalog import load_task
    from verifiers.contract import Candidate
    from verifiers.registry import get_verifier

    task = load_task(CATALOG / "rtl" / "mux4")
    lake = tmp_path / "lake"
    with BatchWriter(Lake(lake)) as w:
        w.add_task(task)
        w.add_candidate(Candidate(task.task_id, task.reference, "reference", "catalog"), "rtl")
        w.add_verdict(get_verifier("rtl").verify(task, task.reference))
    res = runner.invoke(app, ["export", "--lake", str(lake)])
    assert res.exit_code == 2, res.output
    assert "run `crucible dedup` first" in " ".join(res.output.split())


def test_a_lake_with_a_deleted_data_file_is_refused_until_repair(tmp_path):
    from lake.store import Lake
    from lake.writer import BatchWriter
    from tests.lake.conftest import make_candidate, make_task

    lake = tmp_path / "lake"
    with BatchWriter(Lake(lake)) as w:
        w.add_candidate(make_candidate(make_task(), "x"), "rtl")
    (data,) = (lake / "tables" / "candidates").rglob("*.parquet")
    data.unlink()
    res = runner.invoke(app, ["sql", "SELECT count(*) FROM candidates", "--lake", str(lake)])
    said = " ".join(res.output.split())  # rich wraps long lines
    assert res.exit_code == 2 and "missing 1 of its data files" in said
    compact = "".join(res.output.split())  # ... also inside long names
    assert "cruciblerepair--lake" in compact and data.name in compact
    res = runner.invoke(app, ["repair", "--lake", str(lake), "--dry-run"])
    assert res.exit_code == 0 and "1 data file(s) missing" in res.output
    res = runner.invoke(app, ["repair", "--lake", str(lake)])
    assert res.exit_code == 0 and "1 data file(s) dropped" in res.output, res.output
    res = runner.invoke(app, ["sql", "SELECT count(*) AS n FROM candidates", "--lake", str(lake)])
    assert res.exit_code == 0, res.output
