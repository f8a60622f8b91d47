"""Verdicts made elsewhere, into the lake: the return half of the JSONL exchange.

A node without Ray, Prefect or the lake (a GPU box) verifies with `python -m
verifiers.<domain>`; its output lines (`Verdict.to_dict()`) come back here. Each line is
checked on its own and refused with its `file:line` when it is not a verdict, when its
`verdict_id` is not the content hash of what it says, when its rows would not fit the
table schema, or when its candidate is not in the lake (or is, for another task or
domain). The rest go through the stages' batching writer, so ingesting a file twice adds
nothing (ids are content hashes; the writer skips ids already present).

Every ingest records a `runs` row (flow `ingest`). There is no Prefect flow run behind it,
so its run id is a generated uuid4 hex, the same fallback `flows.pipeline` uses when no
Prefect run is active.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from lake import db
from lake.lock import hold
from lake.schema import Run, to_arrow, verdict_artifact_rows, verdict_row
from lake.store import Lake
from lake.writer import BatchWriter
from verifiers.contract import Verdict, utc_now

log = logging.getLogger(__name__)

STDIN = "-"


@dataclass(frozen=True)
class Refusal:
    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass
class IngestResult:
    run_id: str
    read: int = 0  # non-blank lines
    added: int = 0  # verdict rows written
    present: int = 0  # already in the lake, or repeated in the input
    refused: list[Refusal] = field(default_factory=list)
    artifacts_added: int = 0
    seconds: float = 0.0

    def counts(self) -> dict[str, Any]:
        return {
            "lines": self.read,
            "verdicts_written": self.added,
            "verdicts_present": self.present,
            "refused": len(self.refused),
            "artifacts_written": self.artifacts_added,
        }


def ingest_verdicts(
    lake: Lake,
    paths: Sequence[str | Path],
    *,
    run_id: str | None = None,
    batch_size: int = 256,
    con: duckdb.DuckDBPyConnection | None = None,
) -> IngestResult:
    """Append the verdict lines of `paths` (`-` is stdin) to the lake; see the module doc.

    `batch_size` verdicts per commit (what a crash costs to redo, as the verify stage's
    `verdict_batch`). Records a `runs` row with the counts, also when ingesting fails.
    Holds the lake's run lock (`lake.lock`) throughout: a busy lake raises LakeBusy
    before anything is read or written.
    """
    result = IngestResult(run_id=run_id or uuid.uuid4().hex)
    with hold(lake.root, "ingest", result.run_id):
        return _ingest(lake, paths, result, batch_size, con)


def _ingest(
    lake: Lake,
    paths: Sequence[str | Path],
    result: IngestResult,
    batch_size: int,
    con: duckdb.DuckDBPyConnection | None,
) -> IngestResult:
    started_at = utc_now()
    t0 = time.perf_counter()
    versions_read = lake.versions()
    own = con is None
    con = db.connect(lake) if con is None else con
    error: str | None = None
    try:
        with BatchWriter(lake, run_id=result.run_id, batch_size=batch_size) as w:
            for chunk in _chunks(_parsed(paths, result), batch_size):
                for _, verdict in _known(con, chunk, result):
                    w.add_verdict(verdict)
        order = {str(p): i for i, p in enumerate(paths)}
        result.refused.sort(key=lambda r: (order.get(r.path, 0), r.line))
        st = w.stats["verdicts"]
        result.added = st.written
        result.present = st.skipped_existing + st.skipped_duplicate
        result.artifacts_added = w.stats["artifacts"].written
    except BaseException as e:
        error = f"{type(e).__name__}: {e}"
        raise
    finally:
        if own:
            con.close()
        result.seconds = round(time.perf_counter() - t0, 3)
        _record_run(lake, result, paths, started_at, versions_read, error)
    return result


def _record_run(
    lake: Lake,
    result: IngestResult,
    paths: Sequence[str | Path],
    started_at: str,
    versions_read: dict[str, int],
    error: str | None,
) -> None:
    run = Run(
        run_id=result.run_id,
        flow="ingest",
        status="failed" if error else "completed",
        started_at=started_at,
        finished_at=utc_now(),
        seconds=result.seconds,
        params={"lake": str(lake.root), "files": [str(p) for p in paths]},
        counts=result.counts(),
        lake_versions_read=versions_read,
        lake_versions_written=lake.versions(),
        error=error,
    )
    try:
        with BatchWriter(lake, run_id=result.run_id) as w:
            w.add_run(run)
    except Exception:  # the run row must never hide the ingest's own error
        log.exception("could not record ingest run %s", result.run_id)


# --- reading ----------------------------------------------------------------------------


def _lines(path: str | Path) -> Iterator[tuple[int, bytes]]:
    if str(path) == STDIN:
        yield from enumerate(sys.stdin.buffer, start=1)
        return
    with open(path, "rb") as f:
        yield from enumerate(f, start=1)


Where = tuple[str, int]  # (file, line number)


def _parsed(paths: Sequence[str | Path], result: IngestResult) -> Iterator[tuple[Where, Verdict]]:
    """(file and line, verdict) for each well-formed line; malformed lines are refused."""
    for path in paths:
        for n, raw in _lines(path):
            if not raw.strip():
                continue
            result.read += 1
            try:
                verdict = parse_verdict(raw)
            except ValueError as e:
                result.refused.append(Refusal(str(path), n, f"malformed: {e}"))
                continue
            yield (str(path), n), verdict


def parse_verdict(raw: bytes | str) -> Verdict:
    """One line as a Verdict, or ValueError saying what is wrong with it."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        d = json.loads(text)
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"not a JSON line ({type(e).__name__}: {str(e)[:200]})") from None
    if not isinstance(d, dict):
        raise ValueError(f"expected a Verdict object, got {type(d).__name__}")
    for key in ("candidate_id", "task_id", "domain", "verifier", "verifier_version", "status"):
        if not isinstance(d.get(key), str) or not d[key]:
            raise ValueError(f"field {key!r} is missing or not a non-empty string")
    try:
        verdict = Verdict.from_dict(d)
        # the id the contract would give this content (an infra_error's id also hashes its
        # created_at): a line whose id does not match was edited or truncated
        canonical = Verdict.from_dict({**d, "verdict_id": ""}).verdict_id
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        raise ValueError(f"not a Verdict ({type(e).__name__}: {str(e)[:200]})") from None
    if verdict.verdict_id != canonical:
        raise ValueError(
            f"verdict_id {verdict.verdict_id[:16]} is not the content hash of the verdict "
            f"({canonical[:16]})"
        )
    if "passed" in d and d["passed"] is not verdict.passed:
        raise ValueError(f"passed={d['passed']!r} contradicts status {verdict.status.value!r}")
    try:  # the rows must fit the tables' schemas, or the whole batch's commit would fail
        to_arrow("verdicts", [verdict_row(verdict, "")])
        if verdict.artifacts:
            to_arrow("artifacts", verdict_artifact_rows(verdict))
    except Exception as e:
        raise ValueError(f"does not fit the verdicts table ({type(e).__name__}: {e})") from None
    return verdict


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _known(
    con: duckdb.DuckDBPyConnection,
    chunk: list[tuple[Where, Verdict]],
    result: IngestResult,
) -> Iterator[tuple[Where, Verdict]]:
    """The verdicts whose candidate the lake holds, for the same task and domain."""
    ids = sorted({v.candidate_id for _, v in chunk})
    # raw_: every copy of an id has the same task and domain (the id hashes the task), and
    # skipping the view's dedupe window keeps this a plain filtered scan
    rows = con.execute(
        "SELECT DISTINCT candidate_id, task_id, domain FROM raw_candidates "
        "WHERE candidate_id IN (SELECT unnest($ids))",
        {"ids": ids},
    ).fetchall()
    known = {cid: (tid, dom) for cid, tid, dom in rows}
    for where, v in chunk:
        have = known.get(v.candidate_id)
        if have is None:
            reason = f"candidate {v.candidate_id[:16]} is not in the lake"
        elif have != (v.task_id, v.domain):
            reason = (
                f"candidate {v.candidate_id[:16]} belongs to task {have[0][:16]} ({have[1]}), "
                f"the verdict says task {v.task_id[:16]} ({v.domain})"
            )
        else:
            yield where, v
            continue
        result.refused.append(Refusal(*where, reason))
