"""A fast picture of two triangle meshes side by side, as a small PNG: candidate and reference.

Only numpy, zlib and struct: it runs for every verified candidate, so it must be cheap (a few
milliseconds for parts of a few thousand triangles) and carry no graphics stack.

How it draws: both meshes are seen orthographically from one isometric-ish direction with one
world-to-screen transform (the centre and scale come from the union of both bounding boxes), so a
shift, a turn or a size difference between them shows. Each panel is scan-converted exactly: every
triangle is cut into pixel rows, each row into the pixel centres it covers, and a z-buffer keeps
the nearest fragment per pixel (one `np.maximum.at` over keys that pack depth above the triangle
id). Small triangles that cover no pixel centre still leave their centroid, so small features
show. Shading
is flat Lambert per triangle with the normal turned towards the viewer (the winding may be
inconsistent), plus ambient; pixels on a silhouette, a depth jump or a crease are drawn darker,
which gives the outlined look of a CAD viewer. Labels use a built-in 5x7 bitmap font, and a small
X/Y/Z triad (red, green, blue) at the bottom-left of each panel shows the orientation.
"""

from __future__ import annotations

import functools
import math
import struct
import zlib
from itertools import pairwise
from typing import NamedTuple

import numpy as np

__all__ = ["png_bytes", "render_pair"]

Mesh = tuple[np.ndarray, np.ndarray]

BACKGROUND = (255, 255, 255)
DIVIDER = (215, 215, 215)
DIVIDER_PX = 2
LEFT_RGB = (240, 138, 44)  # candidate: warm orange
RIGHT_RGB = (112, 142, 186)  # reference: grey-blue
TEXT_RGB = (55, 55, 55)
AXIS_RGB = ((215, 35, 35), (25, 150, 40), (35, 75, 230))  # X red, Y green, Z blue
AMBIENT = 0.36
DIFFUSE = 0.64
EDGE_SHADE = 0.42  # outline colour: the base colour times this
CREASE_COS = math.cos(math.radians(38.0))  # neighbouring normals further apart than this: crease
DEPTH_JUMP_PX = 3.0  # a depth step between neighbouring pixels above this many pixel widths
AZIMUTH_DEG = -52.0  # view from the front (-Y), right (+X) and above (+Z), Z up
ELEVATION_DEG = 30.0
PNG_LEVEL = 6
CHUNK = 4096  # triangles scan-converted at a time
ROWS = 4096  # pixel rows scanned at a time
FRAGS = 16384  # pixels z-buffered at a time
LONE_PX = 2.0  # a triangle smaller than this (both ways) always leaves a pixel
_CODE_EDGE, _CODE_BACKGROUND = 256, 257  # pixel codes past the 256 light levels
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _view_basis() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(right, up, towards-viewer) unit vectors of the fixed view, Z up."""
    az, el = math.radians(AZIMUTH_DEG), math.radians(ELEVATION_DEG)
    view = np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
    right = np.cross([0.0, 0.0, 1.0], view)
    right /= np.linalg.norm(right)
    up = np.cross(view, right)
    return right, up, view


_RIGHT, _UP, _VIEW = _view_basis()
# the X, Y and Z axes on screen (x right, y down), per pixel of length
_TRIAD = [(float(_RIGHT[i]), -float(_UP[i])) for i in range(3)]
# light from the upper left, in front of the viewer
_LIGHT = -0.45 * _RIGHT + 0.65 * _UP + 1.0 * _VIEW
_LIGHT /= np.linalg.norm(_LIGHT)


# --- the 5x7 font: 7 rows of 5 bits each, as hex pairs ----------------------------------------

_FONT_HEX = {
    "A": "0E11111F111111", "B": "1E11111E11111E", "C": "0E11101010110E", "D": "1C12111111121C",
    "E": "1F10101E10101F", "F": "1F10101E101010", "G": "0E11101711110F", "H": "1111111F111111",
    "I": "0E04040404040E", "J": "0702020202120C", "K": "11121418141211", "L": "1010101010101F",
    "M": "111B1515111111", "N": "11111915131111", "O": "0E11111111110E", "P": "1E11111E101010",
    "Q": "0E11111115120D", "R": "1E11111E141211", "S": "0F10100E01011E", "T": "1F040404040404",
    "U": "1111111111110E", "V": "11111111110A04", "W": "1111111515150A", "X": "11110A040A1111",
    "Y": "1111110A040404", "Z": "1F01020408101F", "0": "0E11131519110E", "1": "040C040404040E",
    "2": "0E11010204081F", "3": "1F02040201110E", "4": "02060A121F0202", "5": "1F101E0101110E",
    "6": "0608101E11110E", "7": "1F010204080808", "8": "0E11110E11110E", "9": "0E11110F01020C",
    " ": "00000000000000", ".": "00000000000C0C", ",": "000000000C0408", ":": "000C0C000C0C00",
    "%": "18190204081303", "-": "0000001F000000", "+": "0004041F040400", "=": "00001F001F0000",
    "_": "0000000000001F", "/": "00010204081000", "(": "02040808080402", ")": "08040202020408",
    "<": "02040810080402", ">": "08040201020408", "!": "04040404040004", "?": "0E110102040004",
    "#": "0A0A1F0A1F0A0A",
}  # fmt: skip
GLYPH_W, GLYPH_H = 5, 7


def _glyph(hexrows: str) -> tuple[np.ndarray, np.ndarray]:
    """The (rows, columns) of the lit pixels of a glyph."""
    rows = [int(hexrows[i : i + 2], 16) for i in range(0, 2 * GLYPH_H, 2)]
    return np.nonzero([[(r >> (GLYPH_W - 1 - c)) & 1 for c in range(GLYPH_W)] for r in rows])


_FONT = {ch: _glyph(h) for ch, h in _FONT_HEX.items()}


def _text_width(text: str) -> int:
    """Pixels that `text` takes in the 5x7 font (1 pixel between glyphs)."""
    return max(0, len(text) * (GLYPH_W + 1) - 1)


def _draw_text(img: np.ndarray, text: str, x: int, y: int, rgb: tuple[int, ...]) -> None:
    """Draw `text` (upper-cased; unknown characters as '?') with its top-left corner at (x, y),
    clipped to the image."""
    glyphs = [_FONT.get(ch, _FONT["?"]) for ch in text.upper()]
    if not glyphs:
        return
    ys = np.concatenate([gy for gy, _ in glyphs]) + y
    xs = np.concatenate([gx + i * (GLYPH_W + 1) for i, (_, gx) in enumerate(glyphs)]) + x
    h, w = img.shape[:2]
    ok = (ys >= 0) & (ys < h) & (xs >= 0) & (xs < w)
    img[ys[ok], xs[ok]] = rgb


# --- PNG ----------------------------------------------------------------------------------------


def _chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


def png_bytes(rgb: np.ndarray) -> bytes:
    """An 8-bit RGB PNG (colour type 2) of `rgb` (uint8 [H, W, 3]), written with zlib and struct.

    Every row has filter type 0 (None): these flat-shaded pictures of few colours deflate
    smaller that way than with Sub, Up or a per-row choice among them (measured: 5.7 KB against
    6.0-6.5 KB for a typical part), and it costs nothing. Deflated at level 6."""
    a = np.asarray(rgb)
    if a.ndim != 3 or a.shape[2] != 3 or a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"png_bytes wants an [H, W, 3] array, got shape {a.shape}")
    if a.dtype != np.uint8:
        a = np.clip(np.nan_to_num(a.astype(np.float64)), 0, 255).astype(np.uint8)
    h, w, _ = a.shape
    out = np.zeros((h, w * 3 + 1), np.uint8)  # filter type 0 (None) on every row
    out[:, 1:] = a.reshape(h, w * 3)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"".join(
        (
            _PNG_SIGNATURE,
            _chunk(b"IHDR", ihdr),
            _chunk(b"IDAT", zlib.compress(out.tobytes(), PNG_LEVEL)),
            _chunk(b"IEND", b""),
        )
    )


# --- meshes -------------------------------------------------------------------------------------


class _Mesh(NamedTuple):
    """A mesh cut down to its drawable triangles, as separate coordinate and index columns."""

    x: np.ndarray  # vertex coordinates [N]
    y: np.ndarray
    z: np.ndarray
    t0: np.ndarray  # corner indices of the kept triangles [M]
    t1: np.ndarray
    t2: np.ndarray
    nx: np.ndarray  # unit normals of the kept triangles [M]
    ny: np.ndarray
    nz: np.ndarray
    lo: np.ndarray  # bounding box of the vertices in use [3]
    hi: np.ndarray


def _clean(mesh: Mesh) -> _Mesh | None:
    """The triangles with three in-range corners, all finite, and a non-zero area; None when no
    triangle is left (or the arrays make no sense)."""
    try:
        v = np.asarray(mesh[0], dtype=np.float64)
        t = np.asarray(mesh[1])
    except (TypeError, ValueError, IndexError):
        return None
    if v.size == 0 or t.size == 0 or v.size % 3 or t.size % 3:
        return None
    v = v.reshape(-1, 3)
    t = t.reshape(-1, 3)
    if t.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            t = np.where(np.isfinite(t) & (t == np.round(t)), t, -1)
    elif t.dtype.kind not in "iu":
        return None
    t = t.astype(np.int64)
    n = len(v)
    if t.min() < 0 or t.max() >= n:
        t = t[((t >= 0) & (t < n)).all(axis=1)]
        if not len(t):
            return None
    x, y, z = (np.ascontiguousarray(v[:, i]) for i in range(3))
    t0, t1, t2 = (np.ascontiguousarray(t[:, i]) for i in range(3))
    with np.errstate(all="ignore"):  # NaN and inf corners give a non-finite normal: dropped
        ax, ay, az = x[t0], y[t0], z[t0]
        ux, uy, uz = x[t1] - ax, y[t1] - ay, z[t1] - az
        wx, wy, wz = x[t2] - ax, y[t2] - ay, z[t2] - az
        nx = uy * wz - uz * wy
        ny = uz * wx - ux * wz
        nz = ux * wy - uy * wx
        length = np.sqrt(nx * nx + ny * ny + nz * nz)
        keep = np.isfinite(length) & (length > 0)
    if not keep.all():
        if not keep.any():
            return None
        t0, t1, t2, nx, ny, nz, length = (a[keep] for a in (t0, t1, t2, nx, ny, nz, length))
    nx /= length
    ny /= length
    nz /= length
    used = np.zeros(n, bool)
    used[t0] = used[t1] = used[t2] = True
    ux, uy, uz = x[used], y[used], z[used]
    lo = np.array([ux.min(), uy.min(), uz.min()])
    hi = np.array([ux.max(), uy.max(), uz.max()])
    return _Mesh(x, y, z, t0, t1, t2, nx, ny, nz, lo, hi)


class _Fit(NamedTuple):
    """The world-to-screen transform shared by both panels."""

    scale: float  # pixels per mm
    rc: float  # the view coordinates (right, up) that land on the panel point (xc, yc)
    uc: float
    xc: float
    yc: float
    zlo: float  # the depth range of the union box
    zhi: float


def _fit(meshes: list[_Mesh], size: int) -> _Fit | None:
    """The transform that fits the projection of the union of the bounding boxes into a panel
    (below the label), or None when nothing is drawable."""
    if not meshes:
        return None
    lo = np.min([m.lo for m in meshes], axis=0)
    hi = np.max([m.hi for m in meshes], axis=0)
    corners = np.array(
        [[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    )
    with np.errstate(all="ignore"):
        r, u, d = corners @ _RIGHT, corners @ _UP, corners @ _VIEW
        top = max(12, size // 14)  # room for the label
        pad = max(4, size // 30)
        avail_w, avail_h = size - 1 - 2 * pad, size - 1 - top - pad
        ext_r, ext_u = float(r.max() - r.min()), float(u.max() - u.min())
        ext = max(ext_r, ext_u)
        if not math.isfinite(ext) or not math.isfinite(float(d.max() - d.min())):
            return None
        ext = max(ext, 1e-9 * max(1.0, float(np.abs(corners).max())), 1e-300)
        scale = min(avail_w / max(ext_r, ext * 1e-6), avail_h / max(ext_u, ext * 1e-6))
    if not math.isfinite(scale) or scale <= 0:
        return None
    return _Fit(
        scale,
        float(r.max() + r.min()) / 2,
        float(u.max() + u.min()) / 2,
        pad + avail_w / 2,
        top + avail_h / 2,
        float(d.min()),
        float(d.max()),
    )


def _rasterize(meshes: list[_Mesh], fit: _Fit, size: int) -> tuple[np.ndarray, int, float]:
    """Z-buffer of the meshes, one panel each, on a grid of panels stacked top to bottom with an
    empty row between them: panel p holds the rows p*(size+1) .. p*(size+1)+size-1, and pixel
    (i, j) is centred at x=j, y=i. One pass of numpy calls for all the panels.

    A triangle whose bounding box holds no pixel centre leaves its centroid. Any other, its
    corners sorted by y, splits at the middle corner into a top and a bottom trapezoid bounded
    by a left and a right edge; every pixel row a trapezoid crosses gives the span of pixel
    centres between its edges, and the triangle's plane gives their depths. An edge is always
    evaluated from the same end, so neighbouring triangles agree on the pixels along the edge
    they share.

    Returns (keys [rows*size] int64: -1 where empty, else depth quantum << bits | triangle index
    in the meshes concatenated, bits, depth quanta per mm); larger depth is nearer the viewer."""
    w = size
    counts = [len(mm.t0) for mm in meshes]
    m = sum(counts)
    bits = max(1, int(m - 1).bit_length())
    dbits = min(40, 62 - bits)
    qmax = float((1 << dbits) - 1)
    zspan = max(fit.zhi - fit.zlo, 1e-300)
    qscale = qmax / zspan * (1 - 1e-6)
    zoff = fit.zlo - zspan * 5e-7  # depth quanta stay inside [0, qmax] despite rounding
    rx, ry, rz = _RIGHT * fit.scale
    ux, uy, uz = _UP * -fit.scale
    vx, vy, vz = _VIEW * qscale
    xs, ys, zs, t0s, t1s, t2s = [], [], [], [], [], []
    voff = 0
    with np.errstate(all="ignore"):  # vertices that no kept triangle uses may be NaN
        for p, mm in enumerate(meshes):
            xs.append(mm.x * rx + mm.y * ry + mm.z * rz + (fit.xc - fit.rc * fit.scale))
            ys.append(
                mm.x * ux + mm.y * uy + mm.z * uz + (fit.yc + fit.uc * fit.scale + p * (w + 1))
            )
            zs.append(mm.x * vx + mm.y * vy + mm.z * vz - zoff * qscale)
            t0s.append(mm.t0 + voff)
            t1s.append(mm.t1 + voff)
            t2s.append(mm.t2 + voff)
            voff += len(mm.x)
    px, py, pz, t0, t1, t2 = (a[0] if len(a) == 1 else np.concatenate(a)
                              for a in (xs, ys, zs, t0s, t1s, t2s))  # fmt: skip
    top = np.repeat(np.arange(len(meshes), dtype=np.float64) * (w + 1), counts)
    buf = np.full((len(meshes) * (w + 1) - 1) * w, -1, np.int64)
    # in chunks of triangles: the temporaries stay small (cache-sized, no fresh pages)
    for c in range(0, m, CHUNK):
        sl = slice(c, c + CHUNK)
        _raster_chunk(buf, px, py, pz, t0[sl], t1[sl], t2[sl], top[sl], c, w, bits, qmax)
    return buf, bits, qscale


def _raster_chunk(
    buf: np.ndarray,
    px: np.ndarray,
    py: np.ndarray,
    pz: np.ndarray,
    t0: np.ndarray,
    t1: np.ndarray,
    t2: np.ndarray,
    top_row: np.ndarray,
    first: int,
    w: int,
    bits: int,
    qmax: float,
) -> None:
    """Scan-convert the triangles (t0, t1, t2) (numbered from `first`) into the z-buffer."""
    m = len(t0)
    X0, Y0, Z0 = px[t0], py[t0], pz[t0]
    X1, Y1, Z1 = px[t1], py[t1], pz[t1]
    X2, Y2, Z2 = px[t2], py[t2], pz[t2]

    # only the triangles whose bounding box holds a pixel centre go row by row
    ymin = np.minimum(np.minimum(Y0, Y1), Y2)
    ymax = np.maximum(np.maximum(Y0, Y1), Y2)
    xmin = np.minimum(np.minimum(X0, X1), X2)
    xmax = np.maximum(np.maximum(X0, X1), X2)
    live = np.maximum(np.ceil(ymin), top_row) <= np.minimum(np.floor(ymax), top_row + (w - 1))
    live &= np.maximum(np.ceil(xmin), 0) <= np.minimum(np.floor(xmax), w - 1)
    ids = np.flatnonzero(live)
    x0, y0, z0, x1, y1, z1, x2, y2, z2, rlo = (
        a[ids] for a in (X0, Y0, Z0, X1, Y1, Z1, X2, Y2, Z2, top_row)
    )
    rhi = rlo + (w - 1)

    # the corners in y order: a compare-swap network
    x0, x1, y0, y1, z0, z1 = _swap(y1 < y0, x0, x1, y0, y1, z0, z1)
    x1, x2, y1, y2, z1, z2 = _swap(y2 < y1, x1, x2, y1, y2, z1, z2)
    x0, x1, y0, y1, z0, z1 = _swap(y1 < y0, x0, x1, y0, y1, z0, z1)

    n_live = len(ids)
    prm = np.empty((7, 2, n_live))  # per trapezoid: left x0, slope; right x0, slope; plane
    with np.errstate(all="ignore"):
        dx1, dy1, dz1 = x1 - x0, y1 - y0, z1 - z0
        dx2, dy2, dz2 = x2 - x0, y2 - y0, z2 - z0
        dy3 = y2 - y1
        det = dx1 * dy2 - dy1 * dx2  # < 0: the middle corner lies left of the long edge
        # the plane z = p0 + a x + b y (an edge-on triangle: z along its long edge)
        flat = np.abs(det) < 1e-9
        sdet = np.where(flat, 1.0, det)
        a = np.where(flat, 0.0, (dz1 * dy2 - dz2 * dy1) / sdet)
        b = np.where(flat, dz2 / np.where(dy2 > 0, dy2, np.inf), (dz2 * dx1 - dz1 * dx2) / sdet)
        prm[4] = z0 - a * x0 - b * y0
        prm[5] = a
        prm[6] = b
        # edges as x = x_at_row_0 + row * slope, all from their upper end
        sl = np.where(dy2 > 0, dx2 / np.where(dy2 > 0, dy2, 1.0), 0.0)
        st = np.where(dy1 > 0, dx1 / np.where(dy1 > 0, dy1, 1.0), 0.0)
        sb = np.where(dy3 > 0, (x2 - x1) / np.where(dy3 > 0, dy3, 1.0), 0.0)
    xl0, xt0, xb0 = x0 - y0 * sl, x0 - y0 * st, x1 - y1 * sb
    short_left = det < 0
    prm[0, 0] = np.where(short_left, xt0, xl0)
    prm[0, 1] = np.where(short_left, xb0, xl0)
    prm[1, 0] = np.where(short_left, st, sl)
    prm[1, 1] = np.where(short_left, sb, sl)
    prm[2, 0] = np.where(short_left, xl0, xt0)
    prm[2, 1] = np.where(short_left, xl0, xb0)
    prm[3, 0] = np.where(short_left, sl, st)
    prm[3, 1] = np.where(short_left, sl, sb)
    # rows: the top trapezoid takes y0 <= row < y1 (row <= y1 when the bottom one is flat),
    # the bottom one y1 <= row <= y2; a triangle flat in y covers no row
    lower = dy3 > 0
    r0 = np.empty((2, n_live))
    r1 = np.empty((2, n_live))
    np.maximum(np.ceil(y0), rlo, out=r0[0])
    np.maximum(np.ceil(y1), rlo, out=r0[1])
    np.minimum(np.where(lower, np.ceil(y1) - 1, np.floor(y1)), rhi, out=r1[0])
    np.minimum(np.where(lower, np.floor(y2), -1.0), rhi, out=r1[1])
    r1 -= r0
    r1 += 1
    r1[:, dy2 <= 0] = 0
    nrows = np.maximum(r1, 0, out=r1).astype(np.int64).ravel()
    r0 = r0.ravel()

    covered = np.zeros(m, bool)
    trap_tri = np.concatenate([ids, ids])
    prm = prm.reshape(7, 2 * n_live)
    # the rows in groups of about ROWS, whole trapezoids each
    ends = np.cumsum(nrows)
    cuts = np.searchsorted(ends, np.arange(ROWS, int(ends[-1]) if len(ends) else 0, ROWS))
    bounds = [0, *np.unique(cuts).tolist(), len(nrows)]
    for ga, gb in pairwise(bounds):
        if gb > ga:
            g = slice(ga, gb)
            _scan_rows(buf, prm[:, g], r0[g], nrows[g], trap_tri[g], first, covered, w, bits, qmax)
    # a small triangle with no pixel centre inside leaves its centroid, so that small features
    # show; a long thin one does not: its neighbours cover it, and its centroid, rounded to a
    # pixel outside the outline, would roughen the outline
    lone = np.flatnonzero(~covered & (xmax - xmin < LONE_PX) & (ymax - ymin < LONE_PX))
    if len(lone):
        cx = np.rint((X0[lone] + X1[lone] + X2[lone]) * (1 / 3))
        cy = np.rint((Y0[lone] + Y1[lone] + Y2[lone]) * (1 / 3))
        tr = top_row[lone]
        ok = (cx >= 0) & (cx < w) & (cy >= tr) & (cy < tr + w)
        lone, cx, cy = lone[ok], cx[ok], cy[ok]
        q = np.clip((Z0[lone] + Z1[lone] + Z2[lone]) * (1 / 3), 0, qmax).astype(np.int64)
        np.maximum.at(buf, (cy * w + cx).astype(np.int64), (q << bits) | (lone + first))


def _scan_rows(
    buf: np.ndarray,
    prm: np.ndarray,
    r0: np.ndarray,
    nrows: np.ndarray,
    trap_tri: np.ndarray,
    first: int,
    covered: np.ndarray,
    w: int,
    bits: int,
    qmax: float,
) -> None:
    """The pixel spans of the rows of some trapezoids into the z-buffer; marks `covered` the
    triangles that got a pixel."""
    k = int(nrows.sum())
    if not k:
        return
    trap = np.repeat(np.arange(len(nrows)), nrows)
    row = (r0 - (np.cumsum(nrows) - nrows)).take(trap)
    row += np.arange(k)
    xl = prm[1].take(trap)
    xl *= row
    xl += prm[0].take(trap)
    xr = prm[3].take(trap)
    xr *= row
    xr += prm[2].take(trap)
    c0 = np.ceil(xl)
    np.maximum(c0, 0, out=c0)
    c1 = np.floor(xr, out=xr)
    np.minimum(c1, w - 1, out=c1)
    c1 -= c0
    ncols = c1.astype(np.int64)
    ncols += 1
    np.maximum(ncols, 0, out=ncols)
    ra = prm[5].take(trap)
    zs = prm[6].take(trap)  # the depth at the first pixel of the span
    zs *= row
    zs += prm[4].take(trap)
    zs += c0 * ra
    ra[ncols < 2] = 0.0  # the depth step along the row, where the span has a second pixel
    row *= w
    row += c0  # the index of the first pixel
    tri = trap_tri.take(trap)
    covered[tri[ncols > 0]] = True
    tri += first
    # the spans in groups of about FRAGS pixels, whole rows each
    ends = np.cumsum(ncols)
    cuts = np.searchsorted(ends, np.arange(FRAGS, int(ends[-1]), FRAGS), side="right")
    for a, b in pairwise([0, *np.unique(cuts).tolist(), k]):
        if b > a:
            _spans(buf, row[a:b], zs[a:b], ra[a:b], ncols[a:b], tri[a:b], bits, qmax)


def _spans(
    buf: np.ndarray,
    pix0: np.ndarray,
    z0: np.ndarray,
    dz: np.ndarray,
    ncols: np.ndarray,
    tri: np.ndarray,
    bits: int,
    qmax: float,
) -> None:
    """Pixels pix0 .. pix0 + ncols - 1 of each span, at depths z0 + i * dz, into the z-buffer."""
    n = int(ncols.sum())
    if not n:
        return
    start = np.cumsum(ncols)
    start -= ncols
    startf = start.astype(np.float64)
    idx = np.arange(n, dtype=np.float64)
    pix = np.repeat(pix0 - startf, ncols)
    pix += idx
    idx *= np.repeat(dz, ncols)
    q = np.repeat(z0 - startf * dz, ncols)
    q += idx
    np.clip(q, 0, qmax, out=q)
    key = q.astype(np.int64)
    key <<= bits
    key |= np.repeat(tri, ncols)
    np.maximum.at(buf, pix.astype(np.int64), key)


def _swap(s: np.ndarray, *pairs: np.ndarray) -> tuple[np.ndarray, ...]:
    """(p, q) pairs ordered so that q comes first where `s`: (p0, q0, p1, q1, ...) in, out."""
    out: list[np.ndarray] = []
    for p, q in zip(pairs[::2], pairs[1::2], strict=True):
        out += [np.where(s, q, p), np.where(s, p, q)]
    return tuple(out)


def _shade(meshes: list[_Mesh], bases: list[tuple[int, int, int]], fit: _Fit, size: int):
    """The panels (uint8 [size, size, 3] each) of the meshes, each in its base colour."""
    buf, bits, qscale = _rasterize(meshes, fit, size)
    h = len(buf) // size
    key = buf.reshape(h, size)

    # gap fill: an empty pixel with >= 3 filled 4-neighbours takes the nearest of them
    pk = np.full((h + 2, size + 2), -1, np.int64)
    pk[1:-1, 1:-1] = key
    nbrs = (pk[:-2, 1:-1], pk[2:, 1:-1], pk[1:-1, :-2], pk[1:-1, 2:])
    count = np.zeros((h, size), np.uint8)
    for nb in nbrs:
        count += nb >= 0
    fill = (key < 0) & (count >= 3)
    if fill.any():
        ii, jj = np.nonzero(fill)
        key[ii, jj] = np.maximum.reduce([nb[ii, jj] for nb in nbrs])
        pk[1:-1, 1:-1] = key

    pf = pk >= 0
    filled = pf[1:-1, 1:-1]
    # silhouette: a drawn pixel next to an empty one
    edge = filled & ~(pf[:-2, 1:-1] & pf[2:, 1:-1] & pf[1:-1, :-2] & pf[1:-1, 2:])
    tri = key & ((1 << bits) - 1)
    nx, ny, nz = (np.concatenate([getattr(mm, c) for mm in meshes]) for c in ("nx", "ny", "nz"))
    along = nx * _VIEW[0] + ny * _VIEW[1] + nz * _VIEW[2]
    facing = np.where(along < 0, -1.0, 1.0)
    fx, fy, fz = nx * facing, ny * facing, nz * facing  # turned towards the viewer
    towards = np.abs(along)  # = (fx, fy, fz) . view
    quanta_px = qscale / fit.scale  # depth quanta per pixel width
    jump = DEPTH_JUMP_PX * quanta_px
    with np.errstate(all="ignore"):  # the depth step per pixel of each triangle's plane
        across = np.abs(fx * _RIGHT[0] + fy * _RIGHT[1] + fz * _RIGHT[2]) / towards * quanta_px
        down = np.abs(fx * _UP[0] + fy * _UP[1] + fz * _UP[2]) / towards * quanta_px
    # creases and depth steps between neighbours from different triangles: the nearer is edge.
    # A step is one that neither plane explains: a sphere's rim seen edge-on is no edge
    for di, dj, slope in ((0, 1, across), (1, 0, down)):
        ta, tb = tri[: h - di, : size - dj], tri[di:, dj:]
        both = filled[: h - di, : size - dj] & filled[di:, dj:]
        ii, jj = np.nonzero(both & (ta != tb))
        if not len(ii):
            continue
        ia, ib = ta[ii, jj], tb[ii, jj]
        dot = fx[ia] * fx[ib] + fy[ia] * fy[ib] + fz[ia] * fz[ib]
        za, zb = key[ii, jj] >> bits, key[ii + di, jj + dj] >> bits  # depth: nearer is larger
        step = np.abs(za - zb) > jump + 1.5 * np.minimum(slope[ia], slope[ib])
        e = (dot < CREASE_COS) | step
        near_a = e & (za >= zb)
        near_b = e & (za < zb)
        edge[ii[near_a], jj[near_a]] = True
        edge[ii[near_b] + di, jj[near_b] + dj] = True

    # a code per pixel: 0-255 the light level of a face, EDGE, or BACKGROUND; then a colour table
    light = np.clip(fx * _LIGHT[0] + fy * _LIGHT[1] + fz * _LIGHT[2], 0, 1)
    level = np.rint(light * (255 * DIFFUSE) + 255 * AMBIENT).astype(np.uint16)
    code = np.full(h * size, _CODE_BACKGROUND, np.uint16)
    drawn = np.flatnonzero(filled)
    code[drawn] = level.take(tri.ravel().take(drawn))
    code[edge.ravel()] = _CODE_EDGE
    panels = []
    for p, base in enumerate(bases):
        lut = np.empty((_CODE_BACKGROUND + 1, 3), np.uint8)
        basef = np.asarray(base, np.float64)
        lut[:256] = np.rint(np.arange(256)[:, None] / 255 * basef)
        lut[_CODE_EDGE] = np.rint(basef * EDGE_SHADE)
        lut[_CODE_BACKGROUND] = BACKGROUND
        rows = code[p * (size + 1) * size : (p * (size + 1) + size) * size]
        panels.append(lut.take(rows, axis=0).reshape(size, size, 3))
    return panels


def _draw_line(img: np.ndarray, x0: float, y0: float, x1: float, y1: float, rgb) -> None:
    steps = int(max(abs(x1 - x0), abs(y1 - y0)) * 2) + 1
    s = np.linspace(0.0, 1.0, steps + 1)
    xs = np.rint(x0 + (x1 - x0) * s).astype(np.int64)
    ys = np.rint(y0 + (y1 - y0) * s).astype(np.int64)
    h, w = img.shape[:2]
    ok = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
    img[ys[ok], xs[ok]] = rgb


def _draw_triad(panel: np.ndarray) -> None:
    """X (red), Y (green), Z (blue) from one point at the bottom-left, seen like the meshes."""
    drawn, rgb = _triad(panel.shape[0])
    panel[drawn] = rgb


@functools.lru_cache(maxsize=8)
def _triad(size: int) -> tuple[np.ndarray, np.ndarray]:
    """The triad of a size x size panel, drawn once: which pixels (bool [size, size]) in which
    colours (uint8 [n, 3]); read-only, as they are shared."""
    stamp = np.zeros((size, size, 4), np.uint8)  # RGB, and 255 where drawn
    length = max(6.0, size / 18)
    ox, oy = 3 + length * 0.9, size - 4 - length * 0.9
    order = np.argsort(_VIEW, kind="stable")  # far axes first, near ones drawn over
    for i in order:
        dx, dy = _TRIAD[i]
        _draw_line(stamp, ox, oy, ox + length * dx, oy + length * dy, (*AXIS_RGB[i], 255))
    if size >= 120:  # letters only where they fit
        for i in order:
            dx, dy = _TRIAD[i]
            norm = math.hypot(dx, dy) or 1.0
            lx = ox + length * dx + 4 * dx / norm - GLYPH_W / 2
            ly = oy + length * dy + 5 * dy / norm - GLYPH_H / 2
            _draw_text(stamp, "XYZ"[i], round(lx), round(ly), (*AXIS_RGB[i], 255))
    drawn = stamp[..., 3] > 0
    rgb = stamp[drawn, :3]
    drawn.flags.writeable = rgb.flags.writeable = False
    return drawn, rgb


def _label(panel: np.ndarray, text: str) -> None:
    size = panel.shape[0]
    fits = max(0, (size - 4 + 1) // (GLYPH_W + 1))
    _draw_text(panel, text[:fits], 3, 3, TEXT_RGB)


def _centre_note(panel: np.ndarray, text: str) -> None:
    size = panel.shape[0]
    _draw_text(panel, text, (size - _text_width(text)) // 2, (size - GLYPH_H) // 2, TEXT_RGB)


def render_pair(
    left: Mesh | None,
    right: Mesh | None,
    *,
    size: int = 200,
    labels: tuple[str, str] = ("CANDIDATE", "REFERENCE"),
) -> bytes:
    """PNG bytes: `left` and `right` meshes (vertices float[N,3] in mm, triangles int[M,3]) in two
    panels of size x size pixels, side by side, both seen from the same isometric-ish direction
    with the SAME world-to-screen transform (common centre and scale taken from the union of both
    bounding boxes), so a shift, a rotation or a size difference between the two shows. A None
    mesh leaves its panel blank with a 'NO SHAPE' label.

    Triangles with a vertex out of range or not finite, or with no area, are skipped; a mesh with
    none left shows 'EMPTY MESH'. The output is deterministic."""
    size = max(16, int(size))
    given = (left, right)
    cleaned = [None if m is None else _clean(m) for m in given]
    drawable = [(side, c) for side, c in enumerate(cleaned) if c is not None]
    fit = _fit([c for _, c in drawable], size)
    shaded: dict[int, np.ndarray] = {}
    if fit is not None:
        bases = [(LEFT_RGB, RIGHT_RGB)[side] for side, _ in drawable]
        panels = _shade([c for _, c in drawable], bases, fit, size)
        shaded = {side: pnl for (side, _), pnl in zip(drawable, panels, strict=True)}
    row = np.empty((2 * size + DIVIDER_PX, 3), np.uint8)
    row[:] = BACKGROUND
    row[size : size + DIVIDER_PX] = DIVIDER
    img = np.broadcast_to(row, (size, *row.shape)).copy()
    for side in (0, 1):
        x0 = side * (size + DIVIDER_PX)
        panel = img[:, x0 : x0 + size]
        if given[side] is None:
            _centre_note(panel, "NO SHAPE")
        else:
            if side in shaded:
                panel[:] = shaded[side]
            else:
                _centre_note(panel, "EMPTY MESH")
            _draw_triad(panel)
        _label(panel, labels[side])
    return png_bytes(img)
