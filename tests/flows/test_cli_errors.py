"""The CLI's one rule for mistakes: a user mistake exits non-zero with one line that says
what to do, before any work and before anything is created; no traceback unless
`crucible --debug`. The flows are replaced by a recorder that fails the test if a refused
command reached them: the refusals come first, so no pipeline runs here."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.lake.test_store import unwritable_dir  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


class _Reached(Exception):
    """The command got past its checks and called the flow (which then stops it)."""


@pytest.fixture
def started(monkeypatch) -> list[str]:
    """The flows `run`, `serve`, `dedup` and `export` start, recorded instead of run."""
    import flows.pipeline

    started: list[str] = []

    def recorder(name: str):
        def flow(settings):
            started.append(name)
            raise _Reached

        flow.serve = lambda **_: started.append(f"{name}.serve")
        return flow

    for name in ("pipeline_flow", "dedup_flow", "export_flow"):
        monkeypatch.setattr(flows.pipeline, name, recorder(name))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    return started


def _one_line(res) -> str:
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1, res.output
    assert "Traceback" not in res.output
    return lines[0]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _a_lake(path: Path) -> Path:
    from lake.store import Lake
    from lake.writer import BatchWriter
    from tests.lake.conftest import make_task

    with BatchWriter(Lake(path)) as w:
        w.add_task(make_task("adder"))
    return path


# --- 1. one rule: one line, exit non-zero, a traceback only with --debug ------------------


def test_a_mistake_is_one_line_on_stderr_as_a_user_runs_it(tmp_path):
    """`python -m flows.cli` (through `_Crucible.__call__`, as the `crucible` script runs)."""
    lake = tmp_path / "lake"
    env = dict(os.environ)
    env.pop("PREFECT_API_URL", None)
    cases = [
        (["run", "--task", "no_such_task", "--lake", str(lake)], "no task named 'no_such_task'"),
        (["run", "--domains", "rtl", "--lake", str(lake)], "No such option: --domains"),
    ]
    for args, said in cases:
        p = subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)  # fmt: skip
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], p.stderr
        assert p.stdout == ""
    assert not lake.exists()
    p = subprocess.run([sys.executable, "-m", "flows.cli", "--debug", *cases[0][0]], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p.returncode == 2 and "Traceback (most recent call last)" in p.stderr
    assert p.stderr.strip().splitlines()[-1].startswith("error: ")


def test_an_internal_error_is_one_line_unless_debug(tmp_path, monkeypatch, started):
    import flows.pipeline

    def a_bug_in_the_flow(settings):  # stands in for any fault of ours, not the user's
        raise RuntimeError("boom")

    monkeypatch.setattr(flows.pipeline, "pipeline_flow", a_bug_in_the_flow)
    args = ["run", "--lake", str(tmp_path / "lake"), "--task", "mux4", "--domain", "rtl"]
    res = runner.invoke(app, args)
    assert res.exit_code == 1
    assert _one_line(res) == (
        "internal error: RuntimeError: boom (run with --debug for the traceback)"
    )
    res = runner.invoke(app, ["--debug", *args])
    assert res.exit_code == 1
    assert "Traceback (most recent call last)" in res.output and "a_bug_in_the_flow" in res.output
    assert res.output.strip().splitlines()[-1] == "internal error: RuntimeError: boom"


def test_our_errors_that_say_what_to_do_are_one_line_and_exit_2(tmp_path, monkeypatch, started):
    import importlib

    import flows.pipeline
    from flows.options import USER_ERRORS, is_user_error
    from generators.openai import GeneratorError

    for dotted in USER_ERRORS:  # each name is a class that exists, and counts
        module, name = dotted.rsplit(".", 1)
        cls = getattr(importlib.import_module(module), name)
        assert is_user_error(cls.__new__(cls)), dotted

    def endpoint_gone_mid_run(settings):
        raise GeneratorError("no answer from http://h/v1 after 5 attempts: is it running?")

    monkeypatch.setattr(flows.pipeline, "pipeline_flow", endpoint_gone_mid_run)
    res = runner.invoke(app, ["run", "--lake", str(tmp_path / "lake"), "--task", "mux4"])
    assert res.exit_code == 2
    assert _one_line(res) == "error: no answer from http://h/v1 after 5 attempts: is it running?"


# --- 2. names that do not exist: refused before any work, nothing created ------------------


def test_unknown_names_are_refused_before_anything_is_made(tmp_path, started):
    lake = tmp_path / "lake"
    missing = tmp_path / "no-catalog"
    cases = [
        (["run", "--task", "no_such_task"], "no task named 'no_such_task'"),
        (["run", "--task", "mux4", "--task", "nope"], "no task named 'nope'"),  # mixed
        (["run", "--task", "mux4", "--domain", "cad"], "no task named 'mux4' of domain(s) cad"),
        (["serve", "--task", "nope"], "no task named 'nope'"),
        (["run", "--tasks", str(missing)], f"task catalog {missing} is not a directory"),
        (["run", "--mix", '{"domain": {"typo": 1}}'], "unknown domain 'typo'"),
        (["export", "--mix", '{"domain": {"typo": 1}}'], "unknown domain 'typo'"),
    ]
    for args, said in cases:
        res = runner.invoke(app, [*args, "--lake", str(lake)])
        assert res.exit_code == 2, (args, res.output)
        line = _one_line(res)
        assert line.startswith("error: ") and said in line, (args, line)
    res = runner.invoke(app, ["run", "--task", "x", "--lake", str(lake)])
    assert "`crucible tasks` lists them" in _one_line(res)
    src = str(tmp_path / "x.sv")
    for args in (["tasks"], ["verify", "--task", "mux4", src]):
        res = runner.invoke(app, [*args, "--tasks", str(missing)])
        assert res.exit_code == 2 and "is not a directory" in _one_line(res), res.output
    assert not lake.exists() and started == []
    res = runner.invoke(app, ["run", "--task", "mux4", "--domain", "rtl", "--lake", str(lake)])
    assert started == ["pipeline_flow"], res.output  # a known name gets through


def test_pending_refuses_a_task_name_the_lake_does_not_hold(tmp_path):
    lake = _a_lake(tmp_path / "lake")
    res = runner.invoke(app, ["pending", "--domain", "rtl", "--lake", str(lake), "--task", "nope"])
    assert res.exit_code == 2 and "no rtl task named 'nope'" in _one_line(res)
    res = runner.invoke(app, ["pending", "--domain", "rtl", "--lake", str(lake), "--task", "adder"])
    assert res.exit_code == 0, res.output


def test_a_lake_typo_is_refused_not_made_into_an_empty_lake(tmp_path, started):
    typo = tmp_path / "typo"
    for cmd in ("export", "dedup", "repair"):
        res = runner.invoke(app, [cmd, "--lake", str(typo)])
        assert res.exit_code == 2, (cmd, res.output)
        assert f"error: no lake at {typo}" in _one_line(res), cmd
        assert "crucible run --lake" in res.output
    assert not typo.exists() and started == []


def test_an_existing_export_name_is_refused_before_the_export(tmp_path, started):
    lake = _a_lake(tmp_path / "lake")
    (lake / "exports" / "mine").mkdir(parents=True)
    res = runner.invoke(app, ["export", "--lake", str(lake), "--name", "mine"])
    assert res.exit_code == 2
    assert "exports/mine already exists: pick another --name" in _one_line(res)
    out = tmp_path / "elsewhere"
    (out / "theirs").mkdir(parents=True)
    res = runner.invoke(app, ["export", "--lake", str(lake), "--out", str(out), "--name", "theirs"])
    assert res.exit_code == 2 and "already exists" in _one_line(res)
    assert started == []
    runner.invoke(app, ["export", "--lake", str(lake), "--name", "new"])
    assert started == ["export_flow"]


def test_a_lake_another_command_writes_is_refused_before_the_flow_readers_are_not(
    tmp_path, started
):
    """Two runs on one lake verified the same candidates twice and left an export without
    its row: a writing command on a lake that another one holds stops at once, saying
    who holds it; `sql` and `show` read on."""
    from tests.lake.test_lock import held_elsewhere

    lake = _a_lake(tmp_path / "lake")
    with held_elsewhere(lake) as proc:
        for cmd in ("run", "dedup", "export"):
            res = runner.invoke(app, [cmd, "--lake", str(lake)])
            assert res.exit_code == 2, (cmd, res.output)
            line = _one_line(res)
            assert line.startswith(f"error: lake {lake} is in use by crucible run "), line
            assert f"(run run-held-elsewhere, pid {proc.pid} on " in line
            assert "wait for it to end, or stop that process" in line
        res = runner.invoke(app, ["sql", "SELECT count(*) AS n FROM tasks", "--lake", str(lake)])
        assert res.exit_code == 0 and "1" in res.output
        res = runner.invoke(app, ["show", "abcdef", "--lake", str(lake)])
        assert res.exit_code == 1 and "no candidate 'abcdef'" in res.output  # it looked
    assert started == []
    assert not (lake / "exports").exists()
    runner.invoke(app, ["dedup", "--lake", str(lake)])  # free again
    assert started == ["dedup_flow"]


def test_an_unwritable_lake_is_refused_before_the_run(unwritable_dir, started):  # noqa: F811
    res = runner.invoke(app, ["run", "--lake", str(unwritable_dir)])
    assert res.exit_code == 2 and "is not writable" in _one_line(res)
    res = runner.invoke(app, ["run", "--lake", str(unwritable_dir / "lake")])
    assert res.exit_code == 2 and "cannot create lake root" in _one_line(res)
    assert started == []


# --- 3. --base-url probed before the run ----------------------------------------------------


class _RemoteModelServerStandIn(http.server.BaseHTTPRequestHandler):
    """Stands in for a remote OpenAI-compatible model server (`vllm serve`): it lists
    one model at /v1/models; every other path is a 404, as such servers answer."""

    seen: list[str] = []

    def do_GET(self):
        self.seen.append(self.path)
        if self.path == "/v1/models":
            body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]})
            self._answer(200, body)
        elif self.path == "/api/health":  # and a Prefect API's health check
            self._answer(200, "true")
        else:
            self._answer(404, '{"detail": "Not Found"}')

    def _answer(self, code: int, body: str) -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def remote_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RemoteModelServerStandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _RemoteModelServerStandIn.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_base_url_is_probed_before_the_run(tmp_path, remote_server, started):
    lake = tmp_path / "lake"
    llm = ["run", "--generator", "openai", "--model", "m", "--lake", str(lake)]
    closed = f"http://127.0.0.1:{_closed_port()}/v1"
    res = runner.invoke(app, [*llm, "--base-url", closed])
    assert res.exit_code == 2
    assert f"error: no OpenAI-compatible server answers at {closed}" in _one_line(res)
    res = runner.invoke(app, [*llm, "--base-url", remote_server])  # no /v1
    assert res.exit_code == 2
    assert "/models answered HTTP 404" in _one_line(res) and "end in /v1" in res.output
    assert not lake.exists() and started == []
    res = runner.invoke(app, [*llm, "--base-url", f"{remote_server}/v1"])
    assert started == ["pipeline_flow"], res.output
    assert "/v1/models" in _RemoteModelServerStandIn.seen
    res = runner.invoke(app, [*llm, "--base-url", f"{remote_server}/v1", "--model", "other"])
    assert "does not list model 'other' (it lists: m)" in res.output  # a warning: it runs
    assert started == ["pipeline_flow"] * 2


# --- 4. PREFECT_API_URL with the server down ------------------------------------------------


@contextlib.contextmanager
def _prefect_api_url(monkeypatch, url: str) -> Iterator[None]:
    """PREFECT_API_URL set as a fresh process would see it: in the environment and in
    Prefect's settings (which this process read when it imported Prefect)."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    monkeypatch.setenv("PREFECT_API_URL", url)
    with temporary_settings({PREFECT_API_URL: url}):
        yield


def test_a_prefect_api_that_does_not_answer_is_refused(
    tmp_path, monkeypatch, remote_server, started
):
    lake = _a_lake(tmp_path / "lake")
    down = f"http://127.0.0.1:{_closed_port()}/api"
    with _prefect_api_url(monkeypatch, down):
        for args in (["run"], ["serve"], ["dedup"], ["export"]):
            res = runner.invoke(app, [*args, "--lake", str(lake)])
            assert res.exit_code == 2, (args, res.output)
            assert _one_line(res).startswith(
                f"error: Prefect API at {down} is not answering (ConnectError): start "
                "`crucible server` or unset PREFECT_API_URL"
            ), args
    assert started == []
    with _prefect_api_url(monkeypatch, f"{remote_server}/api"):  # one that answers
        runner.invoke(app, ["dedup", "--lake", str(lake)])
    assert started == ["dedup_flow"]


# --- 5. help text -----------------------------------------------------------------------------


def _help(*cmd: str) -> str:
    res = runner.invoke(app, [*cmd, "--help"])
    assert res.exit_code == 0, res.output
    return " ".join(res.output.replace("│", " ").split())


def _commands() -> list[str]:
    import typer.main

    return sorted(typer.main.get_command(app).commands)


def test_flags_are_shown_as_flags():
    for cmd in ([], *([c] for c in _commands())):
        assert "<bool>" not in _help(*cmd), cmd
    text = _help("run")
    assert "--fast Run only" in text and "--unconfined UNSAFE" in text
    res = runner.invoke(app, ["run", "--fast", "true"])
    assert res.exit_code == 2 and "unexpected extra argument" in _one_line(res)


def test_only_the_commands_that_make_a_lake_say_it_is_created_if_absent():
    makes = {"run", "serve", "reward-server"}  # the commands that write new work
    for cmd in _commands():
        text = _help(cmd)
        if "--lake" not in text:
            continue
        assert ("created if absent" in text) == (cmd in makes), cmd
        if cmd not in makes:
            assert "existing lake" in text, cmd


def test_import_kernelbench_hints_at_the_option_it_has(tmp_path):
    import typer.main

    cmd = typer.main.get_command(app).commands["import-kernelbench"]
    opts = {o for p in cmd.params for o in p.opts}
    assert "--domain" in opts and "--domains" not in opts  # as every other command
    res = runner.invoke(app, ["import-kernelbench", str(tmp_path), "--domain", "nope"])
    assert res.exit_code == 2
    line = _one_line(res)
    assert "Invalid value for --domain:" in line and "not 'nope'" in line


def test_a_catalog_whose_every_task_is_malformed_is_refused_before_work(tmp_path, started):
    root = tmp_path / "catalog"
    for name in ("broken_a", "broken_b"):
        (root / "rtl" / name).mkdir(parents=True)
        (root / "rtl" / name / "task.toml").write_text("this is = not [ a task\n")
    lake = tmp_path / "lake"
    res = runner.invoke(app, ["run", "--tasks", str(root), "--domain", "rtl", "--lake", str(lake)])
    assert res.exit_code == 2, res.output
    line = _one_line(res)
    assert "every task this run selects is refused (2 of them" in line and "broken_a" in line
    assert started == [] and not lake.exists()
    # one good task beside them: the run goes ahead (the bad ones are refused in the run)
    shutil.copytree(ROOT / "tasks" / "rtl" / "mux4", root / "rtl" / "mux4")
    res = runner.invoke(app, ["run", "--tasks", str(root), "--domain", "rtl", "--lake", str(lake)])
    assert started == ["pipeline_flow"], res.output
