"""The `crucible` command as a user runs it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from flows.cli import app
from flows.cli.tasks import find_task
from verifiers import catalog

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


def _catalog_with_a_broken_neighbour(tmp_path: Path) -> Path:
    """mux4 as it is, and a task of another name whose task.toml is malformed."""
    root = tmp_path / "tasks"
    shutil.copytree(CATALOG / "rtl" / "mux4", root / "rtl" / "mux4")
    (root / "rtl" / "broken").mkdir()
    (root / "rtl" / "broken" / "task.toml").write_text('name = "broken"\n')
    return root


def _count_loads(monkeypatch) -> list[str]:
    loaded: list[str] = []
    real = catalog.load_task

    def counting(task_dir, domain=None):
        loaded.append(Path(task_dir).name)
        return real(task_dir, domain)

    monkeypatch.setattr(catalog, "load_task", counting)
    return loaded


def test_find_task_by_name_loads_only_that_task(tmp_path, monkeypatch):
    root = _catalog_with_a_broken_neighbour(tmp_path)
    loaded = _count_loads(monkeypatch)
    assert find_task("mux4", [root]).name == "mux4"
    assert loaded == ["mux4"]


def test_verify_by_name_never_sees_a_malformed_neighbour(tmp_path):
    root = _catalog_with_a_broken_neighbour(tmp_path)
    ref = root / "rtl" / "mux4" / "ref.sv"
    res = runner.invoke(app, ["verify", "--task", "mux4", "--tasks", str(root), str(ref)])
    assert res.exit_code == 0, res.output
    assert "malformed" not in res.output and "broken/task.toml" not in res.output


def test_find_task_by_id_prefix_searches_the_whole_catalog(tmp_path, monkeypatch):
    root = _catalog_with_a_broken_neighbour(tmp_path)
    task_id = catalog.load_task(root / "rtl" / "mux4").task_id
    loaded = _count_loads(monkeypatch)
    assert find_task(task_id[:8], [root]).name == "mux4"
    assert sorted(loaded) == ["broken", "mux4"]


def test_find_task_names_a_malformed_task_and_refuses_a_missing_one(tmp_path):
    root = _catalog_with_a_broken_neighbour(tmp_path)
    with pytest.raises(typer.BadParameter, match="task 'broken' is malformed"):
        find_task("broken", [root])
    with pytest.raises(typer.BadParameter, match="no task named 'mux5'"):
        find_task("mux5", [root])


def test_find_task_refuses_a_name_two_catalogs_hold(tmp_path):
    root = _catalog_with_a_broken_neighbour(tmp_path)
    twin = tmp_path / "twin"
    shutil.copytree(root / "rtl" / "mux4", twin / "rtl" / "mux4")
    with pytest.raises(typer.BadParameter, match="'mux4' matches 2 tasks"):
        find_task("mux4", [root, twin])


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
        (["run", "--mix", '{"colour": {"red": 1}}'], "target shares"),
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


# --- one options model, settings as arguments ---------------------------------------------


class _Captured(Exception):
    """Stops a command once it has built its settings (nothing runs)."""


def _capture_pipeline(monkeypatch) -> list:
    """Patch the pipeline flow: `run` and `serve` hand it their PipelineSettings."""
    import flows.pipeline

    seen: list = []

    class Flow:
        def __call__(self, settings):
            seen.append(settings)
            raise _Captured

        def serve(self, *, name, cron, parameters):
            seen.append(parameters["settings"])

    monkeypatch.setattr(flows.pipeline, "pipeline_flow", Flow())
    return seen


def _built(monkeypatch, command: str, args: list[str]):
    seen = _capture_pipeline(monkeypatch)
    res = runner.invoke(app, [command, *args])
    assert seen, res.output
    return seen[-1]


def test_run_and_serve_share_one_options_model_and_its_defaults(monkeypatch, tmp_path):
    from flows.options import RunOptions

    lake = ["--lake", str(tmp_path / "lake")]
    assert _built(monkeypatch, "run", lake) == _built(monkeypatch, "serve", lake)
    assert (
        _built(monkeypatch, "run", lake) == RunOptions(lake=tmp_path / "lake").pipeline_settings()
    )
    many = [*lake, "--workers", "3", "--batch-size", "2", "--seed", "7", "--commit-every", "9",
            "--fast", "--unconfined", "--repair-rounds", "1", "--domain", "cad",
            "--verifier-settings", '{"cad": {"workers": 2}}']  # fmt: skip
    run_s, serve_s = _built(monkeypatch, "run", many), _built(monkeypatch, "serve", many)
    assert run_s == serve_s
    assert (run_s.pool.workers, run_s.pool.batch_size, run_s.seed, run_s.verdict_batch) == (
        3, 2, 7, 9,
    )  # fmt: skip
    assert run_s.fast and run_s.limits.unconfined and run_s.domains == ("cad",)
    assert run_s.verifier_settings == {"cad": {"workers": 2}}
    assert run_s.to_params()["verifier_settings"] == {"cad": {"workers": 2}}


def test_run_defaults_to_the_registry_default_domains(monkeypatch, tmp_path):
    from verifiers import domain as domains

    s = _built(monkeypatch, "run", ["--lake", str(tmp_path / "lake")])
    assert s.domains == domains.default_run() and s.domains
    from flows.stages import PipelineSettings

    assert PipelineSettings().domains == domains.default_run()


def test_fast_runs_each_domains_own_fast_gates(monkeypatch, tmp_path):
    from verifiers import domain as domains

    lake = ["--lake", str(tmp_path / "lake")]
    names = [a for n in domains.names() for a in ("--domain", n)]
    s = _built(monkeypatch, "run", [*lake, *names, "--fast"])
    for name, d in domains.domains().items():
        assert s.limits_for(name).gates == d.fast_gates, name
    assert s.limits_for("rtl").gates == ("compile", "simulate")
    assert s.limits_for("cad").gates == ("build",)
    assert _built(monkeypatch, "run", [*lake, *names, "--sim-only"]) == s  # the old name
    plain = _built(monkeypatch, "run", [*lake, *names])
    assert all(plain.limits_for(n).gates is None for n in domains.names())


def test_verify_fast_runs_the_tasks_domains_fast_gates(tmp_path):
    ref = CATALOG / "rtl" / "mux4" / "ref.sv"
    res = runner.invoke(app, ["verify", "--task", "mux4", str(ref), "--json", "--fast"])
    assert res.exit_code == 0, res.output
    v = json.loads(res.stdout)
    ran = [c["name"] for c in v["checks"]]
    assert ran == ["format", "static", "compile", "simulate"]  # static runs always
    res = runner.invoke(app, ["verify", "--task", "mux4", str(ref), "--fast", "--gates", "lint"])
    assert res.exit_code == 2 and "not both" in res.output


def test_an_unknown_domain_is_refused_naming_the_known_ones(tmp_path):
    from verifiers import domain as domains

    known = ", ".join(domains.names())
    lake = ["--lake", str(tmp_path / "lake")]
    for args in (["run", "--domain", "typo", *lake], ["serve", "--domain", "typo", *lake],
                 ["dedup", "--domain", "typo", *lake], ["pending", "--domain", "typo", *lake],
                 ["tasks", "--domain", "typo"],
                 ["run", "--verifier-settings", '{"typo": {}}', *lake]):  # fmt: skip
        res = runner.invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
        text = " ".join(res.output.replace("│", " ").split())
        assert f"unknown domain 'typo'; known domains: {known}" in text, (args, res.output)
    assert not (tmp_path / "lake").exists()


def test_bad_verifier_settings_are_refused_before_any_work(tmp_path):
    lake = tmp_path / "lake"
    cases = [
        (["run", "--verifier-settings", '{"cad": {"worker": 2}}'], "worker (known: workers)"),
        (["run", "--verifier-settings", '{"rtl": {"workers": 2}}'], "(known: cross_check_rate)"),
        (["serve", "--verifier-settings", "[1]"], '{"<domain>": {"<key>": value}}'),
    ]
    for args, message in cases:
        res = runner.invoke(app, [*args, "--lake", str(lake)])
        assert res.exit_code == 2, (args, res.output)
        assert message in " ".join(res.output.replace("│", " ").split()), (args, res.output)
    ref = CATALOG / "rtl" / "mux4" / "ref.sv"
    res = runner.invoke(app, ["verify", "--task", "mux4", str(ref), "--settings", '{"x": 1}'])
    assert res.exit_code == 2 and "cross_check_rate" in res.output


def test_cli_worker_and_actor_build_the_verifier_with_the_same_settings(monkeypatch, tmp_path):
    """One settings JSON through `crucible verify --settings`, `python -m verifiers.cad
    --settings` (and its flags), `crucible run --verifier-settings` and the Ray actor: the
    same verifier settings each time."""
    import verifiers.registry
    import verifiers.worker
    from flows.stages import verifier_of
    from ray_actors.verify import VerifierWorker
    from verifiers.cad.domain import CadSettings
    from verifiers.contract import Limits
    from verifiers.registry import get_verifier

    want = CadSettings(workers=2)
    cad_task = next(p for p in sorted((CATALOG / "cad").iterdir()) if (p / "task.toml").exists())
    got: dict[str, object] = {}

    def fake_verify(task, code, limits=None, settings=None):
        got["cli"] = get_verifier(task.domain, settings).settings
        raise _Captured

    monkeypatch.setattr(verifiers.registry, "verify", fake_verify)
    src = tmp_path / "part.py"
    src.write_text("result = None\n")
    runner.invoke(
        app, ["verify", "--task", cad_task.name, str(src), "--settings", '{"workers": 2}']
    )

    def fake_run(domain, src, dst, err, *, batch, override, settings, **_):
        got.setdefault("worker", []).append(get_verifier(domain, settings).settings)
        return 0

    monkeypatch.setattr(verifiers.worker, "run", fake_run)
    empty = tmp_path / "in.jsonl"
    empty.write_text("")
    for argv in (["--settings", '{"workers": 2}'], ["--workers", "2"],
                 ["--settings", '{"workers": 5}', "--workers", "2"]):  # fmt: skip
        assert verifiers.worker.main("cad", [*argv, str(empty)]) == 0
    s = _built(monkeypatch, "run", ["--lake", str(tmp_path / "lake"), "--domain", "cad",
                                    "--verifier-settings", '{"cad": {"workers": 2}}'])  # fmt: skip
    actor = VerifierWorker("cad", Limits().to_dict(), s.settings_of("cad"))
    assert got["cli"] == want
    assert got["worker"] == [want] * 3
    assert verifier_of(s, "cad").settings == want
    assert actor.verifier.settings == want


def test_actors_that_hold_one_core_run_one_warm_worker():
    """The fallback rules, as settings an actor passes: one warm worker per actor where
    an actor holds one core (a toolchain slot, a CPU-fallback actor), unless asked."""
    from ray_actors.verify import actor_settings

    assert actor_settings("cad", "cad", None) == {"workers": 1}
    assert actor_settings("cad", "cad", {"workers": 3}) == {"workers": 3}
    assert actor_settings("triton", "cpu", {}) == {"workers": 1}  # the CPU fallback
    assert actor_settings("cuda", "GPU", {"device": "cuda"}) == {"device": "cuda"}
    assert actor_settings("rtl", "eda", None) == {}  # no warm workers to count


def test_serve_takes_every_pipeline_option_run_takes():
    import typer.main

    cmd = typer.main.get_command(app)
    run_opts = {p.name for p in cmd.commands["run"].params}
    serve_opts = {p.name for p in cmd.commands["serve"].params}
    assert serve_opts - run_opts == {"cron", "name"} and run_opts <= serve_opts
    help_text = runner.invoke(app, ["run", "--help"]).output
    assert "--fast" in help_text and "--sim-only" not in help_text  # a hidden alias


def test_the_run_summary_says_how_each_dead_worker_ended():
    """A worker death keeps its exit status or signal and its last stderr lines; the summary
    shows them under the restart count, not only that workers died."""
    import io

    from rich.console import Console

    from flows.cli.run import _print_result

    deaths = [
        {"pid": 101, "node": "eda-1", "exit_status": 3, "signal": None,
         "stderr_tail": ["Traceback (most recent call last):", "MemoryError"],
         "log_file": "/tmp/ray/logs/worker-a-01000000-101.err", "held": "ab" * 32},
        {"pid": 102, "node": "eda-1", "exit_status": None, "signal": "SIGKILL",
         "stderr_tail": [], "log_file": "", "held": ""},
    ]  # fmt: skip
    counts = {"worker_restarts": 2, "worker_restarts_by_resource": {"eda": 2}}
    reports = {"pass_rates": [], "taxonomy": [], "survivors": []}
    counts["worker_deaths"] = deaths
    result = {"run_id": "r" * 12, "refused": [], "seconds": 1.0, "counts": counts, **reports}
    con = Console(file=io.StringIO(), width=400, record=True)
    _print_result(con, result, Path("lake"))
    text = con.export_text()
    assert "2 verifier worker(s) died and were restarted by Ray (2 on `eda`)" in text
    assert (
        "worker death: verifier worker pid 101 on eda-1 exited with status 3 while verifying "
        "candidate abababababab; its last stderr lines: Traceback (most recent call last): | "
        "MemoryError (its stderr: /tmp/ray/logs/worker-a-01000000-101.err)"
    ) in text
    assert "worker death: verifier worker pid 102 on eda-1 was killed by signal SIGKILL" in text
