"""The side-by-side mesh picture: a real PNG, decoded back here with zlib, whose pixels show the
candidate in orange on the left and the reference in grey-blue on the right, under one shared
world-to-screen transform."""

from __future__ import annotations

import struct
import time
import zlib

import numpy as np
import pytest

from verifiers.cad.render import (
    AXIS_RGB,
    BACKGROUND,
    DIVIDER,
    DIVIDER_PX,
    EDGE_SHADE,
    LEFT_RGB,
    RIGHT_RGB,
    TEXT_RGB,
    png_bytes,
    render_pair,
)

SIZE = 120


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


def tetrahedron(edge: float = 10.0) -> tuple[np.ndarray, np.ndarray]:
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float64) * edge
    t = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    return v, t


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
    """uint8 [H, W, 3] from an 8-bit RGB PNG, checking the chunks' CRCs and that every row has
    filter type 0 (None), the only one png_bytes writes."""
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
    assert not raw[:, 0].any()
    return raw[:, 1:].reshape(h, w, 3).copy()


def panels(img: np.ndarray, size: int = SIZE) -> tuple[np.ndarray, np.ndarray]:
    return img[:, :size], img[:, size + DIVIDER_PX :]


def hue_mask(img: np.ndarray, base) -> np.ndarray:
    """Pixels that are `base` scaled by some shade: the mesh's own colour, lit or outlined."""
    px = img.astype(np.float64)
    base = np.asarray(base, np.float64)
    k = (px @ base) / (base @ base)  # the best shade factor
    return (k > 0.25) & (k < 1.02) & (np.abs(px - k[..., None] * base).max(axis=-1) <= 3)


def centroid(mask: np.ndarray) -> np.ndarray:
    ii, jj = np.nonzero(mask)
    return np.array([jj.mean(), ii.mean()])


def render(left, right, **kw) -> np.ndarray:
    return decode_png(render_pair(left, right, size=kw.pop("size", SIZE), **kw))


# --- tests --------------------------------------------------------------------------------------


def test_png_header_and_size():
    data = render_pair(cube(), tetrahedron(), size=SIZE)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    w, h, depth, colour = struct.unpack(">IIBB", data[16:26])
    assert (w, h, depth, colour) == (2 * SIZE + DIVIDER_PX, SIZE, 8, 2)
    assert decode_png(data).shape == (SIZE, 2 * SIZE + DIVIDER_PX, 3)
    assert 500 < len(data) < 30_000


def test_png_bytes_round_trip():
    rgb = np.random.default_rng(0).integers(0, 256, (7, 11, 3), dtype=np.uint8)
    assert np.array_equal(decode_png(png_bytes(rgb)), rgb)
    with pytest.raises(ValueError):
        png_bytes(np.zeros((4, 4), np.uint8))


def test_candidate_orange_on_the_left_reference_grey_blue_on_the_right():
    img = render(cube(), tetrahedron())
    left, right = panels(img)
    assert hue_mask(left, LEFT_RGB).sum() > 500
    assert hue_mask(left, RIGHT_RGB).sum() == 0
    assert hue_mask(right, RIGHT_RGB).sum() > 300
    assert hue_mask(right, LEFT_RGB).sum() == 0
    for p in (left, right):  # white corners
        for corner in (p[0, 0], p[0, -1], p[-1, 0], p[-1, -1]):
            assert tuple(corner) == BACKGROUND
    divider = img[:, SIZE : SIZE + DIVIDER_PX].reshape(-1, 3)
    assert (divider == DIVIDER).all()
    # the labels, top-left, in the text colour
    for p in (left, right):
        assert (p[:12, :60] == TEXT_RGB).all(axis=-1).sum() > 20


def test_faces_are_shaded_apart_and_outlined():
    left, _ = panels(render(cube(), None))
    colours = {tuple(c) for c in left[hue_mask(left, LEFT_RGB)]}
    assert len(colours) >= 4  # three visible faces in three shades, plus the outline


def test_same_mesh_same_place_and_a_shift_shows():
    a, b = panels(render(cube(), cube()))
    ma, mb = hue_mask(a, LEFT_RGB), hue_mask(b, RIGHT_RGB)
    assert np.array_equal(ma, mb)  # one transform for both panels
    shifted = cube(origin=(5.0, 0.0, 0.0))  # half its size along +x
    a, b = panels(render(shifted, cube()))
    ca, cb = centroid(hue_mask(a, LEFT_RGB)), centroid(hue_mask(b, RIGHT_RGB))
    # +x is to the right (and a little down) in this view
    assert ca[0] - cb[0] > 8
    assert ca[1] - cb[1] > 0


def test_a_size_difference_shows():
    a, b = panels(render(cube(10.0), cube(5.0)))
    na, nb = hue_mask(a, LEFT_RGB).sum(), hue_mask(b, RIGHT_RGB).sum()
    assert 3.0 < na / nb < 5.0  # a quarter of the area at half the size


def test_none_leaves_a_blank_panel():
    left, right = panels(render(None, cube()))
    assert hue_mask(left, LEFT_RGB).sum() == 0
    assert hue_mask(left, RIGHT_RGB).sum() == 0
    assert hue_mask(right, RIGHT_RGB).sum() > 500
    # 'NO SHAPE' in the middle of the blank panel
    mid = left[SIZE // 2 - 8 : SIZE // 2 + 8]
    assert (mid == TEXT_RGB).all(axis=-1).sum() > 20
    left, right = panels(render(cube(), None))
    assert hue_mask(left, LEFT_RGB).sum() > 500
    assert hue_mask(right, RIGHT_RGB).sum() == 0
    both = render(None, None)
    assert hue_mask(both, LEFT_RGB).sum() == hue_mask(both, RIGHT_RGB).sum() == 0


def test_deterministic():
    """The same meshes give the same bytes whatever was drawn in between (nothing carries over
    from one picture to the next), and the input arrays are left as they were."""
    v, t = uv_sphere(24, 32)
    v0, t0 = v.copy(), t.copy()
    a = render_pair((v, t), cube(), size=SIZE)
    render_pair(cube(), (v, t), size=SIZE)
    render_pair(tetrahedron(), None)
    b = render_pair((v, t), cube(), size=SIZE)
    assert a == b
    assert np.array_equal(v, v0) and np.array_equal(t, t0)


def test_triad_at_the_bottom_left_of_each_mesh_panel():
    for mesh in (cube(), (np.zeros((0, 3)), np.zeros((0, 3), np.int64))):  # drawn, and empty
        left, right = panels(render(mesh, None))
        corner = left[-SIZE // 4 :, : SIZE // 4]
        for rgb in AXIS_RGB:
            assert (corner == rgb).all(axis=-1).sum() >= 5
        assert not any((right == rgb).all(axis=-1).any() for rgb in AXIS_RGB)  # none for None


def test_winding_does_not_matter():
    v, t = cube()
    rng = np.random.default_rng(1)
    flip = rng.random(len(t)) < 0.5
    mixed = np.where(flip[:, None], t[:, ::-1], t)
    assert render_pair((v, t), None, size=SIZE) == render_pair((v, mixed), None, size=SIZE)


def test_surfaces_come_out_solid():
    """Exact scan conversion: no background pixel inside a closed sphere's outline."""
    v, t = uv_sphere(40, 64)
    left, _ = panels(render((v, t), None))
    mask = hue_mask(left, LEFT_RGB)
    c = centroid(mask)
    radius = np.sqrt(mask.sum() / np.pi)
    ii, jj = np.mgrid[:SIZE, :SIZE]
    inside = (jj - c[0]) ** 2 + (ii - c[1]) ** 2 < (0.9 * radius) ** 2
    assert inside.sum() > 1000
    assert mask[inside].all()


def test_nearer_surface_wins():
    """A tilted square hovering over a flat one hides it, whatever the order of the triangles:
    alone on the left and over the flat one on the right (one transform for both), it shows
    the same shades."""
    flat = np.array([[-5, -5, 0], [15, -5, 0], [15, 15, 0], [-5, 15, 0]], dtype=np.float64)
    tilted = np.array([[0, 0, 5], [10, 0, 8], [10, 10, 8], [0, 10, 5]], dtype=np.float64)
    quad = np.array([[0, 1, 2], [0, 2, 3]])
    both = (np.concatenate([flat, tilted]), np.concatenate([quad, quad + 4]))
    img = render((tilted, quad), both)
    reordered = render((tilted, quad), (both[0], both[1][::-1]))
    assert np.array_equal(img, reordered)
    left, right = panels(img)
    kl = (left.astype(float) @ LEFT_RGB) / np.dot(LEFT_RGB, LEFT_RGB)
    kr = (right.astype(float) @ RIGHT_RGB) / np.dot(RIGHT_RGB, RIGHT_RGB)
    face = hue_mask(left, LEFT_RGB) & (np.abs(kl - EDGE_SHADE) > 0.02)  # the square, not its rim
    assert face.sum() > 200
    assert np.abs(kl[face] - kr[face]).max() < 0.01


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
def test_degenerate_meshes_give_an_empty_panel(mesh):
    left, right = panels(render(mesh, cube()))
    assert hue_mask(left, LEFT_RGB).sum() == 0
    assert hue_mask(right, RIGHT_RGB).sum() > 500
    left, right = panels(render(mesh, mesh))
    assert hue_mask(left, LEFT_RGB).sum() == hue_mask(right, RIGHT_RGB).sum() == 0


def test_bad_triangles_are_skipped_good_ones_drawn():
    v, t = cube()
    v = np.concatenate([v, [[np.nan, 1.0, 1.0], [1e308, 1e308, 0.0]]])
    bad = np.array([[0, 0, 1], [8, 1, 2], [9, 1, 2], [0, 1, 99], [-1, 1, 2]])
    clean = render(cube(), None)
    messy = render((v, np.concatenate([t, bad])), None)
    assert np.array_equal(clean, messy)
    floats = render((cube()[0], cube()[1].astype(np.float64)), None)
    assert np.array_equal(clean, floats)


def test_many_triangles_stay_quick():
    v, t = uv_sphere(100, 100)  # 20,000 triangles
    render_pair((v, t), (v, t))
    start = time.perf_counter()
    data = render_pair((v, t), (v + 3.0, t))
    assert time.perf_counter() - start < 1.0  # ~20 ms on a slow machine; this catches blowups
    assert len(data) < 30_000


def test_cadquery_box():
    cq = pytest.importorskip("cadquery")
    vs, ts = cq.Workplane().box(10, 20, 30).val().tessellate(0.1, 0.5)
    v = np.array([p.toTuple() for p in vs])
    t = np.array(ts)
    size = 160
    left, right = panels(render((v, t), (v, t), size=size), size)
    mask = hue_mask(left, LEFT_RGB)
    assert np.array_equal(mask, hue_mask(right, RIGHT_RGB))
    ii, jj = np.nonzero(mask)
    # 30 mm tall against 10 x 20 mm across: the picture is taller than wide
    assert ii.max() - ii.min() > jj.max() - jj.min() > 40
