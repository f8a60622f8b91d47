"""An export killed (SIGKILL) at any point leaves no export directory without its row, and
the next export settles whatever the killed one left: a recorded export is put in place, an
unrecorded one removed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lake import db
from lake.store import Lake
from tests.lake.export_fixtures import Scenario, build, run_export

ROOT = Path(__file__).resolve().parents[2]

# The export in a process of its own, killed by SIGKILL at `point`: no handler, no
# cleanup runs, as when the OOM killer or a power cut stops it.
KILLED_EXPORT = """
import os, signal, sys
from pathlib import Path
from lake import db, export as ex
from lake.store import Lake

root, out, point = sys.argv[1:]
record = ex._record

def die():
    os.kill(os.getpid(), signal.SIGKILL)

if point == "writing":
    ex.write_chart = lambda *a, **k: die()
elif point == "before-row":
    ex._record = lambda *a, **k: die()
elif point == "after-row":
    ex._record = lambda *a, **k: (record(*a, **k), die())
lake = Lake(root)
ex.export(lake, db.connect(lake), ex.ExportSettings(out=Path(out), name="killed"), run_id="r")
"""


@pytest.fixture
def scenario(tmp_path: Path) -> Scenario:
    return build(tmp_path / "lake")


def _rows(lake: Lake) -> dict[str, str]:
    """path -> export_id of every `exports` row."""
    con = db.connect(Lake(lake.root, readonly=True))
    try:
        return dict(con.execute("SELECT path, export_id FROM exports").fetchall())
    finally:
        con.close()


def _visible(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if not p.name.startswith("."))


POINTS = ("writing", "before-row", "after-row")


def test_an_export_killed_anywhere_leaves_no_directory_without_its_row(
    scenario: Scenario, tmp_path: Path
):
    for i, point in enumerate(POINTS):
        _kill_and_settle(scenario, tmp_path / point, point, seed=1 + i)


def _kill_and_settle(scenario: Scenario, out: Path, point: str, seed: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-c", KILLED_EXPORT, str(scenario.lake.root), str(out), point]
    proc = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr
    rows = _rows(scenario.lake)
    for path in _visible(out):  # what a person (or a trainer) would pick up
        assert str(path) in rows, f"{point}: {path.name} is there without an exports row"
    assert (str(out / "killed") in rows) == (point == "after-row"), point

    # another export in `out` (a seed of its own: an export's row is keyed by its content)
    nxt = run_export(scenario, out, name="next", seed=seed)
    rows = _rows(scenario.lake)
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == [], point  # settled
    want = ["killed", "next"] if point == "after-row" else ["next"]
    assert [p.name for p in _visible(out)] == want, point
    for path in _visible(out):
        manifest = json.loads((path / "manifest.json").read_text())
        assert rows[str(path)] == manifest["export_id"]
        assert (path / "README.md").is_file()
        for f in manifest["files"]:
            assert (path / f["path"]).is_file()
    assert nxt.path == out / "next"
