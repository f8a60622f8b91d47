"""Two `bench_kernels.py` runs side by side (before and after a change, same node, same
candidates): throughput, latency, GPU use, and every verdict that differs.

    python bench/compare_kernel_runs.py BEFORE.json AFTER.json \
        [--smi BEFORE_SMI.json AFTER_SMI.json] [--out OUT.json]

The --smi files are `bench/gpu_sampler.py`'s summaries of the same two runs. Verdicts are
matched by (phase, domain, task, generator); a perturbation operator that yields several
candidates of one task is matched in order. Speedups are compared per reference as
after/before; their spread is the timing noise of two runs, not a claim.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_kernels import table


def keyed(rows: list[dict]) -> dict[tuple, dict]:
    seen: collections.Counter = collections.Counter()
    out = {}
    for r in rows:
        k = (r["phase"], r["domain"], r["task"], r["generator"])
        out[(*k, seen[k])] = r
        seen[k] += 1
    return out


def verdict(r: dict) -> str:
    return r["status"] + (f"/{r['code']}" if r.get("code") else "")


def ratio(a, b) -> str:
    return f"{b / a:.2f}" if a and b else "-"


def compare(before: dict, after: dict, smi: tuple[dict, dict] | None) -> dict:
    rows = []
    for d in sorted(set(before.get("median_s", {})) | set(after.get("median_s", {}))):
        b, a = before.get("median_s", {}).get(d), after.get("median_s", {}).get(d)
        rows.append(
            [
                "reference latency, cold (s), " + d,
                f"{b:.3f}" if b else "-",
                f"{a:.3f}" if a else "-",
                ratio(b, a),
            ]
        )
        for g in ("compile", "correct", "timing"):
            gb = before.get("gate_median_s", {}).get(d, {}).get(g)
            ga = after.get("gate_median_s", {}).get(d, {}).get(g)
            rows.append(
                [
                    f"  {g} gate (s)",
                    f"{gb:.3f}" if gb is not None else "-",
                    f"{ga:.3f}" if ga is not None else "-",
                    ratio(gb, ga),
                ]
            )
    tb = {x["domain"]: x for x in before.get("throughput", [])}
    ta = {x["domain"]: x for x in after.get("throughput", [])}
    for d in sorted(set(tb) | set(ta)):
        b, a = tb.get(d, {}).get("per_min"), ta.get(d, {}).get("per_min")
        rows.append(
            [
                f"batch candidates/min, {d}",
                f"{b:.1f}" if b else "-",
                f"{a:.1f}" if a else "-",
                ratio(b, a),
            ]
        )
    b, a = before.get("per_min_batch"), after.get("per_min_batch")
    rows.append(
        [
            "batch candidates/min, all",
            f"{b:.1f}" if b else "-",
            f"{a:.1f}" if a else "-",
            ratio(b, a),
        ]
    )
    for d, ref in sorted(after.get("references_pass", {}).items()):
        rows.append(
            [f"references pass, {d}", before.get("references_pass", {}).get(d, "-"), ref, ""]
        )
    ex = after.get("gpu_exclusive_median_s")
    rows.append(
        [
            "GPU held alone per timed candidate, median (s)",
            "-",
            f"{ex:.4f}" if ex is not None else "-",
            "",
        ]
    )
    if smi:
        for k in ("util_mean_pct", "idle_fraction", "busy_fraction_over_50pct", "memory_peak_mib"):
            rows.append([f"GPU {k} (nvidia-smi)", smi[0].get(k), smi[1].get(k), ""])
    print(table(rows, ["measure", "before", "after", "after/before"]))

    kb, ka = keyed(before.get("rows", [])), keyed(after.get("rows", []))
    diffs = []
    for k in sorted(set(kb) & set(ka)):
        if verdict(kb[k]) != verdict(ka[k]):
            diffs.append([*k[:4], verdict(kb[k]), verdict(ka[k]), ka[k]["feedback"][:90]])
    only = sorted(set(kb) ^ set(ka))
    n = len(set(kb) & set(ka))
    print(f"\nverdicts compared: {n}; differ: {len(diffs)}; unmatched: {len(only)}")
    if diffs:
        print(
            table(
                diffs,
                ["phase", "domain", "task", "generator", "before", "after", "after's feedback"],
            )
        )
    speed = []
    for k in sorted(set(kb) & set(ka)):
        sb, sa = kb[k].get("speedup"), ka[k].get("speedup")
        if k[0] == "references" and sb and sa:
            speed.append(sa / sb)
    spread = {}
    if speed:
        logs = sorted(abs(math.log(x)) for x in speed)
        spread = {
            "n": len(speed),
            "median_after_over_before": statistics.median(speed),
            "min": min(speed),
            "max": max(speed),
            "median_abs_log": statistics.median(logs),
        }
        print(
            f"reference speedups after/before: median {spread['median_after_over_before']:.3f} "
            f"(range {spread['min']:.3f}..{spread['max']:.3f}, n={len(speed)})"
        )
    return {
        "table": rows,
        "verdict_diffs": diffs,
        "unmatched": [list(k) for k in only],
        "speedup_after_over_before": spread,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--smi", nargs=2, metavar=("BEFORE", "AFTER"))
    p.add_argument("--out")
    args = p.parse_args()
    before, after = (json.loads(Path(x).read_text()) for x in (args.before, args.after))
    smi = tuple(json.loads(Path(x).read_text()) for x in args.smi) if args.smi else None
    res = compare(before, after, smi)  # type: ignore[arg-type]
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
