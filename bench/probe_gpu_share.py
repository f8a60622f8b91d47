"""Whether processes sharing one GPU wait on each other while the GPU is mostly idle (#30).

A verification job is a process of its own with a CUDA context of its own; without MPS the
GPU runs one context at a time and switches between them. This starts N processes; each
makes its context first (not timed), waits for a common start, then runs R rounds of a
small forward's shape: K small kernels, a synchronize and a 4-byte copy to the host. It
prints each process's rounds a second. Alone against N at once, with the GPU's own work
a few percent busy: if N processes each run near 1/N of the lone rate, contexts take
turns (time-slicing), and the GPU's share between processes, not its work, sets a node's
rate. Run it again under `nvidia-cuda-mps-control -d` to see MPS's side.

`--fault`: the first process, 0.3 s into its rounds, runs a Triton kernel that stores far
past its buffer (an illegal address, as a candidate's wrong stride makes) and exits; each
other process reports whether its own rounds then failed. Time-sliced, no neighbour should
(each context is its own); under MPS, NVIDIA's docs say a fatal fault reaches every client
on the GPU: how many of a batch's jobs a faulting candidate would take down with it.

    python bench/probe_gpu_share.py [--sizes 1,4,16] [--rounds 300] [--kernels 20] [--fault]

Needs a GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import json, sys, time, torch
start, rounds, kernels = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
until = float(sys.argv[4])
x = torch.ones(1 << 16, device='cuda'); torch.cuda.synchronize()
while time.time() < start: time.sleep(0.001)
t = time.perf_counter()
done, error = 0, None
try:  # `rounds` of them, or (until > 0) as many as fit before `until`
    while (done < rounds) if until <= 0 else (time.time() < until):
        y = x
        for _ in range(kernels): y = y * 1.0001
        torch.cuda.synchronize(); float(y[0])
        done += 1
except Exception as e:  # a fault that reached this process
    error = f"{type(e).__name__}: {e}"[:200]
print(json.dumps({"rate": done / (time.perf_counter() - t), "error": error}))
"""
FAULT = """
import sys, time, torch, triton, triton.language as tl
start = float(sys.argv[1])

@triton.jit
def far_store(p):
    tl.store(p + (1 << 40), 1.0)

x = torch.ones(16, device='cuda'); torch.cuda.synchronize()
while time.time() < start + 0.3: time.sleep(0.001)
try:
    far_store[(1,)](x); torch.cuda.synchronize()
    print('{"rate": 0, "error": null}')
except Exception as e:
    print('{"rate": 0, "error": "the faulting process: %s"}' % type(e).__name__)
"""


def batch(n: int, rounds: int, kernels: int, fault: bool = False) -> dict:
    start = time.time() + 8.0  # every context made before it (they take ~1 s each at 16)
    until = start + 6.0 if fault else 0.0  # past the fault (and its compile), at any rate
    argv = [sys.executable, "-c", CHILD, str(start), str(rounds), str(kernels), str(until)]
    argvs = [argv] * n
    with tempfile.TemporaryDirectory(prefix="probe-fault-") as tmp:
        if fault:  # Triton's @jit reads its function's source from a file
            src = Path(tmp) / "fault.py"
            src.write_text(FAULT)
            argvs[0] = [sys.executable, str(src), str(start)]
        procs = [
            subprocess.Popen(a, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for a in argvs
        ]
        rows = []
        for p in procs:
            out, err = p.communicate()
            if p.returncode != 0 or not out.strip():
                rows.append({"rate": 0.0, "error": f"exit {p.returncode}: {err[-300:]}"})
            else:
                rows.append(json.loads(out.strip().splitlines()[-1]))
    if not fault and any(r["error"] for r in rows):
        raise SystemExit(f"a process failed: {rows}")
    rates = [r["rate"] for r in rows[1 if fault else 0 :]]
    out = {
        "n": n,
        "rounds_per_s_each_median": round(statistics.median(rates), 1) if rates else None,
        "rounds_per_s_total": round(sum(rates), 1),
    }
    if fault:
        out["faulting_process"] = rows[0]["error"]
        out["neighbours_failed"] = sum(1 for r in rows[1:] if r["error"])
        out["neighbours"] = n - 1
        out["neighbour_errors"] = sorted({r["error"] for r in rows[1:] if r["error"]})[:3]
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1,4,16", help="processes at once, per round")
    p.add_argument("--rounds", type=int, default=300)
    p.add_argument("--kernels", type=int, default=20, help="small kernels per round")
    p.add_argument("--fault", action="store_true", help="the first process faults (docstring)")
    args = p.parse_args()
    for n in (int(x) for x in args.sizes.split(",")):
        print(json.dumps(batch(n, args.rounds, args.kernels, args.fault)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
