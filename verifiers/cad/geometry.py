"""Exact geometry of CadQuery results: validity, volumes, IoU by OCC booleans, surface
distances, and the orientation search behind the `geometry_orientation` diagnosis.

Runs inside the CAD worker (`verifiers/cad/server.py`), in the judge process, which never
runs candidate code: it reads the candidate's shape from the BREP file the candidate's own
process wrote. Every function takes and returns plain OCC shapes and numpy arrays.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from OCP.Bnd import Bnd_Box
from OCP.BRep import BRep_Builder, BRep_Tool
from OCP.BRepAlgoAPI import BRepAlgoAPI_Common
from OCP.BRepBndLib import BRepBndLib
from OCP.BRepBuilderAPI import BRepBuilderAPI_MakeVertex, BRepBuilderAPI_Transform
from OCP.BRepCheck import BRepCheck_Analyzer, BRepCheck_NoError, BRepCheck_Shell
from OCP.BRepExtrema import BRepExtrema_DistShapeShape
from OCP.BRepGProp import BRepGProp
from OCP.BRepMesh import BRepMesh_IncrementalMesh
from OCP.BRepTools import BRepTools
from OCP.gp import gp_Pnt, gp_Trsf, gp_Vec
from OCP.GProp import GProp_GProps
from OCP.TopAbs import TopAbs_FACE, TopAbs_REVERSED, TopAbs_SHELL, TopAbs_SOLID
from OCP.TopExp import TopExp_Explorer
from OCP.TopLoc import TopLoc_Location
from OCP.TopoDS import TopoDS, TopoDS_Shape
from OCP.TopTools import TopTools_ListOfShape


class GeometryError(RuntimeError):
    """An OCC operation on the candidate's shape failed."""


# --- shapes -------------------------------------------------------------------------------


def read_brep(path: str) -> TopoDS_Shape:
    shape = TopoDS_Shape()
    if not BRepTools.Read_s(shape, path, BRep_Builder()) or shape.IsNull():
        raise GeometryError(f"cannot read the shape from {path}")
    return shape


def solids(shape: TopoDS_Shape) -> list[TopoDS_Shape]:
    out = []
    exp = TopExp_Explorer(shape, TopAbs_SOLID)
    while exp.More():
        out.append(exp.Current())
        exp.Next()
    return out


def count(shape: TopoDS_Shape, kind) -> int:
    n, exp = 0, TopExp_Explorer(shape, kind)
    while exp.More():
        n += 1
        exp.Next()
    return n


def check_solid(shape: TopoDS_Shape) -> str:
    """'' when `shape` holds valid closed solids; otherwise what is wrong with it."""
    found = solids(shape)
    if not found:
        faces = count(shape, TopAbs_FACE)
        what = f"{faces} faces and no solid" if faces else "no faces and no solid"
        return f"the result is not a solid ({what}): a sketch, wire or open surface"
    if not BRepCheck_Analyzer(shape).IsValid():
        return "the OCC shape check fails (self-intersecting or broken topology)"
    for solid in found:
        exp = TopExp_Explorer(solid, TopAbs_SHELL)
        while exp.More():
            if BRepCheck_Shell(TopoDS.Shell_s(exp.Current())).Closed() != BRepCheck_NoError:
                return "a shell of the solid is open (not watertight)"
            exp.Next()
    return ""


@dataclass(frozen=True)
class Props:
    volume: float
    centroid: np.ndarray  # (3,)
    inertia: np.ndarray  # (3, 3) about the centroid
    lo: np.ndarray  # bounding box corners
    hi: np.ndarray

    @property
    def extent(self) -> np.ndarray:
        return self.hi - self.lo

    @property
    def diagonal(self) -> float:
        return float(np.linalg.norm(self.extent))

    def summary(self) -> dict:
        return {
            "volume": round(self.volume, 6),
            "centroid": [round(float(v), 4) for v in self.centroid],
            "bbox": [[round(float(v), 4) for v in self.lo], [round(float(v), 4) for v in self.hi]],
        }


def props(shape: TopoDS_Shape) -> Props:
    p = GProp_GProps()
    BRepGProp.VolumeProperties_s(shape, p)
    c = p.CentreOfMass()
    m = p.MatrixOfInertia()
    inertia = np.array([[m.Value(i, j) for j in (1, 2, 3)] for i in (1, 2, 3)])
    box = Bnd_Box()
    BRepBndLib.AddOptimal_s(shape, box, False, False)
    x0, y0, z0, x1, y1, z1 = box.Get()
    return Props(
        p.Mass(), np.array([c.X(), c.Y(), c.Z()]), inertia, np.array([x0, y0, z0]),
        np.array([x1, y1, z1]),
    )  # fmt: skip


def common_volume(a: TopoDS_Shape, b: TopoDS_Shape) -> float:
    op = BRepAlgoAPI_Common()
    args, tools = TopTools_ListOfShape(), TopTools_ListOfShape()
    args.Append(a)
    tools.Append(b)
    op.SetArguments(args)
    op.SetTools(tools)
    op.SetRunParallel(False)
    # the reference is kept and reused by the judge: a boolean must not touch its inputs
    op.SetNonDestructive(True)
    op.Build()
    if not op.IsDone():
        raise GeometryError("the OCC boolean (intersection) with the reference failed")
    p = GProp_GProps()
    BRepGProp.VolumeProperties_s(op.Shape(), p)
    return max(p.Mass(), 0.0)


def iou(a: TopoDS_Shape, b: TopoDS_Shape, va: float, vb: float) -> float:
    """Intersection over union of two solids by exact booleans: |A∩B| / (|A|+|B|-|A∩B|)."""
    inter = common_volume(a, b)
    union = va + vb - inter
    return inter / union if union > 0 else 0.0


def transform(
    shape: TopoDS_Shape,
    matrix: np.ndarray | None = None,
    translation: np.ndarray | None = None,
    scale: float = 1.0,
) -> TopoDS_Shape:
    """x -> scale * (matrix @ x) + translation, for an orthogonal `matrix` (a rotation,
    or a reflection when its determinant is -1)."""
    m = np.eye(3) if matrix is None else np.asarray(matrix, float)
    t = np.zeros(3) if translation is None else np.asarray(translation, float)
    trsf = gp_Trsf()
    if not np.allclose(m, np.eye(3)):
        trsf.SetValues(*m[0], 0.0, *m[1], 0.0, *m[2], 0.0)
    if scale != 1.0:
        s = gp_Trsf()
        s.SetScaleFactor(scale)
        trsf = s.Multiplied(trsf)
    if np.any(t):
        tr = gp_Trsf()
        tr.SetTranslation(gp_Vec(*t))
        trsf = tr.Multiplied(trsf)
    return BRepBuilderAPI_Transform(shape, trsf, True).Shape()


def normalizing(p: Props) -> tuple[np.ndarray, float]:
    """The translation and scale that put the bounding box's centre at the origin and its
    largest side at 1 (the `normalized` comparison's frame)."""
    scale = 1.0 / float(max(p.extent.max(), 1e-12))
    return -(p.lo + p.hi) / 2 * scale, scale


# --- meshes and surface distances ---------------------------------------------------------


def mesh(shape: TopoDS_Shape, deflection: float) -> tuple[np.ndarray, np.ndarray]:
    """Triangles of the shape's faces: vertices (N, 3) and triangles (M, 3), outward."""
    BRepMesh_IncrementalMesh(shape, deflection, False, 0.3, False)
    verts, tris, base = [], [], 0
    exp = TopExp_Explorer(shape, TopAbs_FACE)
    while exp.More():
        face = TopoDS.Face_s(exp.Current())
        loc = TopLoc_Location()
        tri = BRep_Tool.Triangulation_s(face, loc)
        exp.Next()
        if tri is None:
            continue
        trsf = loc.Transformation()
        n = tri.NbNodes()
        pts = np.empty((n, 3))
        for i in range(1, n + 1):
            p = tri.Node(i).Transformed(trsf)
            pts[i - 1] = (p.X(), p.Y(), p.Z())
        idx = np.empty((tri.NbTriangles(), 3), dtype=np.int64)
        for i in range(1, tri.NbTriangles() + 1):
            idx[i - 1] = tri.Triangle(i).Get()
        idx -= 1
        if face.Orientation() == TopAbs_REVERSED:
            idx = idx[:, ::-1]
        verts.append(pts)
        tris.append(idx + base)
        base += n
    if not verts:
        return np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64)
    return np.concatenate(verts), np.concatenate(tris)


def sample_surface(
    verts: np.ndarray, tris: np.ndarray, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """n points spread over the surface by area, plus every triangle's centroid; returns
    the points and the triangle each lies on."""
    a, b, c = verts[tris[:, 0]], verts[tris[:, 1]], verts[tris[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    total = area.sum()
    if total <= 0:
        return np.zeros((0, 3)), np.zeros(0, dtype=np.int64)
    pick = rng.choice(len(tris), size=n, p=area / total)
    u, v = rng.random(n), rng.random(n)
    flip = u + v > 1
    u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
    pts = a[pick] + u[:, None] * (b[pick] - a[pick]) + v[:, None] * (c[pick] - a[pick])
    cent = (a + b + c) / 3
    return np.concatenate([pts, cent]), np.concatenate([pick, np.arange(len(tris))])


def point_triangle_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray):
    """Distance from each point p[i] to the triangle (a[i], b[i], c[i]): to its plane when
    the point projects inside it, else to the nearest of its three edges."""
    n = np.cross(b - a, c - a)
    inside = (
        (_dot(np.cross(b - a, p - a), n) >= 0)
        & (_dot(np.cross(c - b, p - b), n) >= 0)
        & (_dot(np.cross(a - c, p - c), n) >= 0)
    )
    nn = np.sqrt(_dot(n, n))
    with np.errstate(divide="ignore", invalid="ignore"):
        plane = np.abs(_dot(p - a, n)) / nn
    edges = np.minimum(np.minimum(_segment(p, a, b), _segment(p, b, c)), _segment(p, c, a))
    return np.where(inside & (nn > 0), plane, edges)


def _segment(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ab = b - a
    ll = _dot(ab, ab)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.clip(np.where(ll > 0, _dot(p - a, ab) / ll, 0.0), 0.0, 1.0)
    q = p - a - ab * t[:, None]
    return np.sqrt(_dot(q, q))


def _dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", x, y)


@dataclass
class Surface:
    """A shape's triangles, sample points on them and a KD-tree over those points."""

    shape: TopoDS_Shape
    verts: np.ndarray
    tris: np.ndarray
    points: np.ndarray
    owner: np.ndarray  # the triangle each point lies on
    tree: object
    _extrema: object = None

    @classmethod
    def of(cls, shape: TopoDS_Shape, deflection: float, n: int, seed: int = 0) -> Surface:
        from scipy.spatial import cKDTree

        verts, tris = mesh(shape, deflection)
        pts, owner = sample_surface(verts, tris, n, np.random.default_rng(seed))
        return cls(shape, verts, tris, pts, owner, cKDTree(pts) if len(pts) else None)

    def approx_distance(self, pts: np.ndarray, k: int = 6) -> np.ndarray:
        """An upper bound on each point's distance to this surface's triangles: the
        nearest of the triangles that hold its k nearest sample points."""
        if self.tree is None or not len(pts):
            return np.full(len(pts), np.inf)
        k = min(k, len(self.points))
        _, near = self.tree.query(pts, k=k)
        near = np.asarray(near).reshape(len(pts), k)
        tri = self.tris[self.owner[near]]  # (P, k, 3)
        rep = np.repeat(pts, k, axis=0)
        d = point_triangle_distance(
            rep,
            self.verts[tri[..., 0].ravel()],
            self.verts[tri[..., 1].ravel()],
            self.verts[tri[..., 2].ravel()],
        )
        return d.reshape(len(pts), k).min(axis=1)

    def exact_distance(self, p: np.ndarray) -> float:
        """The distance from one point to the exact B-rep surface (OCC)."""
        if self._extrema is None:
            self._extrema = BRepExtrema_DistShapeShape()
            self._extrema.LoadS2(self.shape)  # its faces' bounding boxes, built once
        self._extrema.LoadS1(BRepBuilderAPI_MakeVertex(gp_Pnt(*map(float, p))).Vertex())
        self._extrema.Perform()
        return float(self._extrema.Value()) if self._extrema.IsDone() else math.inf

    def distance(
        self, pts: np.ndarray, slack: float, floor: float, batch: int = 16, most: int = 128
    ) -> np.ndarray:
        """Each point's distance to this surface. The mesh gives upper bounds; from the
        largest down, bounds above `floor` are replaced by exact B-rep distances until no
        bound left exceeds the largest exact one by more than `slack` (the mesh's own
        error). So a maximum above `floor` is exact to within `slack`; one below it is an
        upper bound. Decisions against a threshold of 2 * floor or more are exact."""
        d = self.approx_distance(pts)
        order = np.argsort(-d)
        done = 0
        while done < min(most, len(d)) and d[order[done]] > floor:
            for i in order[done : done + batch]:
                d[i] = min(d[i], self.exact_distance(pts[i]))
            done += batch
            if done >= len(d) or d[order[done]] <= d[order[:done]].max() + slack:
                break
        return d


def measured_points(s: Surface, n: int, most_vertices: int = 1500) -> np.ndarray:
    """The points whose distances are measured: n samples spread by area, plus the mesh's
    vertices (corners and edges, where the largest deviations sit)."""
    verts = s.verts
    if len(verts) > most_vertices:
        pick = np.random.default_rng(1).choice(len(verts), most_vertices, replace=False)
        verts = verts[np.sort(pick)]
    return np.concatenate([s.points[:n], verts])


def surface_metrics(cand: Surface, ref: Surface, n: int, slack: float, floor: float) -> dict:
    """Chamfer distance (mean of both directions, over the area samples) and the largest
    deviation either way (samples and mesh vertices), measured from the points of one
    surface to the other surface."""
    cp, rp = measured_points(cand, n), measured_points(ref, n)
    c_to_r = ref.distance(cp, slack, floor)
    r_to_c = cand.distance(rp, slack, floor)
    k, j = int(c_to_r.argmax()), int(r_to_c.argmax())
    return {
        "chamfer": float((c_to_r[:n].mean() + r_to_c[:n].mean()) / 2),
        "extra_max": float(c_to_r[k]),  # candidate surface far from the reference's
        "missing_max": float(r_to_c[j]),  # reference surface the candidate lacks
        "extra_at": [round(float(v), 3) for v in cp[k]],
        "missing_at": [round(float(v), 3) for v in rp[j]],
    }


# --- orientation ------------------------------------------------------------------------

AXES = "XYZ"


def axis_rotation(axis: str, degrees: float) -> np.ndarray:
    t = math.radians(degrees)
    c, s = math.cos(t), math.sin(t)
    i = AXES.index(axis)
    m = np.eye(3)
    j, k = (i + 1) % 3, (i + 2) % 3
    m[j, j], m[j, k], m[k, j], m[k, k] = c, -s, s, c
    return m


def euler_matrix(order: str, angles: dict[str, float]) -> np.ndarray:
    """Rotations about the world axes applied in `order` (extrinsic), angles per axis."""
    m = np.eye(3)
    for axis in order:
        m = axis_rotation(axis, angles[axis]) @ m
    return m


def signed_permutations() -> list[tuple[np.ndarray, str]]:
    """The 47 signed axis permutations other than the identity: the 23 rotations by
    multiples of 90° and the 24 mirror images, each with a description."""
    out = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1, -1), repeat=3):
            m = np.zeros((3, 3))
            for row, (col, sg) in enumerate(zip(perm, signs, strict=True)):
                m[row, col] = sg
            if np.allclose(m, np.eye(3)):
                continue
            out.append((m, describe_matrix(m)))
    return out


def describe_matrix(m: np.ndarray) -> str:
    """'rotated 90° about +X' / 'mirrored' / 'axes mapped X->Y ...' for a signed permutation."""
    det = round(float(np.linalg.det(m)))
    for axis in AXES:
        for deg in (90, 180, 270):
            if np.allclose(m, axis_rotation(axis, deg), atol=1e-9):
                return f"rotated {deg}° about {axis}"
    names = []
    for row in range(3):
        col = int(np.argmax(np.abs(m[row])))
        sign = "-" if m[row, col] < 0 else ""
        names.append(f"{AXES[col]}->{sign}{AXES[row]}")
    kind = "a rotation" if det > 0 else "a mirror image"
    return f"axes mapped {', '.join(names)} ({kind})"


# computed once: rotations before mirror images (the simpler explanation first)
PERMUTATIONS = sorted(signed_permutations(), key=lambda mw: np.linalg.det(mw[0]) < 0)


@dataclass(frozen=True)
class Guess:
    matrix: np.ndarray
    about: str  # "origin" or "centroid"
    what: str  # the mistake it would be, in words
    code: str  # geometry_orientation or geometry_misplaced


def orientation_guesses(
    cand: Props, ref: Props, euler: dict | None, rel_tol: float = 2e-3
) -> list[Guess]:
    """Transforms that could turn the candidate into the reference, screened by volume and
    the inertia tensor (cheap) before any boolean: signed axis permutations, the Euler
    rotations applied in another order or the other way round, and a pure translation."""
    if abs(cand.volume - ref.volume) > rel_tol * 5 * max(ref.volume, 1e-12):
        return []
    scale = max(float(np.abs(ref.inertia).max()), 1e-12)
    tries: list[tuple[np.ndarray, str, str]] = []
    if euler:
        order = euler["order"]
        angles = dict(zip(order, euler["angles"], strict=True))
        right = euler_matrix(order, angles)
        for other in ("".join(p) for p in itertools.permutations(order)):
            if other != order:
                wrong = euler_matrix(other, angles)
                tries.append(
                    (right @ wrong.T, f"it matches the reference once its rotations are "
                     f"undone in the order {other}: they were applied as {other} instead of "
                     f"{order} (a swapped Euler order)", "geometry_orientation")
                )  # fmt: skip
        wrong = euler_matrix(order, {a: -v for a, v in angles.items()})
        tries.append((right @ wrong.T, "its rotations have the opposite sign (clockwise for "
                      "counter-clockwise)", "geometry_orientation"))  # fmt: skip
        wrong = euler_matrix(order[::-1], {a: -v for a, v in angles.items()})
        tries.append((right @ wrong.T, "it has the inverse of the required rotation",
                      "geometry_orientation"))  # fmt: skip
    # the simplest explanation first: a shift, then rotations, then mirror images
    tries.append((np.eye(3), "moved to the reference's place, it matches", "geometry_misplaced"))
    for m, what in PERMUTATIONS:
        tries.append((m, f"{what}, it matches the reference", "geometry_orientation"))
    out = []
    for m, what, code in tries:
        if np.abs(m @ cand.inertia @ m.T - ref.inertia).max() > rel_tol * scale:
            continue
        about = "origin"
        if np.linalg.norm(m @ cand.centroid - ref.centroid) > rel_tol * max(ref.diagonal, 1e-9):
            about = "centroid"
        if code == "geometry_misplaced" and about == "origin":
            continue  # no shift: the identity is what already failed
        out.append(Guess(m, about, what, code))
    # about the origin before about the centroid: a part placed right but turned
    return sorted(out, key=lambda g: g.about == "centroid")


def try_guess(
    shape: TopoDS_Shape, cand: Props, ref_shape: TopoDS_Shape, ref: Props, g: Guess
) -> float:
    """IoU of the candidate moved by the guess, against the reference."""
    t = ref.centroid - g.matrix @ cand.centroid if g.about == "centroid" else None
    moved = transform(shape, g.matrix, t)
    return iou(moved, ref_shape, cand.volume, ref.volume)
