"""Hostile CAD candidates (issue 11): none passes, none is infra, none reaches the host,
and the next candidates in the same warm workers are still judged right.

Every case runs twice: through the front door (`cad`, the static rules first) and past
the static gate (`raw`, `StaticGateBypassedCadVerifier`: a test-only subclass whose
anticheat gate lets everything through), so the runtime defences (sandbox, build process,
judge worker) are what stops the script. After each one, on the same verifier: the
reference passes, a plainly wrong part fails as a wrong answer (a planted judge that
passes everything is caught here), and past the static gate a probe finds its build
process alone in a clean sandbox (no file, process or job dir left by the one before).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("cadquery")

from tests.adversarial.cad.cases import ALL, WRONG_PLATE
from tests.adversarial.harness import (
    assert_innocent_fails,
    assert_innocent_passes,
    check,
    verify_settled,
)
from verifiers.cad.verifier import CadVerifier
from verifiers.contract import Limits, Status, Task
from verifiers.warm import Worker

PLATE = """import cadquery as cq

result = (
    cq.Workplane("XY")
    .box(80.0, 60.0, 10.0)
    .faces(">Z")
    .workplane()
    .rect(60.0, 40.0, forConstruction=True)
    .vertices()
    .hole(8.0)
    .edges("|Z")
    .fillet(4.0)
)
"""

TASK = Task(
    name="hostile_plate",
    domain="cad",
    family="plate",
    level=1,
    requirement="An 80 x 60 x 10 mm plate with four 8 mm holes and 4 mm corner fillets.",
    interface={"result": "result", "units": "mm"},
    platform={},
    reference=PLATE,
    harness={"compare": "absolute", "iou_pass": 0.999, "surface_pass": 0.01,
             "chamfer_pass": 0.002},
)  # fmt: skip

HOSTILE_LIMITS = Limits(timeout_s=8, cpu_s=8, memory_mb=1024, fsize_mb=32)
# the candidates that walk the disk wait on reads, which count against the wall clock and
# not the CPU budget: with the two equal, a busy machine's wall ran out first (CPU 5.4 s of
# 8, wall 8.0 s: machine_slow, the machine's label, twice in the full suite); with twice the
# wall their own CPU budget ends them, the candidate's
WALKER_LIMITS = Limits(timeout_s=16, cpu_s=8, memory_mb=1024, fsize_mb=32)

# A checkout (or venv) under /tmp is bound read-only at its own path, so its top dir shows
# in the sandbox's /tmp: the sandbox's, not a candidate's leftover.
_CODE_UNDER_TMP = sorted(
    {Path(p).parts[2] for p in Worker.python_paths() if Path(p).parts[:2] == ("/", "tmp")}
)

# Past the static gate: the build process must be alone (pid 1 is the worker), in a job
# dir of its own that holds nothing yet, with nothing else in the worker's dir or /tmp.
CLEAN_PROBE = (
    "import os\n"
    "seen = []\n"
    "me = (1, os.getpid(), os.getppid())  # the sandbox's pid 1, this build, its server\n"
    "pids = [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in me]\n"
    "if pids:\n"
    "    seen.append(('processes', [open(f'/proc/{p}/cmdline').read()[:60] for p in pids]))\n"
    f"ours = {_CODE_UNDER_TMP!r}  # the harness's read-only code binds, if under /tmp\n"
    "left = [x for x in os.listdir('/tmp') if x not in ours]\n"
    "if left:\n"
    "    seen.append(('tmp', left))\n"
    "cwd = os.getcwd()\n"
    "ok = {cwd} | {cwd[:i] for i in range(1, len(cwd)) if cwd[i] == '/'}\n"
    "for d, dirs, files in os.walk(os.environ.get('HOME', '/nonexistent')):\n"
    "    seen += [os.path.join(d, x) for x in dirs if os.path.join(d, x) not in ok]\n"
    "    mine = ('output.txt', 'candidate.py') if d == cwd else ()\n"
    "    seen += [os.path.join(d, f) for f in files if f not in mine]\n"
    "    dirs[:] = [x for x in dirs if os.path.join(d, x) in ok]\n"
    "if seen:\n"
    "    raise RuntimeError(f'not clean: {seen}'[:1500])\n" + PLATE
)


class StaticGateBypassedCadVerifier(CadVerifier):
    """TEST ONLY: lets every script past the static rules, to probe the runtime sandbox."""

    name = "cad-verifier-static-gate-bypassed"

    def gate_anticheat(self, ctx) -> str:
        return "bypassed by the adversarial suite"


@pytest.fixture(scope="module")
def cad():
    v = CadVerifier(workers=1)
    yield v
    v.close()


@pytest.fixture(scope="module")
def raw():
    v = StaticGateBypassedCadVerifier(workers=1)
    yield v
    v.close()


def judged_right_after(v: CadVerifier) -> None:
    assert_innocent_passes(v.verify, TASK, PLATE)
    wrong = assert_innocent_fails(v.verify, TASK, WRONG_PLATE)
    assert (wrong.status, wrong.code) == (Status.WRONG_ANSWER, "geometry_mismatch"), (
        wrong.status,
        wrong.code,
        wrong.feedback[:300],
    )


def assert_no_host_writes() -> None:
    for p in (Path.home() / "crucible-pwned", Path("/tmp/crucible-pwned"),
              Path("/etc/crucible-pwned"), Path("/work/main/crucible-pwned"),
              Path(__file__).parents[3] / "verifiers/cad/pwned.py"):  # fmt: skip
        assert not p.exists(), f"the candidate wrote {p} on the host"


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
def test_hostile_through_the_front_door(cad, outside, case):
    v = verify_settled(cad.verify, TASK, outside.fill(case.code), HOSTILE_LIMITS)
    check(outside, v, case.front, cad)
    assert_no_host_writes()
    judged_right_after(cad)


RUNTIME = [c for c in ALL if c.runtime is not None]


@pytest.mark.parametrize("case", RUNTIME, ids=[c.id for c in RUNTIME])
def test_hostile_past_the_static_gate(raw, outside, case):
    """Bypasses the static gate on purpose: the script runs, the sandbox must hold."""
    limits = WALKER_LIMITS if case.id.startswith("reference_reachable") else HOSTILE_LIMITS
    v = verify_settled(raw.verify, TASK, outside.fill(case.code), limits)
    check(outside, v, case.runtime, raw)
    assert_no_host_writes()
    probe = raw.verify(TASK, CLEAN_PROBE)
    assert probe.status is Status.PASS, probe.feedback[:1500]
    judged_right_after(raw)


def test_a_reference_that_raises_is_named_and_never_passes(cad):
    broken = dataclasses.replace(TASK, name="broken_ref", reference=PLATE + "\n1 / 0\n", task_id="")
    as_candidate = cad.verify(broken, broken.reference)
    assert as_candidate.status is Status.RUNTIME_ERROR, as_candidate.feedback
    other = cad.verify(broken, PLATE)
    assert (other.status, other.code) == (Status.INFRA_ERROR, "harness_error")
    assert "broken_ref" in other.feedback or any("broken_ref" in c.detail for c in other.checks)
    judged_right_after(cad)


def test_the_suite_covers_every_mechanism():
    counts = Counter(c.id.split("-", 1)[0] for c in ALL)
    assert len(ALL) >= 20
    assert set(counts) >= {"planted_code", "host_paths", "cache", "judge_reads_candidate_text",
                           "denylist_gap", "reference_reachable", "limits", "left_behind",
                           "classics"}, counts  # fmt: skip


def test_no_attribute_chain_from_an_allowed_module_reaches_a_forbidden_one():
    """denylist_gap: from every module a script may import, follow every attribute the
    static rules let through; no module reached is outside the allowed packages (CadQuery's
    own `os`, `sys`, `ctypes` ...) or one of their forbidden submodules (exporters, f2py
    ...), but for a few harmless leaf modules named in the rules."""
    import importlib
    import pkgutil
    import types

    import cadquery

    from verifiers.cad import anticheat

    for m in pkgutil.walk_packages(cadquery.__path__, "cadquery."):
        with contextlib.suppress(Exception):
            importlib.import_module(m.name)
    allowed = anticheat.ALLOWED_IMPORTS
    todo = [importlib.import_module(n) for n in ("cadquery", "numpy", "math", "itertools",
            "functools", "typing", "dataclasses", "enum", "collections", "fractions",
            "decimal", "OCP")]  # fmt: skip
    seen, bad = set(), {}
    while todo:
        mod = todo.pop()
        if mod.__name__ in seen:
            continue
        seen.add(mod.__name__)
        for attr, value in list(vars(mod).items()):
            if not isinstance(value, types.ModuleType) or anticheat._attr_rule(attr):
                continue
            if attr in anticheat.HARMLESS_MODULE_ATTRS:
                continue
            ok = value.__name__.split(".")[0] in allowed and anticheat._import_rule(value.__name__)
            if ok:
                todo.append(value)
            else:
                bad[f"{mod.__name__}.{attr}"] = value.__name__
    assert not bad, f"attribute chains the static rules let through: {bad}"
