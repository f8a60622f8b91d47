"""The task catalog: list it, verify one file against one task."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from flows import render
from flows.cli.base import (
    ListDomainOpt,
    SettingsOpt,
    app,
    parse_gates,
)
from flows.options import (
    DEFAULT_TASKS,
    FastOpt,
    GatesOpt,
    SimOnlyOpt,
    TasksOpt,
    UnconfinedOpt,
    check_roots,
    limits_for,
    parse_settings,
)
from verifiers.catalog import TaskSpecError, load_catalog
from verifiers.contract import Status, Task

if TYPE_CHECKING:
    pass


@app.command(
    "tasks",
    short_help="List and validate the task catalog.",
    rich_help_panel="Tasks",
)
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


@app.command(
    short_help="Verify one file against one task.",
    rich_help_panel="Tasks",
)
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
        t.domain, fast=fast or sim_only, unconfined=unconfined, gates=parse_gates(gates, t.domain)
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
