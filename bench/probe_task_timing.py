"""One catalog task's reference kernel and its eager baseline timed alone, outside the
verifier, with what else holds the GPU (nvidia-smi), to tell a card's own speed from a
disturbed measurement.

    python bench/probe_task_timing.py tasks/triton/col_mean [--reps 5]

Needs a GPU. Prints the card, the GPU memory and processes nvidia-smi reports before,
and for each of `--reps` rounds the median of `triton.testing.do_bench` for the reference
and for eager, in milliseconds.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def smi() -> str:
    q = [
        "nvidia-smi",
        "--query-gpu=name,memory.used,memory.total,utilization.gpu,clocks.sm",
        "--format=csv,noheader",
    ]
    out = subprocess.run(q, capture_output=True, text=True, check=False).stdout.strip()
    procs = subprocess.run(
        ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return f"{out}; compute apps: {procs or 'none listed'}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("task", type=Path)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    import torch
    from triton.testing import do_bench

    print("before:", smi(), flush=True)
    problem = load(args.task / "problem.py", "problem")
    ref = load(args.task / "ref.py", "ref")
    torch.manual_seed(0)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    init = problem.get_init_inputs()
    eager = problem.Model(*init).cuda()
    cand = ref.ModelNew(*init).cuda()
    with torch.no_grad():
        err = (cand(*inputs) - eager(*inputs)).abs().max().item()
    print(f"max abs error {err:.3g}")
    rows = []
    for _ in range(args.reps):
        with torch.no_grad():
            c = do_bench(lambda: cand(*inputs), warmup=25, rep=100)
            e = do_bench(lambda: eager(*inputs), warmup=25, rep=100)
        rows.append((c, e))
        print(f"reference {c:.4f} ms  eager {e:.4f} ms  speedup {e / c:.3f}", flush=True)
    c = statistics.median(r[0] for r in rows)
    e = statistics.median(r[1] for r in rows)
    print(f"median: reference {c:.4f} ms, eager {e:.4f} ms, speedup {e / c:.3f}")
    print("after:", smi())
    return 0


if __name__ == "__main__":
    sys.exit(main())
