"""infra/images/inputs.py: a node image's content key changes with everything its build
reads (Dockerfile, context files, an executable bit, a link, the base image) and with
nothing the context leaves out (.dockerignore), so build-images.sh skips a build only
when the image it has is the one this tree would build."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "infra" / "images" / "inputs.py"
_spec = importlib.util.spec_from_file_location("image_inputs", SCRIPT)
inputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(inputs)

IGNORE = """# comments and blank lines are no patterns

.git
.venv
**/__pycache__
*.egg-info
lake/data
tests
docs/*.md
!docs/keep.md
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel, text in {
        ".dockerignore": IGNORE,
        "Dockerfile": "FROM debian:bookworm-slim\nCOPY . /src\n",
        "verifiers/rtl/verifier.py": "VERSION = 1\n",
        "verifiers/rtl/__pycache__/verifier.cpython-311.pyc": "bytecode",
        "tasks/rtl/mux4/task.toml": 'name = "mux4"\n',
        "infra/run.sh": "#!/bin/sh\n",
        "lake/store.py": "class Lake: ...\n",
        "lake/data/part-0.parquet": "rows",
        "tests/test_x.py": "def test(): ...\n",
        ".venv/bin/python": "elf",
        "crucible.egg-info/PKG-INFO": "Name: crucible\n",
        "docs/guide.md": "guide\n",
        "docs/keep.md": "kept\n",
    }.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def key(root: Path, base: str = "base-1") -> str:
    return inputs.image_inputs(root, root / "Dockerfile", base)


def test_the_context_is_what_dockerignore_leaves(tree):
    assert inputs.context_files(tree) == [
        ".dockerignore",
        "Dockerfile",
        "docs/keep.md",  # re-included by `!`
        "infra/run.sh",
        "lake/store.py",
        "tasks/rtl/mux4/task.toml",
        "verifiers/rtl/verifier.py",
    ]


@pytest.mark.parametrize(
    "rel",
    [
        "tests/test_x.py",
        ".venv/bin/python",
        "verifiers/rtl/__pycache__/verifier.cpython-311.pyc",
        "lake/data/part-0.parquet",
        "crucible.egg-info/PKG-INFO",
        "docs/guide.md",
    ],
)
def test_a_file_the_context_leaves_out_changes_nothing(tree, rel):
    before = key(tree)
    (tree / rel).write_text("changed")
    (tree / "tests" / "new_test.py").write_text("new")
    assert key(tree) == before


@pytest.mark.parametrize(
    "change",
    [
        lambda r: (r / "verifiers/rtl/verifier.py").write_text("VERSION = 2\n"),
        lambda r: (r / "tasks/rtl/mux4/task.toml").unlink(),
        lambda r: (r / "tasks/rtl/adder8").mkdir() or (r / "tasks/rtl/adder8/task.toml").touch(),
        lambda r: (r / "docs/keep.md").write_text("changed"),
        lambda r: (r / "infra/run.sh").chmod(0o755),  # COPY keeps the bit
        lambda r: (r / "Dockerfile").write_text("FROM debian:bookworm-slim\nCOPY . /opt\n"),
        lambda r: os.symlink("verifiers/rtl", r / "rtl-link"),
        lambda r: (r / "verifiers/rtl/verifier.py").rename(r / "verifiers/rtl/other.py"),
    ],
    ids=["source", "removed", "added", "reincluded", "exec-bit", "dockerfile", "link", "rename"],
)
def test_whatever_the_build_reads_changes_the_key(tree, change):
    before = key(tree)
    change(tree)
    assert key(tree) != before


def test_another_base_image_changes_the_key(tree):
    assert key(tree, "base-1") != key(tree, "base-2")
    assert key(tree, "base-1") == key(tree, "base-1")  # and nothing else moves it


def test_the_script_prints_the_key_and_refuses_a_missing_dockerfile(tree):
    run = [sys.executable, str(SCRIPT), "--root", str(tree), "--base-id", "base-1"]
    out = subprocess.run([*run, str(tree / "Dockerfile")], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == key(tree)
    out = subprocess.run([*run, str(tree / "nope")], capture_output=True, text=True)
    assert out.returncode == 2 and "no Dockerfile" in out.stderr


def test_the_repository_context_holds_the_code_not_the_tests():
    files = inputs.context_files(ROOT)
    assert "verifiers/base.py" in files and "infra/images/eda/Dockerfile" in files
    assert not [f for f in files if f.startswith(("tests/", ".venv/", ".git/", "bench/"))]
    assert not [f for f in files if "__pycache__" in f]
