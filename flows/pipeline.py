"""Prefect flows: `generate`, `verify`, `repair`, `dedup`, `export`, and `pipeline` (all
of them in order).

Prefect sees stages, not candidates: a Prefect task costs ~10-150 ms, more than verifying
a small design, so each stage is one Prefect task that hands batches to Ray actors. Every
flow run records a row in the lake's `runs` table (its Prefect flow-run id is the run id,
so lake rows and the Prefect UI point at each other) and publishes artifacts: pass rates
per domain and level, the error taxonomy, and the export manifest.
"""

# No `from __future__ import annotations` here: Prefect builds a pydantic model of each
# flow's parameters from its annotations, and a served deployment runs the flow in a
# process that loads this file by path, where a string annotation ("PipelineSettings")
# cannot be resolved ("Pipeline_FlowModel is not fully defined").
import json
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from flows import stages
from flows.stages import PipelineSettings, StageContext
from lake.schema import Run
from lake.store import LakeFull
from lake.writer import BatchWriter
from verifiers.contract import utc_now

log = logging.getLogger(__name__)

# The built-in defaults: the catalog, offline generation, every stage.
DEFAULTS = PipelineSettings()


def _stage_task(name: str, fn: Callable[[StageContext], Any]):
    # NO_CACHE: a stage's input is the lake, not its arguments (a context holding a live
    # DuckDB connection), and a rerun must look at the lake again.
    return task(name=name, cache_policy=NO_CACHE, log_prints=False)(fn)


ingest_task = _stage_task("ingest", stages.ingest)
generate_task = _stage_task("generate", lambda ctx: stages.generate(ctx))
verify_task = _stage_task("verify", lambda ctx: stages.verify(ctx))
repair_task = _stage_task("repair", lambda ctx: stages.repair(ctx))
dedup_task = _stage_task("dedup", stages.dedup)
export_task = _stage_task("export", stages.export)


@flow(name="generate", log_prints=False)
def generate_flow(settings: PipelineSettings = DEFAULTS) -> dict[str, Any]:
    """Ingest the task catalog and generate candidates for the tasks that lack them."""
    return _run("generate", settings, lambda ctx: (ingest_task(ctx), generate_task(ctx)))


@flow(name="verify", log_prints=False)
def verify_flow(settings: PipelineSettings = DEFAULTS) -> dict[str, Any]:
    """Verify every candidate without a verdict from the current verifier version."""
    return _run("verify", settings, verify_task)


@flow(name="repair", log_prints=False)
def repair_flow(settings: PipelineSettings = DEFAULTS) -> dict[str, Any]:
    """Repair failed candidates from their verdicts' feedback, up to `repair_rounds`."""
    return _run("repair", settings, repair_task)


@flow(name="dedup", log_prints=False)
def dedup_flow(settings: PipelineSettings = DEFAULTS) -> dict[str, Any]:
    """Exact and near-duplicate clusters, keepers, and holdout contamination flags."""
    return _run("dedup", settings, dedup_task)


@flow(name="export", log_prints=False)
def export_flow(settings: PipelineSettings = DEFAULTS) -> dict[str, Any]:
    """SFT / DPO Parquet shards, JSONL, a dataset card and a manifest."""
    return _run("export", settings, export_task)


@flow(name="pipeline", log_prints=False)
def pipeline_flow(settings: PipelineSettings = DEFAULTS) -> dict[str, Any]:
    """generate -> verify -> repair -> dedup -> export on the lake, each stage resuming
    from what the lake already holds."""
    unknown = sorted(set(settings.stages) - set(stages.STAGES))
    if unknown:
        raise ValueError(f"unknown stages {unknown}; stages: {', '.join(stages.STAGES)}")

    def body(ctx: StageContext) -> None:
        steps = {
            "generate": lambda: (ingest_task(ctx), generate_task(ctx)),
            "verify": lambda: verify_task(ctx),
            "repair": lambda: repair_task(ctx),
            "dedup": lambda: dedup_task(ctx),
            "export": lambda: export_task(ctx),
        }
        for name in stages.STAGES:
            if name in settings.stages:
                t0 = time.perf_counter()
                steps[name]()
                ctx.counts[f"seconds_{name}"] = round(time.perf_counter() - t0, 3)

    return _run("pipeline", settings, body)


def _run(
    name: str, settings: PipelineSettings, body: Callable[[StageContext], Any]
) -> dict[str, Any]:
    """Run `body` in a stage context, record the run row, publish the artifacts."""
    run_id = _flow_run_id()
    started_at = utc_now()
    t0 = time.perf_counter()
    with stages.stage_context(settings, run_id) as ctx:
        versions_read = ctx.lake.versions()
        error: str | None = None
        try:
            body(ctx)
        except BaseException as e:
            error = f"{type(e).__name__}: {e}"
            raise
        finally:
            _record_run(ctx, name, settings, started_at, t0, versions_read, error)
        reports = stages.report(ctx.con)
        _publish(name, ctx, reports)
    return {
        "run_id": run_id,
        "counts": ctx.counts,
        "refused": [str(e) for e in ctx.refused],
        "seconds": round(time.perf_counter() - t0, 3),
        **reports,
    }


def _flow_run_id() -> str:
    from prefect.runtime import flow_run

    fid = flow_run.id
    return str(fid) if fid else uuid.uuid4().hex


def _record_run(
    ctx: StageContext,
    name: str,
    settings: PipelineSettings,
    started_at: str,
    t0: float,
    versions_read: dict[str, int],
    error: str | None,
) -> None:
    run = Run(
        run_id=ctx.run_id,
        flow=name,
        status="failed" if error else "completed",
        started_at=started_at,
        finished_at=utc_now(),
        seconds=round(time.perf_counter() - t0, 3),
        params=settings.to_params(),
        counts=ctx.counts,
        lake_versions_read=versions_read,
        lake_versions_written=ctx.lake.versions(),
        error=error,
    )
    try:
        with BatchWriter(ctx.lake, run_id=ctx.run_id) as w:
            w.add_run(run)
    except LakeFull as e:  # the flow's own error says so already, or will
        log.warning("could not record run %s: %s", ctx.run_id, e)
    except Exception:  # the run row must never hide the flow's own error
        log.exception("could not record run %s", ctx.run_id)


def _publish(name: str, ctx: StageContext, reports: dict[str, list[dict[str, Any]]]) -> None:
    """Artifacts for the Prefect UI: what this run did and where the lake stands."""
    create_table_artifact(
        key="pass-rates",
        table=_jsonable(reports["pass_rates_by_level"]),
        description=f"Pass rate per domain and level after this {name} run "
        "(sql/pass_rates_by_level.sql; latest verdict per candidate).",
    )
    create_table_artifact(
        key="error-taxonomy",
        table=_jsonable(reports["taxonomy"]),
        description="Failures by status, category and code (sql/error_taxonomy.sql).",
    )
    counts = "\n".join(f"| {k} | {v} |" for k, v in sorted(ctx.counts.items()))
    create_markdown_artifact(
        key="run-counts",
        markdown=f"# {name} run `{ctx.run_id}`\n\n| count | value |\n|---|---|\n{counts}\n",
        description="What this run read, made and wrote.",
    )
    manifest = ctx.export_manifest
    if manifest is not None:
        path = ctx.counts["export_path"]
        create_markdown_artifact(
            key="export-manifest",
            markdown=f"# Export `{path}`\n\n```json\n{json.dumps(manifest, indent=2)[:20000]}\n```",
            description="The export's manifest: mix, counts, shard hashes, lake versions.",
        )


def _jsonable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return json.loads(json.dumps(rows, default=str))
