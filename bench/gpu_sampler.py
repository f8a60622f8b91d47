"""Run a command while `nvidia-smi` samples the GPU, and say how busy the GPU was.

    python bench/gpu_sampler.py --out PREFIX [--every-ms 200] -- COMMAND...

Writes PREFIX.csv (time, GPU utilisation %, memory used MiB, SM clock MHz, one line per
sample) and PREFIX.json (samples, mean utilisation, the fraction of samples at 0 % — the
share of wall time the GPU sat idle —, peak memory, the SM clock's median and lowest
(an idle GPU lowers it: timings made then run slower), the command's wall time and exit
status), and
prints that summary last. `nvidia-smi`'s utilisation is the share of its sample window in
which any kernel ran: a GPU at 0 % ran nothing in that window. Exits with the command's
status.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path


def summarize(rows: list[tuple[float, float, float, float]], wall_s: float, rc: int) -> dict:
    util = [u for _, u, _, _ in rows]
    sm = [c for *_, c in rows]
    return {
        "samples": len(rows),
        "wall_s": round(wall_s, 2),
        "returncode": rc,
        "util_mean_pct": round(statistics.fmean(util), 2) if util else None,
        "util_median_pct": statistics.median(util) if util else None,
        "idle_fraction": round(sum(u == 0 for u in util) / len(util), 4) if util else None,
        "busy_fraction_over_50pct": round(sum(u > 50 for u in util) / len(util), 4)
        if util
        else None,
        "memory_peak_mib": max((m for _, _, m, _ in rows), default=None),
        "sm_clock_median_mhz": statistics.median(sm) if sm else None,
        "sm_clock_min_mhz": min(sm, default=None),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="path prefix for PREFIX.csv and PREFIX.json")
    p.add_argument("--every-ms", type=int, default=200)
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        p.error("give the command after --")
    smi = shutil.which("nvidia-smi")
    if smi is None:
        p.error("nvidia-smi is not on PATH: run this on a GPU node")
    rows: list[tuple[float, float, float, float]] = []
    stop = threading.Event()
    t0 = time.perf_counter()
    sampler = subprocess.Popen(
        [
            smi,
            "--query-gpu=utilization.gpu,memory.used,clocks.sm",
            "--format=csv,noheader,nounits",
            f"-lms={args.every_ms}",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )

    def read() -> None:
        assert sampler.stdout is not None
        for line in sampler.stdout:
            if stop.is_set():
                break
            try:
                u, m, c = (float(x) for x in line.strip().split(",")[:3])
            except ValueError:
                continue
            rows.append((round(time.perf_counter() - t0, 3), u, m, c))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        rc = subprocess.call(cmd)
    finally:
        wall = time.perf_counter() - t0
        stop.set()
        sampler.terminate()
        sampler.wait(timeout=10)
        reader.join(timeout=5)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".csv").write_text(
        "t_s,util_pct,mem_mib,sm_mhz\n" + "".join(f"{t},{u},{m},{c}\n" for t, u, m, c in rows)
    )
    summary = {"command": cmd, **summarize(rows, wall, rc)}
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1))
    print("gpu_sampler:", json.dumps(summary), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
