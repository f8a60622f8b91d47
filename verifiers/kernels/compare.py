"""Output comparison against the reference: all outputs, elementwise tolerance, NaN never
passes, the worst element named. Runs in the verifier's process, never the candidate's."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Comparison:
    ok: bool
    code: str = ""
    summary: str = ""
    detail: str = ""
    max_abs_err: float = 0.0


def compare(got: list, want: list, atol: float, rtol: float) -> Comparison:
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
        g64, w64 = g.to(w.device).double(), w.double()
        if g.is_floating_point() and torch.isnan(g64).any():
            idx = _unravel(int(torch.isnan(g64).flatten().nonzero()[0]), g.shape)
            count = int(torch.isnan(g64).sum())
            ref = w64[idx].item()
            msg = f"{name} has {count} NaN element(s) (first at {list(idx)}, reference {ref:.6g})"
            return Comparison(
                False,
                "nan_output",
                msg,
                msg + "; NaN never passes: an element never written (outputs are NaN-"
                "poisoned before each run) or invalid math",
                float("nan"),
            )
        diff = (g64 - w64).abs()
        both_inf = torch.isinf(g64) & torch.isinf(w64) & (torch.sign(g64) == torch.sign(w64))
        diff = torch.where(both_inf, torch.zeros_like(diff), diff)
        allowed = atol + rtol * w64.abs().nan_to_num(posinf=0.0, neginf=0.0)
        excess = diff - allowed
        bad = excess > 0
        max_abs = float(diff.max()) if diff.numel() else 0.0
        worst_all = max(worst_all, max_abs)
        if bool(bad.any()):
            flat = int(excess.flatten().argmax())
            idx = _unravel(flat, g.shape)
            n_bad = int(bad.sum())
            gv, wv = g64[idx].item(), w64[idx].item()
            msg = (
                f"{name}: {n_bad} of {g.numel()} elements outside atol={atol:g} rtol={rtol:g}; "
                f"worst at {list(idx)}: got {gv:.6g}, expected {wv:.6g}"
            )
            return Comparison(
                False, "numeric_mismatch", msg, msg + f"; max abs error {max_abs:.4g}", max_abs
            )
    return Comparison(True, max_abs_err=worst_all)


def _unravel(flat: int, shape) -> tuple[int, ...]:
    idx = []
    for dim in reversed(tuple(shape)):
        idx.append(flat % dim if dim else 0)
        flat //= dim if dim else 1
    return tuple(reversed(idx))
