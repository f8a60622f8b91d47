"""`crucible --help` at 80 columns, and a command whose extra is not installed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer import rich_utils
from typer.testing import CliRunner

from flows.cli import app
from flows.cli.base import DIST, EXTRAS

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [c.name or c.callback.__name__ for c in app.registered_commands]


@pytest.fixture
def width80(monkeypatch):
    monkeypatch.setattr(rich_utils, "MAX_WIDTH", 80)


def _help(*args: str) -> str:
    res = CliRunner().invoke(app, [*args, "--help"])
    assert res.exit_code == 0, res.output
    return res.output


def test_the_command_list_is_one_line_per_command(width80):
    out = _help()
    rows = [
        line for line in out.splitlines()
        if line.startswith("│ ") and not line.lstrip("│ ").startswith("-")
    ]  # fmt: skip
    assert len(rows) == len(COMMANDS), out  # no summary wraps onto a second line
    for name, info in zip(COMMANDS, app.registered_commands, strict=True):
        assert info.short_help, f"{name} has no one-line summary"
        (row,) = [r for r in rows if r.split()[1] == name]
        assert info.short_help in row, row
    assert max(map(len, out.splitlines())) <= 80


@pytest.mark.parametrize("command", COMMANDS)
def test_no_help_text_or_default_is_cut_at_80_columns(width80, command):
    out = _help(command)
    assert "…" not in out, out  # rich cuts a word longer than its column with an ellipsis


def test_export_help_shows_every_default_kind(width80):
    out = " ".join(_help("export").split())
    assert "sft_optimize, dpo" in out and "--no-dpo-other-failures" not in out


def test_a_missing_extra_is_one_line_naming_the_pip_command(tmp_path):
    """`crucible run` where `ray` cannot be imported (a finder hides it, as a venv without the
    `ray` extra would): one line, exit 2, and the lake is not made."""
    lake = tmp_path / "lake"
    script = textwrap.dedent(f"""
        import sys
        class Hide:
            def find_spec(self, name, path=None, target=None):
                if name == "ray" or name.startswith("ray."):
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        sys.meta_path.insert(0, Hide())
        from flows.cli import app
        app(["run", "--lake", {str(lake)!r}])
    """)
    p = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert f"pip install '{DIST}[ray]'" in lines[0] and "internal error" not in lines[0]
    assert not lake.exists()


def test_every_extra_is_one_pyproject_declares():
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert set(EXTRAS) <= set(declared["optional-dependencies"])
    assert declared["name"] == DIST


def test_a_foreign_top_level_module_is_one_line_before_any_import(tmp_path):
    """Another distribution's `verifiers` (PyPI's `verifiers` is Prime Intellect's) earlier
    on the path: the command refuses in one line naming the module, exit 2, no traceback."""
    foreign = tmp_path / "site" / "verifiers"
    foreign.mkdir(parents=True)
    (foreign / "__init__.py").write_text("raise ImportError('not the one you want')\n")
    env = {**os.environ, "PYTHONPATH": f"{foreign.parent}{os.pathsep}{ROOT}"}
    p = subprocess.run([sys.executable, "-m", "flows.cli", "tasks"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p.returncode == 2, p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert "`verifiers`" in line and str(foreign) in line and "venv of its own" in line


def test_crucibles_own_modules_pass_the_check():
    from flows.cli.install import foreign_modules

    assert foreign_modules() == []
