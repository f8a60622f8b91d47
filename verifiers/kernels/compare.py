"""Output comparison against the reference: all outputs, elementwise tolerance, NaN never
passes, the worst element named. Runs in the verifier's process, never the candidate's.

Outputs are compared in chunks of CHUNK elements (in float64), so the memory a comparison
needs beside the two tensors stays bounded whatever their size (a 6.4 GB output takes a
few hundred MB of working memory, not five times its size)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

CHUNK = 1 << 25  # elements per step: 256 MB per float64 temporary


@dataclass(frozen=True)
class Comparison:
    ok: bool
    code: str = ""
    summary: str = ""
    detail: str = ""
    max_abs_err: float = 0.0


Tolerance = Callable[[torch.dtype], tuple[float, float]]


def compare(
    got: list, want: list, atol: float | None = None, rtol: float | None = None, *, tol=None
) -> Comparison:
    """`tol(dtype) -> (atol, rtol)` gives each output its dtype's tolerance; or one
    `atol`, `rtol` for all."""
    if len(got) != len(want):
        msg = f"forward returned {len(got)} output(s); the reference returns {len(want)}"
        return Comparison(False, "shape_mismatch", msg, msg)
    worst_all = 0.0
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        name = f"output {k}" if len(want) > 1 else "the output"
        if not isinstance(g, torch.Tensor):
            msg = f"{name} is {type(g).__name__}, not a tensor"
            return Comparison(False, "shape_mismatch", msg, msg)
        if tuple(g.shape) != tuple(w.shape):
            msg = f"{name} has shape {tuple(g.shape)}; expected {tuple(w.shape)}"
            return Comparison(False, "shape_mismatch", msg, msg)
        if g.dtype != w.dtype:
            msg = f"{name} has dtype {g.dtype}; expected {w.dtype}"
            return Comparison(False, "shape_mismatch", msg, msg)
        a, r = tol(w.dtype) if tol is not None else (float(atol or 0.0), float(rtol or 0.0))
        res = _compare_one(g, w, a, r, name)
        if not res.ok:
            return res
        worst_all = max(worst_all, res.max_abs_err)
    return Comparison(True, max_abs_err=worst_all)


def _chunks(g: torch.Tensor, w: torch.Tensor):
    gf = g.to(w.device).reshape(-1)
    wf = w.reshape(-1)
    for start in range(0, wf.numel(), CHUNK):
        yield start, gf[start : start + CHUNK].double(), wf[start : start + CHUNK].double()


def _compare_one(g: torch.Tensor, w: torch.Tensor, atol: float, rtol: float, name: str):
    n_nan, first_nan = 0, -1
    n_bad, worst_excess, worst_at, max_abs = 0, 0.0, -1, 0.0
    for start, g64, w64 in _chunks(g, w):
        diff = (g64 - w64).abs()
        both_inf = torch.isinf(g64) & torch.isinf(w64) & (torch.sign(g64) == torch.sign(w64))
        diff = torch.where(both_inf, torch.zeros_like(diff), diff)
        allowed = atol + rtol * w64.abs().nan_to_num(posinf=0.0, neginf=0.0)
        excess = diff - allowed
        bad = excess > 0
        # one read back a chunk (its NaNs, its largest error, its elements out of
        # tolerance): on a shared GPU each read waits for this process's turn there
        # (a chunk is never empty; an integer output, in float64 here, holds no NaN)
        count_nan, top, count = torch.stack(
            [torch.isnan(g64).sum().double(), diff.max(), bad.sum().double()]
        ).tolist()
        if count_nan:
            if first_nan < 0:
                first_nan = start + int(torch.isnan(g64).nonzero()[0])
            n_nan += int(count_nan)
            continue
        if n_nan:
            continue  # the verdict is nan_output; only the count and first one matter
        max_abs = max(max_abs, top)
        if count:
            n_bad += int(count)
            at = int(excess.argmax())
            value = float(excess[at])
            if worst_at < 0 or value > worst_excess:
                worst_excess, worst_at = value, start + at
    if n_nan:
        idx = _unravel(first_nan, g.shape)
        ref = float(w.reshape(-1)[first_nan].double())
        msg = f"{name} has {n_nan} NaN element(s) (first at {list(idx)}, reference {ref:.6g})"
        return Comparison(
            False,
            "nan_output",
            msg,
            msg + "; NaN never passes: an element never written (outputs are NaN-"
            "poisoned before each run), a read past a tensor's end (the bytes around every "
            "tensor are NaN) or invalid math",
            float("nan"),
        )
    if n_bad:
        idx = _unravel(worst_at, g.shape)
        gv = float(g.reshape(-1)[worst_at].double())
        wv = float(w.reshape(-1)[worst_at].double())
        msg = (
            f"{name}: {n_bad} of {g.numel()} elements outside atol={atol:g} rtol={rtol:g}; "
            f"worst at {list(idx)}: got {gv:.6g}, expected {wv:.6g}"
        )
        return Comparison(
            False, "numeric_mismatch", msg, msg + f"; max abs error {max_abs:.4g}", max_abs
        )
    return Comparison(True, max_abs_err=max_abs)


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors of one dtype and shape hold the same bytes (NaN included),
    compared in chunks."""
    if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
        return False
    a8 = a.contiguous().reshape(-1).view(torch.uint8)
    b8 = b.to(a.device).contiguous().reshape(-1).view(torch.uint8)
    step = CHUNK * 8
    return all(
        bool(torch.equal(a8[i : i + step], b8[i : i + step])) for i in range(0, a8.numel(), step)
    )


def _unravel(flat: int, shape) -> tuple[int, ...]:
    idx = []
    for dim in reversed(tuple(shape)):
        idx.append(flat % dim if dim else 0)
        flat //= dim if dim else 1
    return tuple(reversed(idx))
