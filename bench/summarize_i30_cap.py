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
import collections
import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# (label, file) groups, each measured side by side in one chain call on one warm machine;
# every run of a group is compared with the group's first
GROUPS = [
    [("timed (rule)", "i30_next_workers16.json"), ("no timing", "i30_next_notiming16.json")],
    [("sleep: issue", "i30_sleep_issue16.json"), ("sleep: rule", "i30_sleep_rule16.json")],
    [
        ("time-sliced (mps)", "i30_mps_workers16.json"),
        ("the host on MPS", "i30_mps_host_workers16.json"),
    ],
    [
        ("time-sliced (mpsjobs)", "i30_mpsjobs_workers16.json"),
        ("jobs on MPS, uid each", "i30_mpsjobs_jobs16.json"),
    ],
    [
        ("16 runners (next2)", "i30_next2_workers16.json"),
        ("8 runners", "i30_next2_workers8.json"),
        ("4 runners", "i30_next2_workers4.json"),
        ("MPS, uid each at start", "i30_next2_mpsjobs16.json"),
    ],
    [
        ("time-sliced (one uid)", "i30_oneuid_workers16.json"),
        ("MPS, one uid, nproc 64", "i30_oneuid_mpsjobs16.json"),
        # the one run not side by side: the next call's machine (another H100 node, 40
        # min later); the time-sliced batch made 241.3-243.0/min on three such nodes
        ("MPS, nproc summed (*)", "i30_mpsfault_mpsjobs16.json"),
    ],
]
BATCHES = [run for group in GROUPS for run in group]
SHOWN_DIFFS = 8
# the median job, then its steps (the runner's seconds; `gpu_init`, the job's CUDA context,
# only since e6bf79d: before, `load` held it)
COLUMNS = (
    ("job", 6),
    ("gpu_init", 7),
    ("load", 6),
    ("warm", 6),
    ("outputs", 7),
    ("time", 6),
)  # per run; past that, counts of each change


def load(d: Path, name: str) -> dict:
    return json.loads((d / name).read_text())


def steps(run: dict) -> dict:
    rows = [r for r in run["rows"] if r["phase"] == "perturbations" and r["runner_seconds"]]
    out = {}
    for k in (k for k, _ in COLUMNS if k != "job"):  # the runner's steps
        vals = [r["runner_seconds"][k] for r in rows if k in r["runner_seconds"]]
        out[k] = statistics.median(vals) if vals else None
    out["job"] = statistics.median(
        r["seconds"] for r in run["rows"] if r["phase"] == "perturbations"
    )
    return out


def verdicts(run: dict) -> dict:
    return {(r["phase"], r["task"], r["generator"]): r["status"] for r in run["rows"]}


def compare(a: dict, b: dict, label_file: tuple[str, str]) -> list[str]:
    """Run `b` against its group's first run `a`: rate ratio and statuses that differ."""
    label, f = label_file
    va, vb = verdicts(a), verdicts(b)
    if "notiming" in f:  # no timing gate there: a slow cannot happen
        va = {k: "pass" if v == "slow" else v for k, v in va.items()}
    diff = [k for k in va if va[k] != vb.get(k)]
    ratio = b["throughput"][0]["per_min"] / a["throughput"][0]["per_min"]
    out = [f"  {label}: rate ratio {ratio:.2f}; statuses differing: {len(diff)} of {len(va)}"]
    if len(diff) <= SHOWN_DIFFS:
        out += [f"    {k[1]} {k[2]}: {va[k]} -> {vb.get(k)}" for k in diff]
    else:
        changes = collections.Counter(f"{va[k]} -> {vb.get(k)}" for k in diff)
        out += [f"    {n} x {change}" for change, n in changes.most_common()]
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", default=str(ROOT / "bench/results"))
    p.add_argument("--out", default=None, help="also write the tables here")
    args = p.parse_args()
    d = Path(args.dir)
    runs = [load(d, f) for _, f in BATCHES]
    lines = ["# batch groups (Triton, 16 tasks + 134 perturbations, 16 runners, prebuilt)", ""]
    head = f"{'run':24} {'per min':>8} " + " ".join(
        f"{'context' if k == 'gpu_init' else k:>{w}}" for k, w in COLUMNS
    )
    lines += [head, "-" * len(head)]
    at = 0
    for group in GROUPS:
        first = at
        for i in range(first, first + len(group)):
            t, s = runs[i]["throughput"][0], steps(runs[i])
            cells = [f"{s[k]:>{w}.3f}" if s[k] is not None else f"{'-':>{w}}" for k, w in COLUMNS]
            lines.append(f"{BATCHES[i][0]:24} {t['per_min']:>8.1f} {' '.join(cells)}")
        for i in range(first + 1, first + len(group)):
            lines += compare(runs[first], runs[i], BATCHES[i])
        lines.append("")
        at += len(group)
    lines += [
        "# one GPU, N processes each running 300 rounds of 20 small kernels + sync (with a",
        "# faulting one: each for 3 s past the start, the first storing far past its buffer)",
        "",
    ]
    for label, f in (
        ("time-sliced", "i30_mps_share_timeslice.log"),
        ("MPS", "i30_mps_share_mps.log"),
        ("time-sliced", "i30_mpsfault_share_timeslice.log"),
        ("MPS", "i30_mpsfault_share_mps.log"),
    ):
        for row in (json.loads(x) for x in (d / f).read_text().splitlines() if x.startswith("{")):
            line = (
                f"{label:12} n={row['n']:<3} each {row['rounds_per_s_each_median']:>8.1f}/s"
                f"  all {row['rounds_per_s_total']:>8.1f}/s"
            )
            if "neighbours" in row:  # --fault: the first process hit an illegal address
                line += f"  one faulting: {row['neighbours_failed']} of {row['neighbours']} failed"
            lines.append(line)
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
