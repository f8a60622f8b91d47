"""Offline candidates for CAD tasks (`cad`): the reference, rewrites of it, and the bugs
models make when they write CadQuery.

A CAD reference is a CadQuery script: UPPER_CASE dimension constants, then method chains
(`cq.Workplane("XY").box(...).faces(">Z").workplane().hole(...)`, one call per line) that
leave the solid in `result` (or pass it to `show_object`). Everything is read with `ast`:
a chain is flattened into its calls (links), each with an exact source span, so an edit
lands on one argument, one method name or one run of links and keeps the rest of the text
as written. Each operator edits one site (chosen with the rng when the idiom occurs several
times) and returns None when the idiom is absent or the edit would change nothing it can
tell.
"""

from __future__ import annotations

import ast
import functools
import itertools
import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator

from generators.perturb.kernels import (
    _PARSED,
    Edit,
    _changed,
    _identifiers,
    _pick,
    _Py,
    _py,
    _splice,
)
from generators.perturb.operators import Mutation, OperatorGenerator, Rewrite, check_table
from verifiers import pyast
from verifiers.taxonomy import API, FORMAT, FUNCTIONAL, SYNTAX

RESULT = "result"  # the variable a CAD task's interface reads (interface.result)

# --- argument roles ------------------------------------------------------------------------

# method -> role of each positional argument: d a length, n a count, a an angle, - other
ARG_ROLES: dict[str, str] = {
    "box": "ddd", "rect": "dd", "circle": "d", "ellipse": "dda", "polygon": "nd",
    "slot2D": "dda", "cylinder": "dd", "sphere": "d", "wedge": "ddd", "extrude": "d",
    "cutBlind": "d", "hole": "dd", "cboreHole": "dddd", "cskHole": "ddad", "fillet": "d",
    "chamfer": "dd", "shell": "d", "workplane": "d", "twistExtrude": "da", "text": "-dd",
    "revolve": "a", "polarArray": "daan", "rarray": "ddnn", "rotate": "--a",
    "rotateAboutCenter": "-a", "range": "nnn", "int": "n", "radians": "a",
}  # fmt: skip
KW_ROLES: dict[str, str] = {
    "offset": "d", "depth": "d", "radius": "d", "height": "d", "length": "d", "length2": "d",
    "diameter": "d", "thickness": "d", "distance": "d", "until": "d", "cboreDepth": "d",
    "cboreDiameter": "d", "cskDiameter": "d", "xLen": "d", "yLen": "d", "x_radius": "d",
    "y_radius": "d", "xSpacing": "d", "ySpacing": "d", "angleDegrees": "a", "angle": "a",
    "rotate": "a", "taper": "a", "cskAngle": "a", "startAngle": "a", "rotation_angle": "a",
    "count": "n", "xCount": "n", "yCount": "n", "nSides": "n",
}  # fmt: skip
# name words that mark a constant as a count or an angle, never a length
NOT_LENGTH_WORDS = frozenset({
    "COUNT", "NUM", "N", "NX", "NY", "NZ", "QTY", "SIDES", "TEETH", "SEGMENTS", "STEPS",
    "ROWS", "COLS", "HOLES", "BOLTS", "SLOTS", "SPOKES", "RIBS", "FINS", "PINS", "ANGLE",
    "ANG", "DEG", "DEGREES", "ROT", "ROTATION", "TILT", "TWIST", "YAW", "ROLL",
})  # fmt: skip
# lengths of cut-in features: made smaller, so the wrong part still builds
SHRINK_WORDS = frozenset({
    "FILLET", "CHAMFER", "HOLE", "BORE", "CBORE", "CSK", "SLOT", "POCKET", "CUT", "DRILL",
    "INNER", "ID", "WALL", "SHELL", "DEPTH", "GAP", "CLEARANCE", "RECESS", "GROOVE", "KEYWAY",
})  # fmt: skip
HOLES = ("hole", "cboreHole", "cskHole", "cutBlind", "cutThruAll")
FEATURES = ("fillet", "chamfer", "shell", *HOLES)
CUT_IN = frozenset(("fillet", "chamfer", "shell", *HOLES))
# calls that only select, place or sketch: a feature dropped takes the ones before it along
PREP = frozenset({
    "workplane", "faces", "edges", "vertices", "wires", "center", "pushPoints", "polarArray",
    "rarray", "rect", "circle", "polygon", "slot2D", "ellipse", "moveTo", "move", "lineTo",
    "line", "hLine", "vLine", "hLineTo", "vLineTo", "polyline", "close", "tag", "transformed",
    "mirrorX", "mirrorY", "threePointArc", "spline", "sagittaArc", "radiusArc",
    "tangentArcPoint",
})  # fmt: skip
# a body built from these has flat side faces (a workplane on >X works)
# (not a polygon: a hexagon with a corner on +X has two faces at ">X")
FLAT_SIDED = frozenset(("box", "rect", "polyline", "wedge", "lineTo", "hLine"))
CURVED = frozenset(("loft", "revolve", "sweep", "sphere", "twistExtrude", "spline"))
SOLID = frozenset(("box", "cylinder", "sphere", "wedge", "extrude", "revolve", "loft", "sweep",
                   "twistExtrude", "text"))  # fmt: skip
# sized from the walls around them: fail once a wall gets thinner than they are
WALL_SIZED = frozenset(("fillet", "chamfer", "shell"))
PLANES = {"XY": ("XZ", "YZ"), "XZ": ("XY", "YZ"), "YZ": ("XY", "XZ"),
          "YX": ("XZ", "YZ"), "ZX": ("XY", "YZ"), "ZY": ("XY", "XZ")}  # fmt: skip

# Workplane methods and the names models give them (none exists on cq.Workplane; the
# tests check that against CadQuery, so generating needs no CadQuery)
WRONG_METHOD: dict[str, str] = {
    "fillet": "fillet_edges", "chamfer": "chamfer_edges", "hole": "drill",
    "extrude": "extrudeBlind", "cboreHole": "counterboreHole", "cskHole": "countersinkHole",
    "polarArray": "circularArray", "rarray": "rectArray", "cutThruAll": "cutThrough",
    "cutBlind": "cutDepth", "shell": "hollow", "workplane": "workPlane", "rect": "rectangle",
    "polygon": "regularPolygon", "circle": "addCircle", "union": "fuse", "loft": "loftTo",
    "sweep": "sweepAlong", "revolve": "revolveProfile", "cylinder": "cyl", "box": "cube",
    "pushPoints": "pushPts", "faces": "selectFaces", "edges": "selectEdges",
}  # fmt: skip
# %KIND selectors and the adjectives models write instead
BAD_KIND = {"PLANE": "PLANAR", "CIRCLE": "CIRCULAR", "CYLINDER": "CYLINDRICAL",
            "LINE": "LINEAR", "SPHERE": "SPHERICAL", "CONE": "CONICAL"}  # fmt: skip
SELECTOR_CALLS = ("faces", "edges", "vertices", "wires", "solids", "shells")


# --- the script model ----------------------------------------------------------------------


def _is_link(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)


def _name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def _literal(node: ast.AST) -> float | None:
    """A number written as a literal: 8, 4.0, -2.5."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub | ast.UAdd)
        and (v := _literal(node.operand)) is not None
    ):
        return -v if isinstance(node.op, ast.USub) else v
    return None


def _is_int(node: ast.AST) -> bool:
    inner = node.operand if isinstance(node, ast.UnaryOp) else node
    return isinstance(inner, ast.Constant) and type(inner.value) is int


def _fmt(x: float, as_int: bool = False) -> str:
    x = round(x, 4)
    if as_int and x == int(x):
        return str(int(x))
    return repr(float(x))


_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Pow: lambda a, b: a**b,
    ast.Mod: lambda a, b: a % b,
}


class _Cad:
    """A CadQuery script: its chains (calls innermost first), its module-level constants
    and their values where they are plain arithmetic."""

    def __init__(self, py: _Py) -> None:
        self.py = py
        self.src = py.src
        self.chains: list[list[ast.Call]] = []
        for node in ast.walk(py.tree):
            if not _is_link(node):
                continue
            parent = py.parent.get(node)
            if isinstance(parent, ast.Attribute) and _is_link(py.parent.get(parent)):
                continue  # a link inside a longer chain
            chain: list[ast.Call] = []
            cur: ast.AST = node
            while _is_link(cur):
                chain.append(cur)  # type: ignore[arg-type]
                cur = cur.func.value  # type: ignore[attr-defined]
            self.chains.append(chain[::-1])
        self.chains.sort(key=lambda ch: py.span(ch[-1]))
        stores = Counter(
            n.id
            for n in ast.walk(py.tree)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        )
        self.assigns: dict[str, ast.Assign] = {}
        for stmt in py.tree.body:
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and stores[stmt.targets[0].id] == 1
            ):
                self.assigns[stmt.targets[0].id] = stmt
        self.consts = {n: a for n, a in self.assigns.items() if re.fullmatch(r"[A-Z][A-Z0-9_]*", n)}
        self.values: dict[str, float] = {}
        for name, stmt in self.consts.items():
            v = self.num(stmt.value)
            if v is not None:
                self.values[name] = v
        self.uses: dict[str, list[ast.Name]] = {}
        for node in ast.walk(py.tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self.uses.setdefault(node.id, []).append(node)

    # values

    def num(self, node: ast.AST) -> float | None:
        """The value of plain arithmetic over literals and known constants."""
        try:
            return self._num(node)
        except (ArithmeticError, TypeError, ValueError):
            return None

    def _num(self, node: ast.AST) -> float | None:
        if (v := _literal(node)) is not None:
            return v
        if isinstance(node, ast.Name):
            return self.values.get(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self._num(node.operand)
            return None if v is None else -v
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = self._num(node.left), self._num(node.right)
            if a is None or b is None:
                return None
            return float(_BINOPS[type(node.op)](a, b))
        return None

    # spans

    def name_span(self, call: ast.Call) -> tuple[int, int]:
        """The method name of a link."""
        end = self.py.span(call.func)[1]
        return end - len(call.func.attr), end  # type: ignore[attr-defined]

    def segment(self, call: ast.Call) -> tuple[int, int]:
        """`name(args)` of a link, without the dot."""
        return self.name_span(call)[0], self.py.span(call)[1]

    def text(self, node: ast.AST) -> str:
        return self.py.text(node)

    # roles

    def slot(self, node: ast.AST) -> tuple[str, str]:
        """(method, role) of the innermost call argument `node` sits in."""
        cur = node
        while True:
            parent = self.py.parent.get(cur)
            if parent is None or isinstance(parent, ast.stmt):
                return "", "-"
            if isinstance(parent, ast.keyword):
                call = self.py.parent.get(parent)
                method = _name(call) if isinstance(call, ast.Call) else ""
                return method, KW_ROLES.get(parent.arg or "", "-")
            if isinstance(parent, ast.Call) and cur in parent.args:
                method = _name(parent)
                roles = ARG_ROLES.get(method, "")
                i = parent.args.index(cur)  # type: ignore[arg-type]
                return method, roles[i] if i < len(roles) else "-"
            cur = parent

    def const_slots(self, name: str, seen: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
        """(method, role) of every use of constant `name`, through the constants built from
        it (`INNER = OUTER - 2 * WALL`)."""
        out = []
        for use in self.uses.get(name, []):
            stmt = self._stmt(use)
            target = None
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = getattr(stmt.targets[0], "id", None)
            if target in self.consts and target not in seen and stmt.value is not None:
                out.extend(self.const_slots(target, seen | {name}))
            else:
                out.append(self.slot(use))
        return out

    def _stmt(self, node: ast.AST) -> ast.AST | None:
        cur = node
        while cur is not None and not isinstance(cur, ast.stmt):
            cur = self.py.parent.get(cur)
        return cur

    def in_fstring(self, name: str) -> bool:
        return name in self._in_fstrings

    @functools.cached_property
    def _in_fstrings(self) -> frozenset[str]:
        return frozenset(
            m.id
            for n in ast.walk(self.py.tree)
            if isinstance(n, ast.JoinedStr)
            for m in ast.walk(n)
            if isinstance(m, ast.Name)
        )

    def shadowed(self, name: str) -> bool:
        """`name` also bound inside a function, class, comprehension or by `global`."""
        return name in self._bound_elsewhere

    @functools.cached_property
    def _bound_elsewhere(self) -> frozenset[str]:
        names: set[str] = set()
        for node in ast.walk(self.py.tree):
            if isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Global | ast.Nonlocal):
                names.update(node.names)
            elif isinstance(node, ast.FunctionDef | ast.ClassDef):
                names.add(node.name)
        return frozenset(names)

    def history(self, chain: list[ast.Call], upto: int, depth: int = 0) -> list[str]:
        """Method names the chain called before link `upto`, through the variable it
        starts from (`base = cq.Workplane().box(...)`; `result = base.faces(...)`)."""
        names = [_name(c) for c in chain[:upto]]
        base = chain[0].func.value if chain else None  # type: ignore[attr-defined]
        if isinstance(base, ast.Name) and base.id in self.assigns and depth < 4:
            value = self.assigns[base.id].value
            for ch in self.chains:
                if ch and ch[-1] is value:
                    return self.history(ch, len(ch), depth + 1) + names
        return names


@functools.lru_cache(maxsize=_PARSED)  # shared by the operators: read only
def _cad(src: str) -> _Cad | None:
    py = _py(src)
    if py is None:
        return None
    return _Cad(py)


def _words(name: str) -> set[str]:
    return set(name.upper().split("_"))


def _links(cad: _Cad, names: Iterable[str]) -> Iterator[tuple[list[ast.Call], int]]:
    wanted = set(names)
    for chain in cad.chains:
        for i, call in enumerate(chain):
            if _name(call) in wanted:
                yield chain, i


# --- functional mutations ------------------------------------------------------------------


def _length_constants(cad: _Cad) -> dict[str, bool]:
    """UPPER_CASE constants that are lengths -> whether to shrink them (a cut-in feature's
    size) rather than grow them."""
    out = {}
    for name, stmt in cad.consts.items():
        v = _literal(stmt.value)
        if v is None or v == 0 or _words(name) & NOT_LENGTH_WORDS:
            continue
        slots = cad.const_slots(name)
        if not slots or any(role in "na" for _, role in slots):
            continue
        shrink = bool(_words(name) & SHRINK_WORDS) or any(m in CUT_IN for m, _ in slots)
        out[name] = shrink
    return out


@_changed
def wrong_dimension(src: str, rng: random.Random) -> str | None:
    """One length constant (or, without any, one literal length argument of a geometry call)
    scaled: outer sizes x1.5, cut-in features (holes, fillets, walls, depths) x0.6."""
    cad = _cad(src)
    if cad is None:
        return None
    sites: list[tuple[ast.AST, bool]] = []
    for name, shrink in sorted(_length_constants(cad).items()):
        sites.append((cad.consts[name].value, shrink))
    if not sites:
        for chain in cad.chains:
            for call in chain:
                method = _name(call)
                if method not in ARG_ROLES:
                    continue
                args = list(call.args) + [kw.value for kw in call.keywords]
                for arg in args:
                    v = _literal(arg)
                    if v is not None and v != 0 and cad.slot(arg)[1] == "d":
                        sites.append((arg, method in CUT_IN))
    site = _pick(rng, sites)
    if site is None:
        return None
    node, shrink = site
    v = _literal(node)
    assert v is not None
    new = _fmt(v * (0.6 if shrink else 1.5), as_int=_is_int(node))
    return _splice(src, [(*cad.py.span(node), new)])


def _unit_axis(node: ast.AST) -> tuple[int, int, int] | None:
    if not (isinstance(node, ast.Tuple) and len(node.elts) == 3):
        return None
    vals = [_literal(e) for e in node.elts]
    if any(v is None for v in vals) or sum(v != 0 for v in vals) != 1:  # type: ignore[misc]
        return None
    return tuple(int(math.copysign(1, v)) if v else 0 for v in vals)  # type: ignore[return-value, arg-type]


def _later(cad: _Cad, chain: list[ast.Call], i: int, depth: int = 0) -> list[str]:
    """Method names called after link `i`: on in the chain, then on the variable the chain
    is stored in (`half = ...; result = half.mirror(...)`)."""
    names = [_name(c) for c in chain[i + 1 :]]
    stmt = cad._stmt(chain[-1])
    target = _target(stmt) if getattr(stmt, "value", None) is chain[-1] else None
    if target is not None and depth < 4:
        for ch in cad.chains:
            base = ch[0].func.value  # type: ignore[attr-defined]
            if isinstance(base, ast.Name) and base.id == target:
                names += [_name(ch[0]), *_later(cad, ch, 0, depth + 1)]
    return names


# bodies whose faces and edges point along every axis whatever the plane (a box's)
ROUND_OR_FREE = CURVED | {"circle", "cylinder", "polyline", "polygon", "ellipse", "slot2D"}


def _plane_swap_shows(cad: _Cad, chain: list[ast.Call], i: int) -> bool:
    """Whether a sketch started on another plane still builds, and differently: a revolve
    about an axis the two planes share gives the same solid, and selectors like ">Z" or
    "|Z" after it find other faces or none, which only a box's body survives (and only
    without fillets or chamfers, which a turned box may have too thin a wall for)."""
    later = _later(cad, chain, i)
    if set(later) & {"revolve", "sweep"} or not set(later) & SOLID:
        # a revolve about an axis both planes hold, a sweep's profile turned onto its path,
        # or a path or section another chain uses
        return False
    picks = [k for k, name in enumerate(later) if name in SELECTOR_CALLS]
    if not picks:
        return True
    body = set(later[: picks[0]])
    return "box" in body and not body & ROUND_OR_FREE and not set(later) & WALL_SIZED


@_changed
def swapped_axes(src: str, rng: random.Random) -> str | None:
    """A workplane on the wrong plane (`Workplane("XY")` -> "XZ"), two sizes of a box (or
    rect) swapped, or a rotation or revolve about the wrong axis ((1, 0, 0) -> (0, 1, 0))."""
    cad = _cad(src)
    if cad is None:
        return None
    sites: list[list[Edit]] = []
    for chain, i in _links(cad, ("Workplane",)):
        node = chain[i]
        if not _plane_swap_shows(cad, chain, i):
            continue
        plane = node.args[0] if node.args else None
        plane = plane or next((k.value for k in node.keywords if k.arg == "inPlane"), None)
        if isinstance(plane, ast.Constant) and plane.value in PLANES:
            quote = cad.text(plane)[0]
            for alt in PLANES[plane.value]:
                sites.append([(*cad.py.span(plane), f"{quote}{alt}{quote}")])
        elif plane is None and not node.keywords and cad.text(node).endswith("()"):
            end = cad.py.span(node)[1] - 1
            sites.extend([[(end, end, f'"{alt}"')] for alt in ("XZ", "YZ")])
    for chain, i in _links(cad, ("box", "rect")):
        near = {_name(c) for c in chain[max(i - 1, 0) : i + 2] if c is not chain[i]}
        if _name(chain[i]) == "rect" and near & {"rect", "circle", "polygon"}:
            continue  # one of nested outlines (a wall): turned, it crosses the other
        args = chain[i].args[:3]
        values = [cad.num(a) for a in args]
        # with fillets or chamfers to come, the thin side stays put (they would not fit)
        keep = len(args) == 3 and set(_later(cad, chain, i)) & WALL_SIZED and None not in values
        for (a, va), (b, vb) in itertools.combinations(zip(args, values, strict=True), 2):
            differ = va != vb if va is not None and vb is not None else cad.text(a) != cad.text(b)
            if keep and min(values) in (va, vb):  # type: ignore[type-var]
                continue
            if differ:
                sites.append([(*cad.py.span(a), cad.text(b)), (*cad.py.span(b), cad.text(a))])
    for chain, i in _links(cad, ("revolve",)):
        # the profile turned about its other in-plane axis (the normal would flatten it)
        args = chain[i].args
        axis = _unit_axis(args[2]) if len(args) == 3 else None
        if axis is not None and axis[2] == 0 and _literal(args[0]) != 0:
            other = (0, 1, 0) if axis[0] else (1, 0, 0)
            if all(_literal(e) == 0 for e in getattr(args[1], "elts", [None])):
                sites.append([(*cad.py.span(args[2]), str(other))])
    for chain, i in _links(cad, ("rotate", "rotateAboutCenter")):
        call = chain[i]
        k = 1 if _name(call) == "rotate" else 0
        if len(call.args) != k + 2:
            continue
        axis, angle = _unit_axis(call.args[k]), cad.num(call.args[k + 1])
        if axis is None or (angle is not None and angle % 360 == 0):
            continue
        for j in range(3):
            if axis[j] == 0:
                new = tuple(1 if m == j else 0 for m in range(3))
                sites.append([(*cad.py.span(call.args[k]), str(new))])
    edits = _pick(rng, sites)
    return _splice(src, edits) if edits else None


def _rot_matrix(axis: tuple[float, float, float], deg: float) -> list[list[float]]:
    n = math.sqrt(sum(a * a for a in axis))
    x, y, z = (a / n for a in axis)
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    t = 1 - c
    return [
        [t * x * x + c, t * x * y - s * z, t * x * z + s * y],
        [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
        [t * x * z - s * y, t * y * z + s * x, t * z * z + c],
    ]


def _matmul(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    return [[sum(a[i][k] * b[k][j] for k in range(3)) for j in range(3)] for i in range(3)]


def _rotation(cad: _Cad, call: ast.Call) -> tuple[tuple, list[list[float]]] | None:
    """(centre, matrix) of `.rotate(p0, p1, deg)` when all of it is known numbers."""
    if len(call.args) != 3:
        return None
    pts = []
    for arg in call.args[:2]:
        if not (isinstance(arg, ast.Tuple) and len(arg.elts) == 3):
            return None
        vals = [cad.num(e) for e in arg.elts]
        if any(v is None for v in vals):
            return None
        pts.append(vals)
    deg = cad.num(call.args[2])
    axis = tuple(b - a for a, b in zip(pts[0], pts[1], strict=True))
    if deg is None or not any(axis):
        return None
    return tuple(pts[0]), _rot_matrix(axis, deg)  # type: ignore[arg-type]


def _order_changes(cad: _Cad, run: list[ast.Call], order: tuple[int, ...]) -> bool:
    """Whether applying the run's rotations in `order` places the part differently."""
    rots = [_rotation(cad, c) for c in run]
    if any(r is None for r in rots) or len({r[0] for r in rots}) != 1:  # type: ignore[index]
        return True  # unknown angles, or turns about different points: assume it shows

    def compose(seq: Iterable[int]) -> list[list[float]]:
        m = [[float(i == j) for j in range(3)] for i in range(3)]
        for i in seq:
            m = _matmul(rots[i][1], m)  # type: ignore[index]
        return m

    a, b = compose(range(len(run))), compose(order)
    return max(abs(a[i][j] - b[i][j]) for i in range(3) for j in range(3)) > 1e-9


@_changed
def wrong_euler_order(src: str, rng: random.Random) -> str | None:
    """A run of consecutive `.rotate(...)` calls applied in another order (reversed: Z, Y,
    X for X, Y, Z), where that turns the part differently."""
    cad = _cad(src)
    if cad is None:
        return None
    runs: list[list[ast.Call]] = []
    for chain in cad.chains:
        for is_rot, group in itertools.groupby(chain, key=lambda c: _name(c) == "rotate"):
            run = list(group)
            if is_rot and len(run) >= 2:
                runs.append(run)
    # statement form: `part = part.rotate(...)` on consecutive lines
    for body in _bodies(cad.py.tree):
        run = []
        for stmt in [*body, None]:
            call = _self_rotate(stmt)
            if call is not None and (not run or _target(stmt) == _target(run[-1][0])):
                run.append((stmt, call))
                continue
            if len(run) >= 2:
                runs.append([c for _, c in run])
            run = [(stmt, call)] if call is not None else []
    sites = []
    for run in runs:
        n = len(run)
        orders = [tuple(reversed(range(n)))]
        orders += [p for p in itertools.permutations(range(n)) if p not in orders]
        order = next(
            (p for p in orders if p != tuple(range(n)) and _order_changes(cad, run, p)), None
        )
        if order is not None:
            texts = [cad.src[slice(*cad.segment(c))] for c in run]
            sites.append([(*cad.segment(c), texts[order[k]]) for k, c in enumerate(run)])
    edits = _pick(rng, sites)
    return _splice(src, edits) if edits else None


def _bodies(tree: ast.AST) -> Iterator[list[ast.stmt]]:
    for node in ast.walk(tree):
        for attr in ("body", "orelse"):
            body = getattr(node, attr, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                yield body


def _target(stmt: ast.AST | None) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        return getattr(stmt.targets[0], "id", None)
    return None


def _self_rotate(stmt: ast.AST | None) -> ast.Call | None:
    """`x = x.rotate(...)`"""
    name = _target(stmt)
    value = getattr(stmt, "value", None)
    if (
        name is not None
        and _is_link(value)
        and _name(value) == "rotate"
        and isinstance(value.func.value, ast.Name)  # type: ignore[union-attr]
        and value.func.value.id == name  # type: ignore[union-attr]
    ):
        return value  # type: ignore[return-value]
    return None


_FACE_RE = re.compile(r"([<>])([XYZ])")


def _through(call: ast.Call) -> bool:
    """A cut through the whole part: the same from either side of a symmetric one."""
    name = _name(call)
    if name == "cutThruAll":
        return True
    return (
        name == "hole" and len(call.args) < 2 and not any(k.arg == "depth" for k in call.keywords)
    )


@_changed
def hole_wrong_face(src: str, rng: random.Random) -> str | None:
    """The face a hole or cut is made from selected wrong: the opposite face for a blind
    cut (">Z" -> "<Z"), a side face for a through one (">Z" -> ">Y"), whose mirror image
    through a symmetric plate would look the same."""
    cad = _cad(src)
    if cad is None:
        return None
    sites: list[Edit] = []
    for chain, i in _links(cad, ("faces",)):
        call = chain[i]
        arg = call.args[0] if len(call.args) == 1 else None
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            continue
        m = _FACE_RE.fullmatch(arg.value)
        if m is None:
            continue
        after = []
        for later in chain[i + 1 :]:
            if _name(later) in ("faces", "edges"):
                break
            after.append(later)
        names = [_name(c) for c in after]
        if "workplane" not in names:
            continue
        cut = next((c for c in after[names.index("workplane") :] if _name(c) in HOLES), None)
        if cut is None:
            continue
        sign, axis = m.groups()
        quote = cad.text(arg)[0]
        if _through(cut):
            before = set(cad.history(chain, i))
            if not before & FLAT_SIDED or before & CURVED:
                continue  # a round or curved body: no flat side to drill from
            alts = [s + a for a in "XYZ" if a != axis for s in "><"]
        else:
            alts = [("<" if sign == ">" else ">") + axis]
        for alt in alts:
            sites.append((*cad.py.span(arg), f"{quote}{alt}{quote}"))
    site = _pick(rng, sites)
    return _splice(src, [site]) if site else None


def _round_edges_later(chain: list[ast.Call], i: int) -> bool:
    for call in chain[i + 1 :]:
        arg = call.args[0] if _name(call) in SELECTOR_CALLS and call.args else None
        if isinstance(arg, ast.Constant) and re.search(r"CIRCLE|CYLINDER", str(arg.value)):
            return True
    return False


@_changed
def missing_feature(src: str, rng: random.Random) -> str | None:
    """One feature left out: a fillet, chamfer, hole, counterbore, countersink, pocket or
    shell, with the selection and workplane calls that only served it."""
    cad = _cad(src)
    if cad is None:
        return None
    sites: list[Edit] = []
    for chain, i in _links(cad, FEATURES):
        if _name(chain[i]) in HOLES and _round_edges_later(chain, i):
            continue  # "%CIRCLE" edges picked later would be the hole's: none left to pick
        start = i
        while start > 0 and _name(chain[start - 1]) in PREP:
            start -= 1
            if _name(chain[start]) == "faces":
                break
        lo = cad.py.span(chain[start].func.value)[1]  # type: ignore[attr-defined]
        sites.append((lo, cad.py.span(chain[i])[1], ""))
    site = _pick(rng, sites)
    return _splice(src, [site]) if site else None


@_changed
def wrong_pattern_count(src: str, rng: random.Random) -> str | None:
    """The count of a polar or rectangular pattern off by one (6 bolts -> 5), in the call
    or in the constant it reads."""
    cad = _cad(src)
    if cad is None:
        return None
    nodes: dict[tuple[int, int], ast.AST] = {}
    for chain, i in _links(cad, ("polarArray", "rarray")):
        call = chain[i]
        polar = _name(call) == "polarArray"
        idx = (3,) if polar else (2, 3)
        args = [call.args[k] for k in idx if k < len(call.args)]
        args += [kw.value for kw in call.keywords if kw.arg in ("count", "xCount", "yCount")]
        for arg in args:
            if isinstance(arg, ast.Name) and arg.id in cad.consts:
                arg = cad.consts[arg.id].value
            # a grid's count of 1 is a single row, its spacing a placeholder: leave it
            if _literal(arg) is not None and _is_int(arg) and (polar or _literal(arg) != 1):
                nodes[cad.py.span(arg)] = arg
    span = _pick(rng, sorted(nodes))
    if span is None:
        return None
    v = int(_literal(nodes[span]))  # type: ignore[arg-type]
    step = rng.choice((-1, 1))
    new = v + step if v + step >= 1 else v + 1
    return _splice(src, [(*span, str(new))])


# --- api mutations -------------------------------------------------------------------------


def _bad_selectors(s: str) -> list[str]:
    """Selector strings CadQuery's grammar refuses, the way models get them wrong: a lower
    case axis (">z"), a doubled operator ("||Z"), an axis that is not one (">W"), an
    adjective for a %KIND ("%PLANAR")."""
    out = []
    m = re.fullmatch(r"(>>|<<|[<>|#+\-]?)([XYZ]{1,2})(\[-?\d+\])?", s)
    if m:
        op, axis, index = m.group(1), m.group(2), m.group(3) or ""
        out.append(op + axis.lower() + index)
        if op in ("|", "#"):
            out.append(op * 2 + axis + index)
        if op in (">", "<"):
            out.append(op + "W" + index)
    elif (k := re.fullmatch(r"%([A-Z]+)", s)) and k.group(1) in BAD_KIND:
        out.append("%" + BAD_KIND[k.group(1)])
    elif a := re.search(r"(?<![A-Za-z])[XYZ](?![A-Za-z])", s):
        out.append(s[: a.start()] + s[a.start()].lower() + s[a.end() :])
    return out


@_changed
def invalid_selector(src: str, rng: random.Random) -> str | None:
    """A face / edge / vertex selector string CadQuery cannot parse (">z", "||Z", ">W",
    "%PLANAR")."""
    cad = _cad(src)
    if cad is None:
        return None
    sites = []
    for chain, i in _links(cad, SELECTOR_CALLS):
        call = chain[i]
        arg = call.args[0] if call.args else None
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            quote = cad.text(arg)[0]
            for bad in _bad_selectors(arg.value):
                if quote not in bad and "\\" not in bad:
                    sites.append((*cad.py.span(arg), f"{quote}{bad}{quote}"))
    site = _pick(rng, sites)
    return _splice(src, [site]) if site else None


@_changed
def unknown_method(src: str, rng: random.Random) -> str | None:
    """A Workplane method under a name it does not have (.fillet -> .fillet_edges, .hole ->
    .drill, .polarArray -> .circularArray): an AttributeError."""
    cad = _cad(src)
    if cad is None:
        return None
    links = [chain[i] for chain, i in _links(cad, WRONG_METHOD)]
    call = _pick(rng, links)
    if call is None:
        return None
    return _splice(src, [(*cad.name_span(call), WRONG_METHOD[_name(call)])])


@_changed
def failing_fillet(src: str, rng: random.Random) -> str | None:
    """A fillet radius (or chamfer length) far larger than the part (x10, and at least
    twice its largest size): OCC cannot build it (StdFail_NotDone, "BRep_API: command not
    done")."""
    cad = _cad(src)
    if cad is None:
        return None
    sizes = [abs(cad.values[n]) for n in _length_constants(cad) if n in cad.values]
    for chain in cad.chains:
        for call in chain:
            for arg in [*call.args, *(kw.value for kw in call.keywords)]:
                if (v := cad.num(arg)) is not None and cad.slot(arg)[1] == "d":
                    sizes.append(abs(v))
    largest = max(sizes, default=0.0)
    sites = [chain[i] for chain, i in _links(cad, ("fillet", "chamfer")) if len(chain[i].args) == 1]
    call = _pick(rng, sites)
    if call is None or largest == 0:
        return None
    arg = call.args[0]
    radius = abs(cad.num(arg) or 0.0)
    new = _fmt(max(10 * radius, 2 * largest))
    if (
        isinstance(arg, ast.Name)
        and arg.id in cad.consts
        and all(cad.slot(u)[0] == _name(call) for u in cad.uses.get(arg.id, []))
    ):
        return _splice(src, [(*cad.py.span(cad.consts[arg.id].value), new)])
    return _splice(src, [(*cad.py.span(arg), new)])


# --- format and syntax ----------------------------------------------------------------------


def _shows(cad: _Cad) -> bool:
    return any(isinstance(n, ast.Call) and _name(n) == "show_object" for n in ast.walk(cad.py.tree))


def _rename_result(cad: _Cad, rng: random.Random) -> tuple[str, list[Edit]] | None:
    names = [n for n in ast.walk(cad.py.tree) if isinstance(n, ast.Name) and n.id == RESULT]
    if not any(isinstance(n.ctx, ast.Store) for n in names) or cad.shadowed(RESULT):
        return None
    taken = _identifiers(cad.py)
    new = _pick(rng, [o for o in ("part", "model", "shape", "body", "solid") if o not in taken])
    if new is None:
        return None
    return new, [(*cad.py.span(n), new) for n in names]


@_changed
def no_result(src: str, rng: random.Random) -> str | None:
    """The solid built but left in another variable (`part = ...`), with no `result` and
    no show_object: nothing for the checker to read."""
    cad = _cad(src)
    if cad is None or _shows(cad):
        return None
    renamed = _rename_result(cad, rng)
    return _splice(src, renamed[1]) if renamed else None


@_changed
def syntax_slip(src: str, rng: random.Random) -> str | None:
    """A call's closing paren dropped, or the comma between two arguments left out."""
    cad = _cad(src)
    if cad is None:
        return None
    sites: list[Edit] = []
    for node in ast.walk(cad.py.tree):
        if not isinstance(node, ast.Call) or node.lineno != node.end_lineno:
            continue
        e = cad.py.span(node)[1]
        if cad.src[e - 1] == ")":
            sites.append((e - 1, e, ""))
        items = sorted([*node.args, *node.keywords], key=lambda n: cad.py.span(n))
        for a, b in itertools.pairwise(items):
            gap = (cad.py.span(a)[1], cad.py.span(b)[0])
            if cad.src[slice(*gap)].strip() != ",":
                continue
            strings = all(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in (a, b))
            if not strings and isinstance(b, ast.keyword | ast.Name | ast.Constant):
                sites.append((*gap, " "))
    sites.sort()
    rng.shuffle(sites)
    for site in sites:
        out = _splice(src, [site])
        try:
            pyast.parse(out)
        except SyntaxError:
            return out
    return None


# --- rewrites -------------------------------------------------------------------------------


@_changed
def to_show_object(src: str, rng: random.Random) -> str | None:
    """`result = (...)` built as `part = (...)` and handed to `show_object(part)` at the
    end, as CQ-editor scripts do."""
    cad = _cad(src)
    if cad is None or _shows(cad):
        return None
    renamed = _rename_result(cad, rng)
    if renamed is None:
        return None
    new, edits = renamed
    tail = "" if src.endswith("\n") else "\n"
    return _splice(src, edits) + f"{tail}show_object({new})\n"


def _plain_constants(cad: _Cad) -> list[str]:
    """Constants safe to rewrite: bound once at module level, nowhere else, not used in an
    f-string."""
    return [
        n
        for n in sorted(cad.consts)
        if not cad.shadowed(n) and not cad.in_fstring(n) and n not in _dunder_all(cad)
    ]


def _dunder_all(cad: _Cad) -> set[str]:
    stmt = cad.assigns.get("__all__")
    if stmt is None:
        return set()
    return {e.value for e in ast.walk(stmt.value) if isinstance(e, ast.Constant)}


def _alone_on_lines(cad: _Cad, stmt: ast.stmt) -> bool:
    lo = cad.py.starts[stmt.lineno - 1]
    hi = cad.py.starts[stmt.end_lineno]  # type: ignore[index]
    s, e = cad.py.span(stmt)
    before, after = cad.src[lo:s], cad.src[e:hi].strip()
    return not before.strip() and (not after or after.startswith("#"))


@_changed
def inline_constants(src: str, rng: random.Random) -> str | None:
    """One numeric constant written out where it is used, its assignment line deleted."""
    cad = _cad(src)
    if cad is None:
        return None
    options = [
        n
        for n in _plain_constants(cad)
        if _literal(cad.consts[n].value) is not None
        and cad.uses.get(n)
        and _alone_on_lines(cad, cad.consts[n])
    ]
    name = _pick(rng, options)
    if name is None:
        return None
    stmt = cad.consts[name]
    value = cad.text(stmt.value)
    edits = []
    for use in cad.uses[name]:
        # -2.0 ** 2 is not (-2.0) ** 2, and 5.real is no attribute access
        wrap = isinstance(stmt.value, ast.UnaryOp) or isinstance(cad.py.parent[use], ast.Attribute)
        edits.append((*cad.py.span(use), f"({value})" if wrap else value))
    edits.append((cad.py.starts[stmt.lineno - 1], cad.py.starts[stmt.end_lineno], ""))  # type: ignore[index]
    return _splice(src, edits)


@_changed
def rename_constant(src: str, rng: random.Random) -> str | None:
    """One constant renamed at its assignment and every use."""
    cad = _cad(src)
    if cad is None:
        return None
    name = _pick(rng, _plain_constants(cad))
    if name is None:
        return None
    taken = _identifiers(cad.py)
    lengths = _length_constants(cad)
    options = [f"{name}_MM", f"{name}_VALUE"] if name in lengths else [f"{name}_VALUE", f"K_{name}"]
    new = _pick(rng, [o for o in options if o not in taken])
    if new is None:
        return None
    nodes = [n for n in ast.walk(cad.py.tree) if isinstance(n, ast.Name) and n.id == name]
    return _splice(src, [(*cad.py.span(n), new) for n in nodes])


# --- tables ---------------------------------------------------------------------------------

CAD_REWRITES: tuple[Rewrite, ...] = (
    Rewrite("show_object", "the solid handed to show_object(part) instead of left in "
            "`result`: the checker reads either", to_show_object),
    Rewrite("inline_constants", "one constant's literal written at each use and its "
            "assignment dropped: the same numbers reach the same calls", inline_constants),
    Rewrite("rename_constant", "one constant renamed everywhere: names carry no geometry",
            rename_constant),
)  # fmt: skip

CAD_MUTATIONS: tuple[Mutation, ...] = (
    Mutation("wrong_dimension", "a size read or typed wrong: one length constant or "
             "argument x1.5 (or a hole, fillet, wall x0.6)", FUNCTIONAL, wrong_dimension),
    Mutation("swapped_axes", "the sketch on the wrong workplane (XZ for XY), box sizes in "
             "the wrong order, or a rotation about the wrong axis", FUNCTIONAL, swapped_axes),
    Mutation("wrong_euler_order", "Euler rotations applied in the wrong order (Z, Y, X for "
             "X, Y, Z)", FUNCTIONAL, wrong_euler_order),
    Mutation("hole_wrong_face", "a hole or pocket started from the wrong face (the bottom "
             "for the top, a side for the top)", FUNCTIONAL, hole_wrong_face),
    Mutation("missing_feature", "a feature forgotten: a fillet, chamfer, hole, counterbore "
             "or shell left out with its selection", FUNCTIONAL, missing_feature),
    Mutation("wrong_pattern_count", "a polar or rectangular pattern off by one (5 bolt "
             "holes for 6)", FUNCTIONAL, wrong_pattern_count),
    Mutation("invalid_selector", "a selector string CadQuery cannot parse (\">z\", "
             "\"||Z\", \"%PLANAR\")", API, invalid_selector),
    Mutation("unknown_method", "a Workplane method that does not exist (.fillet_edges, "
             ".drill, .circularArray)", API, unknown_method),
    Mutation("failing_fillet", "a fillet radius (or chamfer) larger than the part allows: "
             "OCC's fillet fails (StdFail_NotDone)", API, failing_fillet),
    Mutation("no_result", "the solid left in another variable (`part = ...`) with no "
             "`result` and no show_object", FORMAT, no_result),
    Mutation("syntax_slip", "a closing paren dropped or a comma between arguments left "
             "out", SYNTAX, syntax_slip),
)  # fmt: skip

for _table in (CAD_REWRITES, CAD_MUTATIONS):
    check_table(_table)


class CadPerturbGenerator(OperatorGenerator):
    name = "perturb:cad"
    domain = "cad"
    rewrites = CAD_REWRITES
    mutations = CAD_MUTATIONS
