"""`crucible server`: the Prefect server and UI."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from flows import render
from flows.cli.base import (
    app,
)

if TYPE_CHECKING:
    pass


@app.command(
    short_help="Start the Prefect server and its UI.",
    rich_help_panel="Run",
    needs=("pipeline",),
)
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
    Crucible: export PREFECT_API_URL=http://HOST:PORT/api (nothing is saved in your
    Prefect profile: the URL lives as long as the export does), and open http://HOST:PORT to
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
        # In a terminal, `prefect server start` asks whether to save PREFECT_API_URL in
        # the user's Prefect profile and waits for the answer (seen: the start hung on
        # the question). Saved, that URL outlives the server, and every later run
        # reported to a dead API. No question: the settings go to the server alone.
        "PREFECT_CLI_PROMPT": "false",
    }
    if db is not None:  # in the environment, not on a command line others can read
        env.pop("PREFECT_API_DATABASE_CONNECTION_URL", None)  # an alias: one name only
        env["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = db.url
    cmd = [exe, "--no-prompt", "server", "start", "--host", host, "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL)
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
