"""Whether another process's GPU work shows in this process, and how: the evidence the
timing slot's quiet check (`verifiers.kernels.quiet`) is built on.

    python bench/probe_gpu_quiet.py [--out FILE.json]

Needs a GPU. A second process (the "foreign" one, as a candidate waiting for the timing
slot would be) runs spin kernels; this one measures, in each state:

- the round trip of a one-element kernel (launch, synchronize; host clock): the probe;
- a timed kernel (a 64 MiB add, CUDA events, median of 50): what a candidate's timing sees.

States: idle; foreign busy (it keeps launching); foreign stopped (SIGSTOP) with ~0.5 s of
kernels still queued, probed until quiet; idle again. Prints one table; `--out` keeps
every probe.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

FOREIGN = r"""
import sys, torch
torch.cuda.init()
x = torch.empty(1, device="cuda")
torch.cuda.synchronize()
cycles = int(sys.argv[1])
mode = sys.argv[2]
print("ready", flush=True)
if mode == "busy":
    while True:
        for _ in range(32):
            torch.cuda._sleep(cycles)
        torch.cuda.synchronize()
else:  # queue n kernels, say so, then wait to be stopped
    n = int(sys.argv[3])
    for _ in range(n):
        torch.cuda._sleep(cycles)
    print("queued", flush=True)
    sys.stdin.read()
"""


def probe(torch, x) -> float:
    t0 = time.perf_counter()
    x.add_(1)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e6  # microseconds


def timed(torch, a, b, out, reps: int = 50) -> float:
    ev = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.add(a, b, out=out)
        e.record()
        ev.append((s, e))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in ev)


def summary(us: list[float]) -> dict:
    q = sorted(us)
    return {
        "n": len(q),
        "min_us": round(q[0], 1),
        "median_us": round(statistics.median(q), 1),
        "p90_us": round(q[int(0.9 * (len(q) - 1))], 1),
        "max_us": round(q[-1], 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="")
    ap.add_argument("--ms", type=float, default=1.0, help="one foreign spin kernel's length")
    args = ap.parse_args()
    import torch

    x = torch.zeros(1, device="cuda")
    n = 16 << 20
    a, b, out = (torch.randn(n, device="cuda") for _ in range(3))
    torch.cuda.synchronize()
    # the spin kernel's cycles for args.ms: calibrated here, alone
    t0 = time.perf_counter()
    torch.cuda._sleep(10_000_000)
    torch.cuda.synchronize()
    per_ms = 10_000_000 / ((time.perf_counter() - t0) * 1e3)
    cycles = int(per_ms * args.ms)
    rows: dict[str, dict] = {}
    raw: dict[str, list[float]] = {}

    def state(name: str, n_probes: int = 200) -> None:
        us = [probe(torch, x) for _ in range(n_probes)]
        raw[name] = us
        rows[name] = summary(us) | {"timed_ms": round(timed(torch, a, b, out), 5)}

    for _ in range(20):
        probe(torch, x)
    state("idle")
    busy = subprocess.Popen(
        [sys.executable, "-c", FOREIGN, str(cycles), "busy"], stdout=subprocess.PIPE, text=True
    )
    busy.stdout.readline()
    time.sleep(0.5)
    state("foreign_busy")
    busy.kill()
    busy.wait()
    time.sleep(0.2)
    state("idle_after_busy")
    # queued then stopped: how long until the probe sees the GPU quiet
    queued_ms = 500.0
    q = subprocess.Popen(
        [sys.executable, "-c", FOREIGN, str(cycles), "queue", str(int(queued_ms / args.ms))],
        stdout=subprocess.PIPE,
        stdin=subprocess.PIPE,
        text=True,
    )
    q.stdout.readline()
    q.stdout.readline()  # "queued"
    os.kill(q.pid, signal.SIGSTOP)
    t_stop = time.perf_counter()
    trace = []
    while time.perf_counter() - t_stop < 3.0:
        trace.append((round((time.perf_counter() - t_stop) * 1e3, 2), round(probe(torch, x), 1)))
    os.kill(q.pid, signal.SIGCONT)
    q.kill()
    q.wait()
    slow = [t for t, us in trace if us > 200]
    rows["foreign_stopped_queued"] = summary([us for _, us in trace]) | {
        "queued_ms": queued_ms,
        "last_slow_probe_at_ms": slow[-1] if slow else None,
        "probes": len(trace),
    }
    raw["foreign_stopped_trace"] = trace
    time.sleep(0.2)
    state("idle_end")
    print(f"device: {torch.cuda.get_device_name()}; spin kernel {args.ms} ms = {cycles} cycles")
    cols = ("n", "min_us", "median_us", "p90_us", "max_us")
    print(f"{'state':<24}" + "".join(f"{c:>11}" for c in cols) + "  extra")
    for k, r in rows.items():
        extra = {k2: v for k2, v in r.items() if k2 not in cols}
        print(f"{k:<24}" + "".join(f"{r[c]:>11}" for c in cols) + f"  {extra}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rows": rows, "raw": raw, "cycles": cycles}, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
