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
import os
import sys
from collections.abc import Iterable, Sequence
from typing import IO

from verifiers.contract import Candidate, Limits, Task, Verdict
from verifiers.registry import close_all, verify_many

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


def run(
    domain: str,
    lines: Iterable[str],
    out: IO[str],
    err: IO[str],
    *,
    batch: int = 1,
    override: dict | None = None,
) -> int:
    """Verify every line; returns the number of lines that gave no verdict.

    Lines are verified `batch` at a time through the verifier's `verify_many` (the GPU
    verifiers compile a batch in parallel); verdicts come out in input order.
    """
    bad = 0
    pending: list[tuple[int, Task, Candidate, Limits | None]] = []

    def flush() -> None:
        nonlocal bad
        if not pending:
            return
        bad += _verify_pending(domain, pending, out, err)
        pending.clear()

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
        if override:
            limits = Limits.from_dict({**(limits or Limits()).to_dict(), **override})
        pending.append((n, task, cand, limits))
        if len(pending) >= batch:
            flush()
    flush()
    return bad


def _verify_pending(
    domain: str, pending: list[tuple[int, Task, Candidate, Limits | None]], out, err
) -> int:
    bad = 0
    # one call per distinct Limits (usually one): verify_many takes a single Limits
    groups: dict[str, list[int]] = {}
    for i, (_, _, _, limits) in enumerate(pending):
        key = json.dumps(limits.to_dict() if limits else None, sort_keys=True)
        groups.setdefault(key, []).append(i)
    verdicts: dict[int, Verdict | Exception] = {}
    for idxs in groups.values():
        items = [(pending[i][1], pending[i][2].code) for i in idxs]
        try:
            got = verify_many(items, pending[idxs[0]][3])
        except Exception as e:  # a verifier bug must not sink the rest of the batch
            log.exception("the %s verifier crashed on a batch", domain)
            got = [e] * len(idxs)
        for i, v in zip(idxs, got, strict=True):
            verdicts[i] = v
    for i, (n, *_rest) in enumerate(pending):
        v = verdicts[i]
        if isinstance(v, Exception):
            bad += 1
            err.write(f"line {n}: no verdict, the verifier crashed: {type(v).__name__}: {v}\n")
            err.flush()
            continue
        out.write(json.dumps(v.to_dict(), ensure_ascii=False) + "\n")
        out.flush()
    return bad


def main(domain: str, argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m verifiers.{domain}",
        description=f"Verify {domain} candidates: JSONL (task, candidate, limits) in, "
        "JSONL verdicts out, in input order.",
    )
    parser.add_argument("input", nargs="?", help="input JSONL file (default: stdin)")
    parser.add_argument("--out", help="output JSONL file (default: stdout)")
    parser.add_argument(
        "--batch",
        type=int,
        default=32,
        help="lines verified together (GPU verifiers compile a batch in parallel)",
    )
    parser.add_argument(
        "--unconfined",
        action="store_true",
        help="run candidates WITHOUT the bubblewrap sandbox (rlimits only). Unsafe: only "
        "where bubblewrap cannot run and the node is disposable",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="warm worker processes (GPU runners, CAD workers); default: one per core / GPU",
    )
    parser.add_argument(
        "--compile-baseline",
        action="store_true",
        help="GPU verifiers: also time torch.compile of the reference (slow, once per task)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if args.workers:
        os.environ["CRUCIBLE_KERNEL_WORKERS"] = str(args.workers)
        os.environ["CRUCIBLE_CAD_WORKERS"] = str(args.workers)
    if args.compile_baseline:
        os.environ["CRUCIBLE_TORCH_COMPILE_BASELINE"] = "1"
    override = {"unconfined": True} if args.unconfined else None
    src = open(args.input, encoding="utf-8") if args.input else sys.stdin  # noqa: SIM115
    dst = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout  # noqa: SIM115
    try:
        bad = run(domain, src, dst, sys.stderr, batch=max(1, args.batch), override=override)
    finally:
        close_all()  # warm workers and their dirs go with the process
        if args.input:
            src.close()
        if args.out:
            dst.close()
    return 1 if bad else 0
