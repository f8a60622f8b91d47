"""What handing GPU memory over by fd costs, alone and with many processes at once (#30).

Every correctness trial on a GPU hands its inputs and outputs from the runner's child to
the verifier as exported allocations (`verifiers.kernels.devshare`): per tensor, the
child makes an allocation with CUDA's virtual memory API, maps it, copies, exports an
fd; the verifier imports, reserves, maps it read-only; both unmap and release after.
A candidate's trials hand over ~25 tensors. This times that cycle (export, import, one
read, close) in N processes at once, each on its own context, beside a control cycle of
the same copy through torch's caching allocator (no driver call). Where the driver
serializes the cycle, the cycles a second summed over N processes stay flat as N grows,
while the control's grow.

    python bench/probe_devshare.py [--sizes 1,4,16] [--cycles 50] [--mib 1]

Needs a GPU; prints one JSON line per (kind, N).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, os, sys, time
import torch
from verifiers.kernels import devshare

kind, cycles, mib, start_at = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
t = torch.randn(int(mib * (1 << 20) // 4), device="cuda")
torch.cuda.synchronize()


def cycle():
    if kind == "control":
        y = torch.empty_like(t)
        y.copy_(t)
        float(y[0])
        return
    ex = devshare.export_like(t)
    fd = ex.fd()
    try:
        imp = devshare.Imported(fd, t.numel() * t.element_size())
        try:
            float(imp.tensor(t.dtype, t.shape)[0])
        finally:
            imp.close()
    finally:
        os.close(fd)
        ex.close()


cycle()  # the first (lazy loads) untimed
while time.time() < start_at:
    time.sleep(0.001)
begin = time.time()
each = []
for _ in range(cycles):
    c0 = time.perf_counter()
    cycle()
    each.append(time.perf_counter() - c0)
print(json.dumps({"begin": begin, "end": time.time(), "each": each}))
"""


def batch(kind: str, n: int, cycles: int, mib: float) -> dict:
    start_at = time.time() + 6.0 + 0.5 * n  # every process imported and on the GPU by then
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, kind, str(cycles), str(mib), str(start_at)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        if p.returncode != 0:
            raise SystemExit(f"a {kind} process failed: {err[-1500:]}")
        outs.append(json.loads(out.strip().splitlines()[-1]))
    span = max(o["end"] for o in outs) - min(o["begin"] for o in outs)
    each = [x for o in outs for x in o["each"]]
    return {
        "kind": kind,
        "n": n,
        "cycles_per_s": round(n * cycles / span, 1),
        "cycle_ms_median": round(1e3 * statistics.median(each), 3),
        "cycle_ms_p90": round(1e3 * sorted(each)[int(0.9 * (len(each) - 1))], 3),
        "span_s": round(span, 3),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1,4,16", help="processes at once, per round")
    p.add_argument("--cycles", type=int, default=50, help="cycles a process times")
    p.add_argument("--mib", type=float, default=1.0, help="the tensor handed over, MiB")
    args = p.parse_args()
    for n in (int(x) for x in args.sizes.split(",")):
        for kind in ("devshare", "control"):
            print(json.dumps(batch(kind, n, args.cycles, args.mib)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
