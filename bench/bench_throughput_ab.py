"""Throughput of two Crucible trees side by side, in one run: candidates verified per second
by the x86asm and embedded verifiers of a BEFORE checkout and of this one (AFTER).

    git worktree add /tmp/before <rev>        # the revision to compare against
    python bench/bench_throughput_ab.py --before /tmp/before [--rounds 4] [--domain x86asm]

Each tree gets one long-lived child process per domain (its own code on PYTHONPATH, its own
catalog and offline candidates: x86asm verifies the perturb channel's candidates over the
catalog, as bench_x86asm does; embedded the catalog's references, as bench_embedded does),
with `workers` = the cores. A child builds its kits and warm workers in an untimed first
pass, then times one `verify_many` pass whenever the parent asks. The parent asks BEFORE and
AFTER in turn, A B then B A every other round, so machine noise hits both; the children
wait idle while the other runs. Ratio = AFTER per second / BEFORE per second, per round;
the table gives the median and the range. Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOMAINS = ("x86asm", "embedded")


def child(domain: str, workers: int) -> None:
    """Runs inside a tree (its root first on sys.path): answer each line on stdin with one
    timed pass as a JSON line."""
    from verifiers import domain as registry
    from verifiers.catalog import load_catalog

    tasks, errors = load_catalog(Path.cwd() / "tasks", [domain], None)
    if errors:
        raise SystemExit(f"catalog errors: {errors}")
    if domain == "x86asm":
        from generators.perturb import generator_for

        gen = generator_for(domain)
        items = [(t, c.code) for t in tasks for c in gen.generate(t)]
    else:
        items = [(t, t.reference) for t in tasks]
    verifier = registry.load_dotted(registry.get(domain).verifier)(workers=workers)
    verifier.verify_many(items)  # untimed: kits, caches, warm workers
    print(json.dumps({"ready": len(items)}), flush=True)
    for _ in sys.stdin:
        t0 = time.perf_counter()
        got = verifier.verify_many(items)
        secs = time.perf_counter() - t0
        statuses: dict[str, int] = {}
        for v in got:
            statuses[v.status.value] = statuses.get(v.status.value, 0) + 1
        print(json.dumps({"n": len(items), "s": secs, "statuses": statuses}), flush=True)
    close = getattr(verifier, "close", None)
    if close:
        close()


def start(tree: Path, domain: str, workers: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", domain]
    argv += ["--workers", str(workers)]
    p = subprocess.Popen(argv, cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)  # fmt: skip
    line = p.stdout.readline()
    if not line:
        raise SystemExit(f"{domain} child in {tree} died before it was ready")
    return p


def ask(p: subprocess.Popen) -> dict:
    p.stdin.write("go\n")
    p.stdin.flush()
    line = p.stdout.readline()
    if not line:
        raise SystemExit("a child died mid-run")
    return json.loads(line)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--before", type=Path, help="the checkout to compare against")
    ap.add_argument("--rounds", type=int, default=4, help="timed passes per tree (default 4)")
    ap.add_argument("--domain", action="append", choices=DOMAINS, help="default: both")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", type=Path, help="write the raw numbers here")
    ap.add_argument("--child", choices=DOMAINS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.workers)
        return 0
    if args.before is None or not (args.before / "verifiers").is_dir():
        ap.error("--before must be a Crucible checkout (git worktree add /tmp/before <rev>)")
    trees = {"before": args.before.resolve(), "after": ROOT}
    result = {}
    for domain in args.domain or DOMAINS:
        kids = {name: start(tree, domain, args.workers) for name, tree in trees.items()}
        runs: dict[str, list[dict]] = {"before": [], "after": []}
        for r in range(args.rounds):
            order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
            for name in order:
                runs[name].append(ask(kids[name]))
            print(f"{domain} round {r + 1}/{args.rounds}: " + ", ".join(
                f"{n} {runs[n][-1]['n'] / runs[n][-1]['s']:.2f}/s" for n in trees),
                flush=True)  # fmt: skip
        for p in kids.values():
            p.stdin.close()
            p.wait(timeout=120)
        rate = {n: [x["n"] / x["s"] for x in runs[n]] for n in trees}
        ratios = [a / b for a, b in zip(rate["after"], rate["before"], strict=True)]
        result[domain] = {
            "workers": args.workers,
            "candidates": {n: runs[n][0]["n"] for n in trees},
            "statuses": {n: runs[n][-1]["statuses"] for n in trees},
            "per_second": rate,
            "ratio_median": statistics.median(ratios),
            "ratio_min": min(ratios),
            "ratio_max": max(ratios),
        }
    print()
    print(f"{'domain':10}{'before /s':>11}{'after /s':>11}{'after/before':>14}{'range':>16}")
    for domain, r in result.items():
        b, a = (statistics.median(r["per_second"][n]) for n in ("before", "after"))
        span = f"{r['ratio_min']:.3f}..{r['ratio_max']:.3f}"
        print(f"{domain:10}{b:11.2f}{a:11.2f}{r['ratio_median']:14.3f}{span:>16}")
    for domain, r in result.items():
        print(f"{domain}: candidates {r['candidates']}, last pass {r['statuses']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
