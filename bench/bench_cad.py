"""CAD verification throughput: warm workers against a fresh process per candidate.

In one run, on the same candidates (every catalog reference, rewrite and perturbation of
the offline generator):
  1. warm: the CAD verifier's pool (one worker per core), `verify_many` over all of them;
  2. fresh: a new Python process per candidate that imports CadQuery, runs the script and
     judges it against the reference (the same judge, no sandbox: the cheapest honest cold
     path), as many processes at a time as there are cores, on a sample;
then prints candidates/s side by side, seconds by gate, whether every perturbation that
changes the geometry failed (ground truth: exact OCC booleans in this process), and the
warm worker's resident memory over `--rss-candidates` candidates through one worker.

    python bench/bench_cad.py [--fresh-sample 24] [--rss-candidates 1000] [--out FILE]
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from verifiers.catalog import load_catalog  # noqa: E402
from verifiers.contract import Limits, Status  # noqa: E402

FRESH = r"""
import json, sys, time, io
t0 = time.perf_counter()
import cadquery as cq
from OCP.BRepTools import BRepTools
from verifiers.cad import judge
from pathlib import Path
job = json.load(open(sys.argv[1]))
shown = []
g = {"__name__": "__cad__", "show_object": lambda o, *a, **k: shown.append(o)}
out = {"import_s": time.perf_counter() - t0}
try:
    exec(compile(job["script"], "candidate.py", "exec"), g)
    obj = g.get("result", shown[-1] if shown else None)
    shape = obj.val().wrapped if isinstance(obj, cq.Workplane) else obj.wrapped
    BRepTools.Write_s(shape, sys.argv[2])
    ref = judge.Reference(job["ref_path"])
    art = Path(sys.argv[2] + ".art")
    art.mkdir()
    res = judge.judge(job, sys.argv[2], ref, art)  # the same work: picture, STEP, STL
    out["failed"] = res.get("failed")
except Exception as e:
    out["failed"] = type(e).__name__
out["total_s"] = time.perf_counter() - t0
print(json.dumps(out))
"""


def table(rows: list[list], head: list[str]) -> str:
    cols = [head, *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cols) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), fmt.format(*["-" * w for w in widths])]
    return "\n".join(lines + [fmt.format(*r) for r in cols[1:]])


def candidates(tasks) -> list[tuple]:
    from generators.perturb import generator_for

    out = []
    for t in tasks:
        for c in generator_for("cad").generate(t, seed=0):
            out.append((t, c.code, c.origin, c.generator))
    return out


def truth(task, code: str, cache: dict) -> str:
    """'same' / 'changed' geometry against the reference, by exact booleans here."""
    import cadquery as cq

    from verifiers.cad import geometry as geo

    def build(src):
        shown: list = []
        g = {"__name__": "__cad__", "show_object": lambda o, *a, **k: shown.append(o)}
        try:
            exec(compile(src, "candidate.py", "exec"), g)
            obj = g.get("result", shown[-1] if shown else None)
            if isinstance(obj, cq.Workplane):
                return obj.val().wrapped
            return obj.wrapped if isinstance(obj, cq.Shape) else None
        except Exception:
            return None

    if task.name not in cache:
        cache[task.name] = build(task.reference)
    ref, shape = cache[task.name], build(code)
    if shape is None or ref is None:
        return "changed"
    a, b = geo.props(shape), geo.props(ref)
    if task.harness["compare"] == "normalized":
        ta, sa = geo.normalizing(a)
        tb, sb = geo.normalizing(b)
        shape, ref = geo.transform(shape, None, ta, sa), geo.transform(ref, None, tb, sb)
        a, b = geo.props(shape), geo.props(ref)
    try:
        iou = geo.iou(shape, ref, a.volume, b.volume)
    except geo.GeometryError:
        return "changed"
    return "same" if iou > 1 - 1e-7 else "changed"


def fresh_run(args) -> dict:
    task, code, ref_path, work = args
    h = task.harness
    job = {"script": code, "ref_path": ref_path, "mode": h["compare"], "iou_pass": h["iou_pass"],
           "surface_pass": h["surface_pass"], "chamfer_pass": h["chamfer_pass"],
           "euler": h.get("euler")}  # fmt: skip
    jf = Path(tempfile.mkstemp(suffix=".json", dir=work)[1])
    jf.write_text(json.dumps(job))
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", FRESH, str(jf), str(jf.with_suffix(".brep"))],
        capture_output=True, text=True, cwd=ROOT, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"},
    )  # fmt: skip
    wall = time.perf_counter() - t0
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        out = {"failed": "crash", "err": proc.stderr[-300:]}
    return {**out, "wall_s": wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fresh-sample", type=int, default=24)
    ap.add_argument("--rss-candidates", type=int, default=1000)
    ap.add_argument("--out", default=str(ROOT / "bench/results/cad.json"))
    args = ap.parse_args()

    from verifiers.cad.verifier import CadVerifier

    tasks, errors = load_catalog(ROOT / "tasks", ["cad"])
    assert not errors, errors
    pairs = candidates(tasks)
    cores = os.cpu_count() or 1
    print(f"{len(tasks)} tasks, {len(pairs)} candidates, {cores} cores")
    limits = Limits()

    # references first: each worker is sent each reference once (not the bench's subject)
    v = CadVerifier()
    v.verify_many([(t, t.reference) for t in tasks], limits)
    t0 = time.perf_counter()
    verdicts = v.verify_many([(t, code) for t, code, _, _ in pairs], limits)
    warm_s = time.perf_counter() - t0
    warm_rate = len(pairs) / warm_s

    # fresh process per candidate, on a sample spread over the set, `cores` at a time
    work = Path(tempfile.mkdtemp(prefix="bench-cad-"))
    ref_paths = {}
    for t in tasks:
        key = v._reference(t, limits)
        p = work / f"{t.name}.brep"
        p.write_text(v._refs[key])
        ref_paths[t.name] = str(p)
    step = max(1, len(pairs) // args.fresh_sample)
    sample = pairs[::step][: args.fresh_sample]
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=cores) as ex:
        fresh = list(ex.map(fresh_run, [(t, c, ref_paths[t.name], work) for t, c, _, _ in sample]))
    fresh_s = time.perf_counter() - t0
    fresh_rate = len(sample) / fresh_s
    # the same sample, warm, for the like-for-like ratio
    t0 = time.perf_counter()
    v.verify_many([(t, c) for t, c, _, _ in sample], limits)
    warm_sample_rate = len(sample) / (time.perf_counter() - t0)
    # warm again, without the candidates whose B-rep is the reference's own (those skip
    # the booleans and distances): every candidate here is measured
    measured = [(t, c) for (t, c, _, _), vd in zip(pairs, verdicts, strict=True)
                if not vd.metrics.get("identical")]  # fmt: skip
    t0 = time.perf_counter()
    v.verify_many(measured, limits)
    warm_measured_rate = len(measured) / (time.perf_counter() - t0)

    # seconds by gate
    gate_s: dict[str, list[float]] = collections.defaultdict(list)
    steps: dict[str, list[float]] = collections.defaultdict(list)
    for vd in verdicts:
        for c in vd.checks:
            gate_s[c.name].append(c.seconds)
        for k, s in (vd.metrics.get("judge_steps") or {}).items():
            steps[k].append(s)

    # perturbations that change geometry must fail
    cache: dict = {}
    by_op: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    survivors = []
    for (t, code, origin, gen), vd in zip(pairs, verdicts, strict=True):
        if origin == "reference":
            by_op[gen][f"{vd.status}"] += 1
            continue
        geom = truth(t, code, cache)
        by_op[gen][f"{geom}:{vd.status}"] += 1
        if origin == "perturb" and geom == "changed" and vd.status is Status.PASS:
            survivors.append((t.name, gen))
        if origin == "rewrite" and vd.status is not Status.PASS:
            survivors.append((t.name, gen, "rewrite failed", vd.code))

    # resident memory of one warm worker over many candidates
    rss = []
    one = CadVerifier(workers=1)
    cycle = [(t, c) for t, c, _, _ in pairs]
    done = 0
    t0 = time.perf_counter()
    while done < args.rss_candidates:
        batch = cycle[: min(len(cycle), args.rss_candidates - done)]
        for t, c in batch:
            vd = one.verify(t, c, limits)
            done += 1
            if done in (1, 10) or done % 250 == 0 or done == args.rss_candidates:
                rss.append((done, vd.metrics.get("worker_rss_mb")))
    rss_s = time.perf_counter() - t0
    one.close()
    v.close()

    print("\nverdicts by operator (geometry truth : verdict status)")
    rows = [
        [op, ", ".join(f"{k} {n}" for k, n in sorted(c.items()))] for op, c in sorted(by_op.items())
    ]
    print(table(rows, ["generator", "counts"]))
    print("\nseconds by gate (warm run)")
    rows = [
        [g, len(xs), f"{statistics.median(xs) * 1000:.1f}", f"{sum(xs):.2f}"]
        for g, xs in gate_s.items()
    ]
    rows += [
        [f"  judge:{k}", len(xs), f"{statistics.median(xs) * 1000:.1f}", f"{sum(xs):.2f}"]
        for k, xs in steps.items()
    ]
    print(table(rows, ["gate", "n", "median ms", "sum s"]))
    print("\nworker resident memory (MB) after N candidates, one worker")
    print(table([[n, m] for n, m in rss], ["N", "rss MB"]))
    peak = max(m or 0 for _, m in rss)
    imports = [f.get("import_s", 0) for f in fresh if "import_s" in f]
    walls = [f["wall_s"] for f in fresh]
    print(f"\nfresh process: median import {statistics.median(imports):.2f}s, "
          f"median wall {statistics.median(walls):.2f}s per candidate")  # fmt: skip
    ratio = warm_sample_rate / fresh_rate
    rows = [
        ["warm cand/s, all candidates", f"{warm_rate:.2f}", ">= 15", f"{warm_rate / 15:.2f}"],
        [
            f"warm cand/s, the {len(measured)} not identical to the reference",
            f"{warm_measured_rate:.2f}",
            ">= 15",
            f"{warm_measured_rate / 15:.2f}",
        ],
        ["warm cand/s, fresh-run sample", f"{warm_sample_rate:.2f}", "", ""],
        ["fresh process cand/s, same sample", f"{fresh_rate:.2f}", "", ""],
        ["warm / fresh (same sample)", f"{ratio:.1f}", ">= 20", f"{ratio / 20:.2f}"],
        [f"worker RSS MB after {args.rss_candidates}", f"{peak:.0f}", "< 700", f"{peak / 700:.2f}"],
        ["perturbations changing geometry that passed", len(survivors), "0", ""],
    ]
    print("\n" + table(rows, ["measure", "value", "target", "ratio"]))
    if survivors:
        print("survivors:", survivors)
    result = {
        "cores": cores, "tasks": len(tasks), "candidates": len(pairs),
        "warm_rate": warm_rate, "warm_s": warm_s, "warm_sample_rate": warm_sample_rate,
        "warm_measured_rate": warm_measured_rate, "measured": len(measured),
        "fresh_rate": fresh_rate, "fresh_sample": len(sample), "ratio": ratio,
        "rss": rss, "rss_seconds": rss_s, "survivors": survivors,
        "gate_median_ms": {g: statistics.median(xs) * 1000 for g, xs in gate_s.items()},
        "judge_step_median_ms": {k: statistics.median(xs) * 1000 for k, xs in steps.items()},
        "by_operator": {op: dict(c) for op, c in by_op.items()},
    }  # fmt: skip
    Path(args.out).write_text(json.dumps(result, indent=1, default=str))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
