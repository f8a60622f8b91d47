"""The built-in x86asm catalog (tasks/x86asm): at least 30 functions across the families
the issue names, every one loads, its reference answer passes every gate (correct, ABI-clean,
faster in instructions and in wall time), and its own baselines hold: gcc's -O0 and -O3
assembly are correct on every case, reported as copies, and the -O3 baseline, let past the
copy check, is not faster than itself (the same instruction count, to the instruction)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.x86asm.verifiers import CopyGateOff, needs_x86
from tests.verifiers.x86wall import WALL_MARGINAL, reference_ok, verify_settled
from verifiers.catalog import load_catalog
from verifiers.contract import Limits, Status
from verifiers.x86asm.verifier import X86Verifier

ROOT = Path(__file__).resolve().parents[2]
pytestmark = needs_x86
CORRECT = Limits(gates=("assemble", "static", "link", "execute", "abi", "correct"))
FAMILIES = {
    "memory or string": {"memory", "string"},
    "checksums and hashes": {"checksum", "hash"},
    "sorts and searches": {"sort", "search"},
    "bit tricks": {"bits"},
    "saturating and fixed-point": {"saturating", "fixedpoint"},
    "matrix and stencil": {"matrix", "stencil"},
}


# the names at collection, the tasks when a test asks (loading builds each task's C with
# gcc: seconds a pytest-xdist worker that never runs this module does not spend)
NAMES = sorted(p.parent.name for p in (ROOT / "tasks" / "x86asm").glob("*/task.toml"))


@pytest.fixture(scope="module")
def catalog():
    tasks, errors = load_catalog(ROOT / "tasks", ["x86asm"])
    return {t.name: t for t in tasks}, errors


def test_the_catalog_loads_whole_and_covers_the_families(catalog):
    """Over 30 s with its set-up on 2 busy cores: loading the catalog compiles every
    task's reference at -O0 and -O3 and checks its cases (`catalog`, shared by the
    module's tests)."""
    tasks, errors = catalog
    assert not errors, [str(e) for e in errors]
    assert len(tasks) >= 30 and sorted(tasks) == NAMES, sorted(tasks)
    families = {t.family for t in tasks.values()}
    for what, names in FAMILIES.items():
        assert families & names, f"no {what} task"
    for t in tasks.values():
        assert t.reference and t.harness["baselines"]["O3"] and t.harness["baselines"]["O0"]
        assert t.platform["compiler"].startswith("gcc ")  # the recorded baseline compiler


@pytest.fixture(scope="module")
def verifier():
    return X86Verifier()


@pytest.mark.parametrize("name", NAMES)
def test_the_reference_passes_and_the_baselines_hold(name, catalog, verifier):
    task = catalog[0][name]
    v = verify_settled(verifier, task, task.reference)
    assert reference_ok(task, v), (v.code, v.feedback[:600])
    assert v.metrics["speedup"] > 1
    assert v.metrics["speedup_wall"] > 1 or task.name in WALL_MARGINAL
    for level in ("O0", "O3"):
        code = task.harness["baselines"][level]
        ok = verifier.verify(task, code, CORRECT)
        assert ok.status is Status.PASS, (level, ok.code, ok.feedback[:600])
        full = verifier.verify(task, code)
        assert (full.status, full.code) == (Status.SLOW, "copied_input"), (level, full.feedback)
    itself = CopyGateOff().verify(task, task.harness["baselines"]["O3"])
    assert (itself.status, itself.code) == (Status.SLOW, "slow"), itself.feedback
    assert itself.metrics["instructions"] == itself.metrics["baseline_instructions"]
