"""`crucible run` and `crucible serve`: the pipeline as a Prefect flow, once or on a
schedule, with progress bars and the summary tables."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from flows import render
from flows.cli.base import (
    app,
    print_export,
    say_error,
)
from flows.options import (
    RunOptions,
    check_endpoint,
    check_prefect_api,
    lake_text,
    open_lake,
    pipeline_options,
    prefect_api,
)

if TYPE_CHECKING:
    from rich.progress import Progress


class _RichReporter:
    def __init__(self, progress: Progress):
        self.progress = progress
        self.task = None
        self.run_id: str | None = None

    def run_started(self, run_id: str, ui_url: str | None) -> None:
        self.run_id = run_id
        if ui_url:  # a Prefect server's UI (the temporary in-process API serves none)
            self.progress.console.print(
                f"run {run_id[:12]} in the Prefect UI: {ui_url}", highlight=False, soft_wrap=True
            )

    def stage(self, name: str, total: int | None = None) -> None:
        self.task = self.progress.add_task(name, total=total)

    def advance(self, n: int = 1) -> None:
        if self.task is not None:
            self.progress.advance(self.task, n)

    def done(self) -> None:
        if self.task is not None:
            t = self.progress.tasks[self.task]
            self.progress.update(self.task, total=t.completed or 1, completed=t.completed or 1)


@app.command(
    short_help="Generate, verify, repair, dedup and export, once.",
    rich_help_panel="Run",
    needs=("lake", "ray", "pipeline"),
)
@pipeline_options
def run(opts: RunOptions) -> None:
    """Run the pipeline as a Prefect flow: generate candidates for the catalog's tasks,
    verify them on Ray actors, repair failures from the tools' feedback, dedup, and
    export SFT/DPO data; everything lands in the Delta lake. Re-running resumes: work
    already in the lake is not redone. With no options: the built-in catalog, offline.

    Set PREFECT_API_URL (see `crucible server`) to watch the run in the Prefect UI: the
    run's page is printed when it starts and in the summary. Ctrl-C (or SIGTERM) cancels
    the run in seconds (exit 130; 143 after SIGTERM) and the next run resumes it; a
    second Ctrl-C stops at once."""
    settings = opts.pipeline_settings()  # names and values: refused before anything is made
    _preflight(settings)
    from flows import interrupt, logs

    con = render.console()
    reporter = _RichReporter(_progress(con))
    try:
        with interrupt.cancel_on_signals(FORCED, on_first=logs.hush_prefect_console):
            result = _run_pipeline(settings, reporter)
    except (typer.Exit, typer.Abort):
        raise
    # `Cancelled`, a plain KeyboardInterrupt where Ray re-raised it, or what a C call made
    # of it (DuckDB: `RuntimeError: Query interrupted`): after a signal, all the same
    except (KeyboardInterrupt, Exception):
        signum = interrupt.first_signal()
        if signum is None:
            raise
        say_error(_cancelled_line(signum, reporter.run_id), "cancelled:")
        raise typer.Exit(128 + signum) from None
    _print_result(con, result, opts.lake)
    if result["refused"]:
        raise typer.Exit(1)


FORCED = "stopped at once (a second signal); the next `crucible run` resumes"


def _run_pipeline(settings, reporter: _RichReporter) -> dict:
    """The pipeline flow with progress bars; Ray stopped after it, however it ended."""
    from flows import interrupt
    from flows.pipeline import pipeline_flow
    from flows.stages import reporting
    from lake.lock import hold
    from lake.store import LakeError
    from ray_actors import cluster

    # a lake another command is writing: one line, exit 2, before Prefect or Ray start
    with hold(settings.lake, "crucible run"):
        try:
            interrupt.start_temporary_api()  # a no-op when Prefect's settings name an API
            with reporter.progress, reporting(reporter):
                return pipeline_flow(settings)
        except LakeError as e:
            say_error(str(e), "lake error:")
            raise typer.Exit(2) from None
        except ValueError as e:
            say_error(str(e))
            raise typer.Exit(2) from None
        finally:
            cluster.shutdown()


def _cancelled_line(signum: int, run_id: str | None) -> str:
    """One line for a run stopped by Ctrl-C or SIGTERM: which run, and how to go on."""
    import shlex
    import signal

    how = "after Ctrl-C" if signum == signal.SIGINT else f"by {signal.Signals(signum).name}"
    again = shlex.join(["crucible", *sys.argv[1:]])
    if run_id is None:
        return f"stopped {how} before the run started; start it again with: {again}"
    return f"run {run_id} stopped {how} (recorded as cancelled); resume with: {again}"


def _preflight(settings) -> None:
    """What a run needs outside this process, asked in seconds before the flow starts: the
    Prefect API it reports to and the model endpoint; then the lake, opened (created if
    absent) as the run will open it, so an unwritable one is refused here."""
    check_prefect_api()
    warning = check_endpoint(settings, os.environ)
    if warning:
        say_error(warning, "warning:")
    open_lake(settings.lake)


@app.command(
    short_help="Run the pipeline on a cron schedule (Prefect).",
    rich_help_panel="Run",
    needs=("lake", "ray", "pipeline"),
)
@pipeline_options
def serve(
    cron: Annotated[str, typer.Option(help="When to run, as a cron line (UTC).")] = "0 * * * *",
    name: Annotated[str, typer.Option(help="Deployment name shown in the Prefect UI.")] = (
        "crucible-pipeline"
    ),
    *,
    opts: RunOptions,
) -> None:
    """Serve the pipeline as a Prefect deployment on a cron schedule (runs until stopped
    with Ctrl-C). Start `crucible server` first and export PREFECT_API_URL so the
    schedule and its runs live in the server and show in its UI; the same parameters can
    be changed per run there."""
    from prefect.client.schemas.schedules import CronSchedule

    from flows.pipeline import pipeline_flow

    try:
        CronSchedule(cron=cron)
    except ValueError:
        raise typer.BadParameter(
            f"{cron!r} is not a cron line (e.g. '0 * * * *')", param_hint="--cron"
        ) from None
    settings = opts.pipeline_settings()
    check_prefect_api()  # a server that is down: said now, not when the first run is due
    if not prefect_api()[0]:
        render.console().print(
            "[yellow]PREFECT_API_URL is not set:[/] serving against a temporary server that "
            "goes away with this process. Run `crucible server` and export "
            "PREFECT_API_URL=http://127.0.0.1:4200/api to keep the schedule and see it."
        )
    pipeline_flow.serve(name=name, cron=cron, parameters={"settings": settings})


def _progress(con) -> Progress:
    # only `run` draws bars: every other command (a one-off `verify`) skips the import
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description:<18}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=con,
    )


def _print_result(con, result: dict, lake: Path) -> None:
    for e in result["refused"]:
        con.print(f"[bold red]refused task[/] {e}")
    c = result["counts"]
    if c.get("all_refused"):
        con.print(
            f"run {result['run_id'][:12]}: every task of the run is refused (above), so nothing "
            f"was generated, verified or exported; fix them and run again; lake {lake_text(lake)}"
        )
        return
    verified, vsec = c.get("verified", 0), c.get("verify_seconds", 0)
    con.print(
        f"run {result['run_id'][:12]}: {c.get('tasks', 0)} tasks, "
        f"{c.get('generated', 0)} candidates generated, {verified} verified in {vsec:.1f}s "
        f"({verified / max(vsec, 1e-9):.1f}/s), {c.get('repair_candidates', 0)} repairs, "
        f"{c.get('trajectories_written', 0)} trajectories, total {result['seconds']:.1f}s; "
        f"lake {lake_text(lake)}"
    )
    if result.get("ui_url"):
        con.print(f"Prefect UI: {result['ui_url']}", highlight=False, soft_wrap=True)
    if c.get("worker_restarts"):
        by = c.get("worker_restarts_by_resource") or {}
        where = ", ".join(f"{n} on `{r}`" for r, n in sorted(by.items()))
        con.print(
            f"[yellow]{c['worker_restarts']} verifier worker(s) died and were restarted by "
            f"Ray[/] ({where}); their batches were verified again"
        )
    _print_deaths(con, c.get("worker_deaths") or [])
    _print_rows(
        con,
        "pass rates, whole lake (sql/pass_rates.sql)",
        result["pass_rates"],
        ["domain", "level", "origin", "candidates", "passed", "pass_rate", "infra_errors"],
    )
    _print_rows(
        con,
        "error taxonomy, whole lake (sql/error_taxonomy.sql)",
        result["taxonomy"],
        ["status", "category", "code", "count", "share"],
    )
    _print_rows(
        con,
        "perturbations that passed (sql/perturbation_survivors.sql)",
        [r for r in result["survivors"] if r["survived"]],
        ["generator", "perturbed", "survived", "survived_on"],
    )
    if c.get("export_path"):
        print_export(con, c)


SHOWN_DEATHS = 3


def _print_deaths(con, deaths: list[dict]) -> None:
    """How the workers that died ended (exit status or signal, last stderr lines), as the
    run's counts keep them (`worker_deaths`)."""
    from rich.markup import escape

    from ray_actors.lastwords import WorkerDeath

    for d in deaths[:SHOWN_DEATHS]:
        death = WorkerDeath(**{**d, "stderr_tail": tuple(d.get("stderr_tail") or ())})
        con.print(f"  [yellow]worker death:[/] {escape(death.describe())}", highlight=False)
    if len(deaths) > SHOWN_DEATHS:
        con.print(
            f"  ... and {len(deaths) - SHOWN_DEATHS} more: the run's counts keep them all "
            "(crucible sql \"SELECT counts->'worker_deaths' FROM runs ORDER BY started_at "
            'DESC LIMIT 1")',
            highlight=False,
        )


def _print_rows(con, title: str, rows: list[dict], cols: list[str]) -> None:
    con.print(render.rows_table(title, cols, [[r.get(c) for c in cols] for r in rows]))
