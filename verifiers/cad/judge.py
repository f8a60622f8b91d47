"""The judge: measures a candidate's shape against the reference's, gate by gate.

Runs in the CAD worker's judge process (`server.Judge`), which never runs candidate code.
The result is a dict of plain values: the first gate that failed, the metrics, the
diagnosis, the seconds of each step, and the paths of the picture / STEP / STL it wrote.
"""

from __future__ import annotations

import hashlib
import struct
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from verifiers.cad import geometry as geo

if TYPE_CHECKING:
    from verifiers.cad.render import Caption

# mesh deflection for the surface distances and the picture, a fraction of the diagonal
DEFLECTION = 1e-3
SAMPLES = 2000  # sample points per surface, for the KD-tree
MEASURED = 800  # of them, the points whose distances are measured (plus mesh vertices)


class Frame:
    """A shape in the comparison's frame (absolute: as built; normalized: bounding box
    centred on the origin, largest side 1), with its properties and surface."""

    def __init__(self, shape, mode: str):
        p = geo.props(shape)
        self.shift, self.scale = np.zeros(3), 1.0  # as built -> this frame
        if mode == "normalized":
            self.shift, self.scale = geo.normalizing(p)
            shape = geo.transform(shape, None, self.shift, self.scale)
            p = geo.props(shape)
        self.shape, self.props, self.mode = shape, p, mode
        self._surface: geo.Surface | None = None

    def as_built(self, verts: np.ndarray) -> np.ndarray:
        """Points of this frame back where the shape was built."""
        return (verts - self.shift) / self.scale

    def surface(self, deflection: float) -> geo.Surface:
        if self._surface is None:
            self._surface = geo.Surface.of(self.shape, deflection, SAMPLES)
        return self._surface


class Reference:
    """The reference shape, read once per judge process; its frames and surfaces are
    computed on first use and kept for the next candidate."""

    def __init__(self, path: str):
        self.digest = _digest(path)
        self.shape = geo.read_brep(path)
        self.raw = geo.props(self.shape)
        self.n_solids = len(geo.solids(self.shape))
        self.frames: dict[str, Frame] = {}

    def frame(self, mode: str) -> Frame:
        if mode not in self.frames:
            self.frames[mode] = Frame(self.shape, mode)
        return self.frames[mode]

    def prime(self, job: dict) -> None:
        f = self.frame(job["mode"])
        f.surface(DEFLECTION * f.props.diagonal)


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def judge(job: dict, brep: str, ref: Reference | None, art_dir: Path | None) -> dict:
    steps: dict[str, float] = {}
    out: dict = {"steps": steps, "metrics": {}, "failed": None}
    m = out["metrics"]
    t = time.perf_counter()

    def step(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        steps[name] = round(steps.get(name, 0.0) + now - t, 6)
        t = now

    shape = geo.read_brep(brep)
    step("load")
    cand_raw = None
    problem = geo.check_solid(shape)
    if not problem:
        cand_raw = geo.props(shape)
        m["candidate"] = cand_raw.summary()
        n = len(geo.solids(shape))
        m["solids"] = n
        if cand_raw.volume <= 1e-9 * max(float(np.prod(np.maximum(cand_raw.extent, 1e-9))), 1):
            problem = f"the solid has no volume ({cand_raw.volume:.3g} mm³)"
        elif ref is not None and n != ref.n_solids:
            out["failed"], out["code"] = "solid", "solid_count"
            out["detail"] = (
                f"the result has {n} separate solids; the part has {ref.n_solids} "
                "(features not fused into one body?)"
            )
    if problem:
        out["failed"], out["code"], out["detail"] = "solid", "invalid_solid", problem
    step("solid")
    mode = job.get("mode", "absolute")
    cand = ref_f = None
    if ref is not None:
        ref_f = ref.frame(mode)
        m["reference"] = ref.raw.summary()
    # the very B-rep of the reference (a rewrite, a re-run): equal by construction, so the
    # booleans and distances are known without computing them
    identical = ref is not None and out["failed"] is None and _digest(brep) == ref.digest
    if identical:
        cand = ref_f
        m.update(volume_ratio=1.0, centroid_offset=[0.0, 0.0, 0.0], iou=1.0, chamfer=0.0,
                 chamfer_rel=0.0, surface_max=0.0, surface_max_rel=0.0, identical=True)  # fmt: skip
        step("iou")
    if out["failed"] is None and ref is not None and not identical:
        cand = Frame(shape, mode)
        r = ref_f.props
        m["volume_ratio"] = round(cand.props.volume / r.volume, 6) if r.volume else None
        m["centroid_offset"] = [round(float(v), 4) for v in cand.props.centroid - r.centroid]
        try:
            m["iou"] = round(geo.iou(cand.shape, ref_f.shape, cand.props.volume, r.volume), 9)
        except geo.GeometryError as e:
            out["failed"], out["code"], out["detail"] = "iou", "invalid_solid", str(e)
        step("iou")
        if out["failed"] is None and m["iou"] < job["iou_pass"]:
            out["failed"], out["code"] = "iou", "geometry_mismatch"
            out["detail"] = f"IoU {m['iou']:.6f} < {job['iou_pass']}"
            diagnose(out, cand, ref_f, job.get("euler"), job["iou_pass"])
            step("orientation")
        if out["failed"] is None:
            d = DEFLECTION * r.diagonal
            diag = r.diagonal
            floor = 0.5 * job["surface_pass"] * diag  # decisions exact; maxima below: bounds
            s = geo.surface_metrics(cand.surface(d), ref_f.surface(d), MEASURED, 2 * d, floor)
            m["chamfer"] = round(s["chamfer"], 6)
            m["chamfer_rel"] = round(s["chamfer"] / diag, 8)
            worst = max(s["extra_max"], s["missing_max"])
            m["surface_max"] = round(worst, 6)
            m["surface_max_rel"] = round(worst / diag, 8)
            step("surface")
            if m["surface_max_rel"] > job["surface_pass"] or m["chamfer_rel"] > job["chamfer_pass"]:
                out["failed"], out["code"] = "surface", "surface_deviation"
                where = (
                    f"reference surface near {s['missing_at']} is {s['missing_max']:.3f} from "
                    "the candidate's (a missing or moved feature)"
                    if s["missing_max"] >= s["extra_max"]
                    else f"candidate surface near {s['extra_at']} is {s['extra_max']:.3f} from "
                    "the reference's (extra or moved material)"
                )
                out["detail"] = (
                    f"surfaces differ: largest deviation {worst:.4g} "
                    f"({m['surface_max_rel']:.3%} of the diagonal, allowed "
                    f"{job['surface_pass']:.2%}), Chamfer {s['chamfer']:.4g} "
                    f"({m['chamfer_rel']:.3%}, allowed {job['chamfer_pass']:.2%}); {where}"
                )
    if art_dir is not None:
        out["artifacts"] = artifacts(shape, cand, ref_f, art_dir, mode, caption(out, job))
        step("artifacts")
    return out


def diagnose(out: dict, cand: Frame, ref: Frame, euler: dict | None, iou_pass: float) -> None:
    """Would a rotation, a mirror, a swapped Euler order or a shift make it match?"""
    tried = 0
    for g in geo.orientation_guesses(cand.props, ref.props, euler):
        try:
            score = geo.try_guess(cand.shape, cand.props, ref.shape, ref.props, g)
        except geo.GeometryError:
            continue
        tried += 1
        if score >= iou_pass:
            out["code"] = g.code
            shift = " (and moved onto the reference's centroid)" if g.about == "centroid" else ""
            out["diagnosis"] = f"{g.what}{shift}: IoU {score:.6f} after that"
            out["metrics"]["orientation_match"] = {
                "matrix": np.round(g.matrix, 6).tolist(),
                "about": g.about,
                "iou": score,
            }
            break
    out["metrics"]["orientation_tried"] = tried


def caption(out: dict, job: dict) -> Caption:
    """What the picture says (`render.Caption`): the verdict and the IoU, then the diagnosis:
    the transform that would make it match (the orientation search's finding), or that none
    does, or the failing gate's own detail; for a pass, the surface distances."""
    from verifiers.cad.render import Caption

    m = out.get("metrics", {})
    failed, code = out.get("failed"), out.get("code")
    iou = m.get("iou")
    frame = " (normalized frame)" if job.get("mode") == "normalized" else ""
    score = f"IoU {iou:.6f}{frame}" if isinstance(iou, int | float) else "IoU not measured"
    if "iou_pass" in job and isinstance(iou, int | float):
        score += f" (pass >= {job['iou_pass']:g})"
    verdict = "PASS" if failed is None else f"FAIL at {failed}: {code}"
    if failed is None and "reference" not in m:
        verdict = "NOT COMPARED (no reference)"
    detail = out.get("detail", "")
    if out.get("diagnosis"):
        diagnosis = f"diagnosis: {out['diagnosis']}"
    elif failed == "iou" and code == "geometry_mismatch":
        tried = m.get("orientation_tried", 0)
        why = f"{tried} tried" if tried else "its volume or inertia rules them all out"
        diagnosis = (
            f"diagnosis: {detail}; no rotation by 90° steps, mirror, Euler order or shift "
            f"makes it match ({why}): the shape itself differs"
        )
    elif failed is not None:
        diagnosis = f"diagnosis: {detail}"
    elif "chamfer" in m:
        diagnosis = (
            f"matches the reference: Chamfer {m['chamfer']:.4g} mm, largest surface deviation "
            f"{m['surface_max']:.4g} mm"
        )
    else:
        diagnosis = ""
    ok = None if verdict.startswith("NOT") else failed is None
    return Caption(f"{verdict}   {score}", diagnosis, ok)


def artifacts(
    shape,
    cand: Frame | None,
    ref: Frame | None,
    art_dir: Path,
    mode: str,
    caption: Caption | None = None,
) -> dict:
    """The picture (candidate over reference: three views and an isometric one, under
    `caption`), STEP and STL of the candidate."""
    from verifiers.cad.render import render_views

    paths = {}
    if cand is None:  # an invalid solid still gets a picture
        try:
            cand = Frame(shape, mode)
        except Exception:
            cand = None
    if cand is not None:
        base = ref.props if ref is not None else cand.props
        s = cand.surface(DEFLECTION * max(base.diagonal, 1e-9))
        verts, tris = s.verts, s.tris
        built = cand.as_built(verts)  # the STL is the part as built, whatever the frame
    else:
        verts, tris = geo.mesh(shape, 0.1)
        built = verts
    left = (verts, tris) if len(tris) else None
    right = None
    if ref is not None:
        rs = ref.surface(DEFLECTION * ref.props.diagonal)
        right = (rs.verts, rs.tris)
    png = art_dir / "picture.png"
    png.write_bytes(render_views(left, right, caption).png)
    paths["picture"] = str(png)
    if len(tris):
        stl = art_dir / "candidate.stl"
        stl.write_bytes(stl_bytes(built, tris))
        paths["stl"] = str(stl)
    step = art_dir / "candidate.step"
    if write_step(shape, step):
        paths["step"] = str(step)
    return paths


def stl_bytes(verts: np.ndarray, tris: np.ndarray) -> bytes:
    a, b, c = verts[tris[:, 0]], verts[tris[:, 1]], verts[tris[:, 2]]
    n = np.cross(b - a, c - a)
    norm = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.divide(n, norm, out=np.zeros_like(n), where=norm > 0)
    rec = np.zeros(len(tris), dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")])
    rec["n"] = n
    rec["v"] = np.stack([a, b, c], axis=1)
    header = b"crucible candidate".ljust(80, b" ")
    return header + struct.pack("<I", len(tris)) + rec.tobytes()


def write_step(shape, path: Path) -> bool:
    from OCP.IFSelect import IFSelect_RetDone
    from OCP.Interface import Interface_Static
    from OCP.STEPControl import STEPControl_AsIs, STEPControl_Writer

    Interface_Static.SetCVal_s("write.step.schema", "AP214")
    writer = STEPControl_Writer()
    if writer.Transfer(shape, STEPControl_AsIs) != IFSelect_RetDone:
        return False
    return writer.Write(str(path)) == IFSelect_RetDone
