"""The offline CAD generator: every operator applies where its idiom is and nowhere else,
output is deterministic and stays valid Python (but for the syntax slips), and over the
catalog each mutation finds sites in several tasks (wrong_euler_order in every task placed
with Euler angles). A sample of references is built for real with CadQuery, in-process:
rewrites build the very same solid, functional mutations build another one, api mutations
raise and no_result leaves nothing to read."""

from __future__ import annotations

import ast
import math
import random
import re
from collections import defaultdict
from pathlib import Path

import pytest

from generators.base import seeded_rng
from generators.perturb import generator_for, known_domains
from generators.perturb.cad import (
    CAD_MUTATIONS,
    CAD_REWRITES,
    WRONG_METHOD,
    CadPerturbGenerator,
    _bad_selectors,
)
from verifiers.catalog import load_catalog
from verifiers.contract import ORIGINS, Task
from verifiers.taxonomy import API, CATEGORIES, FORMAT, FUNCTIONAL, SYNTAX

ROOT = Path(__file__).resolve().parents[2]
OPS = {op.name: op for op in (*CAD_REWRITES, *CAD_MUTATIONS)}
CATEGORY = {m.name: m.category for m in CAD_MUTATIONS}
MIN_TASKS = 3  # every mutation must find a site in at least this many catalog tasks
# built for real (the first few of them the catalog has); the rest is only parsed
SAMPLE = (
    "plate_four_holes",
    "bolt_flange",
    "cbore_plate",
    "placed_l_bracket_xyz",
    "vented_box",
    "v_pulley",
    "shelled_box",
    "angle_bracket_holes",
    "placed_wedge_yzx",
)

# --- small scripts, one per kind of construct the operators look for ----------------------

PLATE = """\
import cadquery as cq

# dimensions (mm)
LENGTH = 80.0
WIDTH = 60.0
THICK = 10.0
HOLE_D = 8.0
BOLT_COUNT = 6

result = (
    cq.Workplane("XY")
    .box(LENGTH, WIDTH, THICK)
    .faces(">Z")
    .workplane()
    .rect(60.0, 40.0, forConstruction=True)
    .vertices()
    .hole(HOLE_D)
    .edges("|Z")
    .fillet(4.0)
)
"""

FLANGE = """\
import cadquery as cq

OUTER_D = 100.0
THICK = 12.0
BORE_D = 30.0
BOLT_CIRCLE_R = 38.0
BOLT_D = 9.0
CBORE_D = 15.0
CBORE_DEPTH = 5.0
BOLT_COUNT = 6

result = (
    cq.Workplane("XY")
    .circle(OUTER_D / 2)
    .extrude(THICK)
    .faces(">Z")
    .workplane()
    .hole(BORE_D)
    .faces(">Z")
    .workplane()
    .polarArray(BOLT_CIRCLE_R, 0, 360, BOLT_COUNT)
    .cboreHole(BOLT_D, CBORE_D, CBORE_DEPTH)
)
"""

PLACED = """\
import cadquery as cq

LENGTH = 50.0
WIDTH = 30.0
HEIGHT = 20.0
ANGLE_X = 30.0
ANGLE_Y = 45.0
ANGLE_Z = 60.0

result = (
    cq.Workplane("XY")
    .box(LENGTH, WIDTH, HEIGHT)
    .faces(">Z")
    .workplane()
    .rarray(20.0, 10.0, 2, 2)
    .hole(4.0, 8.0)
    .rotate((0, 0, 0), (1, 0, 0), ANGLE_X)
    .rotate((0, 0, 0), (0, 1, 0), ANGLE_Y)
    .rotate((0, 0, 0), (0, 0, 1), ANGLE_Z)
)
"""

SHOWN = """\
import cadquery as cq

OD = 40.0
ID = 30.0
LENGTH = 100.0

tube = cq.Workplane("YZ").circle(OD / 2).circle(ID / 2).extrude(LENGTH)
show_object(tube)
"""

SCRIPTS = {"plate": PLATE, "flange": FLANGE, "placed": PLACED, "shown": SHOWN}
PLAIN = ["", "x = 1\n", "import cadquery as cq\n", "def f(:\n", "result = 1 +\n"]

# operator -> the scripts above it finds a site in
APPLIES = {
    "show_object": {"plate", "flange", "placed"},
    "inline_constants": set(SCRIPTS),
    "rename_constant": set(SCRIPTS),
    "wrong_dimension": set(SCRIPTS),
    "swapped_axes": set(SCRIPTS) - {"flange"},  # a round body's later ">Z": no plane swap
    "wrong_euler_order": {"placed"},
    "hole_wrong_face": {"plate", "flange", "placed"},
    "missing_feature": {"plate", "flange", "placed"},
    "wrong_pattern_count": {"flange", "placed"},
    "invalid_selector": {"plate", "flange", "placed"},
    "unknown_method": set(SCRIPTS),
    "failing_fillet": {"plate"},
    "no_result": {"plate", "flange", "placed"},
    "syntax_slip": set(SCRIPTS),
}


def _outputs(op: str, src: str, seeds: int = 12) -> set[str]:
    outs = {OPS[op].apply(src, random.Random(s)) for s in range(seeds)}
    return {o for o in outs if o is not None}


def _diff(a: str, b: str) -> tuple[list[str], list[str]]:
    la, lb = a.splitlines(), b.splitlines()
    return [x for x in la if x not in lb], [x for x in lb if x not in la]


def test_registered():
    assert "cad" in known_domains()
    assert isinstance(generator_for("cad"), CadPerturbGenerator)
    assert CadPerturbGenerator.name == "perturb:cad" and CadPerturbGenerator.domain == "cad"


def test_tables():
    names = [op.name for op in (*CAD_REWRITES, *CAD_MUTATIONS)]
    assert len(names) == len(set(names))
    assert set(APPLIES) == set(names)
    assert all(m.category in CATEGORIES for m in CAD_MUTATIONS)
    assert {n for n, c in CATEGORY.items() if c == API} == {
        "invalid_selector",
        "unknown_method",
        "failing_fillet",
    }
    assert CATEGORY["no_result"] == FORMAT and CATEGORY["syntax_slip"] == SYNTAX
    assert CATEGORY["wrong_euler_order"] == FUNCTIONAL


@pytest.mark.parametrize("op", sorted(OPS))
def test_operators_on_small_scripts(op):
    for name, src in SCRIPTS.items():
        outs = _outputs(op, src)
        assert bool(outs) == (name in APPLIES[op]), (op, name)
        for out in outs:
            assert out != src
            if op == "syntax_slip":
                with pytest.raises(SyntaxError):
                    ast.parse(out)
            else:
                ast.parse(out)
    for src in PLAIN:
        assert OPS[op].apply(src, random.Random(0)) is None, (op, src)


def test_wrong_dimension_scales_a_length_never_a_count():
    for out in _outputs("wrong_dimension", PLATE, 40):
        gone, new = _diff(PLATE, out)
        assert len(gone) == len(new) == 1
        name = gone[0].split(" = ")[0]
        assert name in ("LENGTH", "WIDTH", "THICK", "HOLE_D")  # BOLT_COUNT is unused
        old, now = float(gone[0].split(" = ")[1]), float(new[0].split(" = ")[1])
        assert now == pytest.approx(old * (0.6 if name == "HOLE_D" else 1.5))
    no_consts = "import cadquery as cq\n\nresult = cq.Workplane().box(10, 20, 30).fillet(2)\n"
    outs = _outputs("wrong_dimension", no_consts, 40)
    edits = [("box(10, ", "box(15, "), (" 20, ", " 30, "), ("30)", "45)"), ("(2)", "(1.2)")]
    assert outs <= {no_consts.replace(a, b) for a, b in edits}
    assert len(outs) >= 3


def test_swapped_axes_edits():
    # a fillet follows: no other plane, and the thin side (THICK) stays where it is
    plate = _outputs("swapped_axes", PLATE, 40)
    assert plate == {
        PLATE.replace("box(LENGTH, WIDTH,", "box(WIDTH, LENGTH,"),
        PLATE.replace("rect(60.0, 40.0,", "rect(40.0, 60.0,"),
    }
    placed = _outputs("swapped_axes", PLACED, 80)
    assert PLACED.replace('"XY"', '"XZ"') in placed and PLACED.replace('"XY"', '"YZ"') in placed
    assert PLACED.replace("box(LENGTH, WIDTH, HEIGHT)", "box(HEIGHT, WIDTH, LENGTH)") in placed
    assert PLACED.replace("(0, 1, 0), ANGLE_Y", "(1, 0, 0), ANGLE_Y") in placed
    assert PLACED.replace("(1, 0, 0), ANGLE_X", "(0, 0, 1), ANGLE_X") in placed


def test_wrong_euler_order_reverses_the_rotations():
    (out,) = _outputs("wrong_euler_order", PLACED)
    rotations = re.findall(r"\.rotate\(.*\)", out)
    assert rotations == re.findall(r"\.rotate\(.*\)", PLACED)[::-1]
    # about one axis, or by half turns: the order does not show
    same_axis = PLACED.replace("(0, 1, 0)", "(1, 0, 0)").replace("(0, 0, 1)", "(1, 0, 0)")
    assert not _outputs("wrong_euler_order", same_axis)
    half_turns = re.sub(r"ANGLE_(\w) = \d+\.0", r"ANGLE_\1 = 180.0", PLACED)
    assert not _outputs("wrong_euler_order", half_turns)


def test_hole_wrong_face():
    # a through hole in a plate: a side face (the bottom would mirror a symmetric pattern)
    for out in _outputs("hole_wrong_face", PLATE):
        assert re.search(r'faces\("[<>][XY]"\)', out)
    # a round flange: its through bore has no flat side, the blind counterbores flip over
    (out,) = _outputs("hole_wrong_face", FLANGE)
    assert out.count('faces(">Z")') == 1 and out.count('faces("<Z")') == 1
    assert out.index('faces("<Z")') > out.index("hole(BORE_D)")
    (out,) = _outputs("hole_wrong_face", PLACED)
    assert 'faces("<Z")' in out


def test_missing_feature_takes_its_selection_along():
    outs = _outputs("missing_feature", PLATE)
    fillet_gone = PLATE.replace('    .edges("|Z")\n    .fillet(4.0)\n', "")
    holes_gone = PLATE.replace(
        '    .faces(">Z")\n    .workplane()\n    .rect(60.0, 40.0, forConstruction=True)\n'
        "    .vertices()\n    .hole(HOLE_D)\n",
        "",
    )
    assert outs == {fillet_gone, holes_gone}


def test_wrong_pattern_count():
    outs = _outputs("wrong_pattern_count", FLANGE)
    assert outs == {FLANGE.replace("BOLT_COUNT = 6", f"BOLT_COUNT = {n}") for n in (5, 7)}
    outs = _outputs("wrong_pattern_count", PLACED)
    assert outs <= {PLACED.replace("2, 2)", p) for p in ("1, 2)", "3, 2)", "2, 1)", "2, 3)")}
    one = PLACED.replace("rarray(20.0, 10.0, 2, 2)", "rarray(20.0, 1, 2, 1)")
    assert {o.count("rarray(20.0, 1, 2, 1)") for o in _outputs("wrong_pattern_count", one)} == {0}


def test_unknown_method_and_selectors_do_not_exist():
    for out in _outputs("unknown_method", PLATE, 40):
        (line,) = _diff(PLATE, out)[1]
        assert re.search(r"\.(\w+)\(", line).group(1) in WRONG_METHOD.values()
    for out in _outputs("invalid_selector", PLATE, 40):
        assert '">Z"' not in out or '"|Z"' not in out
    assert set(_bad_selectors(">Z")) == {">z", ">W"}
    assert set(_bad_selectors("|Z")) == {"|z", "||Z"}
    assert _bad_selectors("%PLANE") == ["%PLANAR"]
    assert _bad_selectors("not(<X or >X)") == ["not(<x or >X)"]
    cq = pytest.importorskip("cadquery")
    for good, bad in WRONG_METHOD.items():
        assert hasattr(cq.Workplane, good), good
        assert not hasattr(cq.Workplane, bad), f"Workplane.{bad} exists: not a wrong name"
    box = cq.Workplane("XY").box(10, 20, 30)
    # _bad_selectors is a static table (no cadquery at generation time): this is its check
    selectors = (">Z", "<X", "|Z", "#Y", ">Z[-2]", "%PLANE", "%CIRCLE", ">X or <Y", "|Y and >Z")
    for selector in selectors:
        box.faces(selector)  # the original is fine
        for bad in _bad_selectors(selector):
            with pytest.raises(Exception):  # noqa: B017 - pyparsing's ParseException
                box.faces(bad)


def test_failing_fillet_and_no_result():
    (out,) = _outputs("failing_fillet", PLATE)
    assert ".fillet(160.0)" in out  # twice the largest size: 2 x 80
    out = OPS["no_result"].apply(PLATE, random.Random(0))
    stores = {n.id for n in ast.walk(ast.parse(out)) if isinstance(n, ast.Name)}
    assert "result" not in stores and "show_object" not in out


def test_rewrites():
    out = OPS["show_object"].apply(PLATE, random.Random(0))
    assert "result" not in out and re.search(r"^show_object\((\w+)\)$", out, re.M)
    for out in _outputs("inline_constants", PLATE, 40):
        gone, new = _diff(PLATE, out)
        (assign,) = [g for g in gone if " = " in g]
        name, value = assign.split(" = ")
        assert not re.search(rf"\b{name}\b", out) and value in "".join(new)
    for out in _outputs("rename_constant", PLATE, 40):
        (assign,) = [g for g in _diff(PLATE, out)[0] if " = " in g]
        name = assign.split(" = ")[0]
        assert not re.search(rf"\b{name}\b", out)


def test_operators_survive_other_python():
    """Kernel modules are Python too: no crash, and what comes back still parses."""
    refs = [p for d in ("cuda", "triton") for p in sorted((ROOT / "tasks" / d).glob("*/ref.py"))]
    assert len(refs) >= 40
    for path in refs:
        src = path.read_text(encoding="utf-8")
        for op in OPS.values():
            out = op.apply(src, random.Random(0))
            if out is not None and op.name != "syntax_slip":
                ast.parse(out)


# --- the catalog ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def catalog() -> list[Task]:
    if not (ROOT / "tasks" / "cad").is_dir():
        pytest.skip("no cad tasks in the catalog")
    tasks, _errors = load_catalog(ROOT / "tasks", ["cad"])
    tasks = [t for t in tasks if t.reference]
    if not tasks:
        pytest.skip("no cad tasks with a reference in the catalog")
    return tasks


@pytest.fixture(scope="module")
def produced(catalog) -> dict[str, list]:
    """task name -> candidates (seed 0, one per applicable operator)."""
    return {t.name: generator_for("cad").generate(t, seed=0) for t in catalog}


def _op(candidate) -> str:
    return candidate.generator.split(":", 1)[1]


def test_catalog_candidates(catalog, produced):
    known = {f"rewrite:{r.name}" for r in CAD_REWRITES} | {f"perturb:{m}" for m in CATEGORY}
    for task in catalog:
        cands = produced[task.name]
        assert cands[0].generator == "catalog:reference" and cands[0].code == task.reference
        assert len({c.code for c in cands}) == len(cands), task.name
        assert all(c.origin in ORIGINS and c.task_id == task.task_id for c in cands)
        assert {c.generator for c in cands[1:]} <= known
        for c in cands[1:]:
            if c.origin == "perturb" and CATEGORY[_op(c)] == SYNTAX:
                with pytest.raises(SyntaxError):
                    ast.parse(c.code)
            else:
                ast.parse(c.code)


def test_catalog_coverage(catalog, produced):
    cover: dict[str, list[str]] = defaultdict(list)
    for name, cands in sorted(produced.items()):
        for c in cands[1:]:
            cover[_op(c)].append(name)
    print(f"\ncad: {len(catalog)} tasks")
    for op in OPS:
        names = cover.get(op, [])
        print(f"  {op:20s} {len(names):3d}  {' '.join(names)}")
    need = min(MIN_TASKS, len(catalog))
    thin = {m: len(cover.get(m, [])) for m in CATEGORY if len(cover.get(m, [])) < need}
    assert not thin, f"mutations with sites in fewer than {need} tasks: {thin}"
    assert all(cover.get(r.name) for r in CAD_REWRITES)
    euler = [t.name for t in catalog if t.harness.get("euler")]
    assert set(euler) <= set(cover["wrong_euler_order"])


def test_catalog_deterministic_and_never_the_input(catalog):
    for task in catalog:
        a = [(c.generator, c.code) for c in generator_for("cad").generate(task, seed=3)]
        b = [(c.generator, c.code) for c in generator_for("cad").generate(task, seed=3)]
        assert a == b, task.name
        for op in OPS.values():
            assert op.apply(task.reference, seeded_rng(task.task_id, op.name, "1")) != (
                task.reference
            )


# --- built for real: CadQuery in-process -----------------------------------------------------


def _build(code: str) -> tuple[dict, object]:
    shown: list = []
    ns = {"__name__": "__cad__", "show_object": lambda obj, *a, **k: shown.append(obj)}
    exec(compile(code, "<candidate>", "exec"), ns)
    return ns, ns.get("result", shown[-1] if shown else None)


def _signature(obj) -> tuple[float, list[float], list[float]]:
    """Volume, bounding box + centre of mass, and the inertia matrix of what was built."""
    import cadquery as cq

    if isinstance(obj, cq.Workplane):
        vals = [v for v in obj.vals() if isinstance(v, cq.Shape)]
        shape = vals[0] if len(vals) == 1 else cq.Compound.makeCompound(vals)
    else:
        shape = obj
    bb, c = shape.BoundingBox(), shape.Center()
    place = [bb.xmin, bb.ymin, bb.zmin, bb.xmax, bb.ymax, bb.zmax, c.x, c.y, c.z]
    inertia = [v for row in cq.Shape.matrixOfInertia(shape) for v in row]
    return shape.Volume(), place, inertia


def _differs(a, b) -> bool:
    scale = max(1.0, abs(a[0]))
    return (
        not math.isclose(a[0], b[0], rel_tol=1e-6)
        or any(abs(x - y) > 1e-6 for x, y in zip(a[1], b[1], strict=True))
        or any(abs(x - y) > 1e-6 * scale**1.7 for x, y in zip(a[2], b[2], strict=True))
    )


def test_sample_builds(catalog, produced):
    pytest.importorskip("cadquery")
    by_name = {t.name: t for t in catalog}
    sample = [by_name[n] for n in SAMPLE if n in by_name] or catalog[:4]
    seen = defaultdict(list)
    for task in sample:
        _, ref = _build(task.reference)
        ref_sig = _signature(ref)
        for c in produced[task.name][1:]:
            op, where = _op(c), (task.name, c.generator)
            seen[op].append(task.name)
            if c.origin == "rewrite":
                sig = _signature(_build(c.code)[1])
                assert sig[0] == pytest.approx(ref_sig[0], rel=1e-9), where
                assert sig[1] == pytest.approx(ref_sig[1], abs=1e-9), where
            elif CATEGORY[op] == FUNCTIONAL:
                assert _differs(ref_sig, _signature(_build(c.code)[1])), where
            elif CATEGORY[op] == API:
                with pytest.raises(Exception):  # noqa: B017 - OCC, pyparsing, AttributeError
                    _build(c.code)
            elif CATEGORY[op] == FORMAT:
                ns, obj = _build(c.code)
                assert "result" not in ns and obj is None, where
    print("\nbuilt:", {op: len(names) for op, names in sorted(seen.items())})
    assert {"wrong_dimension", "missing_feature", "show_object"} <= set(seen)
