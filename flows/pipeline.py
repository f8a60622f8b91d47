"""Prefect flows: `generate`, `verify`, `repair`, `dedup`, `export`, and `pipeline` (all
of them in order).

Prefect sees stages, not candidates: a Prefect task costs ~10-150 ms, more than verifying
a small design, so each stage is one Prefect task that hands batches to Ray actors. Every
flow run records a row in the lake's `runs` table (its Prefect flow-run id is the run id,
so lake rows and the Prefect UI point at each other) and publishes artifacts: this run's
counts, the pass rates and failure taxonomy of the verdicts it wrote (tables and charts),
the same over the whole lake (labelled lake-wide), and the export manifest. Crucible's log
records go to the flow run's Logs tab (`flows.logs`).
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

from flows import interrupt, logs, stages
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
            if name == "generate" and ctx.refused and not stages.task_ids(ctx):
                # every task refused (malformed, or its reference fails): no stage has work,
                # and an export would be an empty dataset
                log.warning("every task of the run is refused: the later stages are skipped")
                ctx.counts["all_refused"] = 1
                return

    return _run("pipeline", settings, body)


def _run(
    name: str, settings: PipelineSettings, body: Callable[[StageContext], Any]
) -> dict[str, Any]:
    """Run `body` in a stage context, record the run row, publish the artifacts."""
    logs.to_prefect()  # also in a deployment's own process, which skips the CLI
    interrupt.reclaim()  # the command's Ctrl-C / SIGTERM handling, over Prefect's SIGTERM
    run_id, ui_url = _flow_run()
    stages.reporter().run_started(run_id, ui_url)
    started_at = utc_now()
    t0 = time.perf_counter()
    with stages.stage_context(settings, run_id, f"the {name} flow") as ctx:
        versions_read = ctx.lake.versions()
        status, error = "completed", None
        try:
            body(ctx)
        except BaseException as e:
            if interrupt.is_cancellation(e):  # Ctrl-C, SIGTERM: asked to stop
                status, error = "cancelled", interrupt.cancellation_text(e)
            else:
                status, error = "failed", f"{type(e).__name__}: {e}"
            raise
        finally:
            _record_run(ctx, name, settings, started_at, t0, versions_read, status, error)
        reports = stages.report(ctx.con, run_id)
        _publish(name, ctx, reports)
    return {
        "run_id": run_id,
        "ui_url": ui_url,
        "counts": ctx.counts,
        "refused": [str(e) for e in ctx.refused],
        "seconds": round(time.perf_counter() - t0, 3),
        **reports,
    }


def _flow_run() -> tuple[str, str | None]:
    """The run's id (its Prefect flow-run id) and its page in the Prefect UI: None on
    Prefect's temporary in-process API, which serves no UI, and outside a flow run."""
    from prefect.runtime import flow_run
    from prefect.settings import get_current_settings
    from prefect.utilities.urls import url_for

    fid = flow_run.id
    if not fid:
        return uuid.uuid4().hex, None
    ui = url_for("flow-run", obj_id=fid) if get_current_settings().api.url else None
    return str(fid), ui


def _record_run(
    ctx: StageContext,
    name: str,
    settings: PipelineSettings,
    started_at: str,
    t0: float,
    versions_read: dict[str, int],
    status: str,
    error: str | None,
) -> None:
    run = Run(
        run_id=ctx.run_id,
        flow=name,
        status=status,
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
    """Artifacts for the Prefect UI: what this run did (its counts, and the pass rates and
    failures of the verdicts it wrote, with a chart of each), then where the whole lake
    stands; each says which it is in its key, title and description."""
    run = ctx.run_id
    counts = "\n".join(f"| {k} | {v} |" for k, v in _flat_counts(ctx.counts))
    create_markdown_artifact(
        key="run-counts",
        markdown=f"# This {name} run `{run}`\n\n| count | value |\n|---|---|\n{counts}\n",
        description=f"This {name} run: what it read, made and wrote.",
    )
    create_table_artifact(
        key="run-pass-rates",
        table=_cells(reports["run_pass_rates"]),
        description=f"This {name} run: pass rate per domain, level and origin of the "
        "verdicts it wrote (sql/report_pass_rates.sql; infra_error out of the denominator).",
    )
    create_table_artifact(
        key="run-taxonomy",
        table=_cells(reports["run_taxonomy"]),
        description=f"This {name} run: the failing verdicts it wrote, by status, category "
        "and code (sql/report_taxonomy.sql).",
    )
    charts = _charts(reports["run_pass_rates"], reports["run_taxonomy"])
    if charts:
        create_markdown_artifact(
            key="run-charts",
            markdown=f"# This {name} run `{run}`\n\n{charts}\n",
            description=f"This {name} run: its pass rates and failure taxonomy as charts.",
        )
    create_table_artifact(
        key="lake-pass-rates",
        table=_cells(reports["pass_rates_by_level"]),
        description="Lake-wide (every run so far): pass rate per domain and level, latest "
        "verdict per candidate (sql/pass_rates_by_level.sql).",
    )
    create_table_artifact(
        key="lake-taxonomy",
        table=_cells(reports["taxonomy"]),
        description="Lake-wide (every run so far): failures by status, category and code, "
        "latest verdict per candidate (sql/error_taxonomy.sql).",
    )
    manifest = ctx.export_manifest
    if manifest is not None:
        path = ctx.counts["export_path"]
        create_markdown_artifact(
            key="export-manifest",
            markdown=f"# Export `{path}`\n\n```json\n{json.dumps(manifest, indent=2)[:20000]}\n```",
            description="The export's manifest: mix, counts, shard hashes, lake versions.",
        )


def _rounded(v: Any) -> Any:
    return round(v, 3) if isinstance(v, float) else v


def _flat_counts(counts: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """A run's counts as (key, value) rows: nested dicts (a generator's stats) flattened
    to dotted keys, floats to 3 places."""
    out: list[tuple[str, Any]] = []
    for k, v in sorted(counts.items()):
        if isinstance(v, dict):
            out += _flat_counts(v, f"{prefix}{k}.")
        else:
            out.append((f"{prefix}{k}", _rounded(v)))
    return out


ID_CHARS = 12  # ids in a table cell: enough for `crucible show`, short enough to read


def _cells(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows as a table artifact shows them: floats to 3 places, ids shortened, anything
    nested as compact JSON (never a Python repr that overflows its cell)."""
    out = []
    for r in rows:
        row: dict[str, Any] = {}
        for k, v in r.items():
            if isinstance(v, float):
                v = round(v, 3)
            elif isinstance(v, dict | list | tuple):
                v = json.dumps(v, default=str, separators=(",", ":"))
            elif k.endswith("_id") and isinstance(v, str):
                v = v[:ID_CHARS]
            elif v is not None and not isinstance(v, int | str | bool):
                v = str(v)
            row[k] = v
        out.append(row)
    return out


def _charts(pass_rates: list[dict[str, Any]], taxonomy: list[dict[str, Any]]) -> str:
    """Markdown with two PNG charts (pass rate per domain/level/origin, failures per
    taxonomy code) as data: URIs; empty when there is nothing to draw or no matplotlib."""
    try:  # the Figure API, not pyplot: no process-wide backend is chosen here
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:  # charts are a nicety: the tables carry the same numbers
        log.info("matplotlib is not installed: run artifacts come without charts")
        return ""
    parts = []
    rated = [r for r in pass_rates if r.get("pass_rate") is not None]
    if rated:
        labels = [f"{r['domain']} L{r['level']} {r['origin']}" for r in rated]
        values = [float(r["pass_rate"]) for r in rated]
        fig = Figure(figsize=(7, 0.4 * len(rated) + 1.2), dpi=100)
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        ax.barh(labels[::-1], values[::-1], color="#2a9d8f")
        for y, (v, r) in enumerate(zip(values[::-1], rated[::-1], strict=True)):
            ax.text(min(v, 0.82) + 0.01, y, f"{v:.3f} ({r['passed']}/{r['judged']})", va="center")
        ax.set_xlim(0, 1)
        ax.set_xlabel("pass rate (infra_error excluded)")
        ax.set_title("Pass rate of the verdicts this run wrote")
        parts.append(_png_markdown(fig, "pass rates of this run"))
    if taxonomy:
        labels = [f"{r['status']}/{r['code'] or r['category']}" for r in taxonomy]
        values = [int(r["count"]) for r in taxonomy]
        fig = Figure(figsize=(7, 0.4 * len(taxonomy) + 1.2), dpi=100)
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        ax.barh(labels[::-1], values[::-1], color="#e76f51")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # counts, not fractions
        ax.set_xlabel("failing verdicts")
        ax.set_title("Failures of this run by taxonomy code")
        parts.append(_png_markdown(fig, "failure taxonomy of this run"))
    return "\n\n".join(parts)


def _png_markdown(fig: Any, alt: str) -> str:
    import base64
    import io

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    return f"![{alt}](data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()})"
