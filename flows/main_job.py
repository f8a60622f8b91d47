"""The main job: ingest the catalog, generate candidates offline, verify them on Ray actors,
append everything to the lake, and report from DuckDB.

Every stage follows the one rule of state: it selects its work from the lake, does it and
appends the results. Killing the job at any point and starting it again finishes the work:
ids are content hashes, the writer skips ids already present, and verification selects
only candidates that have no verdict for the current verifier version.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb

from generators.perturb import generator_for
from lake import db
from lake.schema import Run, candidate_from_row, task_from_row
from lake.store import Lake
from lake.writer import BatchWriter
from ray_actors import cluster
from ray_actors.verify import PoolSettings, verify_candidates
from verifiers.catalog import TaskSpecError, load_catalog
from verifiers.contract import Candidate, Limits, Task, Verdict, utc_now
from verifiers.registry import get_verifier

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobSettings:
    lake: Path = Path("crucible-lake")
    task_roots: tuple[Path, ...] = (Path("tasks"),)
    domains: tuple[str, ...] = ("rtl",)
    task_names: tuple[str, ...] | None = None
    limits: Limits = field(default_factory=Limits)
    seed: int = 0
    pool: PoolSettings = field(default_factory=PoolSettings)
    ray: cluster.ClusterSettings = field(default_factory=cluster.ClusterSettings)
    verdict_batch: int = 256  # verdicts per lake commit: what a crash can cost to redo


@dataclass
class JobResult:
    run_id: str
    tasks: int = 0
    refused: list[TaskSpecError] = field(default_factory=list)
    candidates: int = 0
    verified: int = 0
    seconds: float = 0.0
    verify_seconds: float = 0.0
    counts: dict[str, Any] = field(default_factory=dict)
    pass_rates: list[dict[str, Any]] = field(default_factory=list)
    taxonomy: list[dict[str, Any]] = field(default_factory=list)
    survivors: list[dict[str, Any]] = field(default_factory=list)


class Reporter:
    """Progress callbacks; the CLI plugs rich in, tests leave them silent."""

    def stage(self, name: str, total: int | None = None) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def done(self) -> None: ...


def run_main_job(settings: JobSettings, reporter: Reporter | None = None) -> JobResult:
    rep = reporter or Reporter()
    start = time.perf_counter()
    lake = Lake(settings.lake)  # a bad lake path stops the run here, before any work
    result = JobResult(run_id=uuid.uuid4().hex)
    started_at = utc_now()
    versions_read = lake.versions()
    params = _params(settings)
    error: str | None = None
    # One DuckDB connection for the whole job: each connect loads the delta extension and
    # creates every view, and a view reads the table's latest version at each query anyway.
    con = db.connect(lake)
    try:
        try:
            task_ids = ingest(lake, settings, result, rep)
            generate(lake, con, settings, task_ids, result, rep)
            verify(lake, con, settings, task_ids, result, rep)
        except BaseException as e:
            error = f"{type(e).__name__}: {e}"
            raise
        finally:
            result.seconds = time.perf_counter() - start
            _record_run(lake, result, settings, started_at, versions_read, params, error)
        report(con, result)
    finally:
        con.close()
    return result


def ingest(lake: Lake, settings: JobSettings, result: JobResult, rep: Reporter) -> list[str]:
    rep.stage("ingest")
    tasks: list[Task] = []
    for root in settings.task_roots:
        loaded, errors = load_catalog(root, settings.domains, settings.task_names)
        tasks += loaded
        result.refused += errors
    for e in result.refused:
        log.warning("refused task: %s", e)
    with BatchWriter(lake, run_id=result.run_id) as w:
        for t in tasks:
            w.add_task(t)
    result.tasks = len(tasks)
    result.counts["tasks_written"] = w.stats["tasks"].written
    rep.done()
    return [t.task_id for t in tasks]


def generate(
    lake: Lake,
    con: duckdb.DuckDBPyConnection,
    settings: JobSettings,
    task_ids: list[str],
    result: JobResult,
    rep: Reporter,
) -> None:
    tasks = load_tasks(con, task_ids)
    rep.stage("generate", len(tasks))
    n = 0
    with BatchWriter(lake, run_id=result.run_id) as w:
        for task in tasks.values():
            for cand in generator_for(task.domain).generate(task, seed=settings.seed):
                w.add_candidate(replace(cand, run_id=result.run_id), task.domain)
                n += 1
            rep.advance()
    result.candidates = n
    result.counts["candidates_written"] = w.stats["candidates"].written
    rep.done()


def verify(
    lake: Lake,
    con: duckdb.DuckDBPyConnection,
    settings: JobSettings,
    task_ids: list[str],
    result: JobResult,
    rep: Reporter,
) -> None:
    t0 = time.perf_counter()
    cluster.start(settings.ray)
    by_domain: dict[str, list[Candidate]] = {}
    for domain in settings.domains:
        v = get_verifier(domain)
        rows = db.rows(
            con,
            "pending_verification",
            domain=domain,
            verifier=v.name,
            verifier_version=v.version,
            task_ids=task_ids,
        )
        by_domain[domain] = [candidate_from_row(r) for r in rows]
    tasks = load_tasks(con, sorted({c.task_id for cs in by_domain.values() for c in cs}))
    total = sum(map(len, by_domain.values()))
    rep.stage("verify", total)
    statuses: dict[str, int] = {}
    with BatchWriter(lake, run_id=result.run_id, batch_size=settings.verdict_batch) as w:

        def on_batch(verdicts: list[Verdict]) -> None:
            for v in verdicts:
                w.add_verdict(v)
                statuses[v.status.value] = statuses.get(v.status.value, 0) + 1
            rep.advance(len(verdicts))

        for domain, cands in by_domain.items():
            for _ in verify_candidates(
                domain, cands, tasks, settings.limits, settings.pool, on_batch
            ):
                result.verified += 1
    result.counts["verdicts_written"] = w.stats["verdicts"].written
    result.counts["statuses"] = statuses
    result.verify_seconds = time.perf_counter() - t0
    rep.done()


def load_tasks(con: duckdb.DuckDBPyConnection, task_ids: list[str]) -> dict[str, Task]:
    if not task_ids:
        return {}
    sql = "SELECT * FROM tasks WHERE task_id IN (SELECT unnest($ids))"
    rows = con.execute(sql, {"ids": task_ids}).to_arrow_table().to_pylist()
    return {r["task_id"]: task_from_row(r) for r in rows}


def report(con: duckdb.DuckDBPyConnection, result: JobResult) -> None:
    result.pass_rates = db.rows(con, "pass_rates")
    result.taxonomy = db.rows(con, "error_taxonomy")
    result.survivors = db.rows(con, "perturbation_survivors")


def _params(settings: JobSettings) -> dict[str, Any]:
    return {
        "lake": str(settings.lake),
        "task_roots": [str(p) for p in settings.task_roots],
        "domains": list(settings.domains),
        "task_names": list(settings.task_names) if settings.task_names else None,
        "limits": settings.limits.to_dict(),
        "seed": settings.seed,
        "workers": settings.pool.workers,
        "batch_size": settings.pool.batch_size,
    }


def _record_run(
    lake: Lake,
    result: JobResult,
    settings: JobSettings,
    started_at: str,
    versions_read: dict[str, int],
    params: dict[str, Any],
    error: str | None,
) -> None:
    counts = dict(
        result.counts,
        tasks=result.tasks,
        refused=len(result.refused),
        candidates=result.candidates,
        verified=result.verified,
        verify_seconds=round(result.verify_seconds, 3),
    )
    run = Run(
        run_id=result.run_id,
        flow="main",
        status="failed" if error else "completed",
        started_at=started_at,
        finished_at=utc_now(),
        seconds=round(result.seconds, 3),
        params=params,
        counts=counts,
        lake_versions_read=versions_read,
        lake_versions_written=lake.versions(),
        error=error,
    )
    try:
        with BatchWriter(lake, run_id=result.run_id) as w:
            w.add_run(run)
    except Exception:  # the run row must never hide the job's own error
        log.exception("could not record run %s", result.run_id)
