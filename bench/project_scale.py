"""The 2.5 M-sample projection redone from a GPU run measured on the H200 (issue #30).

    python bench/project_scale.py --gpu-run bench/results/kernels_i30.json \
        [--build-run bench/results/kernels_build_cpu.json] \
        [--scale bench/results/scale.json] [--out bench/results/scale_i30]

CPU domains: per-core rates from `bench_scale.py`'s run (`scale.json`, measured on a CPU
node). GPU domains (cuda, triton), from the `bench_kernels.py` run given:
- measured: candidates per minute per H200 of its perturbation batch (failing and passing
  candidates mixed, as a generate -> verify -> repair loop makes them), every cost on the
  GPU node included (its 16 cores compile Triton and run the sandboxes);
- GPU-bound ceiling: what one GPU could take if CPU work (builds, sandbox starts, Triton's
  JIT) were never its bottleneck: one candidate that reaches timing holds the GPU alone for
  its median exclusive seconds; correctness runs share the card and are not counted.
- A run made with `bench_kernels.py --prebuild` built each batch first, as build nodes
  would: its GPU rate is without those builds, and their CPU seconds (the node's busy
  seconds during the builds; in older runs each build's wall seconds) are counted as
  CPU-node core-hours of their own (`<domain> build`).
  `--build-run` takes those seconds from `bench_kernels.py --build-only` runs instead
  (warm runners, the node's CPU seconds measured), for the domains each one built. Given
  with a GPU run made without `--prebuild`, whose rate still includes the builds, the
  build lines are counted on top (an upper bound).
Then: which GPU count fits the mission's 2.5 M samples in 24 h at each rate, the cores
the GPU nodes' CPU work needs at that count, and what stops it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# the mission and bench_scale.py's assumptions (kept equal: the projection is comparable)
TARGET_SAMPLES, HOURS, CORES, GPUS = 2_500_000, 24, 200, 8
MIX = {"rtl": 0.25, "cad": 0.15, "embedded": 0.15, "x86asm": 0.15, "cuda": 0.15, "triton": 0.15}
FIRST_PASS = {"rtl": 0.4, "cad": 0.35, "embedded": 0.35, "x86asm": 0.3, "cuda": 0.2, "triton": 0.25}
REPAIR_ROUNDS, REPAIR_FIX = 2, 0.3
NODE_CORES = 16  # the H200 node's


def candidates_per_pass(p0: float) -> float:
    """Candidates verified per passing sample (bench_scale.py's model)."""
    cands, passes, failing = 1.0, p0, 1.0 - p0
    for _ in range(REPAIR_ROUNDS):
        cands += failing
        passes += failing * REPAIR_FIX
        failing *= 1 - REPAIR_FIX
    return cands / passes


def gpu_side(run: dict, builds: dict[str, dict] | None = None) -> dict[str, dict]:
    """Per GPU domain: measured rate, exclusive seconds, CPU seconds per candidate; the
    build seconds from `builds` (per domain, `--build-only` runs' records), else from the
    run's own `prebuild` records."""
    out = {}
    prebuild = {**(run.get("prebuild") or {}), **(builds or {})}
    rows = run.get("rows", [])
    for t in run.get("throughput", []):
        d = t["domain"]
        mine = [r for r in rows if r["domain"] == d and r["phase"] == "perturbations"]
        excl = [r["gpu_exclusive_s"] for r in rows if r["domain"] == d and r.get("gpu_exclusive_s")]
        timed = sum(1 for r in mine if r.get("gpu_exclusive_s")) / len(mine) if mine else 0.0
        excl_med = statistics.median(excl) if excl else None
        out[d] = {
            "measured_per_s": t["per_min"] / 60,
            "batch": t["candidates"],
            "exclusive_median_s": excl_med,
            "share_timed": round(timed, 3),
            # a candidate that is not timed holds the GPU alone for nothing
            "ceiling_per_s": (1 / (excl_med * timed)) if excl_med and timed else None,
            # the node's cores were busy for this long a candidate (16 cores, its wall)
            "node_core_s_per_candidate": NODE_CORES / (t["per_min"] / 60),
            "build_core_s_per_candidate": build_core_s(prebuild.get(d)),
        }
    return out


def build_core_s(pre: dict | None) -> float | None:
    """A build node's core-seconds per candidate, from a `--prebuild` run's record: the
    CPU seconds the node was busy during the builds (`cpu_s`), where the run measured
    them; else each build's wall seconds summed (older runs: a build waiting for a core,
    or its runner starting, counts as a core busy)."""
    if not pre or not pre.get("candidates"):
        return None
    if pre.get("cpu_s") is not None:
        return pre["cpu_s"] / pre["candidates"]
    if "build_s_sum" not in pre:
        return None
    return pre["build_s_sum"] / pre["candidates"]


def project(
    core_rates: dict[str, float], gpu_rates: dict[str, float], build_s: dict[str, float]
) -> dict:
    """Hours per domain at the rates; `build_s`: a GPU domain's build-node core-seconds per
    candidate (a `--prebuild` run), counted as core-hours of their own."""
    core_s = gpu_s = 0.0
    rows = []
    for d, share in MIX.items():
        cands = TARGET_SAMPLES * share * candidates_per_pass(FIRST_PASS[d])
        if d in gpu_rates:
            s = cands / gpu_rates[d]
            gpu_s += s
        else:
            s = cands / core_rates[d]
            core_s += s
        unit = "GPU" if d in gpu_rates else "core"
        rows.append(
            {"domain": d, "candidates": round(cands), "hours": round(s / 3600, 1), "unit": unit}
        )
        if d in gpu_rates and build_s.get(d):
            b = cands * build_s[d]
            core_s += b
            rows.append(
                {
                    "domain": f"{d} build",
                    "candidates": round(cands),
                    "hours": round(b / 3600, 1),
                    "unit": "core",
                }
            )
    return {
        "rows": rows,
        "core_hours": round(core_s / 3600, 1),
        "gpu_hours": round(gpu_s / 3600, 1),
        "gpus_for_24h": round(gpu_s / (HOURS * 3600), 1),
        "cores_for_24h": round(core_s / (HOURS * 3600), 1),
        "hours_on_budget": round(max(core_s / CORES, gpu_s / GPUS) / 3600, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu-run", type=Path, required=True, help="a bench_kernels.py JSON (H200)")
    ap.add_argument(
        "--build-run",
        type=Path,
        action="append",
        default=[],
        help="a bench_kernels.py --build-only JSON: its domains' build seconds, in place of "
        "the GPU run's own (repeatable: one per domain's run)",
    )
    ap.add_argument("--scale", type=Path, default=ROOT / "bench" / "results" / "scale.json")
    ap.add_argument("--out", type=Path, help="write OUT.txt and OUT.json")
    args = ap.parse_args()
    for p in (args.gpu_run, args.scale, *args.build_run):
        if not p.exists():
            ap.error(f"{p} does not exist")
    scale = json.loads(args.scale.read_text())
    core = {d: r["per_core_per_s"] for d, r in scale["core_rates"].items()}
    run = json.loads(args.gpu_run.read_text())
    builds: dict[str, dict] = {}
    tiers: list[str] = []
    for p in args.build_run:
        rec = json.loads(p.read_text())
        mine = rec.get("prebuild") or {}
        if not mine:
            ap.error(f"{p} has no build records: is it a bench_kernels.py --build-only JSON?")
        builds.update(mine)
        tiers.append(f"{p} ({rec.get('device')}, {rec.get('cores')} cores: {', '.join(mine)})")
    gpu = gpu_side(run, builds)
    lines: list[str] = []

    def say(s: str = "") -> None:
        lines.append(s)
        print(s)

    say(f"GPU run: {args.gpu_run} ({run.get('device')}, torch {run.get('torch')})")
    say(f"CPU rates: {args.scale} (per core: {core})")
    for tier in tiers:
        say(f"build tier: {tier}")
    for d, g in gpu.items():
        ceil = f"{g['ceiling_per_s']:.1f}" if g["ceiling_per_s"] else "-"
        excl = f"{g['exclusive_median_s']:.4f}" if g["exclusive_median_s"] else "-"
        say(
            f"  {d:7} measured {g['measured_per_s']:.3f}/s per GPU ({g['batch']} candidates); "
            f"GPU alone {excl} s a timed candidate, {g['share_timed']:.0%} timed: ceiling {ceil}/s"
        )
    result = {"gpu": gpu, "core_rates": core}
    for label, key in (("measured", "measured_per_s"), ("GPU-bound ceiling", "ceiling_per_s")):
        rates = {d: g[key] for d, g in gpu.items() if g[key]}
        if len(rates) < len(gpu):
            continue
        per_build = {d: g["build_core_s_per_candidate"] for d, g in gpu.items()}
        proj = project(core, rates, {d: b for d, b in per_build.items() if b})
        result[label] = proj
        say()
        say(f"== {label}: {TARGET_SAMPLES:,} samples (mix {MIX})")
        for r in proj["rows"]:
            say(
                f"  {r['domain']:12} {r['candidates']:>12,} candidates "
                f"{r['hours']:>10,} {r['unit']}-h"
            )
        say(
            f"  {proj['core_hours']:,} core-hours, {proj['gpu_hours']:,} GPU-hours; for 24 h: "
            f"{proj['cores_for_24h']} cores and {proj['gpus_for_24h']} GPUs; on {CORES} cores + "
            f"{GPUS} GPUs: {proj['hours_on_budget']} h"
        )
        node_cores = (
            sum(
                r["candidates"] * gpu[r["domain"]]["node_core_s_per_candidate"] / (HOURS * 3600)
                for r in proj["rows"]
                if r["unit"] == "GPU"
            )
            if label == "measured"
            else None
        )
        if node_cores:
            say(f"  the GPU nodes' own cores at that count: {node_cores:,.0f} busy cores")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".txt").write_text("\n".join(lines) + "\n")
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
