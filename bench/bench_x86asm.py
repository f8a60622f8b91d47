"""x86asm verification benchmark: where a candidate's time goes, how many candidates per
second this machine verifies over the catalog, and how well the speed measurement repeats,
side by side with the peer's (SuperCoder's) way of timing.

Measured in one run:

1. Per-candidate time by gate over the catalog's offline candidates (references, rewrites,
   perturbations, copies; `generators.perturb.x86asm`): median, p90 and max of each gate
   and of the whole verification (`duration_ms`), and of the passes alone (every gate ran,
   the perf gate included).
2. Candidates per second: `verify_many` over the same candidates with workers = the cores.
3. Repeatability: each of --repeat-tasks references verified --repeat times: the
   instruction count (callgrind) must be the same to the instruction every time; the wall
   speedup's spread (max/min - 1 over the repeats). Beside it, the peer's measurement of
   the same two functions: SuperCoder times whole processes with hyperfine (--warmup 3
   --runs 10, the mean); here the same driver binary runs one timed pass of the candidate
   and one of the baseline per process (hyperfine when installed, else the same protocol in
   Python), and its speedup's spread over the same repeats is reported.

4. With --aa N (instead of 1-3): the A/A proof of the perf gate (#29). Per task family
   (and for whole programs, imported from --aa-programs), N times, cycling over the
   family's tasks: the task's own -O3 baseline verified as a candidate, the copy gate
   aside (a verifier whose copy gate lets the baseline through: nothing else differs), so
   the perf gate times the baseline against itself. Printed per family: how many runs
   cleared the wall bar (the interval's low end above the noise floor), the instruction
   bar, and passed (all three must be 0), and the noise floors measured.

Timings are reported, never asserted. Usage:
    python bench/bench_x86asm.py [--only NAME ...] [--repeat 5] [--repeat-tasks 6]
                                 [--json bench/results/x86asm.json]
    python bench/bench_x86asm.py --aa 50 [--only NAME ...] [--aa-programs ROWS.jsonl]
                                 [--json bench/results/x86asm_aa.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generators.perturb.x86asm import X86PerturbGenerator  # noqa: E402
from verifiers.catalog import load_catalog  # noqa: E402
from verifiers.contract import Task, Verdict  # noqa: E402
from verifiers.x86asm import kit, toolchain  # noqa: E402
from verifiers.x86asm.cases import encode, parse_output  # noqa: E402
from verifiers.x86asm.verifier import X86Verifier  # noqa: E402

TARGET_S = 1.5  # per candidate, the perf gate included
TARGET_PER_S = 2.0  # candidates per second over the catalog
PEER_RUNS, PEER_WARMUP = 10, 3
DEFAULT_JSON = ROOT / "bench" / "results" / "x86asm.json"


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))] if xs else float("nan")


def spread(xs: list[float]) -> float:
    return max(xs) / min(xs) - 1 if xs and min(xs) > 0 else float("nan")


def gate_ms(v: Verdict) -> dict[str, float]:
    out = {c.name: c.seconds * 1000 for c in v.checks}
    out["total"] = v.duration_ms
    return out


def peer_speedup(task: Task, work: Path) -> float:
    """SuperCoder's protocol on this task: whole-process wall time, mean of PEER_RUNS after
    PEER_WARMUP, candidate (the reference answer) and baseline each in its own process."""
    k = kit.get_kit(task)
    gen = kit.generator(task)
    objs = {**toolchain.driver_objects(), "base.o": k.base_o}
    ref_o = kit.rename(toolchain.assemble_trusted(task.reference), "cand", True)
    kit.link_trusted({**objs, "cand.o": ref_o}, work / "x", kit.function_entries(task))
    first = gen.perf.first_pass()  # one pass of the workload, as the verifier counts
    (work / "cand.bin").write_bytes(encode(gen.sig, first, "count"))
    (work / "base.bin").write_bytes(encode(gen.sig, first, "count", flags=2))
    means = {}
    for which in ("cand", "base"):
        argv = [str(work / "x"), str(work / f"{which}.bin")]
        if shutil.which("hyperfine"):
            out = work / f"{which}.json"
            subprocess.run(
                ["hyperfine", "-N", "--warmup", str(PEER_WARMUP), "--runs", str(PEER_RUNS),
                 "--export-json", str(out), " ".join(argv)],
                check=True, capture_output=True,
            )  # fmt: skip
            means[which] = json.loads(out.read_text())["results"][0]["mean"]
        else:
            for _ in range(PEER_WARMUP):
                subprocess.run(argv, check=True, capture_output=True)
            times = []
            for _ in range(PEER_RUNS):
                t0 = time.perf_counter()
                subprocess.run(argv, check=True, capture_output=True)
                times.append(time.perf_counter() - t0)
            means[which] = statistics.mean(times)
        res = subprocess.run(argv, capture_output=True, text=True)
        assert parse_output(res.stdout, len(first.layout.sizes)).end == len(first.cases)
    return means["base"] / means["cand"]


class AAVerifier(X86Verifier):
    """The A/A bench's verifier: its copy gate lets a copy of a baseline through (the
    candidate here is the baseline); every other gate is the verifier's own."""

    def gate_copy(self, ctx):
        return "A/A: the copy gate is aside, the candidate is the baseline itself"


def aa_tasks(args: argparse.Namespace, tasks: list[Task]) -> dict[str, list[Task]]:
    """The catalog's tasks by family, and the imported programs as one family."""
    fams: dict[str, list[Task]] = defaultdict(list)
    for t in tasks:
        fams[t.family].append(t)
    if args.aa_programs:
        from verifiers.catalog import load_task
        from verifiers.specfields import ImportProblems
        from verifiers.x86asm.supercoder import import_supercoder

        dest = Path(tempfile.mkdtemp(prefix="crucible-bench-aa-")) / "x86asm"
        try:
            dirs = import_supercoder(args.aa_programs, dest)
        except ImportProblems as e:
            dirs = e.imported
        fams["program"] = [load_task(d, "x86asm") for d in dirs]
    return dict(sorted(fams.items()))


def aa_main(args: argparse.Namespace, tasks: list[Task]) -> int:
    fams = aa_tasks(args, tasks)
    v = AAVerifier(workers=1)
    rows, result = [], {}
    t0 = time.perf_counter()
    for fam, members in fams.items():
        runs = []
        for i in range(args.aa):
            t = members[i % len(members)]
            verdict = v.verify(t, t.harness["baselines"]["O3"])
            m = verdict.metrics
            runs.append(
                {
                    "task": t.name,
                    "status": verdict.status.value,
                    "code": verdict.code,
                    "wall_clears": bool(m.get("wall_clears_bar")),
                    "instr_clears": m.get("speedup", 0) > m.get("instruction_bar_applied", 1.01),
                    "speedup_wall": m.get("speedup_wall"),
                    "ci": m.get("speedup_wall_ci"),
                    "noise_floor": m.get("noise_floor"),
                }
            )
        floors = [r["noise_floor"] for r in runs if r["noise_floor"]]
        walls = [r["speedup_wall"] for r in runs if r["speedup_wall"]]
        row = {
            "runs": len(runs),
            "tasks": sorted({r["task"] for r in runs}),
            "wall_cleared": sum(r["wall_clears"] for r in runs),
            "instructions_cleared": sum(r["instr_clears"] for r in runs),
            "passed": sum(r["status"] == "pass" for r in runs),
            "not_timed": sum(r["noise_floor"] is None for r in runs),
            "noise_floor_median": statistics.median(floors) if floors else None,
            "noise_floor_p90": pct(floors, 0.9) if floors else None,
            "aa_wall_min_max": [min(walls), max(walls)] if walls else None,
            "statuses": dict(Counter(f"{r['status']}/{r['code']}" for r in runs)),
        }
        result[fam] = {**row, "runs_detail": runs}
        rows.append((fam, row))
        print(f"A/A {fam}: {row['wall_cleared']} of {row['runs']} cleared the wall bar", flush=True)
    print()
    print(f"A/A: each task family's -O3 baseline timed against itself through the perf gate "
          f"({args.aa} runs a family, {time.perf_counter() - t0:.0f} s)")  # fmt: skip
    print(f"  {'family':12}{'runs':>6}{'wall cleared':>14}{'instr cleared':>15}{'passed':>8}"
          f"{'floor med':>11}{'floor p90':>11}{'A/A wall min..max':>20}")  # fmt: skip
    for fam, r in rows:
        mm = r["aa_wall_min_max"]
        print(f"  {fam:12}{r['runs']:>6}{r['wall_cleared']:>14}{r['instructions_cleared']:>15}"
              f"{r['passed']:>8}{r['noise_floor_median'] or float('nan'):>11.3f}"
              f"{r['noise_floor_p90'] or float('nan'):>11.3f}"
              f"{f'{mm[0]:.3f}..{mm[1]:.3f}' if mm else '-':>20}")  # fmt: skip
    total = sum(r["wall_cleared"] + r["passed"] + r["instructions_cleared"] for _, r in rows)
    print(f"\n  target: 0 cleared in every family; measured: {total} in all")
    out = args.json if args.json != DEFAULT_JSON else ROOT / "bench" / "results" / "x86asm_aa.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"runs_per_family": args.aa, "families": result}, indent=1))
    print(f"written {out}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--only", nargs="*", help="task names (default: the whole catalog)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--repeat-tasks", type=int, default=6)
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    ap.add_argument("--aa", type=int, default=0, help="A/A runs per task family (mode 4)")
    ap.add_argument(
        "--aa-programs",
        type=Path,
        default=ROOT / "tests" / "fixtures" / "supercoder" / "glibc_rows.jsonl",
        help="SuperCoder rows whose programs are the A/A bench's program family ('' for none)",
    )
    args = ap.parse_args()

    tasks, errors = load_catalog(ROOT / "tasks", ["x86asm"], args.only)
    assert not errors, errors
    if args.aa:
        if not str(args.aa_programs) or str(args.aa_programs) == ".":
            args.aa_programs = None
        return aa_main(args, tasks)
    cores = os.cpu_count() or 1
    print(f"{len(tasks)} tasks, {cores} cores, {platform.platform()}, "
          f"{toolchain.gcc_label()}, {toolchain.version('valgrind')}", flush=True)  # fmt: skip
    t0 = time.perf_counter()
    for t in tasks:
        kit.get_kit(t)
    print(f"kits (once per task and toolchain): {time.perf_counter() - t0:.1f} s", flush=True)

    gen = X86PerturbGenerator()
    items = [(t, c.code) for t in tasks for c in gen.generate(t)]
    verifier = X86Verifier(workers=cores)
    t0 = time.perf_counter()
    verdicts = verifier.verify_many(items)
    wall = time.perf_counter() - t0
    per_s = len(items) / wall
    by_status = defaultdict(int)
    for v in verdicts:
        by_status[f"{v.status.value}/{v.code}" if v.code else v.status.value] += 1
    print(f"throughput: {len(items)} candidates in {wall:.1f} s = {per_s:.2f}/s "
          f"(workers={cores})", flush=True)  # fmt: skip

    gates = list(verifier.gates)
    rows = [gate_ms(v) for v in verdicts]
    passes = [gate_ms(v) for v in verdicts if v.passed]

    def stats(rs: list[dict[str, float]], key: str) -> tuple[float, float, float]:
        xs = [r[key] for r in rs if key in r]
        return (statistics.median(xs), pct(xs, 0.9), max(xs)) if xs else (float("nan"),) * 3

    # repeatability: references verified again and again, and the peer's protocol
    rep_tasks = sorted(tasks, key=lambda t: t.name)[: args.repeat_tasks]
    repeat = {}
    single = X86Verifier(workers=1)
    with tempfile.TemporaryDirectory(prefix="crucible-bench-x86-") as tmp:
        for t in rep_tasks:
            vs = [single.verify(t, t.reference) for _ in range(args.repeat)]
            peer = []
            for r in range(args.repeat):
                work = Path(tmp) / f"{t.name}-{r}"
                work.mkdir()
                peer.append(peer_speedup(t, work))
            repeat[t.name] = {
                "instructions": [v.metrics.get("instructions") for v in vs],
                "speedup": [v.metrics.get("speedup") for v in vs],
                "speedup_wall": [v.metrics.get("speedup_wall") for v in vs],
                "peer_speedup_wall": [round(p, 4) for p in peer],
                "status": sorted({v.status.value for v in vs}),
            }
            print(f"repeat {t.name}: done", flush=True)

    print()
    print(f"Per candidate (ms), {len(rows)} candidates      median      p90      max")
    for g in ["format", *gates, "total"]:
        m, p, x = stats(rows, g)
        print(f"  {g:36}{m:8.1f}{p:9.1f}{x:9.1f}")
    m, p, x = stats(passes, "total")
    print(f"  {'total, passes (every gate ran)':36}{m:8.1f}{p:9.1f}{x:9.1f}")
    print()
    print("Verdicts: " + ", ".join(f"{k} {n}" for k, n in sorted(by_status.items())))
    print()
    print("Repeatability (same candidate, the task's reference answer)")
    print(f"  {'task':22}{'instructions':>14}{'same':>6}{'wall x (min..max)':>20}"
          f"{'spread':>8}{'peer x (min..max)':>20}{'spread':>8}")  # fmt: skip
    all_same = True
    for name, r in repeat.items():
        same = len(set(r["instructions"])) == 1 and None not in r["instructions"]
        all_same &= same
        w, pw = r["speedup_wall"], r["peer_speedup_wall"]
        print(f"  {name:22}{r['instructions'][0]:>14,}{same!s:>6}"
              f"{f'{min(w):.2f}..{max(w):.2f}':>20}{spread(w):>8.1%}"
              f"{f'{min(pw):.2f}..{max(pw):.2f}':>20}{spread(pw):>8.1%}")  # fmt: skip
    print()
    _, tot_p, _ = stats(passes, "total")
    print("Targets                                   measured     target   ratio")
    print(f"  verification of a pass, p90 (s)         {tot_p / 1000:8.2f}   <= {TARGET_S:5.2f}"
          f"   {tot_p / 1000 / TARGET_S:5.2f}")  # fmt: skip
    print(f"  candidates per second (catalog)         {per_s:8.2f}   >= {TARGET_PER_S:5.2f}"
          f"   {per_s / TARGET_PER_S:5.2f}")  # fmt: skip
    print(f"  instruction counts identical on rerun   {all_same!s:>8}   True")
    result = {
        "machine": {"platform": platform.platform(), "cores": cores},
        "toolchain": {"gcc": toolchain.version("gcc"), "valgrind": toolchain.version("valgrind")},
        "candidates": len(rows),
        "throughput_per_s": round(per_s, 3),
        "gates_ms": {g: stats(rows, g) for g in ["format", *gates, "total"]},
        "pass_total_ms": stats(passes, "total"),
        "verdicts": dict(by_status),
        "repeat": repeat,
        "instructions_identical": all_same,
        "peer_timer": "hyperfine" if shutil.which("hyperfine") else "python (hyperfine's protocol)",
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1))
    print(f"\nwritten {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
