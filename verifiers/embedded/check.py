"""`python -m verifiers.embedded.check TASK_DIR... [--cand FILE]`: verify each task's reference
(or FILE) with the embedded verifier and print the verdict: status, code, every gate, and
the feedback of a failure. Exit status 1 when any verdict is not a pass.

For catalog authors: a reference must pass, and a wrong candidate must not.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from verifiers.catalog import TaskSpecError, load_task
from verifiers.embedded.verifier import EmbeddedVerifier


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m verifiers.embedded.check",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("tasks", nargs="+", type=Path, help="task directories (tasks/embedded/NAME)")
    ap.add_argument("--cand", type=Path, help="a candidate C file instead of the reference")
    ap.add_argument("-q", "--quiet", action="store_true", help="one line per task")
    args = ap.parse_args(argv)
    verifier = EmbeddedVerifier()
    bad = 0
    for d in args.tasks:
        try:
            task = load_task(d, "embedded")
        except TaskSpecError as e:
            print(f"{d}: {e}")
            bad += 1
            continue
        code = args.cand.read_text() if args.cand else task.reference
        if code is None:
            print(f"{d}: the task has no reference; give --cand")
            bad += 1
            continue
        v = verifier.verify(task, code)
        bad += not v.passed
        print(f"{task.name}: {v.status.value} {v.code} ({v.duration_ms:.0f} ms)")
        if args.quiet:
            continue
        for c in v.checks:
            print(
                f"  {'ok ' if c.ok else 'FAIL'} {c.name:<10} {c.seconds * 1000:6.1f} ms  "
                + c.detail[:150]
            )
        if not v.passed:
            print("  feedback:\n    " + v.feedback.replace("\n", "\n    "))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
