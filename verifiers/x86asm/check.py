"""`python -m verifiers.x86asm.check TASK_DIR... [--cand FILE] [--repeat N]`: verify each
task's reference answer (or FILE) with the x86asm verifier and print the verdict: status,
code, every gate, the measured speedups; and check that the task's own baselines hold
(gcc's -O0 and -O3 assembly correct on every case, the -O3 reported as its copy, never as
faster than itself). Exit status 1 when a reference does not pass or a baseline fails.

For catalog authors: a reference must pass with margin (its speedups well above the bars
on a loaded machine), a wrong candidate must not.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from verifiers.catalog import TaskSpecError, load_task
from verifiers.contract import Limits, Verdict
from verifiers.x86asm import kit
from verifiers.x86asm.verifier import X86Verifier

CORRECT = ("assemble", "static", "link", "execute", "abi", "correct")


def _line(v: Verdict) -> str:
    m = v.metrics
    perf = ""
    if "speedup" in m:
        perf = (
            f" instructions {m['instructions']:,} vs {m['baseline_instructions']:,} "
            f"({m['speedup']:.2f}x), wall {m['speedup_wall']:.2f}x (spread {m['wall_spread']:.1%})"
        )
    return f"{v.status.value} {v.code}{perf} ({v.duration_ms:.0f} ms)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m verifiers.x86asm.check",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("tasks", nargs="+", type=Path, help="task directories (tasks/x86asm/NAME)")
    ap.add_argument("--cand", type=Path, help="a candidate .s file instead of the reference")
    ap.add_argument("--repeat", type=int, default=1, help="verify the reference N times")
    ap.add_argument("-q", "--quiet", action="store_true", help="one line per task")
    args = ap.parse_args(argv)
    verifier = X86Verifier()
    bad = 0
    for d in args.tasks:
        try:
            t0 = time.perf_counter()
            task = load_task(d, "x86asm")
            k = kit.get_kit(task)
            prep = time.perf_counter() - t0
        except (TaskSpecError, kit.KitError) as e:
            print(f"{d}: {e}")
            bad += 1
            continue
        print(
            f"{task.name}: kit {prep:.2f}s, baseline {k.base_instructions:,} instructions, "
            f"reference costs {k.costs}"
        )
        code = args.cand.read_text() if args.cand else task.reference
        if code is None:
            print("  no reference answer; give --cand")
            bad += 1
            continue
        for _ in range(args.repeat):
            v = verifier.verify(task, code)
            bad += not v.passed
            print("  answer: " + _line(v))
        if not args.quiet:
            for c in v.checks:
                mark = "ok " if c.ok else "FAIL"
                print(f"    {mark} {c.name:<9} {c.seconds * 1000:7.1f} ms  {c.detail[:140]}")
            if not v.passed:
                print("    feedback:\n      " + v.feedback.replace("\n", "\n      "))
        if args.cand:
            continue
        for label in ("O0", "O3"):
            b = verifier.verify(task, task.harness["baselines"][label], Limits(gates=CORRECT))
            full = verifier.verify(task, task.harness["baselines"][label])
            ok = b.passed and not full.passed and full.code in ("copied_input", "slow")
            bad += not ok
            print(f"  -{label} baseline: correct={b.status.value} {b.code}; full: {_line(full)}"
                  + ("" if ok else "  <-- WRONG"))  # fmt: skip
            if not b.passed:
                print("    feedback:\n      " + b.feedback.replace("\n", "\n      "))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
