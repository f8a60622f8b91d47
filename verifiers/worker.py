"""A verifier as a plain process: JSONL in, JSONL out, stdlib only.

Each input line is `{"task": Task.to_dict(), "candidate": Candidate.to_dict(), "limits":
Limits.to_dict() (optional)}`; each output line is the `Verdict.to_dict()` of one input
line, in order. This is how a GPU, emulator or EDA node without Ray, Prefect or the lake
runs verification: `python -m verifiers.<domain> < in.jsonl > out.jsonl`.

A malformed line is reported on stderr with its line number and skipped; the rest still
run, and the exit status is 1 if any line was skipped.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Iterable, Sequence
from typing import IO

from verifiers.contract import Candidate, Limits, Task
from verifiers.registry import verify

log = logging.getLogger(__name__)


def _parse(domain: str, raw: str) -> tuple[Task, Candidate, Limits | None]:
    item = json.loads(raw)
    if not isinstance(item, dict) or "task" not in item or "candidate" not in item:
        raise ValueError('expected an object with "task" and "candidate"')
    task = Task.from_dict(item["task"])
    cand = Candidate.from_dict(item["candidate"])
    if task.domain != domain:
        raise ValueError(f"task {task.name!r} is for domain {task.domain!r}, not {domain!r}")
    if cand.task_id != task.task_id:
        raise ValueError(f"candidate {cand.candidate_id[:12]} is for another task")
    limits = Limits.from_dict(item["limits"]) if item.get("limits") else None
    return task, cand, limits


def run(domain: str, lines: Iterable[str], out: IO[str], err: IO[str]) -> int:
    """Verify every line; returns the number of lines that gave no verdict."""
    bad = 0
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            task, cand, limits = _parse(domain, raw)
        except (ValueError, TypeError, KeyError) as e:  # JSONDecodeError is a ValueError
            bad += 1
            err.write(f"line {n}: skipped, malformed: {type(e).__name__}: {str(e)[:300]}\n")
            err.flush()
            continue
        try:
            verdict = verify(task, cand.code, limits)
        except Exception as e:  # a verifier bug must not sink the rest of the batch
            bad += 1
            log.exception("line %d: the %s verifier crashed", n, domain)
            err.write(f"line {n}: no verdict, the verifier crashed: {type(e).__name__}: {e}\n")
            err.flush()
            continue
        out.write(json.dumps(verdict.to_dict(), ensure_ascii=False) + "\n")
        out.flush()
    return bad


def main(domain: str, argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m verifiers.{domain}",
        description=f"Verify {domain} candidates: JSONL (task, candidate, limits) in, "
        "JSONL verdicts out.",
    )
    parser.add_argument("input", nargs="?", help="input JSONL file (default: stdin)")
    parser.add_argument("--out", help="output JSONL file (default: stdout)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    src = open(args.input, encoding="utf-8") if args.input else sys.stdin  # noqa: SIM115
    dst = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout  # noqa: SIM115
    try:
        bad = run(domain, src, dst, sys.stderr)
    finally:
        if args.input:
            src.close()
        if args.out:
            dst.close()
    return 1 if bad else 0
