"""Lake benchmark: batched verdict appends and the two everyday queries, against targets.

    .venv/bin/python bench/bench_lake.py [--rows 100000] [--batch 10000] [--repeat 5]

Appends `rows` realistic verdicts (checks, metrics JSON, feedback text) plus their
candidates through one BatchWriter in batches, re-appends them (idempotence: nothing new),
then times `error_taxonomy` and `pass_rates` (median of `repeat` runs). Prints a table and
writes bench/results/lake.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lake import db
from lake.store import Lake
from lake.writer import BatchWriter
from verifiers.contract import Candidate, Check, Status, Task, Verdict
from verifiers.taxonomy import CODES

RESULTS = Path(__file__).resolve().parent / "results" / "lake.json"
DOMAINS = ("rtl", "cuda", "triton", "cad", "embedded", "x86asm")
GATES = ("compile", "lint", "simulate", "synthesize", "equivalence")
# status -> codes a verifier would give it (taxonomy codes only)
FAILURES = {
    Status.COMPILE_ERROR: ["syntax_error", "width_mismatch", "undeclared_identifier"],
    Status.WRONG_ANSWER: ["sim_mismatch", "equivalence_counterexample"],
    Status.TIMEOUT: ["sim_timeout"],
    Status.RESOURCE_LIMIT: ["output_limit", "memory_limit"],
    Status.INFRA_ERROR: ["tool_missing", "tool_crash"],
    Status.FORMAT_ERROR: ["missing_entry_point"],
}
WEIGHTS = {Status.PASS: 35, Status.COMPILE_ERROR: 25, Status.WRONG_ANSWER: 25, Status.TIMEOUT: 5}
WEIGHTS |= {Status.RESOURCE_LIMIT: 3, Status.INFRA_ERROR: 4, Status.FORMAT_ERROR: 3}


def make_records(n: int, seed: int = 0) -> tuple[list[Task], list[Candidate], list[Verdict]]:
    rng = random.Random(seed)
    tasks = [
        Task(
            name=f"task{i}",
            domain=DOMAINS[i % len(DOMAINS)],
            family="bench",
            level=1 + i % 4,
            requirement="Implement the module described below. " * 8,
            interface={"ports": [{"name": "clk", "width": 1}, {"name": "d", "width": 32}]},
            platform={"target": "generic"},
            reference="module m; endmodule",
            harness={"trials": 64},
        )
        for i in range(500)
    ]
    statuses = list(WEIGHTS)
    weights = list(WEIGHTS.values())
    cands, verdicts = [], []
    for i in range(n):
        task = tasks[i % len(tasks)]
        code = f"module m{i}(input clk, input [31:0] d, output reg [31:0] q);\n" + (
            "  always @(posedge clk) q <= d + 1;\n" * rng.randint(3, 30)
        )
        cand = Candidate(
            task_id=task.task_id,
            code=code,
            origin=rng.choice(("llm", "perturb", "rewrite", "repair")),
            generator="bench",
            run_id="bench",
        )
        status = rng.choices(statuses, weights)[0]
        code_ = rng.choice(FAILURES[status]) if status in FAILURES else ""
        ran = rng.randint(1, len(GATES))
        checks = tuple(
            Check(
                gate,
                ok=status is Status.PASS or k < ran - 1,
                seconds=rng.uniform(0.005, 0.2),
                detail="" if k < ran - 1 else f"{gate}: line {rng.randint(1, 99)}: {code_}",
            )
            for k, gate in enumerate(GATES[:ran])
        )
        feedback = (
            ""
            if status is Status.PASS
            else (
                f"error: {code_} at line {rng.randint(1, 99)}\n"
                + "  first mismatch: q = 32'h0000_0001, expected 32'h0000_0002 at t=125ns\n"
                * rng.randint(2, 20)
            )
        )
        verdicts.append(
            Verdict(
                candidate_id=cand.candidate_id,
                task_id=task.task_id,
                domain=task.domain,
                verifier=task.domain,
                verifier_version="1.0.0",
                status=status,
                checks=checks,
                metrics={"cells": rng.randint(10, 9000), "area": rng.uniform(1, 500), "cycles": i},
                feedback=feedback,
                category=CODES[code_][0] if code_ else "",
                code=code_,
                toolchain={"iverilog": "11.0", "yosys": "0.23"},
                duration_ms=rng.uniform(5, 400),
                node="bench-node",
            )
        )
        cands.append(cand)
    return tasks, cands, verdicts


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def median_time(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm: the first call pays for reading the log and file footers
    return statistics.median(timed(fn) for _ in range(repeat))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()

    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    tasks, cands, verdicts = make_records(args.rows)
    build_s = time.perf_counter() - t0
    results: list[dict[str, object]] = []

    def record(op: str, rows: int, seconds: float, target: float | None) -> None:
        ratio = seconds / target if target else None
        results.append(
            {"operation": op, "rows": rows, "seconds": seconds, "target_s": target, "ratio": ratio}
        )

    with tempfile.TemporaryDirectory(prefix="bench-lake-") as tmp:
        lake = Lake(Path(tmp) / "lake")

        def append_verdicts() -> BatchWriter:
            with BatchWriter(lake, run_id="bench", batch_size=args.batch) as w:
                for v in verdicts:
                    w.add_verdict(v)
            return w

        def append_candidates() -> None:
            with BatchWriter(lake, run_id="bench", batch_size=args.batch) as w:
                for t in tasks:
                    w.add_task(t)
                for c in cands:
                    w.add_candidate(c, verdicts_by_cand[c.candidate_id])

        verdicts_by_cand = {v.candidate_id: v.domain for v in verdicts}
        record("append candidates + tasks", len(cands), timed(append_candidates), 10.0)
        started = time.perf_counter()
        w = append_verdicts()
        record(
            f"append verdicts ({args.rows // args.batch} x {args.batch})",
            w.stats["verdicts"].written,
            time.perf_counter() - started,
            10.0,
        )
        commits = w.stats["verdicts"].commits
        started = time.perf_counter()
        again = append_verdicts()
        record(
            "re-append same verdicts (all skipped)",
            again.stats["verdicts"].skipped_existing,
            time.perf_counter() - started,
            10.0,
        )
        assert again.stats["verdicts"].written == 0

        con = db.connect(lake)
        record("connect (extension + views)", 0, timed(lambda: db.connect(lake).close()), 1.0)
        for name, target in (("error_taxonomy", 0.5), ("pass_rates", 0.5), ("gate_times", 0.5)):
            record(
                f"query {name}",
                args.rows,
                median_time(lambda n=name: db.run_sql(con, n), args.repeat),
                target,
            )
        record(
            "scan raw_verdicts GROUP BY status (no dedupe)",
            args.rows,
            median_time(
                lambda: con.sql("SELECT status, count(*) FROM raw_verdicts GROUP BY 1").fetchall(),
                args.repeat,
            ),
            None,
        )
        record(
            "scan verdicts GROUP BY status (deduped view)",
            args.rows,
            median_time(
                lambda: con.sql("SELECT status, count(*) FROM verdicts GROUP BY 1").fetchall(),
                args.repeat,
            ),
            None,
        )
        taxonomy_rows = db.rows(con, "error_taxonomy")
        con.close()

    print(
        f"\nlake benchmark: {args.rows:,} verdicts, batch {args.batch:,}, "
        f"{commits} verdict commits, records built in {build_s:.1f} s (not timed)\n"
    )
    header = f"{'operation':<48} {'rows':>9} {'seconds':>9} {'target':>8} {'ratio':>7}"
    print(header)
    print("-" * len(header))
    for r in results:
        target = f"{r['target_s']:.2f}" if r["target_s"] else "-"
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "-"
        print(f"{r['operation']:<48} {r['rows']:>9,} {r['seconds']:>9.3f} {target:>8} {ratio:>7}")
    load_after = os.getloadavg()[0]
    print(f"\nerror_taxonomy top rows: {[(r['code'], r['count']) for r in taxonomy_rows[:3]]}")
    # Timings on a shared machine scale with its load: say what it was.
    print(
        f"1-min load average: {load_before:.1f} before, {load_after:.1f} after "
        f"({os.cpu_count()} CPUs)"
    )

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "rows": args.rows,
                "batch": args.batch,
                "repeat": args.repeat,
                "machine": {
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                    "load_avg_1m": [load_before, load_after],
                },
                "results": results,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
