"""A verifier as a plain process: JSONL in, JSONL out, stdlib only.

Each input line is `{"task": Task.to_dict(), "candidate": Candidate.to_dict(), "limits":
Limits.to_dict() (optional)}`; each output line is the `Verdict.to_dict()` of one input
line, in order. This is how a GPU, emulator or EDA node without Ray, Prefect or the lake
runs verification: `python -m verifiers.<domain> < in.jsonl > out.jsonl`.

The verifier's settings (`verifiers.settings`, the domain's settings class) come from
`--settings JSON` and from one flag per settings field (`--workers 1`, generated from the
class, so `--help` lists the domain's own); a flag wins over the same key in the JSON.

A malformed line is reported on stderr with its line number and skipped; the rest still
run, and the exit status is 1 if any line was skipped.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from verifiers.contract import Candidate, Limits, Task, Verdict
from verifiers.registry import close_all, verify_many
from verifiers.settings import SettingsError, VerifierSettings, settings_class, settings_for

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
    settings: VerifierSettings | Mapping[str, Any] | None = None,
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
        bad += _verify_pending(domain, pending, out, err, settings)
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
    domain: str,
    pending: list[tuple[int, Task, Candidate, Limits | None]],
    out,
    err,
    settings: VerifierSettings | Mapping[str, Any] | None = None,
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
            got = verify_many(items, pending[idxs[0]][3], settings)
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
        "--settings",
        metavar="JSON",
        help="the verifier's settings as a JSON object (or a .json file); the flags "
        "below set single keys",
    )
    flags = _settings_flags(parser, domain)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        settings = parse_settings(domain, args.settings, {k: getattr(args, k) for k in flags})
    except SettingsError as e:
        parser.error(str(e))
    override = {"unconfined": True} if args.unconfined else None
    src = open(args.input, encoding="utf-8") if args.input else sys.stdin  # noqa: SIM115
    dst = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout  # noqa: SIM115
    try:
        bad = run(
            domain,
            src,
            dst,
            sys.stderr,
            batch=max(1, args.batch),
            override=override,
            settings=settings,
        )
    finally:
        close_all()  # warm workers and their dirs go with the process
        if args.input:
            src.close()
        if args.out:
            dst.close()
    return 1 if bad else 0


def _settings_flags(parser: argparse.ArgumentParser, domain: str) -> list[str]:
    """One flag per field of the domain's settings class; the attribute names parsed."""
    cls = settings_class(domain)
    fields = cls.describe()
    if not fields:
        return []
    group = parser.add_argument_group(f"{domain} verifier settings (override --settings)")
    for name, kind, default, text in fields:
        flag = "--" + name.replace("_", "-")
        shown = f" [default: {json.dumps(default)}]" if default not in (None, False) else ""
        if kind is bool:
            # --name / --no-name; absent: not given (the JSON's value or the default)
            group.add_argument(
                flag, action=argparse.BooleanOptionalAction, default=None, help=text + shown
            )
        else:
            group.add_argument(flag, type=kind, default=None, help=text + shown)
    return [name for name, *_ in fields]


def parse_settings(
    domain: str, text: str | None, flags: Mapping[str, Any] | None = None
) -> VerifierSettings:
    """The domain's settings from `--settings` (JSON text or a .json file) and the flags
    given (None: not given); unknown keys and wrong types raise SettingsError."""
    given: Any = {}
    if text:
        try:
            raw = Path(text).read_text(encoding="utf-8") if text.endswith(".json") else text
            given = json.loads(raw)
        except (OSError, ValueError) as e:
            raise SettingsError(f"--settings: not JSON or a readable .json file: {e}") from None
        if not isinstance(given, dict):
            raise SettingsError("--settings must be a JSON object")
    given = {**given, **{k: v for k, v in (flags or {}).items() if v is not None}}
    return settings_for(domain, given)
