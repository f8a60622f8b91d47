"""The `crucible` command."""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from typer.core import TyperCommand, TyperGroup

from flows import render
from flows.options import (
    DEFAULT_LAKE,
    DEFAULT_TASKS,
    DomainOpt,
    FastOpt,
    GatesOpt,
    LakeOpt,
    MixOpt,
    RunOptions,
    SimOnlyOpt,
    TaskNamesOpt,
    TasksOpt,
    UnconfinedOpt,
    UserError,
    check_endpoint,
    check_export_target,
    check_lake_exists,
    check_prefect_api,
    check_roots,
    click_errors,
    domain_option,
    is_user_error,
    known_domains,
    lake_text,
    limits_for,
    open_lake,
    parse_mix,
    parse_settings,
    pipeline_options,
    require_lake,
)
from verifiers import domain as domain_registry
from verifiers.catalog import TaskSpecError, load_catalog
from verifiers.contract import Limits, Status, Task
from verifiers.specfields import ImportProblems

if TYPE_CHECKING:
    from rich.progress import Progress


class _PlainFlags:
    """Help shows a flag as a flag: typer's help prints a value placeholder (`<bool>`) for
    every option, which invites `--fast true` (refused: a flag takes no value)."""

    def get_params(self, ctx: typer.Context) -> list:
        params = super().get_params(ctx)  # type: ignore[misc]
        for p in params:
            if getattr(p, "is_flag", False) and p.metavar is None:
                p.metavar = ""
        return params


class _Command(_PlainFlags, TyperCommand):
    """Every command's body runs under the CLI's one rule for errors: a mistake the user
    can fix (UserError, a click usage error, our modules' errors whose message says what
    to do: `options.USER_ERRORS`) is one line and exit 2; anything else is one line
    `internal error: ...` and exit 1. `crucible --debug` prints the traceback first."""

    def invoke(self, ctx: typer.Context):
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort):
            raise
        except click_errors.ClickException:
            if _debug(ctx):
                typer.echo(traceback.format_exc(), err=True, nl=False)
            raise  # one line, from the group's main
        except Exception as e:
            debug = _debug(ctx)
            if debug:
                typer.echo(traceback.format_exc(), err=True, nl=False)
            if is_user_error(e):
                _say_error(f"{e}")
                raise typer.Exit(2) from None
            tail = "" if debug else " (run with --debug for the traceback)"
            _say_error(f"{type(e).__name__}: {e}{tail}", "internal error:")
            raise typer.Exit(1) from None


class _Group(_PlainFlags, TyperGroup):
    """Usage errors (an unknown option, a bad value, a UserError) print as one line,
    `error: ...`, with exit 2: not typer's boxed panel."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        kw = dict(args=args, prog_name=prog_name, complete_var=complete_var, **extra)
        if not standalone_mode:
            return super().main(standalone_mode=False, **kw)
        try:
            rv = super().main(standalone_mode=False, **kw)
        except click_errors.NoArgsIsHelpError as e:
            from typer import rich_utils

            rich_utils.rich_format_error(e)  # the help itself
            sys.exit(e.exit_code)
        except click_errors.ClickException as e:
            _say_error(_usage_line(e))
            sys.exit(e.exit_code)
        except typer.Abort:
            typer.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


def _debug(ctx: typer.Context) -> bool:
    return bool(ctx.find_root().params.get("debug"))


def _usage_line(e: click_errors.ClickException) -> str:
    line = " ".join(e.format_message().split())
    ctx = getattr(e, "ctx", None)
    parse_error = isinstance(e, click_errors.UsageError) and (
        isinstance(e, click_errors.MissingParameter)
        or not isinstance(e, click_errors.BadParameter | UserError)
    )
    if parse_error and ctx is not None:  # an unknown option, a missing one: where they are
        line += f" (see `{ctx.command_path} --help`)"
    return line


def _say_error(line: str, label: str = "error:") -> None:
    """The one line an error gets, on stderr."""
    typer.echo(f"{typer.style(label, fg='red', bold=True)} {' '.join(line.split())}", err=True)


class _Crucible(typer.Typer):
    """The command as a process's entry point (the `crucible` script, `python -m
    flows.cli`) first starts the reaper: whatever the command starts (Prefect's server,
    Ray's cluster, verifier workers, scratch files) is gone when it ends, also after a
    SIGKILL. In-process invocations (typer's CliRunner in tests) do not come through here;
    the error rule (`_Group`, `_Command`) holds for both."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("cls", _Group)
        super().__init__(*args, **kwargs)

    def command(self, *args, cls=None, **kwargs):
        return super().command(*args, cls=cls or _Command, **kwargs)

    def __call__(self, *args, **kwargs):
        from flows import reaper

        reaper.guard()
        return super().__call__(*args, **kwargs)


app = _Crucible(
    help="Crucible: execution-verified training data for industrial code.\n\n"
    "`crucible run` ingests the task catalog, generates candidates, verifies them on Ray "
    "actors and writes everything to the Delta lake; `crucible sql` queries it.",
    no_args_is_help=True,
    add_completion=False,
)

# what `crucible run` works on without --domain: the domains that declare `default_run`
# (every domain this machine verifies fully; the GPU kernels need a GPU node)
DEFAULT_DOMAINS = domain_registry.default_run()
PendingDomainOpt = Annotated[
    str,
    typer.Option(
        "--domain", help=f"The domain (one of {known_domains()}).", callback=domain_option
    ),
]
ListDomainOpt = Annotated[
    str | None,
    typer.Option("--domain", help=f"Only this domain ({known_domains()}).", callback=domain_option),
]
SettingsOpt = Annotated[
    str | None,
    typer.Option(
        "--settings",
        help="The verifier's settings as a JSON object or a .json file (the keys of the "
        "task's domain: `python -m verifiers.<domain> --help` lists them).",
    ),
]


def _gates(text: str | None, domain: str) -> tuple[str, ...] | None:
    """--gates as a Limits.gates tuple, checked against the domain verifier's gates."""
    if text is None:
        return None
    wanted = tuple(dict.fromkeys(g.strip() for g in text.split(",") if g.strip()))
    known = ("format", *domain_registry.get(domain).gate_names)
    bad = [g for g in wanted if g not in known]
    if bad or not wanted:
        raise typer.BadParameter(
            f"unknown gate(s) {', '.join(bad) or '(none given)'} for the {domain} verifier; "
            f"its gates: {','.join(known[1:])}",
            param_hint="--gates",
        )
    return wanted


def _quiet_env(verbose: bool) -> None:
    # Entry point only (library code never sets env), before Prefect or Ray is imported:
    # keep both quiet and self-contained, and Prefect's console lines out of the progress
    # bar. Crucible's own records reach the Prefect UI without an env (`flows.logs`).
    env = {
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_DEDUP_LOGS": "0",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "INFO" if verbose else "WARNING",
        # the ephemeral API server's 20 s default is too short on a busy 2-core machine
        # (seen: "Timed out while attempting to connect to ephemeral Prefect API server")
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    }
    for k, v in env.items():
        os.environ.setdefault(k, v)


@app.callback()
def _main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log more.")] = False,
    debug: Annotated[  # read where errors are caught (`_Command.invoke`), off the root context
        bool, typer.Option("--debug", help="Print the traceback of an error (before its line).")
    ] = False,
):
    from flows import logs

    logs.setup_cli(verbose)
    _quiet_env(verbose)


class _RichReporter:
    def __init__(self, progress: Progress):
        self.progress = progress
        self.task = None

    def stage(self, name: str, total: int | None = None) -> None:
        self.task = self.progress.add_task(name, total=total)

    def advance(self, n: int = 1) -> None:
        if self.task is not None:
            self.progress.advance(self.task, n)

    def done(self) -> None:
        if self.task is not None:
            t = self.progress.tasks[self.task]
            self.progress.update(self.task, total=t.completed or 1, completed=t.completed or 1)


@app.command()
@pipeline_options
def run(opts: RunOptions) -> None:
    """Run the pipeline as a Prefect flow: generate candidates for the catalog's tasks,
    verify them on Ray actors, repair failures from the tools' feedback, dedup, and
    export SFT/DPO data; everything lands in the Delta lake. Re-running resumes: work
    already in the lake is not redone. With no options: the built-in catalog, offline.

    Set PREFECT_API_URL (see `crucible server`) to watch the run in the Prefect UI."""
    settings = opts.pipeline_settings()  # names and values: refused before anything is made
    _preflight(settings)
    from flows.pipeline import pipeline_flow
    from flows.stages import reporting
    from lake.store import LakeError
    from ray_actors import cluster

    con = render.console()
    progress = _progress(con)
    try:
        with progress, reporting(_RichReporter(progress)):
            result = pipeline_flow(settings)
    except LakeError as e:
        _say_error(str(e), "lake error:")
        raise typer.Exit(2) from None
    except ValueError as e:
        _say_error(str(e))
        raise typer.Exit(2) from None
    finally:
        cluster.shutdown()
    _print_result(con, result, opts.lake)
    if result["refused"]:
        raise typer.Exit(1)


def _preflight(settings) -> None:
    """What a run needs outside this process, asked in seconds before the flow starts: the
    Prefect API it reports to and the model endpoint; then the lake, opened (created if
    absent) as the run will open it, so an unwritable one is refused here."""
    check_prefect_api()
    warning = check_endpoint(settings, os.environ)
    if warning:
        _say_error(warning, "warning:")
    open_lake(settings.lake)


@app.command()
def dedup(
    lake: LakeOpt = DEFAULT_LAKE,
    domain: DomainOpt = None,
    threshold: Annotated[
        float, typer.Option(help="Jaccard similarity (MinHash estimate) for near duplicates.")
    ] = 0.7,
) -> None:
    """Find exact and near-duplicate candidates (MinHash + LSH over code-token shingles,
    run with Dask), pick one keeper per cluster (passing first, then shortest), and flag
    candidates whose long n-grams overlap a holdout task. Appends to the `dedup` table;
    exports take only keepers that are not contaminated."""
    from flows.pipeline import dedup_flow
    from flows.stages import PipelineSettings

    settings = PipelineSettings(
        lake=lake, domains=tuple(domain or DEFAULT_DOMAINS), dedup={"threshold": threshold}
    )
    result = _run_flow(dedup_flow, settings)
    c = result["counts"]
    render.console().print(
        "dedup: "
        + ", ".join(f"{k[6:]} {v}" for k, v in sorted(c.items()) if k.startswith("dedup_"))
    )


@app.command()
def export(
    lake: LakeOpt = DEFAULT_LAKE,
    out: Annotated[
        Path | None,
        typer.Option(help="Directory that receives the export (default: <lake>/exports)."),
    ] = None,
    name: Annotated[
        str, typer.Option(help="Export directory name (default: export-<UTC time>).")
    ] = "",
    kinds: Annotated[
        str,
        typer.Option(
            help="Comma-separated: sft_direct,sft_repair,sft_repair_completion,sft_optimize,dpo "
            "(sft_repair_completion: the repair rows as prompt-completion, trained on the fix "
            "only)."
        ),
    ] = "sft_direct,sft_repair,sft_repair_completion,sft_optimize,dpo",
    mix: MixOpt = None,
    size: Annotated[
        int | None,
        typer.Option(
            help="Rows per kind, drawn by the mix weights (default: all); a kind with fewer "
            "eligible rows gives them all, with a warning."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    shard_rows: Annotated[int, typer.Option(help="Rows per Parquet shard.")] = 5000,
    dpo_other_failures: Annotated[
        bool,
        typer.Option(
            help="DPO: when a task has no failure that compiled, reject other failures too."
        ),
    ] = False,
    license: Annotated[
        str,
        typer.Option(
            "--license",
            help="The dataset card's license: a Hugging Face license id (apache-2.0, mit, "
            "cc-by-4.0, ...), or `other` with --license-name and --license-link (default: none "
            "chosen, and the card says so).",
        ),
    ] = "",
    license_name: Annotated[
        str, typer.Option(help="With --license other: the license's short id.")
    ] = "",
    license_link: Annotated[
        str, typer.Option(help="With --license other: the URL or path of the license text.")
    ] = "",
    pretty_name: Annotated[
        str, typer.Option(help="The card's title (default: from the domains it holds).")
    ] = "",
) -> None:
    """Write SFT (direct, repair, optimization) and DPO data from the lake: Parquet shards
    in the Hugging Face layout (data/<kind>/train-00000-of-0000N.parquet) plus JSONL, a
    dataset card (its `configs` block, license, provenance, schema per config, counts and
    a chart) and manifest.json (mix, counts, shard sha256, lake versions, warnings). Every
    config is in a TRL dataset format; repairs come both as `messages` and as
    prompt-completion (the fix only is trained on). Only dedup keepers of training tasks;
    never holdout, contaminated or infra_error."""
    from flows.pipeline import export_flow
    from flows.stages import PipelineSettings

    fields = {
        "kinds": tuple(k.strip() for k in kinds.split(",") if k.strip()),
        "size": size,
        "seed": seed,
        "shard_rows": shard_rows,
        "dpo_other_failures": dpo_other_failures,
        "name": name,
        "license": license,
        "license_name": license_name,
        "license_link": license_link,
        "pretty_name": pretty_name,
    }
    if mix:
        fields["mix"] = parse_mix(mix)
    try:
        from lake.export import ExportSettings

        ExportSettings(**fields)  # bad kinds / weights / names stop here, before any work
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    settings = PipelineSettings(lake=lake, export=fields, export_dir=out)
    result = _run_flow(export_flow, settings)
    _print_export(render.console(), result["counts"])


def _print_export(con, c: dict) -> None:
    """The export's path and rows per kind, then what was asked and not got (--size above
    what is eligible, an empty kind), read back from its manifest."""
    from rich.markup import escape

    kinds = {k[7:]: v for k, v in c.items() if k.startswith("export_") and k != "export_path"}
    shown = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    con.print(f"export: {c.get('export_path')} ({shown})")
    manifest = Path(str(c.get("export_path", ""))) / "manifest.json"
    if manifest.is_file():
        for line in json.loads(manifest.read_text()).get("warnings", []):
            con.print(f"[yellow]warning:[/] {escape(line)}", highlight=False)


def _run_flow(flow_fn, settings) -> dict:
    """A flow run over an existing lake (a typo in --lake is refused, never made into an
    empty lake), its export name free, the Prefect API answering: all checked before the
    flow starts. Lake and export errors print as one line (exit 2), not as tracebacks."""
    from lake.export import ExportError
    from lake.store import LakeError

    require_lake(settings.lake, writable=True)
    name = (settings.export or {}).get("name")
    if name:
        check_export_target(settings.export_dir or Path(settings.lake) / "exports", name)
    check_prefect_api()
    try:
        return flow_fn(settings)
    except (LakeError, ExportError) as e:
        _say_error(str(e), f"{type(e).__name__}:")
        raise typer.Exit(2) from None


@app.command()
def repair(
    lake: LakeOpt = DEFAULT_LAKE,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only list the missing files.")
    ] = False,
) -> None:
    """Drop data files that a table's log lists but that are gone from disk (Delta's
    FSCK), so a lake that `crucible run` refuses for a missing file opens again. The rows
    of those files are lost; the next `crucible run` redoes the work they recorded
    (verdicts are verified again, candidates regenerated). Restore the files from a
    backup instead if you have one."""
    from lake.maintenance import repair as fsck
    from lake.store import Lake, LakeError

    con = render.console()
    check_lake_exists(lake)
    try:
        store = Lake(lake, check_files=False)
        removed = fsck(store, dry_run=dry_run)
        if not dry_run:
            Lake(lake)  # opens as any command will: every listed file is there now
    except LakeError as e:
        _say_error(str(e), "lake error:")
        raise typer.Exit(2) from None
    total = sum(map(len, removed.values()))
    for table, files in removed.items():
        for f in files:
            con.print(f"{table}: {f} {'missing' if dry_run else 'dropped (missing)'}")
    verb = "missing" if dry_run else "dropped"
    con.print(f"repair: {total} data file(s) {verb}; lake {lake_text(lake)}")


@app.command()
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
    if not os.environ.get("PREFECT_API_URL"):
        render.console().print(
            "[yellow]PREFECT_API_URL is not set:[/] serving against a temporary server that "
            "goes away with this process. Run `crucible server` and export "
            "PREFECT_API_URL=http://127.0.0.1:4200/api to keep the schedule and see it."
        )
    pipeline_flow.serve(name=name, cron=cron, parameters={"settings": settings})


@app.command()
def server(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port for the API and the UI.")] = 4200,
    database: Annotated[
        str | None,
        typer.Option(
            "--database",
            help="Where the server keeps flow runs, schedules and logs: a PostgreSQL URL, "
            "postgresql://USER:PASSWORD@HOST:5432/DB (DB must exist and USER own it: "
            "Prefect creates its tables and the pg_trgm extension there), or "
            "sqlite:///PATH. Default: SQLite under PREFECT_HOME.",
        ),
    ] = None,
) -> None:
    """Start the Prefect server and UI (Ctrl-C stops it). Then, in the shell that runs
    Crucible: export PREFECT_API_URL=http://HOST:PORT/api, and open http://HOST:PORT to
    watch flow runs, their stage tasks, logs and artifacts (pass rates, taxonomy, export
    manifest). With --database postgresql://... the server keeps its state (deployments,
    schedules, flow runs, logs) in PostgreSQL instead of a SQLite file; the database is
    checked (it answers, it lets the user in) before the server starts."""
    import shutil
    import subprocess

    from flows.database import check_database, parse_database

    exe = shutil.which("prefect") or str(Path(sys.executable).with_name("prefect"))
    if not Path(exe).exists():
        raise typer.BadParameter("the prefect CLI is not installed: pip install 'prefect==3.9.1'")
    db = parse_database(database) if database is not None else None
    if db is not None:
        check_database(db)
    con = render.console()
    if db is not None:
        con.print(f"database: {db.shown}", highlight=False)
    con.print("starting Prefect server...")
    # the UI asks the API at PREFECT_UI_API_URL, which Prefect derives from its settings,
    # not from --port (seen: a UI on another port calling :4200 and showing "Oops")
    env = {
        **os.environ,
        "PREFECT_SERVER_API_HOST": host,
        "PREFECT_SERVER_API_PORT": str(port),
        "PREFECT_UI_API_URL": os.environ.get("PREFECT_UI_API_URL") or f"http://{host}:{port}/api",
    }
    if db is not None:  # in the environment, not on a command line others can read
        env.pop("PREFECT_API_DATABASE_CONNECTION_URL", None)  # an alias: one name only
        env["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = db.url
    cmd = [exe, "server", "start", "--host", host, "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env)
    try:
        # the URL only once the API answers (the UI is served by the same process)
        if _wait_healthy(f"http://{host}:{port}/api/health", proc):
            con.print(
                f"Prefect UI: http://{host}:{port}  ·  in other shells: "
                f"export PREFECT_API_URL=http://{host}:{port}/api"
            )
        rc = proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait()
        rc = 0
    raise typer.Exit(rc)


def _wait_healthy(url: str, proc, poll_s: float = 0.5) -> bool:
    """Poll `url` until it answers 200 (True) or `proc` exits (False)."""
    import time
    import urllib.error
    import urllib.request

    while proc.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(poll_s)
    return False


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
    verified, vsec = c.get("verified", 0), c.get("verify_seconds", 0)
    con.print(
        f"run {result['run_id'][:12]}: {c.get('tasks', 0)} tasks, "
        f"{c.get('generated', 0)} candidates generated, {verified} verified in {vsec:.1f}s "
        f"({verified / max(vsec, 1e-9):.1f}/s), {c.get('repair_candidates', 0)} repairs, "
        f"{c.get('trajectories_written', 0)} trajectories, total {result['seconds']:.1f}s; "
        f"lake {lake_text(lake)}"
    )
    if c.get("worker_restarts"):
        by = c.get("worker_restarts_by_resource") or {}
        where = ", ".join(f"{n} on `{r}`" for r, n in sorted(by.items()))
        con.print(
            f"[yellow]{c['worker_restarts']} verifier worker(s) died and were restarted by "
            f"Ray[/] ({where}); their batches were verified again"
        )
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
        _print_export(con, c)


def _print_rows(con, title: str, rows: list[dict], cols: list[str]) -> None:
    con.print(render.rows_table(title, cols, [[r.get(c) for c in cols] for r in rows]))


def find_task(ref: str, roots: list[Path]) -> Task:
    """A task by catalog name or by (a prefix of) its task_id. A name is its directory
    (tasks/<domain>/<name>/): only that task is loaded, so `crucible verify` elaborates no
    other reference; only a ref that names no directory searches the whole catalog."""
    check_roots(roots)
    hits: list[Task] = []
    errors: list[TaskSpecError] = []
    for root in roots:
        tasks, errs = load_catalog(root, names=[ref])
        hits += tasks
        errors += errs
    if not hits and not errors:
        for root in roots:
            tasks, errs = load_catalog(root)
            errors += errs
            hits += [t for t in tasks if len(ref) >= 6 and t.task_id.startswith(ref)]
    if len(hits) == 1:
        return hits[0]
    where = ", ".join(map(str, roots))
    if not hits:
        bad = [e for e in errors if f"/{ref}/" in e.path]
        if bad:
            raise typer.BadParameter(f"task {ref!r} is malformed: {bad[0]}", param_hint="--task")
        raise typer.BadParameter(
            f"no task named {ref!r} (or with that id prefix) in {where}; "
            "`crucible tasks` lists them",
            param_hint="--task",
        )
    raise typer.BadParameter(
        f"{ref!r} matches {len(hits)} tasks: " + ", ".join(t.name for t in hits),
        param_hint="--task",
    )


@app.command()
def verify(
    file: Annotated[Path, typer.Argument(help="Candidate source file ('-' for stdin).")],
    task: Annotated[str, typer.Option("--task", help="Task name or task_id prefix.")],
    tasks: TasksOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole Verdict as JSON.")
    ] = False,
    fast: FastOpt = False,
    sim_only: SimOnlyOpt = False,
    gates: GatesOpt = None,
    unconfined: UnconfinedOpt = False,
    settings: SettingsOpt = None,
) -> None:
    """Verify one file against one task and print the verdict and its feedback.
    Exit code: 0 pass, 1 the candidate failed, 3 infrastructure error."""
    from verifiers.registry import verify as run_verify

    roots = list(tasks or [DEFAULT_TASKS])
    t = find_task(task, roots)
    if sim_only:
        typer.echo("--sim-only is deprecated: use --fast", err=True)
    lim = limits_for(
        t.domain, fast=fast or sim_only, unconfined=unconfined, gates=_gates(gates, t.domain)
    )
    chosen = parse_settings(t.domain, settings) if settings else None
    data = sys.stdin.buffer.read() if str(file) == "-" else _read(file)
    verdict = run_verify(t, data, lim, chosen)
    if as_json:
        typer.echo(json.dumps(verdict.to_dict(), indent=2))
    else:
        render.console().print(render.verdict_panel(verdict, f"{t.name} · {file}"))
    if verdict.status is Status.INFRA_ERROR:
        raise typer.Exit(3)
    raise typer.Exit(0 if verdict.passed else 1)


def _read(file: Path) -> bytes:
    try:
        return file.read_bytes()
    except OSError as e:
        raise typer.BadParameter(f"cannot read {file}: {e.strerror}", param_hint="FILE") from None


@app.command()
def pending(
    domain: PendingDomainOpt,
    lake: LakeOpt = DEFAULT_LAKE,
    tasks: Annotated[
        list[Path] | None,
        typer.Option(
            "--tasks",
            help="Only the tasks of these catalog root(s), matched by task_id (the lake "
            "holds the same spec); default: every task of the domain in the lake.",
        ),
    ] = None,
    task: TaskNamesOpt = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the JSONL here (default: stdout).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="At most this many candidates.")
    ] = None,
    gates: GatesOpt = None,
) -> None:
    """Write the candidates that have no verdict from the current verifier version
    (sql/pending_verification.sql, as the verify stage selects them) as worker input
    JSONL: one {"task", "candidate"[, "limits"]} line per candidate. Verify them where
    the tools are, `python -m verifiers.<domain> IN --out OUT`, and bring the verdicts
    back with `crucible ingest OUT`. The count goes to stderr.

    With --gates, pending means "no verdict from those gates"; such a verdict carries its
    own version (e.g. `1+gates:parse,...`), so the candidate stays pending for the full
    verification on a GPU node."""
    from flows.stages import load_tasks, pending_candidates
    from lake import db
    from lake.store import Lake, LakeError
    from verifiers.registry import VerifierUnavailable, get_verifier

    try:
        v = get_verifier(domain)
    except VerifierUnavailable as e:
        raise typer.BadParameter(str(e), param_hint="--domain") from None
    limits = Limits(gates=_gates(gates, domain)) if gates is not None else None
    check_roots(tasks or [])
    try:
        con = db.connect(Lake(lake, readonly=True))
    except LakeError as e:
        _say_error(str(e), "lake error:")
        raise typer.Exit(2) from None
    try:
        names = list(task) if task else None
        rows = db.rows(con, "select_tasks", domains=[domain], names=names)
        unknown = sorted(set(names or ()) - {r["name"] for r in rows})
        if unknown:
            raise typer.BadParameter(
                f"no {domain} task named {', '.join(map(repr, unknown))} in lake "
                f"{lake_text(lake)} (or its reference fails); "
                "`crucible sql 'SELECT name FROM tasks'` lists them",
                param_hint="--task",
            )
        ids = [r["task_id"] for r in rows]
        if tasks:
            in_catalog: set[str] = set()
            for root in tasks:
                loaded, errors = load_catalog(root, [domain], names)
                in_catalog |= {t.task_id for t in loaded}
                for e in errors:
                    typer.echo(f"refused task {e}", err=True)
            ids = [i for i in ids if i in in_catalog]
        found = pending_candidates(con, domain, ids, limits or Limits())
        total = len(found)
        cands = found[:limit]
        specs = load_tasks(con, sorted({c.task_id for c in cands}))
    finally:
        con.close()
    lines = []
    for c in cands:
        item = {"task": specs[c.task_id].to_dict(), "candidate": c.to_dict()}
        if limits is not None:
            item["limits"] = limits.to_dict()
        lines.append(json.dumps(item, ensure_ascii=False) + "\n")
    if out is None:
        sys.stdout.writelines(lines)
        sys.stdout.flush()
    else:
        try:
            out.write_text("".join(lines), encoding="utf-8")
        except OSError as e:
            raise typer.BadParameter(
                f"cannot write {out}: {e.strerror}", param_hint="--out"
            ) from None
    shown = f"{len(cands)} of {total}" if len(cands) < total else str(total)
    typer.echo(
        f"{shown} {domain} candidate(s) pending for verifier {v.name} version "
        f"{v.version_for(limits)}" + (f" -> {out}" if out else ""),
        err=True,
    )


@app.command()
def ingest(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Verdict JSONL files ('-' for stdin), as `python -m verifiers.<domain>` "
            "writes them."
        ),
    ],
    lake: LakeOpt = DEFAULT_LAKE,
    commit_every: Annotated[
        int, typer.Option(min=1, help="Verdicts per lake commit (what a crash costs to redo).")
    ] = 256,
) -> None:
    """Append verdicts verified elsewhere (e.g. on a GPU node, from `crucible pending`'s
    file) to the lake, through the stages' batching writer: ingesting a file twice adds
    nothing. A line that is not a verdict, whose verdict_id is not its content hash, or
    whose candidate is not in the lake is refused with its FILE:LINE and not written; the
    rest still go in. Records a `runs` row (flow `ingest`, a generated run id).
    Exit code: 0, 1 if any line was refused, 2 if the lake cannot be used."""
    from lake.ingest import ingest_verdicts
    from lake.store import Lake, LakeError

    if sum(str(f) == "-" for f in files) > 1:
        raise typer.BadParameter("stdin ('-') can be read once", param_hint="FILES")
    for f in files:
        if str(f) != "-" and not f.is_file():
            raise typer.BadParameter(f"no such file: {f}", param_hint="FILES")
    try:
        Lake(lake, readonly=True)  # an existing lake only: never make an empty one here
        result = ingest_verdicts(Lake(lake), files, batch_size=commit_every)
    except LakeError as e:
        typer.echo(f"lake error: {e}", err=True)
        raise typer.Exit(2) from None
    for r in result.refused:
        typer.echo(f"refused {r}", err=True)
    typer.echo(
        f"ingest {result.run_id[:12]}: {result.added} added, {result.present} already "
        f"present, {len(result.refused)} refused ({result.read} lines, "
        f"{result.seconds:.1f}s); lake {lake_text(lake)}"
    )
    if result.refused:
        raise typer.Exit(1)


@app.command("tasks")
def list_tasks(
    tasks: TasksOpt = None,
    domain: ListDomainOpt = None,
) -> None:
    """List (and validate) the task catalog."""
    con = render.console()
    rows, bad = [], []
    check_roots(tasks or [])
    for root in tasks or [DEFAULT_TASKS]:
        loaded, errors = load_catalog(root, [domain] if domain else None)
        rows += [[t.name, t.domain, t.family, t.level, t.split, t.task_id[:12]] for t in loaded]
        bad += errors
    con.print(
        render.rows_table(
            f"{len(rows)} tasks", ["name", "domain", "family", "level", "split", "task_id"], rows
        )
    )
    for e in bad:
        con.print(f"[bold red]refused[/] {e}")
    if bad:
        raise typer.Exit(1)


@app.command("import-verilogeval")
def import_verilogeval(
    src: Annotated[
        Path,
        typer.Argument(
            help="Directory of VerilogEval problems: "
            "<name>_prompt.txt, <name>_ref.sv, <name>_test.sv"
        ),
    ],
    dest: Annotated[
        Path,
        typer.Option(
            help="Catalog root to write into; tasks land in DEST/<domain>/<name>/ (the "
            "importer's domain)"
        ),
    ] = Path("imported"),
    split: Annotated[str, typer.Option(help="train or holdout")] = "holdout",
    source: Annotated[
        str, typer.Option(help="Benchmark name recorded on each task")
    ] = "verilogeval",
    check: Annotated[
        bool,
        typer.Option(
            "--check/--no-check",
            help="Run each problem's reference through its own testbench and the catalog's "
            "checks, with every gate, and skip (with the reason) the ones that fail; "
            "--no-check writes them all unchecked",
        ),
    ] = True,
) -> None:
    """Import a VerilogEval-layout benchmark directory as tasks of the hardware-design
    domain (then run them with `crucible run --tasks DEST`). Each reference's cost per
    gate is measured and stored with its task, and sets that task's budgets."""
    if not src.is_dir():
        raise typer.BadParameter(f"{src} is not a directory", param_hint="SRC")
    _import_one_domain("verilogeval", src, dest, split, source=source, check=check)


def _import_one_domain(benchmark: str, src: Path, dest: Path, split: str, **options) -> None:
    """Run the importer of a benchmark that one domain declares into DEST/<domain>/."""
    do_import, (domain,) = domain_registry.importer(benchmark)
    if split not in ("train", "holdout"):
        raise typer.BadParameter("must be train or holdout", param_hint="--split")
    try:
        imported, errors = do_import(src, dest / domain, split=split, **options), []
    except ImportProblems as e:
        imported, errors = e.imported, e.errors
    _report_import(
        imported,
        errors,
        f"{len(imported)} imported into {dest / domain} ({split}), {len(errors)} skipped; "
        f"run them with: crucible run --tasks {dest} --domain {domain}",
    )


def _report_import(imported: list[Path], errors: list[str], summary: str) -> None:
    con = render.console()
    for path in imported:
        con.print(f"imported {path}")
    for err in errors:
        con.print(f"[bold red]skipped[/] {err}")
    con.print(summary)
    if errors:
        raise typer.Exit(1)


@app.command("import-kernelbench")
def import_kernelbench(
    src: Annotated[
        Path,
        typer.Argument(
            help="Directory of KernelBench-style problem files (Model, get_inputs, "
            "get_init_inputs); level<N>/ subdirectories set the level"
        ),
    ],
    dest: Annotated[
        Path,
        typer.Option(help="Catalog root to write into; tasks land in DEST/<domain>/<name>/"),
    ] = Path("imported"),
    domains: Annotated[
        list[str] | None,
        typer.Option(
            "--domain",
            help="Domain to write each problem for, repeatable (default: every domain the "
            "importer writes)",
        ),
    ] = None,
    split: Annotated[str, typer.Option(help="train or holdout")] = "holdout",
    source: Annotated[str, typer.Option(help="Benchmark name recorded on each task")] = (
        "kernelbench"
    ),
) -> None:
    """Import KernelBench problem files as tasks of the GPU kernel domains (verify
    candidates with `crucible run --tasks DEST --domain <domain>`, on a GPU node)."""
    do_import, known = domain_registry.importer("kernelbench")

    if not src.is_dir():
        raise typer.BadParameter(f"{src} is not a directory", param_hint="SRC")
    if split not in ("train", "holdout"):
        raise typer.BadParameter("must be train or holdout", param_hint="--split")
    wanted = tuple(dict.fromkeys(d.strip() for d in ",".join(domains or known).split(",")))
    bad = [d for d in wanted if d not in known]
    if bad:
        raise typer.BadParameter(
            f"the importer writes {', '.join(known)}, not {', '.join(map(repr, bad))}",
            param_hint="--domain",
        )
    try:
        imported, errors = do_import(src, dest, domains=wanted, split=split, source=source), []
    except ImportProblems as e:
        imported, errors = e.imported, e.errors
    _report_import(
        imported,
        errors,
        f"{len(imported)} task dirs written under {dest} ({split}), {len(errors)} skipped; "
        f"run them with: crucible run --tasks {dest} " + " ".join(f"--domain {d}" for d in wanted),
    )


@app.command("import-supercoder")
def import_supercoder(
    src: Annotated[
        Path,
        typer.Argument(
            help="A SuperCoder-layout dataset: a .parquet/.jsonl/.json file of rows with "
            "extra_info {c_code, inputs, outputs, unoptimized_assembly}, a directory of such "
            "files, or a TopCode/ + TopIO/ directory"
        ),
    ],
    dest: Annotated[
        Path,
        typer.Option(help="Catalog root to write into; tasks land in DEST/<domain>/<name>/"),
    ] = Path("imported"),
    split: Annotated[str, typer.Option(help="train or holdout")] = "holdout",
    source: Annotated[str, typer.Option(help="Benchmark name recorded on each task")] = (
        "supercoder"
    ),
    limit: Annotated[
        int | None, typer.Option(min=1, help="Import at most this many problems")
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check/--no-check",
            help="Build each problem's -O3 baseline and run it on the problem's own tests, "
            "skipping (with the reason) the ones it fails; --no-check writes them all",
        ),
    ] = True,
) -> None:
    """Import SuperCoder-layout problems (a C program, its assembly, tests as stdin and
    expected stdout) as whole-program tasks of the assembly-optimization domain: the
    candidate is the program's assembly, judged on its exact output and its speed."""
    if not src.exists():
        raise typer.BadParameter(f"{src} does not exist", param_hint="SRC")
    _import_one_domain("supercoder", src, dest, split, source=source, check=check, limit=limit)


@app.command()
def show(
    candidate: Annotated[
        str, typer.Argument(help="A candidate_id, or a prefix of one (at least 6 characters).")
    ],
    lake: LakeOpt = DEFAULT_LAKE,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Where to write: a file for one artifact, a directory for several "
            "(default: ./<candidate id[:12]>.<ext> in the current directory).",
        ),
    ] = None,
    kind: Annotated[
        str,
        typer.Option(
            help="Which artifact: picture (the candidate over its reference, with the "
            "verdict in it, where its verifier renders one), any other kind the lake holds "
            "for it, or `all`."
        ),
    ] = "picture",
) -> None:
    """Write a candidate's artifacts out of the lake: by default its picture (PNG, where
    its verifier renders one: the candidate over its reference, with the verdict, its
    measures and a legend drawn in). Exit code 1 when there is nothing to write."""
    from lake import db
    from lake.store import Lake, LakeError

    con = render.console()
    if len(candidate) < 6 or any(ch not in "0123456789abcdef" for ch in candidate.lower()):
        raise typer.BadParameter(
            "expected a hex candidate_id or a prefix of at least 6 characters",
            param_hint="CANDIDATE",
        )
    try:
        store = Lake(lake, readonly=True)
        duck = db.connect(store)
    except LakeError as e:
        con.print(f"[bold red]lake error:[/] {e}")
        raise typer.Exit(2) from None
    try:
        rows = db.rows(duck, "candidate_artifacts", prefix=candidate.lower())
    finally:
        duck.close()
    ids = sorted({r["candidate_id"] for r in rows})
    if not ids:
        con.print(f"no candidate {candidate!r} in lake {lake_text(lake)}")
        raise typer.Exit(1)
    if len(ids) > 1:
        raise typer.BadParameter(
            f"{candidate!r} matches {len(ids)} candidates: {', '.join(i[:16] for i in ids[:5])}",
            param_hint="CANDIDATE",
        )
    head = rows[0]
    status = head["status"] or "not verified yet"
    con.print(f"{ids[0][:16]} · {head['task']} ({head['domain']}) · {status} {head['code'] or ''}")
    found = [r for r in rows if r["kind"] and (kind == "all" or r["kind"] == kind)]
    if not found:
        have = sorted({r["kind"] for r in rows if r["kind"]})
        con.print(
            f"its latest verdict has no {kind!r} artifact"
            + (f" (it has: {', '.join(have)})" if have else "")
        )
        raise typer.Exit(1)
    for r in found:
        dest = _show_dest(out, r, ids[0], several=len(found) > 1)
        try:
            data = store.read_artifact(r["sha256"])
        except LakeError as e:
            con.print(f"[bold red]lake error:[/] {e}")
            raise typer.Exit(2) from None
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        con.print(f"wrote {r['kind']} ({len(data):,} bytes) to {dest}")


def _show_dest(out: Path | None, row: dict, cand_id: str, several: bool) -> Path:
    ext = Path(row["name"]).suffix or ".bin"
    default = f"{cand_id[:12]}-{Path(row['name']).stem}{ext}" if several else f"{cand_id[:12]}{ext}"
    if out is None:
        return Path(default)
    if several or out.is_dir():
        return out / default
    return out


@app.command()
def sql(
    query: Annotated[
        str | None,
        typer.Argument(
            help="A shipped query's name (a single word: pass_rates, error_taxonomy, ...), "
            "a .sql file, or SQL text. Left out: an interactive shell on the lake.",
            show_default=False,
        ),
    ] = None,
    lake: LakeOpt = DEFAULT_LAKE,
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param",
            "-p",
            metavar="NAME=VALUE",
            help="Bind the query's $NAME (repeatable). A VALUE that parses as JSON is that "
            '(3, true, null, \'["a","b"]\'), anything else a string (\'"123"\' for digits).',
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Rows as JSON lines.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Rows as CSV with a header.")] = False,
    wide: Annotated[
        bool,
        typer.Option("--wide", help="Show whole cells in the table (default: cut at 60)."),
    ] = False,
) -> None:
    """Query the lake with DuckDB: every table is a view (tasks, candidates, verdicts,
    artifacts, trajectories, dedup, exports, runs; raw_<table> without the dedupe), with
    the views of sql/views (latest_verdicts, checks, metrics, ...; docs/lake.md). With no
    QUERY, a shell: statements end with `;`, `.tables`, `.queries`, `.quit` or Ctrl-D; it
    reads statements from stdin when stdin is not a terminal.

    Output columns are unique in every format: a repeated name gets DuckDB's suffix
    (`SELECT 1 AS a, 2 AS a` shows a, a_1). The table rounds floats to 3 decimals and
    cuts long cells (--wide, --json or --csv show them whole). The lake is opened
    read-only: a path that is not a lake is refused, never created."""
    import duckdb

    from lake import db
    from lake.store import LakeError

    con = render.console()
    if as_json and as_csv:
        raise UserError("pick one of --json and --csv")
    fmt = "json" if as_json else "csv" if as_csv else "table"
    try:  # the query and its parameters are checked before the lake is opened
        params = db.parse_params(param or [])
        text, what = _sql_query_text(query, db) if query is not None else ("", "")
        if query is not None:
            db.check_params(text, params, what)
        elif params:
            raise LakeError("--param needs a QUERY (in the shell, write values in the SQL)")
    except LakeError as e:
        _say_error(str(e))
        raise typer.Exit(2) from None
    try:
        duck = db.connect(require_lake(lake))
    except (LakeError, UserError) as e:
        _say_error(str(e), "lake error:")
        raise typer.Exit(2) from None
    try:
        if query is None:
            failed = _sql_shell(duck, con, Path(lake), fmt, wide)
            if failed:
                raise typer.Exit(1)
            return
        try:
            table = db.arrow(duck.execute(text, params) if params else duck.execute(text))
        except duckdb.Error as e:
            _say_error(str(e), "query failed:")
            raise typer.Exit(1) from None
        _sql_print(con, table, fmt, wide)
    finally:
        duck.close()


def _sql_query_text(query: str, db) -> tuple[str, str]:
    """The SQL a QUERY argument stands for, and what to call it in messages. One word is a
    shipped query's name; a path ending in .sql is a file; anything else is SQL text."""
    from lake.store import LakeError

    if db.is_query_name(query):
        name = query.strip()
        if name not in db.available_sql():
            from lake.schema import TABLES

            hint = f" (a table: crucible sql 'SELECT * FROM {name}')" if name in TABLES else ""
            raise LakeError(db.unknown_query(name) + hint)
        return db.sql_text(name), f"query {name!r}"
    if query.strip().endswith(".sql") and "\n" not in query:
        path = Path(query.strip())
        if not path.is_file():
            raise LakeError(f"no file {path} (a shipped query is named without .sql)")
        return path.read_text(), str(path)
    return query, "the query"


def _sql_print(con, table, fmt: str, wide: bool) -> None:
    """One result in the chosen format; `table`'s column names are unique already."""
    import csv

    names = table.column_names
    records = [list(r) for r in zip(*(c.to_pylist() for c in table.columns), strict=True)]
    if fmt == "json":
        for r in records:
            row = dict(zip(names, r, strict=True))
            typer.echo(json.dumps(row, default=str, ensure_ascii=False))
    elif fmt == "csv":
        out = csv.writer(sys.stdout, lineterminator="\n")
        out.writerow(names)
        for r in records:
            out.writerow([_csv_value(x) for x in r])
    else:
        title = f"{table.num_rows} row{'s' if table.num_rows != 1 else ''}"
        con.print(
            render.rows_table(
                title,
                names,
                records,
                max_cell=None if wide else render.MAX_CELL,
                cut_note="--wide, --json or --csv shows them whole",
            )
        )


def _csv_value(x):
    """As DuckDB's own CSV writer: true/false, nested values as JSON, null as empty."""
    if isinstance(x, bool):
        return str(x).lower()
    return render.compact_json(x) if isinstance(x, dict | list) else x


def _sql_shell(duck, con, lake: Path, fmt: str, wide: bool) -> int:
    """A read-eval-print loop over one lake connection; returns how many statements failed.

    A statement runs once a line ends with `;`; a line starting with `.` is a command.
    Without a terminal on stdin there is no prompt and no banner: statements are read
    from stdin (a script, a pipe), and what is left at its end without `;` runs too."""
    import duckdb
    from rich.markup import escape

    from lake import db

    interactive = sys.stdin.isatty()
    if interactive:
        import contextlib

        with contextlib.suppress(ImportError):
            import readline  # noqa: F401  (line editing and history for input())
        con.print(
            f"DuckDB on lake {escape(lake_text(lake))}: every table and view is ready. End a "
            "statement with `;`; `.tables`, `.queries`, `.help`, `.quit` or Ctrl-D."
        )
    failed = 0
    buf: list[str] = []

    def run(text: str) -> None:
        nonlocal failed
        try:
            statements = duck.extract_statements(text)
            for st in statements:
                table = db.arrow(duck.execute(st.query))
                if st is statements[-1] or table.num_rows:
                    _sql_print(con, table, fmt, wide)
        except duckdb.Error as e:
            failed += 1
            con.print(f"[bold red]query failed:[/] {escape(str(e))}")

    while True:
        try:
            line = input(("crucible> " if not buf else "     ...> ") if interactive else "")
        except EOFError:
            if interactive:
                con.print()
            break
        except KeyboardInterrupt:  # drop the statement being typed, as DuckDB's shell does
            buf.clear()
            con.print()
            continue
        if not buf and line.strip().startswith("."):
            word = line.strip().split()[0]
            if word in (".quit", ".exit"):
                break
            if word == ".tables":
                names = [r[0] for r in duck.execute("SHOW TABLES").fetchall()]
                con.print(escape(" ".join(names)))
            elif word == ".queries":
                for name in db.available_sql():
                    takes = db.sql_params(db.sql_text(name))
                    con.print(name + "".join(f" ${p}" for p in takes))
            elif word == ".help":
                con.print(
                    "SQL ends with `;` (DuckDB's dialect). .tables: the tables and views; "
                    ".queries: the shipped queries and their $parameters (run one with "
                    "`crucible sql NAME --param k=v`); .quit or Ctrl-D: leave."
                )
            else:
                failed += 0 if interactive else 1
                con.print(f"[bold red]unknown command[/] {escape(word)}: .tables .queries .quit")
            continue
        buf.append(line)
        if line.rstrip().endswith(";"):
            run("\n".join(buf))
            buf.clear()
    if "\n".join(buf).strip():
        run("\n".join(buf))
    return 0 if interactive else failed


if __name__ == "__main__":
    app()
