"""GPU kernel verification on the machine it runs on (the lent H200: see bench/results/).

Verifies, in one run and with cold caches (compile included):
  1. every catalog reference (cuda and triton),
  2. every perturbation of the offline generator,
and prints: references that pass; each perturbation operator's verdicts; seconds per gate;
median verification per candidate per domain; candidates verified per minute on this GPU;
then, side by side, the device-only compile (nvcc to a cubin) against building a PyTorch
extension (`load_inline`) of the same kernels.

    python bench/bench_kernels.py [--unconfined] [--tasks a,b] [--ext-kernels 3]

Needs torch, triton, cupy, numpy and nvcc; nothing else from the project's stack.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from verifiers.catalog import load_catalog  # noqa: E402
from verifiers.contract import Limits  # noqa: E402


def table(rows: list[list], head: list[str]) -> str:
    cols = [head, *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cols) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*["-" * w for w in widths])]
    lines += [fmt.format(*r) for r in cols[1:]]
    return "\n".join(lines)


def candidates(tasks, perturb: bool):
    from generators.perturb import generator_for

    out = []
    for t in tasks:
        if perturb:
            for c in generator_for(t.domain).generate(t, seed=0):
                out.append((t, c.code, c.generator))
        else:
            out.append((t, t.reference, "catalog:reference"))
    return out


def extension_vs_cubin(tasks, k: int, limits: Limits) -> list[dict]:
    """Device-only (nvcc -cubin) vs load_inline of the same CUDA kernels, cold caches."""
    import torch.utils.cpp_extension as ext

    from verifiers.kernels.nvcc import compile_cubin
    from verifiers.kernels.verifier import cuda_src
    from verifiers.sandbox import Sandbox

    rows = []
    sandbox = Sandbox(limits)
    for t in [t for t in tasks if t.domain == "cuda"][:k]:
        src = cuda_src(t.reference)
        with tempfile.TemporaryDirectory() as cache:
            t0 = time.perf_counter()
            res = compile_cubin(src, sandbox, cache_dir=Path(cache))
            cubin_s = time.perf_counter() - t0
        assert res.ok, res.log
        with tempfile.TemporaryDirectory() as build:
            t0 = time.perf_counter()
            ext.load_inline(
                name=f"bench_{t.name}",
                cpp_sources="void crucible_touch(torch::Tensor t);",
                cuda_sources="#include <torch/extension.h>\n"
                + src
                + "\nvoid crucible_touch(torch::Tensor t) {}\n",
                functions=["crucible_touch"],
                build_directory=build,
                extra_cuda_cflags=["-arch=sm_90", "-O3"],
                verbose=False,
            )
            ext_s = time.perf_counter() - t0
        rows.append(
            {"task": t.name, "cubin_s": cubin_s, "extension_s": ext_s, "ratio": ext_s / cubin_s}
        )
        print(f"  {t.name}: cubin {cubin_s:.2f}s, extension {ext_s:.1f}s", flush=True)
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", help="comma-separated task names (default: all)")
    p.add_argument("--domains", default="cuda,triton")
    p.add_argument("--unconfined", action="store_true", help="no bubblewrap on this node")
    p.add_argument("--no-perturb", action="store_true")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--ext-kernels", type=int, default=3)
    p.add_argument("--compile-baseline", action="store_true")
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "kernels.json"))
    args = p.parse_args()

    import torch

    from verifiers.kernels.verifier import CudaVerifier, TritonVerifier

    cache = Path(tempfile.mkdtemp(prefix="crucible-bench-cache-"))  # cold: compile included
    limits = Limits(unconfined=args.unconfined)
    names = args.tasks.split(",") if args.tasks else None
    tasks, errors = load_catalog(ROOT / "tasks", args.domains.split(","), names)
    for e in errors:
        print("task error:", e)
    dev = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    print(f"device: {dev}; torch {torch.__version__}; {len(tasks)} tasks", flush=True)
    verifiers = {
        "cuda": CudaVerifier(
            cache_dir=cache, workers=args.workers, compile_baseline=args.compile_baseline
        ),
        "triton": TritonVerifier(
            cache_dir=cache, workers=args.workers, compile_baseline=args.compile_baseline
        ),
    }
    results: dict = {"device": dev, "torch": torch.__version__, "tasks": len(tasks)}
    # reference timings (eager, and torch.compile when asked) once per task, before the
    # clock starts: a verifier node keeps them for every later candidate of the task
    t0 = time.perf_counter()
    for domain, v in verifiers.items():
        v.prepare_baselines([t for t in tasks if t.domain == domain], limits)
    results["baselines_s"] = time.perf_counter() - t0
    print(f"reference baselines measured in {results['baselines_s']:.1f}s", flush=True)
    all_rows = []
    for phase, perturb in (("references", False), ("perturbations", True)):
        if perturb and args.no_perturb:
            continue
        items = candidates(tasks, perturb)
        if perturb:  # references were verified in the first phase
            items = [it for it in items if it[2] != "catalog:reference"]
        print(f"\n== {phase}: {len(items)} candidates", flush=True)
        for domain, v in verifiers.items():
            mine = [it for it in items if it[0].domain == domain]
            if not mine:
                continue
            t0 = time.perf_counter()
            verdicts = v.verify_many([(t, c) for t, c, _ in mine], limits)
            wall = time.perf_counter() - t0
            for (t, _c, gen), vd in zip(mine, verdicts, strict=True):
                all_rows.append(
                    {
                        "phase": phase,
                        "domain": domain,
                        "task": t.name,
                        "generator": gen,
                        "status": vd.status.value,
                        "code": vd.code,
                        "seconds": vd.duration_ms / 1000,
                        "gates": {c.name: c.seconds for c in vd.checks},
                        "speedup": vd.metrics.get("speedup"),
                        "speedup_vs_compile": vd.metrics.get("speedup_vs_compile"),
                        "time_ms": vd.metrics.get("time_ms"),
                        "eager_ms": vd.metrics.get("eager_ms"),
                        "implausible": vd.metrics.get("implausible_speedup", False),
                        "feedback": vd.feedback[:300],
                    }
                )
            rate = len(mine) / wall * 60
            results.setdefault("throughput", []).append(
                {
                    "phase": phase,
                    "domain": domain,
                    "candidates": len(mine),
                    "wall_s": wall,
                    "per_min": rate,
                }
            )
            print(f"  {domain}: {len(mine)} in {wall:.1f}s = {rate:.1f}/min", flush=True)
    for v in verifiers.values():
        v.close()
    results["rows"] = all_rows

    refs = [r for r in all_rows if r["phase"] == "references"]
    print("\n== references")
    print(
        table(
            [
                [
                    r["domain"],
                    r["task"],
                    r["status"],
                    r["code"],
                    f"{r['seconds']:.2f}",
                    r["time_ms"],
                    r["eager_ms"],
                    r["speedup"],
                    r["speedup_vs_compile"],
                ]
                for r in refs
            ],
            [
                "domain",
                "task",
                "status",
                "code",
                "verify_s",
                "ms",
                "eager_ms",
                "speedup",
                "vs_compile",
            ],
        )
    )
    for r in refs:
        if r["status"] != "pass":
            print(f"  FAIL {r['domain']}/{r['task']}: {r['feedback']}")
    passed = sum(r["status"] == "pass" for r in refs)
    results["references_pass"] = f"{passed}/{len(refs)}"

    pert = [r for r in all_rows if r["phase"] == "perturbations"]
    by_op: dict = collections.defaultdict(collections.Counter)
    for r in pert:
        by_op[(r["domain"], r["generator"])][
            r["status"] + (f"/{r['code']}" if r["code"] else "")
        ] += 1
    print("\n== perturbations (verdicts per operator)")
    print(
        table(
            [
                [d, g, sum(c.values()), ", ".join(f"{k}:{n}" for k, n in c.most_common())]
                for (d, g), c in sorted(by_op.items())
            ],
            ["domain", "operator", "n", "verdicts"],
        )
    )
    results["perturbations"] = {f"{d}:{g}": dict(c) for (d, g), c in by_op.items()}

    print("\n== seconds per candidate (all phases)")
    rows = []
    for domain in verifiers:
        mine = [r for r in all_rows if r["domain"] == domain]
        if not mine:
            continue
        gate_times = collections.defaultdict(list)
        for r in mine:
            for g, s in r["gates"].items():
                gate_times[g].append(s)
        med = statistics.median(r["seconds"] for r in mine)
        rows.append(
            [
                domain,
                len(mine),
                f"{med:.3f}",
                " ".join(f"{g}={statistics.median(s):.3f}" for g, s in gate_times.items()),
            ]
        )
        results.setdefault("median_s", {})[domain] = med
        results.setdefault("gate_median_s", {})[domain] = {
            g: statistics.median(s) for g, s in gate_times.items()
        }
    print(table(rows, ["domain", "candidates", "median_s", "median per gate"]))
    total = len(all_rows)
    wall = sum(t["wall_s"] for t in results.get("throughput", []))
    results["per_min_overall"] = total / wall * 60 if wall else 0
    print(f"\noverall: {total} candidates in {wall:.1f}s = {results['per_min_overall']:.1f}/min")

    if args.ext_kernels and torch.cuda.is_available():
        print("\n== device-only compile vs PyTorch extension build (same kernels)", flush=True)
        ext_rows = extension_vs_cubin(tasks, args.ext_kernels, limits)
        results["extension_vs_cubin"] = ext_rows
        print(
            table(
                [
                    [
                        r["task"],
                        f"{r['cubin_s']:.2f}",
                        f"{r['extension_s']:.1f}",
                        f"{r['ratio']:.0f}x",
                    ]
                    for r in ext_rows
                ],
                ["task", "cubin_s", "extension_s", "extension/cubin"],
            )
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1, default=str))
    out_dir = os.environ.get("OUT")
    if out_dir:
        (Path(out_dir) / Path(args.out).name).write_text(json.dumps(results, indent=1, default=str))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
