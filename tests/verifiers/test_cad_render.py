"""The CAD picture: a real PNG, decoded back here with zlib, of the candidate drawn over its
reference in four views (top, isometric, front, right side) under a caption (verdict, IoU,
diagnosis) and a legend. Grey where both surfaces lie at the same place, orange where the
candidate's is nearer the viewer, blue where the reference's is.

Most tests draw plain numpy meshes (fast); the last ones judge a catalog part with CadQuery
(a rotated bracket) and check its picture says what the verdict says."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from verifiers.cad.render import (
    AXIS_RGB,
    BACKGROUND,
    CAND_RGB,
    DIVIDER,
    EDGE_SHADE,
    FAIL_RGB,
    HEADER_PX,
    HEIGHT,
    OVERLAP_RGB,
    PASS_RGB,
    REF_RGB,
    TEXT_RGB,
    VIEWS,
    WIDTH,
    Caption,
    png_bytes,
    render_views,
)

ROOT = Path(__file__).resolve().parents[2]


# --- meshes -------------------------------------------------------------------------------------


def cube(edge: float = 10.0, origin=(0.0, 0.0, 0.0)) -> tuple[np.ndarray, np.ndarray]:
    """An axis-aligned cube of 12 triangles, wound outwards."""
    v = np.array(
        [[x, y, z] for z in (0, 1) for y in (0, 1) for x in (0, 1)], dtype=np.float64
    ) * edge + np.asarray(origin, dtype=np.float64)
    t = np.array(
        [
            [0, 2, 1], [1, 2, 3],  # z = 0
            [4, 5, 6], [5, 7, 6],  # z = 1
            [0, 1, 4], [1, 5, 4],  # y = 0
            [2, 6, 3], [3, 6, 7],  # y = 1
            [0, 4, 2], [2, 4, 6],  # x = 0
            [1, 3, 5], [3, 7, 5],  # x = 1
        ]
    )  # fmt: skip
    return v, t


def box(dx: float, dy: float, dz: float) -> tuple[np.ndarray, np.ndarray]:
    v, t = cube(1.0)
    return v * [dx, dy, dz], t


def uv_sphere(n_lat: int, n_lon: int, r: float = 10.0) -> tuple[np.ndarray, np.ndarray]:
    """A closed sphere; the rings at the poles collapse to a point, so the triangles there have
    no area (the renderer must skip them)."""
    th = np.linspace(0, np.pi, n_lat + 1)[:, None]
    ph = np.linspace(0, 2 * np.pi, n_lon, endpoint=False)[None, :]
    v = np.stack(
        [r * np.sin(th) * np.cos(ph), r * np.sin(th) * np.sin(ph), r * np.cos(th) + 0 * ph], -1
    ).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(n_lat), np.arange(n_lon), indexing="ij")
    a, b = i * n_lon + j, (i + 1) * n_lon + j
    c, d = (i + 1) * n_lon + (j + 1) % n_lon, i * n_lon + (j + 1) % n_lon
    t = np.concatenate([np.stack([a, b, c], -1), np.stack([a, c, d], -1)]).reshape(-1, 3)
    return v, t


# --- decoding -----------------------------------------------------------------------------------


def decode_png(data: bytes) -> np.ndarray:
    """uint8 [H, W, 3] from an 8-bit RGB PNG, checking the chunks' CRCs; rows filtered None or
    Up (the only ones png_bytes writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        tag, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n : pos + 12 + n])
        assert crc == zlib.crc32(tag + body)
        pos += 12 + n
        if tag == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif tag == b"IDAT":
            idat += body
        elif tag == b"IEND":
            break
    assert header is not None
    w, h, depth, colour, _, _, interlace = header
    assert (depth, colour, interlace) == (8, 2, 0)
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 3 * w + 1)
    assert set(raw[:, 0].tolist()) <= {0, 2}
    rows = raw[:, 1:].copy()
    for i in range(1, h):
        if raw[i, 0] == 2:
            rows[i] += rows[i - 1]  # uint8: modulo 256
    return rows.reshape(h, w, 3)


def hue_mask(img: np.ndarray, base, lo: float = 0.35) -> np.ndarray:
    """Pixels that are `base` scaled by some shade: a colour's own faces, lit or outlined (only
    lit faces with lo=0.5: not the outline; never the grey text, 0.31 of the overlap grey)."""
    px = img.astype(np.float64)
    base = np.asarray(base, np.float64)
    k = (px @ base) / (base @ base)  # the best shade factor
    return (k > lo) & (k < 1.02) & (np.abs(px - k[..., None] * base).max(axis=-1) <= 3)


def centroid(mask: np.ndarray) -> np.ndarray:
    ii, jj = np.nonzero(mask)
    return np.array([jj.mean(), ii.mean()])


def render(cand, ref, caption=None, **kw):
    pic = render_views(cand, ref, caption, **kw)
    img = decode_png(pic.png)
    views = {p.name: img[p.y : p.y + p.h, p.x : p.x + p.w] for p in pic.panels}
    return pic, img, views


def counts(view: np.ndarray) -> dict[str, int]:
    return {
        "cand": int(hue_mask(view, CAND_RGB).sum()),
        "ref": int(hue_mask(view, REF_RGB).sum()),
        "both": int(hue_mask(view, OVERLAP_RGB).sum()),
    }


# --- layout -------------------------------------------------------------------------------------


def test_a_large_picture_of_four_views_under_the_caption():
    pic, img, views = render(cube(), cube(origin=(3.0, 3.0, 3.0)))
    data = pic.png
    assert data[12:16] == b"IHDR"
    w, h = struct.unpack(">II", data[16:24])
    assert (w, h) == (pic.width, pic.height) == (WIDTH, HEIGHT) == (1200, 900)
    assert img.shape == (900, 1200, 3)
    assert 2_000 < len(data) < 200_000
    assert [p.name for p in pic.panels] == [v.name for v in VIEWS]
    assert {p.name for p in pic.panels} == {"top", "iso", "front", "right"}
    boxes = {p.name: p for p in pic.panels}
    for p in pic.panels:  # inside the picture, below the caption band, big enough to read
        assert p.y >= HEADER_PX and p.x >= 0 and p.x + p.w <= w and p.y + p.h <= h
        assert p.w >= 500 and p.h >= 300
    for a in pic.panels:  # no two overlap
        for b in pic.panels:
            if a is not b:
                assert a.x + a.w <= b.x or b.x + b.w <= a.x or a.y + a.h <= b.y or b.y + b.h <= a.y
    # third-angle order: top above front, right beside front, the isometric view top right
    assert boxes["top"].x == boxes["front"].x and boxes["top"].y < boxes["front"].y
    assert boxes["right"].y == boxes["front"].y and boxes["right"].x > boxes["front"].x
    assert boxes["iso"].y == boxes["top"].y and boxes["iso"].x == boxes["right"].x
    # every view draws both parts (apart: every view sees the shift), says which view it is
    for name, view in views.items():
        c = counts(view)
        assert c["cand"] > 1000 and c["ref"] > 1000, (name, c)
        assert (view[:30, :300] == TEXT_RGB).all(axis=-1).sum() > 100, name
    for label in ("TOP (FROM +Z)", "ISOMETRIC", "FRONT (FROM -Y)", "RIGHT (FROM +X)"):
        assert label in pic.text
    # the dividers between the caption band and the views, and between the views
    assert (img[HEADER_PX] == DIVIDER).all()
    assert (img[boxes["front"].y - 1, :10] == DIVIDER).all()


def test_png_bytes_round_trip():
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (7, 11, 3), dtype=np.uint8)
    assert np.array_equal(decode_png(png_bytes(rgb)), rgb)
    assert np.array_equal(decode_png(png_bytes(rgb.astype(np.float64))), rgb)
    with pytest.raises(ValueError):
        png_bytes(np.zeros((4, 4), np.uint8))


# --- the caption and the legend -----------------------------------------------------------------


def test_caption_and_legend_are_in_the_picture():
    cap = Caption(
        "FAIL at iou: geometry_orientation   IoU 0.218746 (pass >= 0.999)",
        "diagnosis: rotated 270° about Z, it matches the reference: IoU 1.000000 after that",
        ok=False,
    )
    pic, img, _ = render(cube(), cube(origin=(5.0, 0.0, 0.0)), cap)
    head = img[:HEADER_PX]
    assert pic.text[0] == cap.headline.upper()
    assert pic.text[1] == cap.diagnosis.upper()  # one line: it fits
    assert "IOU 0.218746" in pic.text[0] and "ROTATED 270° ABOUT Z" in pic.text[1]
    # the headline in red, large (3 x 3 pixel dots: some 2,000 pixels), the diagnosis in grey
    assert (head[:40] == FAIL_RGB).all(axis=-1).sum() > 1500
    assert (head[40:100] == TEXT_RGB).all(axis=-1).sum() > 1000
    # the legend names the three colours, with a swatch of each in the band
    assert {"CANDIDATE", "REFERENCE", "OVERLAP (SAME SURFACE)"} <= set(pic.text)
    assert [c for _, c in pic.legend][:3] == [CAND_RGB, REF_RGB, OVERLAP_RGB]
    for rgb in (CAND_RGB, REF_RGB, OVERLAP_RGB):
        assert (head == rgb).all(axis=-1).sum() >= 50
    # a pass is green
    _, img, _ = render(cube(), cube(), Caption("PASS   IoU 1.000000", "", ok=True))
    assert (img[:40] == PASS_RGB).all(axis=-1).sum() > 500
    assert not (img[:40] == FAIL_RGB).all(axis=-1).any()


def test_a_long_diagnosis_wraps_and_is_cut_to_its_lines():
    words = " ".join(f"word{i}" for i in range(200))
    pic, _, _ = render(cube(), None, Caption("FAIL", words, ok=False))
    lines = pic.text[1 : 1 + 4]
    assert len(lines) == 4 and lines[-1].endswith("...")
    assert all(0 < len(line) * 12 - 2 <= WIDTH - 2 * 12 for line in lines)  # 12 px a glyph
    assert " ".join(lines).startswith("WORD0 WORD1 WORD2")
    assert pic.text[5] == "CANDIDATE"  # then the legend: no fifth diagnosis line
    # and a headline too long for the large glyphs is drawn smaller, then cut
    pic, _, _ = render(cube(), None, Caption("X" * 300))
    assert pic.text[0].endswith("...") and len(pic.text[0]) < 110


# --- what the colours say -----------------------------------------------------------------------


def test_the_same_part_is_all_overlap_grey():
    _, _, views = render(cube(), cube())
    for name, view in views.items():
        c = counts(view)
        assert c["both"] > 1000 and c["cand"] == c["ref"] == 0, (name, c)
    # two tessellations of one sphere: still grey, but for a few pixels on the rim
    _, _, views = render(uv_sphere(40, 64), uv_sphere(33, 50))
    for name, view in views.items():
        c = counts(view)
        assert c["cand"] + c["ref"] < 0.02 * c["both"], (name, c)


def test_a_shift_shows_in_the_views_that_see_it():
    _, _, views = render(cube(origin=(5.0, 0.0, 0.0)), cube())  # +X by half the edge
    for name in ("front", "top"):  # +X is to the right: orange right of blue, grey between
        v = views[name]
        c, r = hue_mask(v, CAND_RGB), hue_mask(v, REF_RGB)
        assert centroid(c)[0] - centroid(r)[0] > 30, name
        assert abs(c.sum() - r.sum()) < 0.1 * c.sum()
        assert hue_mask(v, OVERLAP_RGB).sum() > 0.8 * c.sum()
    # seen from +X the candidate's face is nearer: orange all over, the reference behind it
    # only as its dashed outline (blue edge colour, no blue face)
    v = views["right"]
    assert hue_mask(v, CAND_RGB, lo=0.5).sum() > 2000
    assert hue_mask(v, REF_RGB, lo=0.5).sum() == 0
    assert hue_mask(v, OVERLAP_RGB).sum() == 0
    hidden = (v == np.rint(np.asarray(REF_RGB) * EDGE_SHADE)).all(axis=-1).sum()
    assert hidden > 20

    # one transform per view for both: the orthographic views share one scale
    def across(view):
        drawn = hue_mask(view, CAND_RGB) | hue_mask(view, REF_RGB) | hue_mask(view, OVERLAP_RGB)
        return np.ptp(np.nonzero(drawn[40:].any(axis=0))[0])  # below the label

    assert abs(across(views["front"]) / across(views["right"]) - 1.5) < 0.05  # 15 mm to 10


def test_a_size_difference_shows():
    _, _, views = render(cube(10.0), cube(5.0))  # both from the origin
    # from -Y the small one's face lies on the big one's (grey): a quarter of it
    c = counts(views["front"])
    assert 3.0 < (c["cand"] + c["both"]) / c["both"] < 5.0, c
    assert c["ref"] == 0
    # from +Z and +X the big one's faces are nearer: the small one shows only dashed
    for name in ("top", "right"):
        v = views[name]
        # (a few grey pixels where both have a side face edge-on along the shared edges)
        assert counts(v)["both"] < 20 and hue_mask(v, REF_RGB, lo=0.5).sum() == 0, name
        assert (v == np.rint(np.asarray(REF_RGB) * EDGE_SHADE)).all(axis=-1).sum() > 20


def test_the_nearer_surface_wins_whatever_the_order_of_the_triangles():
    """A tilted square hovering over a flat one, seen from above: orange where it covers the
    flat one, blue around it, no grey; the triangles' order does not matter."""
    flat = np.array([[-5, -5, 0], [15, -5, 0], [15, 15, 0], [-5, 15, 0]], dtype=np.float64)
    tilted = np.array([[0, 0, 5], [10, 0, 8], [10, 10, 8], [0, 10, 5]], dtype=np.float64)
    quad = np.array([[0, 1, 2], [0, 2, 3]])
    a = render((tilted, quad), (flat, quad))
    b = render((tilted, quad[::-1]), (flat, quad[::-1, ::-1]))
    assert a[0].png == b[0].png
    top = a[2]["top"]
    c = counts(top)
    assert c["both"] == 0
    assert 0.15 < c["cand"] / (c["cand"] + c["ref"]) < 0.35  # 100 of 400 mm²
    # and with the reference over the candidate, the colours swap
    c2 = counts(render((flat, quad), (tilted, quad))[2]["top"])
    assert abs(c2["ref"] - c["cand"]) < 0.05 * c["cand"]


def test_faces_are_shaded_apart_and_outlined():
    _, _, views = render(cube(), None)
    iso = views["iso"]
    colours = {tuple(c) for c in iso[hue_mask(iso, CAND_RGB)]}
    assert len(colours) >= 4  # three visible faces in three shades, plus the outline


def test_surfaces_come_out_solid():
    """Exact scan conversion: no background pixel inside a closed sphere's outline."""
    _, _, views = render(uv_sphere(40, 64), None)
    for name in ("top", "front", "iso"):
        mask = hue_mask(views[name], CAND_RGB)
        c = centroid(mask)
        radius = np.sqrt(mask.sum() / np.pi)
        ii, jj = np.mgrid[: mask.shape[0], : mask.shape[1]]
        inside = (jj - c[0]) ** 2 + (ii - c[1]) ** 2 < (0.9 * radius) ** 2
        assert inside.sum() > 5000
        assert mask[inside].all(), name


def test_triad_at_the_bottom_left_of_every_view():
    _, _, views = render(cube(), None)
    for name, view in views.items():
        corner = view[-view.shape[0] // 4 :, : view.shape[1] // 6]
        for rgb in AXIS_RGB:  # each axis: a line, or a dot / cross along the line of sight
            assert (corner == rgb).all(axis=-1).sum() >= 10, (name, rgb)


# --- missing and broken meshes ------------------------------------------------------------------


def test_a_missing_shape_is_noted_in_every_view():
    pic, _, views = render(None, cube())
    assert "NO CANDIDATE SHAPE" in pic.text
    for view in views.values():
        c = counts(view)
        assert c["cand"] == c["both"] == 0 and c["ref"] > 500
        assert (view[:70] == FAIL_RGB).all(axis=-1).sum() > 100  # the note, under the label
    pic, _, views = render(cube(), None)
    assert "NO REFERENCE SHAPE" in pic.text
    assert all(counts(v)["cand"] > 500 and counts(v)["ref"] == 0 for v in views.values())
    pic, _, views = render(None, None)
    assert {"NO CANDIDATE SHAPE", "NO REFERENCE SHAPE"} <= set(pic.text)
    assert all(sum(counts(v).values()) == 0 for v in views.values())
    for view in views.values():  # blank, but for the label and the notes: no triad
        assert tuple(view[-1, -1]) == BACKGROUND
        assert not any((view == rgb).all(axis=-1).any() for rgb in AXIS_RGB)


@pytest.mark.parametrize(
    "mesh",
    [
        (np.zeros((0, 3)), np.zeros((0, 3), np.int64)),  # empty
        (np.zeros((3, 3)), np.array([[0, 1, 2]])),  # zero area
        (np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 5]])),  # out of range
        (np.array([[np.nan, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]])),  # NaN
        (np.array([[np.inf, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]])),  # inf
        (np.zeros((4, 2)), np.zeros((1, 2), np.int64)),  # wrong shapes
        ([], []),
    ],
)
def test_degenerate_meshes_are_noted_empty(mesh):
    pic, _, views = render(mesh, cube())
    assert "CANDIDATE: EMPTY MESH" in pic.text
    assert all(counts(v)["cand"] == 0 and counts(v)["ref"] > 500 for v in views.values())
    pic, _, views = render(mesh, mesh)
    assert all(sum(counts(v).values()) == 0 for v in views.values())


def test_bad_triangles_are_skipped_good_ones_drawn():
    v, t = cube()
    v = np.concatenate([v, [[np.nan, 1.0, 1.0], [1e308, 1e308, 0.0]]])
    bad = np.array([[0, 0, 1], [8, 1, 2], [9, 1, 2], [0, 1, 99], [-1, 1, 2]])
    clean = render_views(cube(), None).png
    assert render_views((v, np.concatenate([t, bad])), None).png == clean
    assert render_views((cube()[0], cube()[1].astype(np.float64)), None).png == clean


def test_deterministic_and_the_inputs_are_left_alone():
    """The same meshes give the same bytes whatever was drawn in between, and the input
    arrays are left as they were; the winding does not matter."""
    v, t = uv_sphere(24, 32)
    v0, t0 = v.copy(), t.copy()
    a = render_views((v, t), cube()).png
    render_views(cube(), (v, t))
    render_views(box(1, 2, 3), None, Caption("X", "Y"))
    assert render_views((v, t), cube()).png == a
    assert np.array_equal(v, v0) and np.array_equal(t, t0)
    cv, ct = cube()
    flip = np.random.default_rng(1).random(len(ct)) < 0.5
    mixed = np.where(flip[:, None], ct[:, ::-1], ct)
    assert render_views((cv, ct), None).png == render_views((cv, mixed), None).png


def test_many_triangles_and_a_small_picture():
    v, t = uv_sphere(100, 100)  # 20,000 triangles
    pic = render_views((v, t), (v + 3.0, t))
    assert len(pic.png) < 200_000
    pic, img, views = render((v, t), None, width=400, height=300)  # smaller: still 4 views
    assert img.shape == (300, 400, 3) and len(views) == 4
    assert all(counts(view)["cand"] > 100 for view in views.values())


# --- with CadQuery: a catalog part, judged ------------------------------------------------------


def _build(script: str):
    cq = pytest.importorskip("cadquery")
    g: dict = {"__name__": "__cad__", "show_object": lambda *a, **k: None}
    exec(compile(script, "ref.py", "exec"), g)  # a catalog reference: trusted code
    r = g["result"]
    return r.val().wrapped if isinstance(r, cq.Workplane) else r.wrapped


def test_cadquery_box_proportions():
    cq = pytest.importorskip("cadquery")
    vs, ts = cq.Workplane().box(10, 20, 30).val().tessellate(0.1, 0.5)
    mesh = (np.array([p.toTuple() for p in vs]), np.array(ts))
    _, _, views = render(mesh, mesh)

    def extent(view):
        ii, jj = np.nonzero(hue_mask(view, OVERLAP_RGB))
        return jj.max() - jj.min(), ii.max() - ii.min()  # (across, down)

    fw, fh = extent(views["front"])  # X across, Z up
    rw, rh = extent(views["right"])  # Y across, Z up
    tw, th = extent(views["top"])  # X across, Y up
    assert abs(fh / fw - 3) < 0.2 and abs(rw / fw - 2) < 0.15 and abs(th / tw - 2) < 0.15
    assert abs(fh - rh) <= 2 and abs(fw - tw) <= 2  # one scale: the views line up


@pytest.fixture(scope="module")
def bracket(tmp_path_factory):
    """The catalog's bracket_rot90_x judged against a candidate that forgot the rotation."""
    pytest.importorskip("cadquery")
    from OCP.BRepTools import BRepTools

    from verifiers.cad import judge

    d = tmp_path_factory.mktemp("bracket")
    script = (ROOT / "tasks/cad/bracket_rot90_x/ref.py").read_text()
    assert "ANGLE_X = 90.0" in script
    BRepTools.Write_s(_build(script), str(d / "ref.brep"))
    BRepTools.Write_s(_build(script.replace("ANGLE_X = 90.0", "ANGLE_X = 0.0")), str(d / "c.brep"))
    job = {"mode": "absolute", "iou_pass": 0.999, "surface_pass": 0.01,
           "chamfer_pass": 0.002, "euler": None}  # fmt: skip
    ref = judge.Reference(str(d / "ref.brep"))
    (d / "wrong").mkdir()
    (d / "right").mkdir()
    wrong = judge.judge(job, str(d / "c.brep"), ref, d / "wrong")
    right = judge.judge(job, str(d / "ref.brep"), ref, d / "right")
    return job, wrong, right


def test_a_rotated_part_shows_its_diagnosis(bracket):
    from verifiers.cad.judge import caption

    job, out, _ = bracket
    assert out["code"] == "geometry_orientation", out
    assert "about X" in out["diagnosis"]
    cap = caption(out, job)
    iou = out["metrics"]["iou"]
    assert cap.ok is False
    assert cap.headline.startswith("FAIL at iou: geometry_orientation")
    assert f"IoU {iou:.6f} (pass >= 0.999)" in cap.headline
    assert cap.diagnosis == f"diagnosis: {out['diagnosis']}"
    # the picture the judge wrote is that one: large, the caption in red, both parts apart
    png = Path(out["artifacts"]["picture"]).read_bytes()
    pic = render_views(None, None, cap)
    assert pic.text[:2] == (cap.headline.upper(), cap.diagnosis.upper())
    img = decode_png(png)
    assert img.shape == (HEIGHT, WIDTH, 3)
    assert (img[:40] == FAIL_RGB).all(axis=-1).sum() > 1500
    assert np.array_equal(img[:HEADER_PX], decode_png(pic.png)[:HEADER_PX])  # same caption
    panels = {p.name: img[p.y : p.y + p.h, p.x : p.x + p.w] for p in pic.panels}
    for name, view in panels.items():  # turned 90° about X: mostly apart in every view
        c = counts(view)
        assert c["cand"] > 2000 and c["ref"] > 2000, (name, c)


def test_a_passing_part_is_grey_and_says_pass(bracket):
    from verifiers.cad.judge import caption

    job, _, out = bracket
    assert out["failed"] is None
    cap = caption(out, job)
    assert cap.ok is True and cap.headline.startswith("PASS")
    assert "IoU 1.000000" in cap.headline and cap.diagnosis.startswith("matches the reference")
    img = decode_png(Path(out["artifacts"]["picture"]).read_bytes())
    assert (img[:40] == PASS_RGB).all(axis=-1).sum() > 500
    body = img[HEADER_PX:]
    c = counts(body)
    assert c["both"] > 20000 and c["cand"] == c["ref"] == 0


def test_caption_for_each_kind_of_verdict():
    from verifiers.cad.judge import caption

    job = {"mode": "absolute", "iou_pass": 0.99}
    ref = {"volume": 1.0}
    mismatch = {"failed": "iou", "code": "geometry_mismatch", "detail": "IoU 0.500000 < 0.99",
                "metrics": {"iou": 0.5, "reference": ref, "orientation_tried": 3}}  # fmt: skip
    cap = caption(mismatch, job)
    assert cap.headline == "FAIL at iou: geometry_mismatch   IoU 0.500000 (pass >= 0.99)"
    assert cap.diagnosis.startswith("diagnosis: IoU 0.500000 < 0.99; no rotation")
    assert "(3 tried)" in cap.diagnosis and cap.ok is False
    mismatch["metrics"]["orientation_tried"] = 0
    assert "(its volume or inertia rules them all out)" in caption(mismatch, job).diagnosis
    solid = {"failed": "solid", "code": "solid_count", "detail": "the result has 2 solids",
             "metrics": {"reference": ref}}  # fmt: skip
    cap = caption(solid, job)
    assert cap.headline == "FAIL at solid: solid_count   IoU not measured"
    assert cap.diagnosis == "diagnosis: the result has 2 solids"
    cap = caption({"failed": None, "metrics": {"iou": 0.4}}, {"mode": "normalized"})
    assert cap.ok is None and "NOT COMPARED" in cap.headline
    assert "IoU 0.400000 (normalized frame)" in cap.headline


def test_the_verifier_stores_this_picture_for_a_rotated_part():
    """End to end, through the sandboxed judge: the picture artifact of a wrong verdict is the
    four-view one, its caption saying the verdict's code, IoU and diagnosis."""
    pytest.importorskip("cadquery")
    from verifiers.cad.verifier import CadVerifier
    from verifiers.catalog import load_catalog
    from verifiers.contract import Status

    tasks, errors = load_catalog(ROOT / "tasks", ["cad"])
    assert not errors
    task = next(t for t in tasks if t.name == "bracket_rot90_x")
    wrong = task.reference.replace("ANGLE_X = 90.0", "ANGLE_X = 0.0")
    cad = CadVerifier(workers=1)
    try:
        v = cad.verify(task, wrong)
    finally:
        cad.close()
    assert (v.status, v.code) == (Status.WRONG_ANSWER, "geometry_orientation"), v.feedback
    png = next(a.data for a in v.artifacts if a.kind == "picture")
    img = decode_png(png)
    assert img.shape == (HEIGHT, WIDTH, 3)
    iou = v.metrics["iou"]
    cap = Caption(
        f"FAIL at iou: geometry_orientation   IoU {iou:.6f} (pass >= {task.harness['iou_pass']:g})",
        f"diagnosis: {v.metrics['diagnosis']}",
        ok=False,
    )
    assert v.metrics["diagnosis"] in v.feedback
    assert np.array_equal(
        img[:HEADER_PX], decode_png(render_views(None, None, cap).png)[:HEADER_PX]
    )
