"""What caps a GPU node's rate, and the timing sleep's A/B: the tables, from saved runs (#30).

Reads the device chain's results (`bench/device_i30_chain.sh` steps `next`, `mps`,
`mpsjobs`, saved under bench/results/ as i30_*) and prints, per pair run side by side on
one warm machine: batch rate, the median job's steps, statuses that differ; the GPU
sharing probe (processes alone against at once, time-sliced against MPS); and per Triton
reference its timed median under each run with the sleep and whether the launch
outlasted it.

    python bench/summarize_i30_cap.py [--dir bench/results] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# (label, file), in pairs: each two measured side by side, one chain call each
BATCHES = [
    ("timed (rule)", "i30_next_workers16.json"),
    ("no timing", "i30_next_notiming16.json"),
    ("sleep: issue", "i30_sleep_issue16.json"),
    ("sleep: rule", "i30_sleep_rule16.json"),
    ("time-sliced (mps)", "i30_mps_workers16.json"),
    ("the host on MPS", "i30_mps_host_workers16.json"),
    ("time-sliced (mpsjobs)", "i30_mpsjobs_workers16.json"),
    ("jobs on MPS", "i30_mpsjobs_jobs16.json"),
]
PAIRS = [(i, i + 1) for i in range(0, len(BATCHES), 2)]


def load(d: Path, name: str) -> dict:
    return json.loads((d / name).read_text())


def steps(run: dict) -> dict:
    rows = [r for r in run["rows"] if r["phase"] == "perturbations" and r["runner_seconds"]]
    keys = ("load", "warm", "outputs", "time")
    out = {}
    for k in keys:
        vals = [r["runner_seconds"][k] for r in rows if k in r["runner_seconds"]]
        out[k] = statistics.median(vals) if vals else None
    out["job"] = statistics.median(
        r["seconds"] for r in run["rows"] if r["phase"] == "perturbations"
    )
    return out


def verdicts(run: dict) -> dict:
    return {(r["phase"], r["task"], r["generator"]): r["status"] for r in run["rows"]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", default=str(ROOT / "bench/results"))
    p.add_argument("--out", default=None, help="also write the tables here")
    args = p.parse_args()
    d = Path(args.dir)
    runs = [load(d, f) for _, f in BATCHES]
    lines = ["# batch pairs (Triton, 16 tasks + 134 perturbations, 16 runners, prebuilt)", ""]
    head = (
        f"{'run':24} {'per min':>8} {'job s':>6} {'load':>6} {'warm':>6} {'outputs':>7} {'time':>6}"
    )
    lines += [head, "-" * len(head)]
    for a, b in PAIRS:
        for i in (a, b):
            t, s = runs[i]["throughput"][0], steps(runs[i])
            cells = [
                f"{s[k]:>{w}.3f}" if s[k] is not None else f"{'-':>{w}}"
                for k, w in (("job", 6), ("load", 6), ("warm", 6), ("outputs", 7), ("time", 6))
            ]
            lines.append(f"{BATCHES[i][0]:24} {t['per_min']:>8.1f} {' '.join(cells)}")
        va, vb = verdicts(runs[a]), verdicts(runs[b])
        if "notiming" in BATCHES[b][1]:  # no timing gate there: a slow cannot happen
            va = {k: "pass" if v == "slow" else v for k, v in va.items()}
        diff = [k for k in va if va[k] != vb.get(k)]
        ratio = runs[b]["throughput"][0]["per_min"] / runs[a]["throughput"][0]["per_min"]
        lines.append(f"  rate ratio {ratio:.2f}; statuses differing: {len(diff)} of {len(va)}")
        for k in diff:
            lines.append(f"    {k[1]} {k[2]}: {va[k]} -> {vb.get(k)}")
        lines.append("")
    lines += ["# one GPU, N processes each running 300 rounds of 20 small kernels + sync", ""]
    for label, f in (
        ("time-sliced", "i30_mps_share_timeslice.log"),
        ("MPS", "i30_mps_share_mps.log"),
    ):
        for row in (json.loads(x) for x in (d / f).read_text().splitlines() if x.startswith("{")):
            lines.append(
                f"{label:12} n={row['n']:<3} each {row['rounds_per_s_each_median']:>8.1f}/s"
                f"  all {row['rounds_per_s_total']:>8.1f}/s"
            )
    lines += [
        "",
        "# Triton references' timed medians (ms) per run; * the launch outlasted the sleep",
        "",
    ]
    timed = [i for i, (_, f) in enumerate(BATCHES) if "notiming" not in f]
    ref: dict[str, dict[int, str]] = {}
    for i in timed:
        for r in runs[i]["rows"]:
            if r["phase"] == "references" and r["time_ms"]:
                mark = "*" if r.get("launch_bound") else " "
                ref.setdefault(r["task"], {})[i] = f"{r['time_ms']:.3f}{mark}"
    lines.append(f"{'task':24} " + " ".join(f"{BATCHES[i][0][:12]:>12}" for i in timed))
    for task in sorted(ref):
        lines.append(f"{task[:24]:24} " + " ".join(f"{ref[task].get(i, '-'):>12}" for i in timed))
    bound = {i: sum(1 for r in runs[i]["rows"] if r.get("launch_bound")) for i in timed}
    lines.append(
        "launch-bound timings: " + ", ".join(f"{BATCHES[i][0]} {n}" for i, n in bound.items())
    )
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
