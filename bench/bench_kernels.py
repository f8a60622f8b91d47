"""GPU kernel verification on the machine it runs on (the lent H200: see bench/results/).

Verifies, in one run and with cold caches (compile included):
  1. every catalog reference (cuda and triton),
  2. every perturbation of the offline generator,
and prints: references that pass; each perturbation operator's verdicts; seconds per gate;
median verification per candidate per domain; candidates verified per minute on this GPU;
then, side by side, the device-only compile (nvcc to a cubin) against building a PyTorch
extension (`load_inline`) of the same kernels.

    python bench/bench_kernels.py [--unconfined] [--tasks a,b] [--ext-kernels 3] [--ops a,b]
        [--kernelbench PATH [--kb-problems a,b] [--only-kernelbench]]

`--perturb-tasks 32 --ops tail_guard_dropped,tail_mask_dropped,grid_past_limit` verifies
every catalog task's stray-store and launch-limit perturbations beside the 64 references
(#29: all of them must fail, every reference pass).

`--build-only` needs no GPU: the references and perturbations are built as build nodes
build them (`prebuild` on CPU runners) and nothing is verified; the build tier's seconds
per candidate go to `bench/project_scale.py --build-run`.

`--kernelbench PATH` (a KernelBench checkout, or a copy of its src/ and KernelBench/level1)
adds `bench/kernelbench_phase.py`: level-1 problems at their own sizes verified by Crucible
and by KernelBench's own eval in the same process, side by side.

Needs torch, triton, cupy, numpy and nvcc; nothing else from the project's stack.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import dataclasses
import json
import math
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
from verifiers.kernels.domain import (  # noqa: E402
    TIMING_SLEEP_DEFAULT,
    TIMING_SLEEPS,
    KernelSettings,
)


def _queues(v: str) -> int | None:
    """`--gpu-connections`: 1 to 32, or `driver` (None: the driver's own)."""
    if v == "driver":
        return None
    try:
        n = int(v)
    except ValueError:
        n = 0
    if not 1 <= n <= 32:
        raise argparse.ArgumentTypeError(f"1 to 32, or `driver`, not {v!r}")
    return n


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
    """Device-only (nvcc -cubin) vs load_inline of the same CUDA kernels, cold caches.
    The cubin compiles run one after another; the extension builds, a minute each, run
    side by side (each is mostly one nvcc process)."""
    import torch.utils.cpp_extension as ext

    from verifiers.kernels.nvcc import compile_cubin
    from verifiers.kernels.verifier import cuda_src
    from verifiers.sandbox import Sandbox

    sandbox = Sandbox(limits)
    chosen = [t for t in tasks if t.domain == "cuda"][:k]
    cubin_s = {}
    for t in chosen:
        with tempfile.TemporaryDirectory() as cache:
            t0 = time.perf_counter()
            res = compile_cubin(cuda_src(t.reference), sandbox, cache_dir=Path(cache))
            cubin_s[t.name] = time.perf_counter() - t0
        assert res.ok, res.log

    def build(t) -> float:
        src = cuda_src(t.reference)
        with tempfile.TemporaryDirectory() as build_dir:
            t0 = time.perf_counter()
            ext.load_inline(
                name=f"bench_{t.name}",
                cpp_sources="void crucible_touch(torch::Tensor t);",
                cuda_sources="#include <torch/extension.h>\n"
                + src
                + "\nvoid crucible_touch(torch::Tensor t) {}\n",
                functions=["crucible_touch"],
                build_directory=build_dir,
                extra_cuda_cflags=["-arch=sm_90", "-O3"],
                verbose=False,
            )
            return time.perf_counter() - t0

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(chosen) or 1) as ex:
        ext_s = dict(zip([t.name for t in chosen], ex.map(build, chosen), strict=True))
    rows = []
    for t in chosen:
        c, e = cubin_s[t.name], ext_s[t.name]
        rows.append({"task": t.name, "cubin_s": c, "extension_s": e, "ratio": e / c})
        print(f"  {t.name}: cubin {c:.2f}s, extension {e:.1f}s", flush=True)
    return rows


def row_of(phase: str, t, gen: str, vd) -> dict:
    return {
        "phase": phase,
        "domain": t.domain,
        "task": t.name,
        "level": t.level,
        "generator": gen,
        "status": vd.status.value,
        "code": vd.code,
        "seconds": vd.duration_ms / 1000,
        "gates": {c.name: c.seconds for c in vd.checks},
        "speedup": vd.metrics.get("speedup"),
        "speedup_vs_compile": vd.metrics.get("speedup_vs_compile"),
        "time_ms": vd.metrics.get("time_ms"),
        "eager_ms": vd.metrics.get("eager_ms"),
        "compile_ms": vd.metrics.get("compile_ms"),
        "implausible": vd.metrics.get("implausible_speedup", False),
        "feedback": (vd.feedback or "")[:300],
        "runner_seconds": vd.metrics.get("runner_seconds", {}),
        "nvcc_seconds": vd.metrics.get("nvcc_seconds"),
        # #30: the GPU held alone, how the timing stopped, what the host built
        "gpu_exclusive_s": vd.metrics.get("gpu_exclusive_s"),
        "gpu_admit_wait_s": vd.metrics.get("gpu_admit_wait_s"),
        "gpu_quiet_check_s": vd.metrics.get("gpu_quiet_check_s"),
        # the host's side of the trials: waiting for another's timing, checking them
        "trials_host_s": vd.metrics.get("trials_host_s"),
        "trials_host_wait_s": vd.metrics.get("trials_host_wait_s"),
        # the SM clock the quiet check saw and brought up before the timed runs (v12)
        "gpu_clock_start_mhz": vd.metrics.get("gpu_clock_start_mhz"),
        "gpu_clock_mhz": vd.metrics.get("gpu_clock_mhz"),
        "gpu_clock_spun_s": vd.metrics.get("gpu_clock_spun_s"),
        "shared_verdict": vd.metrics.get("shared_verdict"),  # verified again alone (MPS)
        # a slow verdict measured again before it stood (confirm_slow): every measure
        "timing_measures": vd.metrics.get("timing_measures"),
        # slow twice: the task's reference verified again beside it (verifier 13)
        "reference_again": vd.metrics.get("reference_again"),
        # the timed runs' spread: a slow median whose fastest run passes was disturbed
        "timing_min_ms": (vd.metrics.get("timing") or {}).get("min_ms"),
        "timing_p90_ms": (vd.metrics.get("timing") or {}).get("p90_ms"),
        "timing_stop": (vd.metrics.get("timing") or {}).get("stop"),
        "timing_reps": (vd.metrics.get("timing") or {}).get("reps"),
        # the sleep queued before each timed run against the forward's host-side issue
        "timing_sleep_us": (vd.metrics.get("timing") or {}).get("sleep_us"),
        "host_issue_ms": (vd.metrics.get("timing") or {}).get("host_issue_ms"),
        "launch_bound": (vd.metrics.get("timing") or {}).get("launch_bound"),
        "extension_build": vd.metrics.get("extension_build"),
    }


def _dist(values: list[float]) -> dict:
    v = sorted(values)
    return {
        "n": len(v),
        "sum": round(sum(v), 4),
        "median": round(statistics.median(v), 5),
        "p90": round(v[int(0.9 * (len(v) - 1))], 5),
        "max": round(v[-1], 5),
    }


def pause_parts(log: list) -> dict:
    """A GPU lock's pauses (`GpuLock.pause_log`: stop, host, whole seconds each) as
    distributions."""
    if not log:
        return {}
    names = ("stop the jobs", "wait for the host's GPU work", "whole pause")
    return {name: _dist([p[i] for p in log]) for i, name in enumerate(names)}


def trial_parts(rows: list) -> dict:
    """Per job: the runner's trial laps (`trial_*`) and the verifier's host side."""
    out = {}
    seen = {k for r in rows for k in (r.get("runner_seconds") or {})}
    names = sorted(k for k in seen if k.startswith("trial_"))
    for name in ("outputs", *names):
        v = [r["runner_seconds"][name] for r in rows if name in (r.get("runner_seconds") or {})]
        if v:
            out[name] = _dist(v)
    for name in ("trials_host_s", "trials_host_wait_s"):
        v = [r[name] for r in rows if r.get(name) is not None]
        if v:
            out[name] = _dist(v)
    return out


def spread(tasks, n: int) -> list:
    """n tasks per domain spread over the catalog (every k-th by name), all levels."""
    out = []
    for domain in sorted({t.domain for t in tasks}):
        mine = sorted((t for t in tasks if t.domain == domain), key=lambda t: t.name)
        step = max(1, len(mine) // max(1, n))
        out += mine[::step][:n]
    return out


def node_cpu_s() -> float | None:
    """This node's busy CPU seconds so far, all cores (/proc/stat: user, nice, system,
    irq, softirq, steal); None where unreadable."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = f.readline().split()
        busy = sum(int(fields[i]) for i in (1, 2, 3, 6, 7, 8))
        return busy / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def host_cpu_s() -> float:
    """CPU seconds this process (the host: every verify thread) has used so far."""
    t = os.times()
    return t.user + t.system


def build_batch(cls, mine, limits: Limits, cache: Path, workers: int | None):
    """`mine` ((task, code, generator) items) built as a build node builds them: `cls`'s
    `prebuild` on CPU runners of this node, side by side. Returns each candidate's entries
    and the record: wall seconds, runners, each candidate's build seconds (summed, and
    their median, p90, max), how many built anything, and the CPU seconds the node was
    busy meanwhile (`cpu_s`: the build's core-seconds on a node doing nothing else; a
    candidate's wall seconds also count its wait for a core, and its runner's start)."""
    node = cls(device="cpu", cache_dir=cache, workers=workers)
    s0 = time.perf_counter()
    if cls.domain == "triton":  # a build node's compilers are warm: started before timing
        node.pool(limits, aot=True).warm_up()  # the pool `prebuild` leases from
    started = time.perf_counter() - s0
    b0 = time.perf_counter()
    c0 = node_cpu_s()
    spent: list[float] = []

    def build_one(t, c):
        s0 = time.perf_counter()
        try:
            return node.prebuild(t, c, limits)
        finally:
            spent.append(time.perf_counter() - s0)

    try:
        runners = node.pool(limits).size
        with concurrent.futures.ThreadPoolExecutor(runners) as ex:
            built = list(ex.map(build_one, [t for t, _c, _g in mine], [c for _t, c, _g in mine]))
    finally:
        node.close()
    c1 = node_cpu_s()
    q = sorted(spent)
    return built, {
        "seconds": round(time.perf_counter() - b0, 2),
        "cpu_s": round(c1 - c0, 2) if c0 is not None and c1 is not None else None,
        "runners_start_s": round(started, 2),
        "runners": runners,
        "candidates": len(mine),
        "candidates_built": sum(1 for e in built if e),
        # a runner's build holds about one core (nvcc, g++, Triton's compile): what the
        # projection counts as build-node core-seconds
        "build_s_sum": round(sum(spent), 2),
        "build_s_median": round(statistics.median(q), 3) if q else None,
        "build_s_p90": round(q[max(0, math.ceil(0.9 * len(q)) - 1)], 3) if q else None,
        "build_s_max": round(q[-1], 3) if q else None,
        "entry_bytes": sum(len(json.dumps(e)) for entries in built for e in entries),
    }


def brief(record: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in record.items())


def build_only(args, tasks, limits: Limits, cache: Path) -> dict:
    """--build-only: the build tier alone (no GPU needed): each domain's references and
    perturbations built as build nodes build them, and nothing verified."""
    from verifiers.kernels.verifier import CudaVerifier, TritonVerifier

    classes = {"cuda": CudaVerifier, "triton": TritonVerifier}
    items = candidates(tasks, False) + [
        it
        for it in candidates(spread(tasks, args.perturb_tasks), True)
        if it[2] != "catalog:reference"
    ]
    relu = next((t for t in tasks if t.domain == "cuda" and t.name == "relu"), None)
    if relu is not None and args.with_extension:
        ext = ROOT / "tests/verifiers/kernel_fixtures/relu_extension.py"
        items.insert(0, (relu, ext.read_text(), "fixture:extension"))
    out: dict = {"cores": os.cpu_count(), "prebuild": {}}
    for domain in sorted({t.domain for t, _c, _g in items}):
        mine = [it for it in items if it[0].domain == domain]
        print(f"\n== {domain}: {len(mine)} candidates built as a build node would", flush=True)
        _built, record = build_batch(classes[domain], mine, limits, cache / domain, args.workers)
        out["prebuild"][domain] = record
        print(f"  {brief(record)}", flush=True)
    return out


def mixed_batch(verifiers: dict, items: list, rows: list, limits: Limits) -> dict:
    """The perturbation batch's candidates again, every domain's at once (one thread per
    domain, as the reward service's), on verifiers whose builds are cached by now: the
    domains share the card's one lock and memory budget (`pool.the_card`). Each verdict
    is set beside the same candidate's in the domain-by-domain batch."""
    by_domain: dict[str, list] = collections.defaultdict(list)
    for it in items:
        by_domain[it[0].domain].append(it)
    by_domain = {d: m for d, m in by_domain.items() if d in verifiers}
    n = sum(len(m) for m in by_domain.values())
    print(f"\n== mixed: {n} candidates, {' + '.join(sorted(by_domain))} at once", flush=True)
    before = {
        d: [r for r in rows if r["phase"] == "perturbations" and r["domain"] == d]
        for d in by_domain
    }
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(len(by_domain) or 1) as ex:
        futs = {
            d: ex.submit(verifiers[d].verify_many, [(t, c) for t, c, _ in m], limits)
            for d, m in by_domain.items()
        }
        verdicts = {d: f.result() for d, f in futs.items()}
    wall = time.perf_counter() - t0

    def label(status: str, code: str) -> str:
        return "pass" if status == "slow" else f"{status}/{code}" if code else status

    differ = []
    for d, m in by_domain.items():
        for (t, _c, gen), vd, was in zip(m, verdicts[d], before[d], strict=True):
            rows.append(row_of("mixed", t, gen, vd))
            a, b = label(was["status"], was["code"]), label(vd.status.value, vd.code)
            if a != b:
                differ.append(
                    {
                        "domain": d,
                        "task": t.name,
                        "generator": gen,
                        "alone": a,
                        "mixed": b,
                        "feedback": (vd.feedback or "")[:300],
                    }
                )
    out = {
        "candidates": n,
        "wall_s": round(wall, 2),
        "per_min": round(n / wall * 60, 1),
        "differ": differ,
    }
    print(
        f"  {n} in {wall:.1f}s = {out['per_min']}/min; {len(differ)} of {n} statuses "
        "differ from the domain-by-domain batch",
        flush=True,
    )
    for x in differ:
        print(f"    {x['domain']}/{x['task']} {x['generator']}: {x['alone']} -> {x['mixed']}")
    return out


def timing_ab(tasks, args, limits: Limits, cache: Path) -> dict:
    """Each reference timed by a fixed-count verifier (today's), an adaptive one and the
    fixed one again, interleaved per task: adaptive/fixed beside fixed/fixed (the noise
    of timing the same code twice)."""
    from verifiers.kernels.verifier import CudaVerifier, TritonVerifier

    kinds = {"cuda": CudaVerifier, "triton": TritonVerifier}
    chosen = spread(tasks, args.timing_ab)
    vs = {
        (d, mode): kinds[d](cache_dir=cache, workers=2, timing=mode)
        for d in kinds
        for mode in ("fixed", "adaptive")
    }
    rows = []
    print(f"\n== timing A/B: {len(chosen)} references, fixed / adaptive / fixed", flush=True)
    for t in chosen:
        ms = {}
        for label, mode in (("fixed1", "fixed"), ("adaptive", "adaptive"), ("fixed2", "fixed")):
            vd = vs[(t.domain, mode)].verify(t, t.reference, limits)
            timing = vd.metrics.get("timing") or {}
            ms[label] = vd.metrics.get("time_ms")
            ms[label + "_reps"] = timing.get("reps")
            ms[label + "_excl_s"] = vd.metrics.get("gpu_exclusive_s")
        if None in (ms["fixed1"], ms["adaptive"], ms["fixed2"]):
            continue
        fixed = (ms["fixed1"] + ms["fixed2"]) / 2
        rows.append(
            {
                "domain": t.domain,
                "task": t.name,
                **ms,
                "adaptive_over_fixed": ms["adaptive"] / fixed,
                "fixed_over_fixed": ms["fixed2"] / ms["fixed1"],
            }
        )
        r = rows[-1]
        print(
            f"  {t.domain:6} {t.name:26} fixed {ms['fixed1']:.4f}/{ms['fixed2']:.4f} ms "
            f"({ms['fixed1_reps']} reps) adaptive {ms['adaptive']:.4f} ms ({ms['adaptive_reps']} "
            f"reps): a/f {r['adaptive_over_fixed']:.3f}, f/f {r['fixed_over_fixed']:.3f}",
            flush=True,
        )
    for v in vs.values():
        v.close()

    def dev(xs):  # |log ratio|: how far from 1, either way
        import math

        return statistics.median(abs(math.log(x)) for x in xs) if xs else None

    out = {
        "rows": rows,
        "median_abs_log_adaptive_over_fixed": dev([r["adaptive_over_fixed"] for r in rows]),
        "median_abs_log_fixed_over_fixed": dev([r["fixed_over_fixed"] for r in rows]),
    }
    print(
        f"  median |log ratio|: adaptive/fixed {out['median_abs_log_adaptive_over_fixed']}, "
        f"fixed/fixed (noise) {out['median_abs_log_fixed_over_fixed']}",
        flush=True,
    )
    return out


def save_json(results: dict, out: str) -> None:
    """`out`, and its copy under $OUT when the device machine collects one."""
    text = json.dumps(results, indent=1, default=str)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text)
    if os.environ.get("OUT"):
        (Path(os.environ["OUT"]) / Path(out).name).write_text(text)


def kernelbench(args, limits: Limits, results: dict, save) -> None:
    """The KernelBench phase (bench/kernelbench_phase.py): rows and summary into `results`."""
    from bench.kernelbench_phase import run_phase

    if args.kb_timeout_s:
        limits = dataclasses.replace(limits, timeout_s=args.kb_timeout_s)
    problems = args.kb_problems.split(",") if args.kb_problems else None
    section: dict = {"rows": [], "summary": {}}
    results["kernelbench"] = section
    run_phase(
        Path(args.kernelbench),
        problems,
        limits,
        args.workers,
        section["rows"],
        on_row=save,
        out_summary=section["summary"],
        kb_skip=tuple(x for x in args.kb_eval_skip.split(",") if x),
        prebuild=args.prebuild,
    )
    save()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", help="comma-separated task names (default: all)")
    p.add_argument("--domains", default="cuda,triton")
    p.add_argument("--unconfined", action="store_true", help="no bubblewrap on this node")
    p.add_argument("--perturb-tasks", type=int, default=12, help="tasks per domain perturbed")
    p.add_argument(
        "--ops",
        help="comma-separated perturbation operators or rewrites only (e.g. tail_guard_dropped,"
        "tail_mask_dropped,grid_past_limit with --perturb-tasks 32: every task's)",
    )
    p.add_argument("--workers", type=int, default=None)
    p.add_argument(
        "--two-gpu-jobs",
        action="store_true",
        help="a second job for each candidate's trials (KernelSettings.one_gpu_job false): "
        "the path before one job per candidate, for a side-by-side run",
    )
    p.add_argument(
        "--drain",
        action="store_true",
        help="a timing waits for the running jobs to end (KernelSettings.timing_pause "
        "false) instead of pausing them: the path before, for a side-by-side run",
    )
    p.add_argument(
        "--no-confirm-slow",
        action="store_true",
        help="a slow verdict's first measure stands (KernelSettings.confirm_slow false): "
        "the path before verifier 10, for a side-by-side run",
    )
    p.add_argument(
        "--prebuild",
        action="store_true",
        help="build each perturbation batch first as a build node would (CPU runners on "
        "this node, timed apart) and seed the GPU verifier: Triton's precompile, CUDA's "
        "cubins and extensions; in the KernelBench phase, every candidate (its build-node "
        "seconds reported beside KernelBench's own precompile)",
    )
    p.add_argument(
        "--build-only",
        action="store_true",
        help="no GPU: build the references and perturbations as build nodes would, and "
        "report the build tier's seconds per candidate (bench/project_scale.py --build-run)",
    )
    p.add_argument(
        "--with-extension",
        action="store_true",
        help="with --build-only: the relu load_inline fixture in the cuda batch too (its "
        "build over the torch headers is a minute or more of one core)",
    )
    p.add_argument("--ext-kernels", type=int, default=2)
    p.add_argument("--compile-baseline-tasks", type=int, default=6)
    p.add_argument("--out", default=None, help="default: bench/results/kernels.json")
    p.add_argument(
        "--timing-sleep",
        choices=TIMING_SLEEPS,
        default=TIMING_SLEEP_DEFAULT,
        help="KernelSettings.timing_sleep: the GPU sleep queued before each timed run",
    )
    p.add_argument(
        "--gpu-connections",
        type=_queues,
        default=KernelSettings().gpu_connections,
        metavar="N|driver",
        help="KernelSettings.gpu_connections: each job's CUDA context's hardware queues "
        "(default: the setting's, %(default)s; `driver`: the driver's own, 8)",
    )
    p.add_argument(
        "--no-timing",
        action="store_true",
        help="every gate but timing (a diagnosis, no speed labels): what the batch's rate "
        "is without the timed runs, each of which holds the GPU alone",
    )
    p.add_argument(
        "--warm-refs",
        action="store_true",
        help="verify every reference a second time, build caches warm: its latency",
    )
    p.add_argument(
        "--mixed",
        action="store_true",
        help="the perturbation batch again with both domains at once on the one card (as "
        "the reward service verifies them): statuses against the domain-by-domain batch "
        "(a timed run's `slow` read as `pass`)",
    )
    p.add_argument(
        "--timing-ab",
        type=int,
        default=0,
        metavar="N",
        help="N references per domain timed fixed, adaptive and fixed again, interleaved: "
        "adaptive/fixed against fixed/fixed (the noise)",
    )
    p.add_argument("--kernelbench", metavar="PATH", help="KernelBench root: run its phase too")
    p.add_argument("--kb-problems", help="comma-separated level-1 stems (or `fixtures`)")
    p.add_argument("--kb-timeout-s", type=float, help="Limits.timeout_s for that phase")
    p.add_argument("--only-kernelbench", action="store_true", help="skip the other phases")
    p.add_argument(
        "--kb-eval-skip",
        default="",
        help="comma-separated candidate name prefixes that only Crucible verifies (e.g. kb_)",
    )
    args = p.parse_args()
    if args.only_kernelbench and not args.kernelbench:
        p.error("--only-kernelbench needs --kernelbench PATH")
    if args.with_extension and not args.build_only:
        p.error("--with-extension goes with --build-only (the GPU run's batch has it always)")
    name = "kernels_kernelbench.json" if args.only_kernelbench else "kernels.json"
    name = "kernels_build.json" if args.build_only else name
    args.out = args.out or str(ROOT / "bench" / "results" / name)

    import torch

    from verifiers.kernels.pool import GpuLock
    from verifiers.kernels.verifier import CudaVerifier, TritonVerifier

    limits = Limits(unconfined=args.unconfined)
    if args.no_timing:
        from verifiers.kernels.domain import CUDA

        gates = tuple(g for g in CUDA.gate_names if g != "timing")  # Triton's are the same
        limits = dataclasses.replace(limits, gates=gates)
    if args.only_kernelbench:
        dev = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
        print(f"device: {dev}; torch {torch.__version__}", flush=True)
        results = {"device": dev, "torch": torch.__version__}
        kernelbench(args, limits, results, lambda: save_json(results, args.out))
        print(f"\nwrote {args.out}")
        return 0
    cache = Path(tempfile.mkdtemp(prefix="crucible-bench-cache-"))  # cold: compile included
    names = args.tasks.split(",") if args.tasks else None
    tasks, errors = load_catalog(ROOT / "tasks", args.domains.split(","), names)
    for e in errors:
        print("task error:", e)
    dev = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    print(f"device: {dev}; torch {torch.__version__}; {len(tasks)} tasks", flush=True)
    if args.build_only:
        results = {"device": dev, "torch": torch.__version__, "tasks": len(tasks)}
        results.update(build_only(args, tasks, limits, cache))
        save_json(results, args.out)
        print(f"\nwrote {args.out}")
        return 0
    one = not args.two_gpu_jobs
    kw = {"cache_dir": cache, "workers": args.workers, "one_gpu_job": one}
    kw["timing_pause"] = not args.drain
    kw["timing_sleep"] = args.timing_sleep
    kw["confirm_slow"] = not args.no_confirm_slow
    kw["gpu_connections"] = args.gpu_connections
    verifiers = {"cuda": CudaVerifier(**kw), "triton": TritonVerifier(**kw)}
    workers = {d: v.pool(limits).size for d, v in verifiers.items()}
    results: dict = {"device": dev, "torch": torch.__version__, "tasks": len(tasks)}
    results.update(one_gpu_job=one, workers=workers, cores=os.cpu_count())
    results["confirm_slow"] = kw["confirm_slow"]
    results["timing_sleep"] = args.timing_sleep
    results["gpu_connections"] = args.gpu_connections
    results["timing_pause"] = not args.drain

    def save() -> None:
        save_json(results, args.out)

    # 0. workers started and reference timings measured before any clock starts: a
    #    verifier node keeps both for every later candidate
    t0 = time.perf_counter()
    for v in verifiers.values():
        v.pool(limits).warm_up()
    results["workers_start_s"] = time.perf_counter() - t0
    compile_for = {t.name for t in spread(tasks, args.compile_baseline_tasks)}
    t0 = time.perf_counter()
    for domain, v in verifiers.items():
        v.prepare_baselines([t for t in tasks if t.domain == domain], limits, compile_for)
    results["baselines_s"] = time.perf_counter() - t0
    print(
        f"workers up in {results['workers_start_s']:.1f}s; reference baselines in "
        f"{results['baselines_s']:.1f}s (torch.compile for {sorted(compile_for)})",
        flush=True,
    )
    rows: list[dict] = []
    results["rows"] = rows

    # 1. every reference, one at a time (cold compile caches): per-candidate latency
    print(f"\n== references: {len(tasks)}, one at a time", flush=True)
    for t in tasks:
        vd = verifiers[t.domain].verify(t, t.reference, limits)
        rows.append(row_of("references", t, "catalog:reference", vd))
        r = rows[-1]
        print(
            f"  {t.domain:6} {t.name:26} {r['status']:12} {r['code']:20} "
            f"{r['seconds']:.2f}s speedup={r['speedup']}",
            flush=True,
        )
    save()

    # 2. perturbations, as a batch per domain: throughput with parallel compiles
    pert_tasks = spread(tasks, args.perturb_tasks)
    items = [it for it in candidates(pert_tasks, True) if it[2] != "catalog:reference"]
    if args.ops:
        ops = set(args.ops.split(","))  # a perturbation's or a rewrite's name
        items = [it for it in items if it[2].split(":", 1)[-1] in ops]
    relu = next((t for t in tasks if t.domain == "cuda" and t.name == "relu"), None)
    # the host+device path: a load_inline build inside the batch
    if relu is not None and not args.ops:
        ext = ROOT / "tests/verifiers/kernel_fixtures/relu_extension.py"
        items.insert(0, (relu, ext.read_text(), "fixture:extension"))
    print(f"\n== perturbations: {len(items)} candidates of {len(pert_tasks)} tasks", flush=True)
    for domain, v in verifiers.items():
        mine = [it for it in items if it[0].domain == domain]
        if not mine:
            continue
        # when each candidate's verdict came: one long candidate (a load_inline build)
        # holds the batch's wall, so the rate at which the first 95 % came is said too
        done_at: list[float] = []
        plain = v.verify

        def timed_verify(*a, _plain=plain, _done=done_at, **k):
            try:
                return _plain(*a, **k)
            finally:
                _done.append(time.perf_counter())

        if args.prebuild and callable(getattr(v, "prebuild", None)):
            # a build node's compiles, made first on this node's CPUs (timed apart, as a
            # build node's would be) and seeded before the batch
            built, record = build_batch(type(v), mine, limits, cache / "build", args.workers)
            record.update(v.seed([e for entries in built for e in entries]))
            results.setdefault("prebuild", {})[domain] = record
            print(f"  {domain} prebuilt: {brief(record)}", flush=True)
        v.verify = timed_verify
        t0, c0, h0 = time.perf_counter(), node_cpu_s(), host_cpu_s()
        try:
            verdicts = v.verify_many([(t, c) for t, c, _ in mine], limits)
        finally:
            del v.verify
        wall = time.perf_counter() - t0
        c1 = node_cpu_s()
        busy = (c1 - c0) / (wall * (os.cpu_count() or 1)) if None not in (c0, c1) else None
        host = (host_cpu_s() - h0) / wall  # this process's threads: 1.0 is one core
        done_at = [x - t0 for x in done_at]
        for (t, _c, gen), vd in zip(mine, verdicts, strict=True):
            rows.append(row_of("perturbations", t, gen, vd))
        rate = len(mine) / wall * 60
        n95 = max(1, math.ceil(0.95 * len(done_at)))
        p95 = sorted(done_at)[n95 - 1] if done_at else wall
        results.setdefault("throughput", []).append(
            {
                "domain": domain,
                "candidates": len(mine),
                "wall_s": wall,
                "per_min": rate,
                "p95_s": p95,
                "per_min_first_95pct": n95 / p95 * 60 if p95 else 0.0,
                # the node's cores busy during the batch (1.0: CPU-bound)
                "cpu_busy": round(busy, 3) if busy is not None else None,
                # the verifying process itself (its threads share one interpreter lock)
                "host_cores_busy": round(host, 3),
            }
        )
        print(
            f"  {domain}: {len(mine)} in {wall:.1f}s = {rate:.1f}/min "
            f"(the first {n95} in {p95:.1f}s = {n95 / p95 * 60 if p95 else 0:.1f}/min); "
            f"the node's cores {f'{busy:.0%}' if busy is not None else '?'} busy, "
            f"this process {host:.2f} cores",
            flush=True,
        )
        save()
    if args.mixed:
        results["mixed"] = mixed_batch(verifiers, items, rows, limits)
        save()
    if args.warm_refs:
        print(f"\n== references again, build caches warm: {len(tasks)}", flush=True)
        for t in tasks:
            vd = verifiers[t.domain].verify(t, t.reference, limits)
            rows.append(row_of("references_warm", t, "catalog:reference", vd))
        warm = [r for r in rows if r["phase"] == "references_warm"]
        results["warm_median_s"] = {
            d: statistics.median(r["seconds"] for r in warm if r["domain"] == d)
            for d in sorted({r["domain"] for r in warm})
        }
        print(f"  median seconds a reference, warm: {results['warm_median_s']}", flush=True)
        save()
    if args.timing_ab:
        results["timing_ab"] = timing_ab(tasks, args, limits, cache)
        save()
    # timings that paused the running jobs, per GPU lock: on a GPU the domains' verifiers
    # share the process's one (`the_card`), and it is reported once, under their names
    locks: dict[int, tuple[list[str], GpuLock]] = {}
    for domain, v in verifiers.items():
        locks.setdefault(id(v._gpu), ([], v._gpu))[0].append(domain)
    for names, lock in locks.values():
        domain = "+".join(names)
        parts = pause_parts(lock.pause_log)
        results.setdefault("timing_pauses", {})[domain] = {
            "pauses": lock.pauses,
            "seconds": round(lock.pause_s, 3),
            "resisted": lock.resisted,  # jobs killed for running through a pause
            # where a pause's time went: stopping the jobs, the host's GPU work under way,
            # the whole pause (the timed runs and their hand-over the rest)
            "parts": parts,
        }
        if lock.pauses:
            print(
                f"{domain}: {lock.pauses} timings paused the running jobs, "
                f"{lock.pause_s:.1f}s in all ({lock.pause_s / lock.pauses * 1e3:.1f} ms each)"
                f"; {lock.resisted} jobs killed for running through one"
            )
            for part, d in parts.items():
                print(
                    f"  {part}: sum {d['sum']:.2f}s, median {d['median'] * 1e3:.1f} ms, "
                    f"p90 {d['p90'] * 1e3:.1f} ms, max {d['max'] * 1e3:.1f} ms"
                )
    for v in verifiers.values():
        v.close()

    # slow verdicts measured again (confirm_slow): how many, and how many came out otherwise
    again = [r for r in rows if r.get("timing_measures")]
    if again:
        changed = [r for r in again if r["status"] != "slow"]
        # the eager baseline timed again beside a slow measure taken again, over its
        # first measure: past 1 + BASELINE_DRIFT the verdict is the machine's (timing_drift)
        drift = [
            m["eager_again_ms"] / r["eager_ms"]
            for r in again
            for m in r["timing_measures"]
            if m.get("eager_again_ms") and r.get("eager_ms")
        ]
        # slow twice: the task's own reference verified again (verifier 13), its speedup
        refs = [r["reference_again"] for r in again if r.get("reference_again")]
        results["slow_measured_again"] = {
            "verdicts": len(again),
            "not_slow": len(changed),
            "baseline_again_ratios": [round(x, 4) for x in drift],
            "reference_again": [f"{x['status']} {x.get('speedup')}" for x in refs],
        }
        print(
            f"\nslow verdicts measured again: {len(again)}, {len(changed)} of them not slow: "
            + ", ".join(
                f"{r['domain']}/{r['task']} {r['generator']} {r['status']}/{r['code']}"
                for r in changed
            )
        )
        if drift:
            print(
                f"eager baseline timed again beside them, over its first measure: median "
                f"{statistics.median(drift):.3f}x, range {min(drift):.3f}-{max(drift):.3f}x "
                f"over {len(drift)}"
            )
        if refs:
            print(
                "slow twice, the task's reference verified again (status speedup): "
                + ", ".join(results["slow_measured_again"]["reference_again"])
            )
    # the SM clock before each timed run (verifier 12): how often it had to be spun up,
    # how long, and the timings refused for a clock that stayed low (gpu_clock_low)
    clocked = [r for r in rows if r.get("gpu_clock_mhz") is not None]
    if clocked:
        # spun: read again after a spin (one spin is ~2 ms at the top clock)
        spun = [
            r["gpu_clock_spun_s"] for r in clocked if r["gpu_clock_mhz"] != r["gpu_clock_start_mhz"]
        ]
        low = sum(r["code"] == "gpu_clock_low" for r in rows)
        results["gpu_clock"] = {
            "timings": len(clocked),
            "spun": len(spun),
            "spun_s_max": max(spun, default=0.0),
            "start_mhz_min": min(r["gpu_clock_start_mhz"] for r in clocked),
            "mhz_min": min(r["gpu_clock_mhz"] for r in clocked),
            "clock_low": low,
        }
        print(f"\nSM clock before the timed runs: {results['gpu_clock']}")
    refs = [r for r in rows if r["phase"] == "references"]
    # timed candidates only: one that failed before its timed runs held the GPU alone 0 s
    excl = [
        r["gpu_exclusive_s"]
        for r in rows
        if r.get("gpu_exclusive_s") is not None and r.get("time_ms") is not None
    ]
    if excl:
        results["gpu_exclusive_median_s"] = statistics.median(excl)
        print(
            f"\nGPU held alone per timed candidate: median {statistics.median(excl):.4f}s, "
            f"max {max(excl):.4f}s over {len(excl)}"
        )
    # where the batch's correctness trials spent their time, per job (runner's clocks;
    # `reply` is the verifier's answer, its host side `trials_host_*`)
    parts = trial_parts([r for r in rows if r["phase"] == "perturbations"])
    if parts:
        results["trial_parts"] = parts
        print("\nthe batch's trials, per job (seconds: sum, median, p90):")
        for name, d in parts.items():
            print(f"  {name}: {d['sum']:.1f}, {d['median']:.3f}, {d['p90']:.3f}")
    for domain in ("cuda", "triton"):  # the drain: jobs that could not start meanwhile
        waits = [
            r["gpu_admit_wait_s"]
            for r in rows
            if r["phase"] == "perturbations" and r["domain"] == domain
            if r.get("gpu_admit_wait_s") is not None
        ]
        if waits:
            results.setdefault("gpu_admit_wait_s", {})[domain] = {
                "sum": sum(waits),
                "median": statistics.median(waits),
                "max": max(waits),
            }
            print(
                f"{domain} batch: waited {sum(waits):.1f}s in all before jobs could start "
                f"(median {statistics.median(waits):.3f}s, max {max(waits):.2f}s)"
            )
    print("\n== references")
    print(
        table(
            [
                [
                    r["domain"],
                    r["task"],
                    r["level"],
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
                "lvl",
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
    results["references_pass"] = {
        d: f"{sum(r['status'] == 'pass' for r in refs if r['domain'] == d)}/"
        f"{sum(r['domain'] == d for r in refs)}"
        for d in verifiers
    }

    pert = [r for r in rows if r["phase"] == "perturbations"]
    by_op: dict = collections.defaultdict(collections.Counter)
    for r in pert:
        verdict = r["status"] + (f"/{r['code']}" if r["code"] else "")
        by_op[(r["domain"], r["generator"])][verdict] += 1
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

    print("\n== seconds per reference verified alone (compile included, cold caches)")
    lat = []
    for domain in verifiers:
        mine = [r for r in refs if r["domain"] == domain]
        if not mine:
            continue
        gate_times = collections.defaultdict(list)
        for r in mine:
            for g, s in r["gates"].items():
                gate_times[g].append(s)
        med = statistics.median(r["seconds"] for r in mine)
        lat.append(
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
    print(table(lat, ["domain", "candidates", "median_s", "median per gate"]))
    tp = results.get("throughput", [])
    n_all, wall_all = sum(x["candidates"] for x in tp), sum(x["wall_s"] for x in tp)
    results["per_min_batch"] = n_all / wall_all * 60 if wall_all else 0
    print(
        f"\nbatch throughput: {n_all} candidates in {wall_all:.1f}s = "
        f"{results['per_min_batch']:.1f}/min on one GPU"
    )
    save()

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
    save()
    if args.kernelbench:
        kernelbench(args, limits, results, save)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
