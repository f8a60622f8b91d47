"""A Prefect API that does not answer, wherever Prefect's settings name it (the user's
profile, a .env), is refused before a run makes anything."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CRUCIBLE = [sys.executable, "-m", "flows.cli"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(home: Path, **more: str) -> dict[str, str]:
    env = {**os.environ, "PREFECT_HOME": str(home), "PYTHONPATH": str(ROOT), **more}
    for k in ("PREFECT_API_URL", "PREFECT_UI_API_URL", "PREFECT_PROFILE"):
        if k not in more:
            env.pop(k, None)
    return env


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
