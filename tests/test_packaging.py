"""The package as a user installs it: a wheel built from the checkout (sdist first, as
`python -m build` does), installed in a fresh venv outside the checkout with only the
`lake` extra, finds its task catalog and its queries; the checkout keeps its own dirs; the
ranges in pyproject.toml admit the exact set in constraints.txt, which `make` installs."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
CODE_PACKAGES = ("verifiers", "generators", "lake", "ray_actors", "flows")
DATA_DIRS = ("sql", "tasks")
CACHES = ("__pycache__", ".pytest_cache", ".ruff_cache")
PIP = [sys.executable, "-m", "pip"]


def _files(root: Path) -> list[Path]:
    """Every file under `root` but bytecode caches."""
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file()
        and not any(part in CACHES for part in p.relative_to(root).parts)
        and p.suffix not in (".pyc", ".pyo")
    )


def _run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, **kw)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _user_env(cwd: Path) -> dict[str, str]:
    """A user's shell: nothing points at the checkout, and tables are wide enough that no
    cell wraps."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return {**env, "COLUMNS": "250", "NO_COLOR": "1", "PWD": str(cwd)}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sdist, then the wheel from it (what `python -m build` does; the checkout gets no
    build/ dir, only the ignored egg-info), with this venv's setuptools: no download."""
    out = tmp_path_factory.mktemp("dist")
    sdist_hook = f"from setuptools import build_meta; build_meta.build_sdist({str(out)!r})"
    _run([sys.executable, "-c", sdist_hook], cwd=ROOT)
    (sdist,) = out.glob("crucible_data-*.tar.gz")
    _run([*PIP, "wheel", "-q", "--no-deps", "--no-build-isolation", str(sdist), "-w", str(out)])
    (whl,) = out.glob("crucible_data-*.whl")
    return whl


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel and its `lake` extra at the constrained versions. pip runs
    from this interpreter (`--python`), so the venv needs no pip of its own (~3 s saved);
    the cache is the user's, not the session's private XDG_CACHE_HOME (tests/conftest.py);
    `--no-compile` skips the .pyc of all of pyarrow & co (half the install's time)."""
    home = tmp_path_factory.mktemp("user")
    env_dir = home / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], cwd=home)
    cache = os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")
    target = ["--python", str(env_dir / "bin" / "python")]
    options = ["-q", "--no-compile", "--cache-dir", cache, "-c", str(ROOT / "constraints.txt")]
    _run([*PIP, *target, "install", *options, f"{wheel}[lake]"], cwd=home)
    return env_dir


def test_wheel_carries_the_data_dirs_and_package_data(wheel: Path):
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in DATA_DIRS:
        files = _files(ROOT / name)
        assert files, name
        missing = [
            str(p.relative_to(ROOT))
            for p in files
            if f"crucible_data/{p.relative_to(ROOT).as_posix()}" not in names
        ]
        assert not missing, f"not in the wheel: {missing[:10]}"
    assert "crucible_data/sql/views/10_latest_verdicts.sql" in names
    # every file the code packages hold, Python or data (cells.lib, ...), docs aside
    for pkg in CODE_PACKAGES:
        for p in _files(ROOT / pkg):
            if p.suffix != ".md":
                assert p.relative_to(ROOT).as_posix() in names, p
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def _user_run(venv: Path, argv: list[str], cwd: Path) -> str:
    """Run the venv's `argv[0]` (crucible, python) in `cwd` as a user would: stdout."""
    return _run([str(venv / "bin" / argv[0]), *argv[1:]], cwd=cwd, env=_user_env(cwd)).stdout


def test_installed_wheel_lists_the_packaged_catalog(venv: Path, tmp_path: Path):
    """Over 30 s as the file's first test: it pays the module's sdist, wheel and venv
    install (`wheel`, `venv`), which every later test here shares."""
    from verifiers.catalog import load_catalog

    where = "import sysconfig, flows.options, lake.db; print(sysconfig.get_path('purelib'))"
    where += "; print(lake.db.SQL_DIR); print(flows.options.DEFAULT_TASKS)"
    site, sql_dir, tasks_dir = _user_run(venv, ["python", "-c", where], tmp_path).split()
    assert (sql_dir, tasks_dir) == (f"{site}/crucible_data/sql", f"{site}/crucible_data/tasks")

    out = _user_run(venv, ["crucible", "tasks"], tmp_path)
    tasks, errors = load_catalog(ROOT / "tasks", None)
    assert tasks and not errors
    assert re.search(rf"^{len(tasks)} tasks\b", out, re.M), out[:500]
    assert set(re.findall(r"│ ([0-9a-f]{12}) │", out)) == {t.task_id[:12] for t in tasks}
    assert "refused" not in out


def test_installed_wheel_runs_a_shipped_query(venv: Path, tmp_path: Path):
    from lake import db
    from lake.store import Lake
    from tests.lake.export_fixtures import build

    lake = tmp_path / "lake"
    build(lake)
    con = db.connect(Lake(lake))
    expected = db.run_sql(con, "pass_rates")
    con.close()
    assert expected.num_rows > 0

    table = _user_run(venv, ["crucible", "sql", "pass_rates", "--lake", str(lake)], tmp_path)
    header = next(line for line in table.splitlines() if "domain" in line)
    assert [c.strip() for c in re.split(r"[┃│]", header) if c.strip()] == expected.column_names
    argv = ["crucible", "sql", "pass_rates", "--lake", str(lake), "--json"]
    lines = _user_run(venv, argv, tmp_path).splitlines()
    assert [json.loads(line) for line in lines if line.strip()] == expected.to_pylist()


def test_checkout_reads_its_own_data_dirs():
    """An editable install or a plain checkout edits the repository's sql/ and tasks/."""
    import flows.options
    import flows.stages
    from lake import db
    from verifiers.datadirs import data_dir

    assert db.SQL_DIR == data_dir("sql") == ROOT / "sql"
    assert db.VIEWS_DIR == ROOT / "sql" / "views"
    assert flows.options.DEFAULT_TASKS == flows.stages.DEFAULT_TASKS == ROOT / "tasks"
    with pytest.raises(ValueError, match="known: sql, tasks"):
        data_dir("docs")


def _constraints() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt pins exact versions: {line!r}"
            pins[canonicalize_name(name)] = version
    return pins


def test_ranges_admit_the_constrained_versions():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0" and (ROOT / "LICENSE").is_file()
    assert project["readme"] == "README.md"
    assert {"Repository", "Issues"} <= set(project["urls"])
    pins = _constraints()
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra, items in project["optional-dependencies"].items():
        reqs += [Requirement(r) for r in items if not r.startswith("crucible-data[")]
        assert items, extra
    for req in reqs:
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} has no exact pin in constraints.txt"
        assert req.specifier.contains(pins[name]), f"{req} does not admit {pins[name]}"
        assert not any(s.operator == "==" for s in req.specifier), f"{req}: a range, not a pin"
    assert pins["torch"] == "2.13.0"
    assert pins["duckdb"] == pins["duckdb-extension-delta"]  # lake/db.py needs them equal


def test_make_reinstalls_when_constraints_change():
    """`make -n -W FILE` shows what make would run were FILE just edited."""
    verl = "pip install -q --no-deps -r infra/verl-requirements.txt"
    for changed in ("constraints.txt", "pyproject.toml", "setup.py", "infra/verl-requirements.txt"):
        plan = _run(["make", "-n", "-W", changed, ".venv/.installed-stamp"], cwd=ROOT).stdout
        assert "pip install -q -e '.[all]' -c constraints.txt" in plan, (changed, plan)
        # verl's set goes in after the main one, which resolves without it
        assert plan.index(verl) > plan.index("-c constraints.txt"), (changed, plan)


def test_every_imported_distribution_is_declared():
    """A module-level import of a third-party module names a distribution pyproject.toml
    declares (in the core or an extra), not one that only arrives with another package."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {canonicalize_name(Requirement(r).name) for r in project["dependencies"]}
    for items in project["optional-dependencies"].values():
        declared |= {canonicalize_name(Requirement(r).name) for r in items}
    # the OCC kernel's module ships as cadquery-ocp, which cadquery's own pins choose
    via = {"OCP": "cadquery"}
    own = {*CODE_PACKAGES, "__future__"}
    dists = packages_distributions()
    undeclared = []
    for pkg in CODE_PACKAGES:
        for path in _files(ROOT / pkg):
            if path.suffix != ".py":
                continue
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module]
                else:
                    continue
                for top in {n.split(".")[0] for n in names} - own - sys.stdlib_module_names:
                    found = {canonicalize_name(d) for d in dists.get(top, [])}
                    if via.get(top) not in declared and not found & declared:
                        undeclared.append(f"{path.relative_to(ROOT)}: {top} ({found})")
    assert not undeclared
