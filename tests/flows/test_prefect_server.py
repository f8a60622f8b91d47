"""`crucible server` and the runs that report to it, as a user meets them: the server
started from a terminal nobody answers (a pty; a prompt, if one came, is answered with
Enter as a user would) in a fresh PREFECT_HOME that already holds the user's Prefect
profile; a Prefect API that does not answer, wherever Prefect's settings name it; and a
run against the live server, which prints its page in the Prefect UI."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from tests.flows.lakeq import q

ROOT = Path(__file__).resolve().parents[2]
CRUCIBLE = [sys.executable, "-m", "flows.cli"]
PROMPT = "How would you like to proceed?"
# a user's own profile, without PREFECT_API_URL: what `prefect server start` asked about
PROFILE = 'active = "mine"\n\n[profiles.mine]\nPREFECT_LOGGING_LEVEL = "INFO"\n'
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, accept: str = "application/json") -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers={"accept": accept})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.read()


def _env(home: Path, **more: str) -> dict[str, str]:
    env = {**os.environ, "PREFECT_HOME": str(home), "PYTHONPATH": str(ROOT), **more}
    for k in ("PREFECT_API_URL", "PREFECT_UI_API_URL", "PREFECT_PROFILE"):
        if k not in more:
            env.pop(k, None)
    return env


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`crucible server` on a free port, on a terminal of its own; what the terminal
    showed, whether Prefect's prompt came, and the profile file before."""
    tmp = tmp_path_factory.mktemp("server")
    home = tmp / "prefect"
    home.mkdir()
    (home / "profiles.toml").write_text(PROFILE)
    port = _free_port()
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*CRUCIBLE, "server", "--port", str(port)], cwd=ROOT, env=_env(home),
        stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    seen: list[str] = []
    prompted = threading.Event()
    ready = threading.Event()

    def read() -> None:  # all along: a full pty would stall the server
        while True:
            select.select([master], [], [], 1.0)
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            seen.append(_ANSI.sub("", chunk.decode(errors="replace")))
            text = "".join(seen)
            if PROMPT in text and not prompted.is_set():
                prompted.set()
                os.write(master, b"\r")  # as a user would: the first choice
            if "Prefect UI:" in text:
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        ready.wait(120)
        yield {
            "api": f"http://127.0.0.1:{port}/api",
            "ui": f"http://127.0.0.1:{port}",
            "home": home,
            "tmp": tmp,
            "ready": ready.is_set(),
            "prompted": prompted.is_set(),
            "text": lambda: "".join(seen),
        }
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in its terminal
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(master)


def test_the_server_starts_without_a_question_and_leaves_the_profile_alone(server):
    """Over 30 s with its set-up on a loaded machine: a real Prefect server starts."""
    text = server["text"]()
    assert PROMPT not in text and not server["prompted"], text[-3000:]
    assert server["ready"], text[-3000:]
    assert (server["home"] / "profiles.toml").read_text() == PROFILE
    assert _get(server["api"] + "/health")[0] == 200


def _dead_api() -> str:
    return f"http://127.0.0.1:{_free_port()}/api"  # nothing listens there


def _profile_naming(url: str) -> str:
    return f'active = "mine"\n\n[profiles.mine]\nPREFECT_API_URL = "{url}"\n'


@pytest.mark.parametrize("where", ["profile", "dotenv"])
def test_an_api_that_does_not_answer_is_refused_before_anything_is_made(tmp_path, where):
    """The URL a stopped server left in the user's profile, or one in a .env: one line,
    exit 2, no lake made (PREFECT_API_URL in the environment: tests/flows/test_cli_errors.py)."""
    home, cwd, lake = tmp_path / "prefect", tmp_path / "work", tmp_path / "lake"
    home.mkdir()
    cwd.mkdir()
    dead = _dead_api()
    if where == "profile":
        (home / "profiles.toml").write_text(_profile_naming(dead))
    else:
        (cwd / ".env").write_text(f"PREFECT_API_URL={dead}\n")
    res = subprocess.run(
        [*CRUCIBLE, "run", "--lake", str(lake)], cwd=cwd, env=_env(home),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 2, out[-3000:]
    lines = [x for x in out.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith(
        f"error: Prefect API at {dead} is not answering (ConnectError)"
    ), out[-3000:]
    fix = {
        "profile": f"(set in Prefect profile 'mine', {home / 'profiles.toml'}): start "
        "`crucible server` or remove it from the profile: `prefect config unset "
        "PREFECT_API_URL`",
        "dotenv": "`prefect config view --show-sources` says where",
    }[where]
    assert fix in lines[0]
    assert not lake.exists()


def test_a_run_prints_its_page_in_the_prefect_ui_at_its_start_and_end(server, tmp_path):
    home = server["tmp"] / "prefect"
    lake = tmp_path / "lake"
    res = subprocess.run(
        [*CRUCIBLE, "run", "--lake", str(lake), "--stages", "dedup"], cwd=ROOT,
        env=_env(home, PREFECT_API_URL=server["api"]), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    ((run_id,),) = q(lake, "SELECT run_id FROM runs")
    page = f"{server['ui']}/runs/flow-run/{run_id}"
    lines = out.splitlines()
    first = lines.index(f"run {run_id[:12]} in the Prefect UI: {page}")
    summary = next(i for i, x in enumerate(lines) if x.startswith(f"run {run_id[:12]}: "))
    assert first < summary and f"Prefect UI: {page}" in lines[summary:], out[-3000:]
    status, body = _get(page, accept="text/html")  # as a browser asks for it
    assert status == 200 and b"<html" in body  # the UI's page (the API says 404 to JSON)
    status, body = _get(f"{server['api']}/flow_runs/{run_id}")
    assert status == 200 and json.loads(body)["state_type"] == "COMPLETED"
