"""Whether processes sharing one GPU wait on each other while the GPU is mostly idle (#30).

A verification job is a process of its own with a CUDA context of its own; without MPS the
GPU runs one context at a time and switches between them. This starts N processes; each
makes its context first (not timed), waits for a common start, then runs R rounds of a
small forward's shape: K small kernels, a synchronize and a 4-byte copy to the host. It
prints each process's rounds a second. Alone against N at once, with the GPU's own work
a few percent busy: if N processes each run near 1/N of the lone rate, contexts take
turns (time-slicing), and the GPU's share between processes, not its work, sets a node's
rate. Run it again under `nvidia-cuda-mps-control -d` to see MPS's side.

    python bench/probe_gpu_share.py [--sizes 1,4,16] [--rounds 300] [--kernels 20]

Needs a GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

CHILD = """
import sys, time, torch
start, rounds, kernels = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
x = torch.ones(1 << 16, device='cuda'); torch.cuda.synchronize()
while time.time() < start: time.sleep(0.001)
t = time.perf_counter()
for _ in range(rounds):
    y = x
    for _ in range(kernels): y = y * 1.0001
    torch.cuda.synchronize(); float(y[0])
print(rounds / (time.perf_counter() - t))
"""


def batch(n: int, rounds: int, kernels: int) -> dict:
    start = time.time() + 8.0  # every context made before it (they take ~1 s each at 16)
    argv = [sys.executable, "-c", CHILD, str(start), str(rounds), str(kernels)]
    procs = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(n)
    ]
    rates = []
    for p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"a process failed: {err[-1500:]}")
        rates.append(float(out))
    return {
        "n": n,
        "rounds_per_s_each_median": round(statistics.median(rates), 1),
        "rounds_per_s_total": round(sum(rates), 1),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1,4,16", help="processes at once, per round")
    p.add_argument("--rounds", type=int, default=300)
    p.add_argument("--kernels", type=int, default=20, help="small kernels per round")
    args = p.parse_args()
    for n in (int(x) for x in args.sizes.split(",")):
        print(json.dumps(batch(n, args.rounds, args.kernels)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
