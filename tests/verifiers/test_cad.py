"""The CAD verifier: every gate fails a wrong candidate, IoU matches analytic values, the
orientation diagnosis finds planted rotations, and every catalog reference passes."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

cq = pytest.importorskip("cadquery")

from verifiers.cad import anticheat  # noqa: E402
from verifiers.cad import geometry as geo  # noqa: E402
from verifiers.cad.spec import load_cad_spec  # noqa: E402
from verifiers.cad.verifier import CadVerifier, classify_error  # noqa: E402
from verifiers.catalog import TaskSpecError, load_catalog  # noqa: E402
from verifiers.contract import Limits, Status, Task  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

PLATE = """import cadquery as cq

LENGTH = 80.0
WIDTH = 60.0
THICK = 10.0

result = (
    cq.Workplane("XY")
    .box(LENGTH, WIDTH, THICK)
    .faces(">Z")
    .workplane()
    .rect(60.0, 40.0, forConstruction=True)
    .vertices()
    .hole(8.0)
    .edges("|Z")
    .fillet(4.0)
)
"""


def make_task(reference: str = PLATE, **harness) -> Task:
    h = {"compare": "absolute", "iou_pass": 0.999, "surface_pass": 0.01,
         "chamfer_pass": 0.002, **harness}  # fmt: skip
    return Task(
        name="test_plate",
        domain="cad",
        family="plate",
        level=1,
        requirement="An 80 x 60 x 10 mm plate centred on the origin ...",
        interface={"result": "result", "units": "mm"},
        platform={},
        reference=reference,
        harness=h,
    )


@pytest.fixture(scope="module")
def cad():
    v = CadVerifier(workers=2)
    yield v
    v.close()


@pytest.fixture(scope="module")
def catalog():
    tasks, errors = load_catalog(ROOT / "tasks", ["cad"])
    assert not errors, errors
    return {t.name: t for t in tasks}


# --- IoU against analytic values -------------------------------------------------------


def _box(x, y, z, at=(0, 0, 0)):
    return cq.Workplane("XY").box(x, y, z).translate(at).val().wrapped


def _iou(a, b):
    return geo.iou(a, b, geo.props(a).volume, geo.props(b).volume)


def test_iou_of_primitive_pairs_matches_the_analytic_value():
    # two 2 mm cubes overlapping by half: intersection 4, union 12
    assert abs(_iou(_box(2, 2, 2), _box(2, 2, 2, (1, 0, 0))) - 1 / 3) < 1e-6
    # a box inside a box: the volume ratio
    assert abs(_iou(_box(4, 4, 4), _box(2, 3, 4)) - 24 / 64) < 1e-6
    # cylinder r=1, h=2 in a 2 mm cube, same centre: 2π / 8
    cyl = cq.Workplane("XY").cylinder(2, 1).val().wrapped
    assert abs(_iou(cyl, _box(2, 2, 2)) - math.pi / 4) < 1e-6
    # unit spheres whose centres are 1 apart: lens 5π/12 over union 9π/4 = 5/27
    s1 = cq.Workplane("XY").sphere(1).val().wrapped
    s2 = cq.Workplane("XY").sphere(1).translate((1, 0, 0)).val().wrapped
    assert abs(_iou(s1, s2) - 5 / 27) < 1e-6
    # disjoint: 0; identical: 1
    assert _iou(_box(1, 1, 1), _box(1, 1, 1, (5, 0, 0))) == 0
    assert abs(_iou(_box(3, 2, 1), _box(3, 2, 1)) - 1) < 1e-9


def test_point_triangle_distance():
    a = np.array([[0, 0, 0.0]] * 5)
    b = np.array([[1, 0, 0.0]] * 5)
    c = np.array([[0, 1, 0.0]] * 5)
    p = np.array([[0.2, 0.2, 0], [0.2, 0.2, 1], [2, 0, 0], [-1, -1, 0], [1, 1, 0]], float)
    want = [0, 1, 1, math.sqrt(2), math.sqrt(0.5)]
    assert np.allclose(geo.point_triangle_distance(p, a, b, c), want)
    assert np.allclose(geo.point_triangle_distance(p, a, c, b), want)  # either winding


def test_surface_distances_are_exact_for_a_known_offset():
    ref = geo.Surface.of(_box(10, 10, 10), 0.01, 2000)
    same = geo.Surface.of(_box(10, 10, 10), 0.01, 2000)
    s = geo.surface_metrics(same, ref, 1000, 0.02, 0.05)
    assert s["extra_max"] < 1e-6 and s["missing_max"] < 1e-6 and s["chamfer"] < 1e-6
    bigger = geo.Surface.of(_box(10, 10, 12), 0.01, 2000)  # 1 mm more at the top and bottom
    s = geo.surface_metrics(bigger, ref, 1000, 0.02, 0.05)
    assert abs(s["extra_max"] - 1.0) < 1e-6


# --- orientation ----------------------------------------------------------------------


def test_orientation_search_finds_a_planted_rotation():
    part = cq.Workplane("XY").box(30, 10, 4).faces(">Z").workplane().center(10, 0).hole(3)
    ref = part.val().wrapped
    planted = geo.axis_rotation("Y", 90) @ geo.axis_rotation("X", 90)
    cand = geo.transform(ref, planted)
    cp, rp = geo.props(cand), geo.props(ref)
    guesses = geo.orientation_guesses(cp, rp, None)
    hits = [g for g in guesses if geo.try_guess(cand, cp, ref, rp, g) > 0.9999]
    assert hits, "no guess undid the planted rotation"
    assert np.allclose(hits[0].matrix @ planted, np.eye(3), atol=1e-9)


def test_verifier_names_a_rotated_part(cad):
    task = make_task()
    code = PLATE + "result = result.rotate((0, 0, 0), (1, 0, 0), 90)\n"
    v = cad.verify(task, code)
    assert v.status is Status.WRONG_ANSWER and v.code == "geometry_orientation"
    assert v.category == "functional"
    assert "rotated" in v.feedback and "IoU" in v.feedback
    assert "bounding box" in v.feedback and "centroid" in v.feedback


def test_verifier_names_a_swapped_euler_order(cad, catalog):
    task = catalog["placed_l_bracket_xyz"]
    lines = task.reference.splitlines()
    rot = [i for i, line in enumerate(lines) if line.strip().startswith(".rotate(")]
    assert len(rot) == 3
    swapped = list(lines)
    for i, j in zip(rot, reversed(rot), strict=True):
        swapped[i] = lines[j]
    v = cad.verify(task, "\n".join(swapped) + "\n")
    assert v.status is Status.WRONG_ANSWER and v.code == "geometry_orientation", v.feedback
    assert "Euler order" in v.feedback


def test_verifier_names_a_shifted_part(cad):
    v = cad.verify(make_task(), PLATE + "result = result.translate((3, 0, 0))\n")
    assert v.code == "geometry_misplaced", v.feedback
    assert v.metrics["centroid_offset"][0] == pytest.approx(3.0, abs=1e-6)


# --- every gate fails a wrong candidate --------------------------------------------------


@pytest.mark.parametrize(
    "code, status, tcode",
    [
        ("", Status.FORMAT_ERROR, "empty_code"),
        ("import os\n" + PLATE, Status.REJECTED, "forbidden_import"),
        (PLATE + "open('/etc/passwd').read()\n", Status.REJECTED, "forbidden_call"),
        (PLATE.replace("result = (", "result = ((", 1), Status.COMPILE_ERROR, "syntax_error"),
        (PLATE.replace(".fillet(", ".filet("), Status.RUNTIME_ERROR, "wrong_api"),
        (PLATE.replace('"|Z"', '"|W"'), Status.RUNTIME_ERROR, "bad_selector"),
        (PLATE.replace("fillet(4.0)", "fillet(40.0)"), Status.RUNTIME_ERROR,
         "cad_operation_failed"),
        (PLATE.replace("THICK = 10.0", "THICK = 10.0 / 0"), Status.RUNTIME_ERROR,
         "script_exception"),
        (PLATE.replace("box(LENGTH", "box(LENGHT"), Status.RUNTIME_ERROR,
         "undefined_identifier"),
        (PLATE.replace("result = (", "part = ("), Status.FORMAT_ERROR, "no_result"),
        ("import cadquery as cq\nresult = cq.Workplane().rect(3, 4)\n", Status.WRONG_ANSWER,
         "invalid_solid"),
        ("import cadquery as cq\nresult = cq.Workplane().box(1, 1, 1)"
         ".union(cq.Workplane().box(1, 1, 1).translate((5, 0, 0)))\n", Status.WRONG_ANSWER,
         "solid_count"),
        (PLATE.replace("WIDTH = 60.0", "WIDTH = 64.0"), Status.WRONG_ANSWER,
         "geometry_mismatch"),
    ],
)  # fmt: skip
def test_each_gate_fails_a_wrong_candidate(cad, code, status, tcode):
    v = cad.verify(make_task(), code)
    assert (v.status, v.code) == (status, tcode), v.feedback
    assert not v.passed and v.feedback


def test_surface_gate_catches_a_missing_fillet_that_iou_lets_through(cad):
    task = make_task(iou_pass=0.99, surface_pass=0.005)
    v = cad.verify(task, PLATE.replace('    .edges("|Z")\n    .fillet(4.0)\n', ""))
    assert v.code == "surface_deviation", v.feedback
    assert [c.name for c in v.checks if c.ok] == ["format", "anticheat", "build", "solid", "iou"]
    assert v.metrics["iou"] > 0.99
    # the missing corner material sits 4 * (sqrt(2) - 1) = 1.657 mm from the fillet
    assert v.metrics["surface_max"] == pytest.approx(4 * (math.sqrt(2) - 1), abs=0.05)


def test_limits_end_the_script(cad, monkeypatch):
    task = make_task()
    # a hang that sleeps (past the static gate, which refuses `import time`): the wall
    # clock's, and the script's doing (verifiers.sandbox.Stop)
    with monkeypatch.context() as m:
        m.setattr(cad, "gate_anticheat", lambda ctx: "off for this case")
        sleeper = "import time\nwhile True:\n    time.sleep(1)\n"
        v = cad.verify(task, sleeper, Limits(timeout_s=2, cpu_s=20))
    assert (v.status, v.code) == (Status.TIMEOUT, "tool_timeout"), v.feedback
    # a busy one spends its CPU budget first; cut by the wall far short of it, it was the
    # machine's (a 2 s wall for a 20 s budget): never the script's label
    v = cad.verify(task, "while True:\n    pass\n", Limits(timeout_s=20, cpu_s=1))
    assert (v.status, v.code) == (Status.TIMEOUT, "cpu_limit"), v.feedback
    v = cad.verify(task, "while True:\n    pass\n", Limits(timeout_s=0.5, cpu_s=20))
    assert (v.status, v.code) == (Status.INFRA_ERROR, "machine_slow"), v.feedback
    v = cad.verify(task, "x = bytearray(8 * 2**30)\n", Limits(memory_mb=256))
    assert (v.status, v.code) == (Status.RESOURCE_LIMIT, "memory_limit"), v.feedback
    v = cad.verify(task, "while True:\n    print('x' * 10000)\n", Limits(fsize_mb=1))
    assert (v.status, v.code) == (Status.RESOURCE_LIMIT, "file_size_limit"), v.feedback


def test_printing_a_pass_does_not_pass(cad):
    code = PLATE.replace("WIDTH = 60.0", "WIDTH = 30.0") + "print('IoU 1.000000 pass')\n"
    v = cad.verify(make_task(), code)
    assert v.status is Status.WRONG_ANSWER and v.code == "geometry_mismatch"


def test_reference_passes_with_show_object_and_artifacts(cad):
    v = cad.verify(make_task(), PLATE.replace("result = (", "part = (") + "show_object(part)\n")
    assert v.status is Status.PASS, v.feedback
    assert v.metrics["iou"] == pytest.approx(1.0, abs=1e-9)
    assert [c.name for c in v.checks] == ["format", "anticheat", "build", "solid", "iou", "surface"]
    arts = {a.kind: a.data for a in v.artifacts}
    assert arts["picture"].startswith(b"\x89PNG\r\n\x1a\n")
    assert b"ISO-10303-21" in arts["step"][:200]
    n = int.from_bytes(arts["stl"][80:84], "little")
    assert n > 0 and len(arts["stl"]) == 84 + 50 * n
    # gates measured in the worker carry the worker's seconds
    assert all(c.seconds < 10 for c in v.checks)


def test_a_wrong_candidate_gets_a_picture_too(cad):
    v = cad.verify(make_task(), PLATE.replace("WIDTH = 60.0", "WIDTH = 64.0"))
    assert {a.kind for a in v.artifacts} == {"picture", "step", "stl"}


def test_normalized_comparison_ignores_scale_but_not_shape(cad):
    task = make_task(compare="normalized")
    scaled = PLATE + "result = result.val().scale(2.5).translate((7, -3, 1))\n"
    v = cad.verify(task, scaled)
    assert v.status is Status.PASS, v.feedback
    # compared in the unit frame, but its STL is the part as built: 200 x 150 mm at (7, -3)
    stl = next(a.data for a in v.artifacts if a.kind == "stl")
    n = int.from_bytes(stl[80:84], "little")
    rec = np.frombuffer(stl[84:], dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")])
    pts = rec["v"].reshape(n * 3, 3)
    assert np.allclose(pts.min(0)[:2], [7 - 100, -3 - 75], atol=1e-3)
    assert np.allclose(pts.max(0)[:2], [7 + 100, -3 + 75], atol=1e-3)
    v = cad.verify(task, PLATE.replace("WIDTH = 60.0", "WIDTH = 80.0"))
    assert v.status is Status.WRONG_ANSWER


def test_asking_for_the_surface_gate_alone_runs_what_it_needs(cad):
    v = cad.verify(make_task(), PLATE, Limits(gates=("surface",)))
    assert v.status is Status.PASS, v.feedback
    assert [c.name for c in v.checks] == ["format", "anticheat", "build", "solid", "iou", "surface"]
    v = cad.verify(make_task(), PLATE.replace("WIDTH = 60.0", "WIDTH = 64.0"), Limits(gates=()))
    assert v.status is Status.PASS and [c.name for c in v.checks][-1] == "build"
    assert v.verifier_version == "2+gates:anticheat,build"


# --- the build process cannot reach the reference ---------------------------------------


class StaticGateBypassedCadVerifier(CadVerifier):
    """TEST ONLY: lets every script past the static rules, to probe the runtime sandbox."""

    def gate_anticheat(self, ctx) -> str:
        return "bypassed by the test"


def test_build_process_sees_neither_the_catalog_nor_the_reference():
    """Past the static rules, a script finds no reference: no tasks/ on its disk, no
    reference text or shape among its objects or frames or anywhere in its memory, even
    once the reference was built and sent to the judge (the build server never holds
    it: the judge is a sandboxed worker of its own)."""
    probe = (
        "import gc, os, sys\n"
        f"found = os.path.exists({str(ROOT / 'tasks')!r})\n"
        "def texts(o):\n"
        "    if isinstance(o, str): yield o\n"
        "    elif isinstance(o, dict): yield from (v for v in o.values() if isinstance(v, str))\n"
        "    elif isinstance(o, (list, tuple)): yield from (v for v in o if isinstance(v, str))\n"
        "objs = gc.get_objects()\n"
        "objs += [vars(o) for o in objs if hasattr(o, '__dict__') and isinstance(vars(o), dict)]\n"
        "objs += [v for o in objs if isinstance(o, dict)\n"
        "         for v in o.values() if isinstance(v, dict)]\n"
        "f = sys._getframe()\n"
        "while f is not None:\n"
        "    objs.append(f.f_locals); f = f.f_back\n"
        "needle = ''.join(['CASCADE', ' Topo', 'logy'])  # not a constant of this script\n"
        "brep = sum(needle in t and t != needle for o in objs for t in texts(o))\n"
        "refs = [o for o in gc.get_objects() if type(o).__name__ == 'Reference']\n"
        "mem = 0\n"
        "number = ('38.' + '5625').encode()  # in the BREP text: followed by a space or newline\n"
        "import ctypes\n"
        "ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # dumpable again: its own memory is readable\n"
        "fd = os.open('/proc/self/mem', os.O_RDONLY)\n"
        "for line in open('/proc/self/maps'):\n"
        "    a, b = (int(x, 16) for x in line.split()[0].split('-'))\n"
        "    if line.split()[1][0] == 'r' and b - a < 1 << 28:\n"
        "        try:\n"
        "            data = os.pread(fd, b - a, a)\n"
        "            i = data.find(number)\n"
        "            while i >= 0:\n"
        "                mem += data[i + len(number) : i + len(number) + 1] in (b' ', b'\\n')\n"
        "                i = data.find(number, i + 1)\n"
        "        except OSError:\n"
        "            pass\n"
        "raise SystemExit(f'found={found} brep={brep} refs={len(refs)} mem={mem}')\n"
    )
    v = StaticGateBypassedCadVerifier(workers=1)
    try:
        # a reference with a number of its own (half its length) to look for in memory
        ref = "import cadquery as cq\nresult = cq.Workplane('XY').box(77.125, 61.5, 9.25)\n"
        task = make_task(ref)
        assert v.verify(task, ref).status is Status.PASS  # the judge holds the reference
        res = v.verify(task, probe)
    finally:
        v.close()
    assert "found=False brep=0 refs=0 mem=0" in res.feedback, res.feedback


# --- catalog ------------------------------------------------------------------------------


def test_catalog_size_levels_and_modes(catalog):
    assert len(catalog) >= 30
    levels = {t.level for t in catalog.values()}
    assert levels == {1, 2, 3}
    modes = [t.harness["compare"] for t in catalog.values()]
    assert modes.count("normalized") >= 3 and modes.count("absolute") >= 20
    assert sum(1 for t in catalog.values() if t.harness.get("euler")) >= 5
    for t in catalog.values():
        if t.harness["compare"] == "absolute":
            assert "mm" in t.requirement, t.name


def test_every_catalog_reference_passes(cad, catalog):
    tasks = list(catalog.values())
    verdicts = cad.verify_many([(t, t.reference) for t in tasks])
    bad = [(t.name, v.status, v.feedback[:200]) for t, v in zip(tasks, verdicts, strict=True)
           if v.status is not Status.PASS]  # fmt: skip
    assert not bad, bad


def test_spec_refuses_bad_fields(tmp_path):
    toml = tmp_path / "x" / "task.toml"
    toml.parent.mkdir()
    (toml.parent / "ref.py").write_text(PLATE)
    base = {"interface": {"result": "result"}, "harness": {"reference": "ref.py"}}
    with pytest.raises(TaskSpecError, match=r"harness\.compare"):
        load_cad_spec(toml, base)
    with pytest.raises(TaskSpecError, match=r"harness\.iou_pass"):
        load_cad_spec(toml, {**base, "harness": {**base["harness"], "compare": "absolute",
                                                 "iou_pass": 1.5}})  # fmt: skip
    with pytest.raises(TaskSpecError, match=r"harness\.euler\.order"):
        load_cad_spec(toml, {**base, "harness": {**base["harness"], "compare": "absolute",
                             "euler": {"order": "XQZ", "angles": [1, 2, 3]}}})  # fmt: skip
    iface, h, ref = load_cad_spec(toml, {**base, "harness": {**base["harness"],
                                                             "compare": "normalized"}})  # fmt: skip
    assert h["iou_pass"] == 0.99 and ref == PLATE and iface["units"] == "mm"


# --- classification and static rules ----------------------------------------------------


@pytest.mark.parametrize(
    "err, code",
    [
        ({"type": "SyntaxError"}, "syntax_error"),
        ({"type": "NameError"}, "undefined_identifier"),
        ({"type": "AttributeError", "message": "'Workplane' object has no attribute 'drill'"},
         "wrong_api"),
        ({"type": "AttributeError", "message": "'NoneType' object has no attribute 'x'"},
         "script_exception"),
        ({"type": "pyparsing.exceptions.ParseException", "message": "Expected ..."},
         "bad_selector"),
        ({"type": "OCP.OCP.StdFail.StdFail_NotDone", "message": "BRep_API: command not done"},
         "cad_operation_failed"),
        ({"type": "ValueError", "message": "No pending wires present", "in_library": True},
         "cad_operation_failed"),
        ({"type": "ValueError", "message": "mine", "in_library": False}, "script_exception"),
        ({"type": "ModuleNotFoundError", "message": "No module named 'trimesh'"}, "wrong_api"),
    ],
)  # fmt: skip
def test_classify_error(err, code):
    assert classify_error(err)[1] == code


def test_anticheat_allows_a_plain_part_script():
    assert anticheat.scan(PLATE) == []
    assert anticheat.scan("import math\nfrom cadquery import Workplane\n") == []
    found = anticheat.scan("x = getattr(__builtins__, 'open')\nimport subprocess\n")
    assert {f.rule for f in found} == {"forbidden_call", "forbidden_import"}


def test_worker_jsonl_entry_point(tmp_path):
    task = make_task()
    from verifiers.contract import Candidate

    cand = Candidate(task.task_id, PLATE, "reference", "catalog:reference")
    line = {"task": task.to_dict(), "candidate": cand.to_dict()}
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps(line) + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "verifiers.cad", str(inp)],
        capture_output=True, text=True, timeout=300, cwd=ROOT, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads(proc.stdout.splitlines()[0])
    assert verdict["status"] == "pass" and verdict["domain"] == "cad"


def test_same_geometry_built_another_way_passes_by_measurement(cad):
    """A rewrite whose B-rep differs from the reference's is measured (booleans and
    distances), not recognised: IoU 1 and zero distances, from the computation."""
    alt = PLATE.replace(
        ".box(LENGTH, WIDTH, THICK)", ".rect(LENGTH, WIDTH).extrude(THICK / 2, both=True)"
    )
    v = cad.verify(make_task(), alt)
    assert v.status is Status.PASS, v.feedback
    assert "identical" not in v.metrics
    assert v.metrics["iou"] == pytest.approx(1.0, abs=1e-7)
    # below half the threshold the largest deviation is a bound: here under 0.5% of 100 mm
    assert v.metrics["surface_max_rel"] < 0.005
    same = cad.verify(make_task(), PLATE.replace("LENGTH = 80.0", "LENGTH = 80.0  # mm"))
    assert same.status is Status.PASS and same.metrics.get("identical") is True


def test_a_worker_that_lacks_a_reference_asks_for_it(cad):
    """The verifier believes every judge holds this reference; none does. Each asks for
    it (`need_ref`) and the verdict is the same as ever."""
    task = make_task(PLATE.replace("# ", "#  ") + "\n# asked for\n")
    key = cad._reference(task, Limits())
    pool = cad.pool(Limits(), "judge")
    pool.warm_up()
    held = [pool.lease() for _ in range(pool.size)]
    for w in held:
        w.refs_sent.add(key)
    for w in held:
        pool.release(w, False)
    v = cad.verify(task, PLATE)
    assert v.status is Status.PASS, v.feedback
