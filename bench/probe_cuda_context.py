"""How long a process's first CUDA use takes when many start at once (issue #30).

Every verification job runs in a child forked from a runner that holds no CUDA context
(one does not survive a fork), so each candidate pays a context of its own. This starts
N fresh Python processes at once; each times its first CUDA op after `import torch`
(context creation and torch's CUDA init) and prints its wall-clock start and end. Per
batch size: the median and max of each process's time, and their sum. N over the max is
how many contexts a second the node makes at that concurrency (alone: 1 over the time).

    python bench/probe_cuda_context.py [--sizes 1,1,4,16,16]

Needs a GPU.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = (
    "import time, torch\n"
    "t = time.time()\n"
    "torch.zeros(1, device='cuda'); torch.cuda.synchronize()\n"
    "print(t, time.time())"
)


def batch(n: int) -> dict:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(n)
    ]
    spans = []
    for p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"a process failed: {err[-1500:]}")
        spans.append(tuple(map(float, out.split())))
    each = sorted(b - a for a, b in spans)
    return {
        "n": n,
        "each_median": each[n // 2],
        "each_max": each[-1],
        "sum": sum(each),
        "span": max(b for _a, b in spans) - min(a for a, _b in spans),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1,1,4,16,16", help="processes started at once, per round")
    args = p.parse_args()
    for n in (int(x) for x in args.sizes.split(",")):
        print(json.dumps(batch(n)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
