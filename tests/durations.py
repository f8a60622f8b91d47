"""Seconds each test file took, measured: the order `make test` hands files to its workers.

pytest-xdist gives a worker the next whole file when it runs dry (--dist loadfile), so a
long file that starts last keeps one worker busy while the other idles: the suite's tail.
The conftest sorts files longest first by `tests/durations.json` (a file it does not
know weighs nothing and keeps its place), a plain longest-processing-time-first order.
The numbers only order work, so stale ones cost minutes, never a wrong result.

    make test-durations   (a serial run with --junitxml, then this script on its report)
    python -m tests.durations REPORT.xml [--out tests/durations.json] [--min-s 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT = HERE / "durations.json"


def load(path: Path = DEFAULT) -> dict[str, float]:
    """file (as pytest names it, tests/...) -> seconds; empty when there is no file."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(v, (int, float))}


def from_junit(report: Path) -> dict[str, float]:
    """Per-file seconds (set-up, call and tear-down of every test) of a junit report."""
    per_file: dict[str, float] = defaultdict(float)
    for case in ET.parse(report).getroot().iter("testcase"):
        classname = case.get("classname", "")
        # tests.flows.test_pipeline[.TestClass] -> tests/flows/test_pipeline.py
        parts = classname.split(".")
        while parts and not parts[-1].startswith("test_"):
            parts.pop()
        if parts:
            per_file["/".join(parts) + ".py"] += float(case.get("time", 0))
    return dict(per_file)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "report", type=Path, help="a --junitxml report (a serial run, or make test's own)"
    )
    ap.add_argument("--out", type=Path, default=DEFAULT)
    ap.add_argument("--min-s", type=float, default=5.0, help="leave out files faster than this")
    args = ap.parse_args(argv)
    if not args.report.is_file():
        print(f"no report at {args.report}: run pytest --junitxml={args.report}", file=sys.stderr)
        return 2
    seconds = {f: round(s, 1) for f, s in from_junit(args.report).items() if s >= args.min_s}
    args.out.write_text(json.dumps(dict(sorted(seconds.items())), indent=1) + "\n")
    print(f"{len(seconds)} files, {sum(seconds.values()):.0f} s in all -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
