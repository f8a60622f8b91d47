"""RTL verification benchmark: where the time goes, what the harness costs, how many
candidates per second this machine verifies.

Three measurements in one run over the built-in catalog's candidates (reference, rewrites,
perturbations from the offline generator):

1. Per-gate seconds per candidate (median, p90), from each verdict's checks.
2. Harness overhead: every tool invocation a verdict made is replayed bare (same argv, same
   files, no sandbox, no Python: one bash script timing each command with `date +%s%N`);
   ratio = verification wall time / sum of its bare tool runs. Median over candidates.
3. Throughput: candidates per second over the catalog on Ray actors (one per core, like
   the main job), with all gates and in simulation-only mode.

Usage: python bench/bench_rtl.py [--tasks N] [--sample K] [--out bench/results/rtl.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generators.perturb import generator_for  # noqa: E402
from verifiers.catalog import load_catalog  # noqa: E402
from verifiers.contract import Limits  # noqa: E402
from verifiers.rtl.verifier import SIM_ONLY, RtlVerifier  # noqa: E402


def candidates(n_tasks: int | None):
    tasks, errors = load_catalog(ROOT / "tasks", ["rtl"])
    if errors:
        raise SystemExit("catalog errors:\n" + "\n".join(map(str, errors)))
    tasks = tasks[:n_tasks] if n_tasks else tasks
    gen = generator_for("rtl")
    return tasks, [(t, c) for t in tasks for c in gen.generate(t)]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def replay_bare(trace: list[dict]) -> list[float]:
    """Run each traced argv in its kept work dir with bash alone; seconds per command."""
    lines = ["set +e"]
    for i, run in enumerate(trace):
        # inside the sandbox the work dir is /work; bare, it is the kept directory
        argv = [a.replace("/work/", run["workdir"] + "/") for a in run["argv"]]
        cmd = " ".join(shlex.quote(a) for a in argv)
        lines.append(
            f"cd {shlex.quote(run['workdir'])}; s=$(date +%s%N); "
            f"{cmd} >/dev/null 2>&1 </dev/null; e=$(date +%s%N); echo {i} $((e-s))"
        )
    out = subprocess.run(
        ["bash", "-c", "\n".join(lines)], capture_output=True, text=True, check=True
    ).stdout
    secs = [0.0] * len(trace)
    for line in out.split("\n"):
        if line.strip():
            i, ns = line.split()
            secs[int(i)] = int(ns) / 1e9
    return secs


def overhead(pairs, sample: int) -> dict:
    """Verify a sample sequentially with tracing, then replay its tool runs bare."""
    per_gate: dict[str, list[float]] = defaultdict(list)
    per_gate_bare: dict[str, list[float]] = defaultdict(list)
    per_gate_paired: dict[str, list[float]] = defaultdict(list)
    bare_gate: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    ratios, verify_s, bare_s = [], [], []
    step = max(1, len(pairs) // sample)
    chosen = pairs[::step][:sample]
    with tempfile.TemporaryDirectory(prefix="crucible-bench-") as keep:
        verifier = RtlVerifier(keep_workdirs=Path(keep))
        for task, cand in chosen:
            verifier.trace.clear()
            t0 = time.perf_counter()
            v = verifier.verify(task, cand.code, Limits())
            wall = time.perf_counter() - t0
            for c in v.checks:
                per_gate[c.name].append(c.seconds)
            if not verifier.trace or v.status.value in ("timeout", "resource_limit"):
                # nothing ran, or a limit cut a run short (bare, a hang would never end)
                continue
            trace = list(verifier.trace)
            bare_runs = replay_bare(trace)
            bare = sum(bare_runs)
            for run, secs in zip(trace, bare_runs, strict=True):
                bare_gate[v.candidate_id][run["gate"]] += secs
            for c in v.checks:
                if c.name in bare_gate[v.candidate_id]:
                    per_gate_bare[c.name].append(bare_gate[v.candidate_id][c.name])
                    per_gate_paired[c.name].append(c.seconds)
            ratios.append(wall / bare)
            verify_s.append(wall)
            bare_s.append(bare)
    return {
        "candidates": len(chosen),
        "compared": len(ratios),
        "per_gate": {
            g: {
                "n": len(xs),
                "median_s": statistics.median(xs),
                "p90_s": pct(xs, 0.9),
                # the same candidates' gate time sandboxed vs its tool runs bare
                "paired_sandboxed_s": sum(per_gate_paired[g]),
                "paired_bare_s": sum(per_gate_bare[g]),
            }
            for g, xs in per_gate.items()
        },
        "median_verify_s": statistics.median(verify_s),
        "median_bare_s": statistics.median(bare_s),
        "median_ratio": statistics.median(ratios),
        "p90_ratio": pct(ratios, 0.9),
    }


def throughput(tasks, pairs, limits: Limits) -> dict:
    from ray_actors import cluster
    from ray_actors.verify import PoolSettings, verify_candidates

    cluster.start(cluster.ClusterSettings())
    by_id = {t.task_id: t for t in tasks}
    cands = [c for _, c in pairs]
    t0 = time.perf_counter()
    statuses: dict[str, int] = defaultdict(int)
    for v in verify_candidates("rtl", cands, by_id, limits, PoolSettings(batch_size=8)):
        statuses[v.status.value] += 1
    secs = time.perf_counter() - t0
    return {
        "candidates": len(cands),
        "seconds": secs,
        "per_second": len(cands) / secs,
        "statuses": dict(statuses),
        "workers": cluster.slots("eda"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=None, help="first N catalog tasks only")
    ap.add_argument("--sample", type=int, default=120, help="candidates for the overhead part")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "rtl.json")
    args = ap.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

    tasks, pairs = candidates(args.tasks)
    print(f"{len(tasks)} tasks, {len(pairs)} candidates, {os.cpu_count()} cores")
    over = overhead(pairs, args.sample)
    full = throughput(tasks, pairs, Limits())
    sim = throughput(tasks, pairs, Limits(gates=SIM_ONLY))

    rows = [
        ("harness overhead (median verify / bare tools)", over["median_ratio"], 1.15, "<="),
        ("throughput, all gates (candidates/s)", full["per_second"], 8.0, ">="),
        ("throughput, sim-only (candidates/s)", sim["per_second"], 40.0, ">="),
    ]
    print("\nper-gate seconds per candidate (sequential, sandboxed)")
    print(f"  {'gate':<12} {'n':>5} {'median':>9} {'p90':>9} {'sum sbx':>9} {'sum bare':>9} ratio")
    for g, s in over["per_gate"].items():
        bare, sbx = s["paired_bare_s"], s["paired_sandboxed_s"]
        ratio = f"{sbx / bare:.3f}" if bare else "-"
        print(
            f"  {g:<12} {s['n']:>5} {s['median_s']:>9.4f} {s['p90_s']:>9.4f} "
            f"{sbx:>9.3f} {bare:>9.3f} {ratio}"
        )
    print(
        f"\nsandboxed verify median {over['median_verify_s']:.4f}s vs bare tools median "
        f"{over['median_bare_s']:.4f}s over {over['compared']} candidates "
        f"(p90 ratio {over['p90_ratio']:.3f})"
    )
    print(f"\n{'measure':<48} {'value':>9} {'target':>8} {'ratio':>7}  ok")
    for name, value, target, sense in rows:
        ratio = value / target if sense == ">=" else target / value
        ok = value >= target if sense == ">=" else value <= target
        print(f"{name:<48} {value:>9.3f} {sense}{target:>6} {ratio:>7.2f}  {'yes' if ok else 'NO'}")
    result = {
        "machine": {"cores": os.cpu_count(), "platform": platform.platform()},
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tasks": len(tasks),
        "candidates": len(pairs),
        "overhead": over,
        "throughput_all_gates": full,
        "throughput_sim_only": sim,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
