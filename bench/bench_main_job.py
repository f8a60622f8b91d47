"""The main job on the whole catalog in a fresh lake: wall time, candidates verified per
second, and the peak resident memory summed over every process of the job (the CLI, Ray's
GCS, raylet, workers, and the tools they run), sampled every 0.2 s from /proc.

Usage: python bench/bench_main_job.py [--out bench/results/main_job.json] [-- extra args]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_GB = 3.0


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        out.add(p)
        todo += children.get(p, [])
    return out


def rss_bytes(pids: set[int]) -> int:
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                m = re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M)
        except OSError:
            continue
        if m:
            total += int(m.group(1)) * 1024
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "main_job.json")
    ap.add_argument("extra", nargs="*", help="extra `crucible run` arguments")
    args = ap.parse_args()
    crucible = Path(sys.executable).parent / "crucible"
    with tempfile.TemporaryDirectory(prefix="crucible-bench-lake-") as tmp:
        lake = Path(tmp) / "lake"
        cmd = [str(crucible), "run", "--lake", str(lake), *args.extra]
        env = dict(os.environ, COLUMNS="120")
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True
        )
        peak, samples = 0, 0
        while proc.poll() is None:
            peak = max(peak, rss_bytes(descendants(proc.pid)))
            samples += 1
            time.sleep(0.2)
        out = proc.stdout.read()
        wall = time.perf_counter() - t0
    print(out)
    m = re.search(r"(\d+) candidates, (\d+) verified in ([\d.]+)s \(([\d.]+)/s\)", out)
    result = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cores": os.cpu_count(),
        "exit_code": proc.returncode,
        "wall_s": round(wall, 2),
        "candidates": int(m.group(1)) if m else None,
        "verify_s": float(m.group(3)) if m else None,
        "verified_per_s": float(m.group(4)) if m else None,
        "peak_rss_gb": round(peak / 2**30, 3),
        "rss_samples": samples,
    }
    print(f"\n{'measure':<40} {'value':>8} {'target':>8} {'ratio':>6}")
    print(
        f"{'peak RSS, all processes (GB)':<40} {result['peak_rss_gb']:>8.3f} "
        f"{'<=' + str(TARGET_GB):>8} {result['peak_rss_gb'] / TARGET_GB:>6.2f}"
    )
    print(f"{'main job wall time (s)':<40} {result['wall_s']:>8.1f}")
    if m:
        print(f"{'verified candidates per second':<40} {result['verified_per_s']:>8.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
