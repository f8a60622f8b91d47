"""`crucible reward-server`: the verifiers as an authenticated HTTP reward for RL loops
(`flows.service`), every verdict and reward landing in the lake."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Annotated

import typer

from flows import render
from flows.cli.base import DEFAULT_DOMAINS, app, say_error
from flows.options import (
    DEFAULT_LAKE,
    DomainOpt,
    FastOpt,
    NewLakeOpt,
    TasksOpt,
    UnconfinedOpt,
    UserError,
    _json_arg,
    limits_for,
    open_lake,
    parse_verifier_settings,
    require_lake,
)

TOKEN_ENV = "CRUCIBLE_REWARD_TOKEN"
DEFAULT_TOKEN_FILE = Path("~/.crucible/reward-token")
LOOPBACK = ("127.0.0.1", "::1", "localhost")


@app.command(
    "reward-server",
    short_help="Serve the verifiers as an RL reward over HTTP.",
    rich_help_panel="Run",
    needs=("lake", "pipeline"),
)
def reward_server(
    lake: NewLakeOpt = DEFAULT_LAKE,
    tasks: TasksOpt = None,
    tasks_from_lake: Annotated[
        bool,
        typer.Option(
            "--tasks-from-lake",
            help="Verify against the lake's tasks (imported benchmarks included) instead of "
            "a catalog.",
        ),
    ] = False,
    domain: DomainOpt = None,
    host: Annotated[
        str,
        typer.Option(
            help="Interface to listen on (loopback by default; anything else exposes "
            "candidate execution to that network)."
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8321,
    token_file: Annotated[
        Path,
        typer.Option(
            "--token-file",
            help=f"Where the bearer token is read from (if the file exists) or written to "
            f"(mode 0600) when one is generated. Env {TOKEN_ENV} gives it instead.",
        ),
    ] = DEFAULT_TOKEN_FILE,
    reward: Annotated[
        str | None,
        typer.Option(
            help='Reward rule as JSON or a .json file, e.g. {"passed": 1, "slow": 0.5, '
            '"stage_credit": {"build": 0.1}, "speedup_weight": 0.5}; recorded with every '
            "reward (verifiers/reward.py lists the fields)."
        ),
    ] = None,
    verifier_settings: Annotated[
        str | None,
        typer.Option(
            "--verifier-settings", help='Verifier settings per domain: {"<domain>": {...}}.'
        ),
    ] = None,
    fast: FastOpt = False,
    unconfined: UnconfinedOpt = False,
    infra_retries: Annotated[
        int, typer.Option(metavar="N", help="Times an infra_error is verified again.")
    ] = 1,
    max_items: Annotated[
        int, typer.Option(metavar="N", help="Candidates per request at most (413).")
    ] = 256,
    max_body_mb: Annotated[
        float, typer.Option(metavar="MIB", help="Request body size limit (413).")
    ] = 16.0,
    max_code_kb: Annotated[
        float, typer.Option(metavar="KIB", help="One code or completion's size limit (413).")
    ] = 256.0,
    max_inflight: Annotated[
        int,
        typer.Option(
            metavar="N", help="Candidates in flight over all clients; more is 429 + Retry-After."
        ),
    ] = 2048,
    client_concurrency: Annotated[
        int,
        typer.Option(
            metavar="N",
            help="Requests in flight per client (X-Crucible-Client or address); more is 429.",
        ),
    ] = 64,
    request_timeout: Annotated[
        float,
        typer.Option(
            metavar="SECONDS",
            help="A request unanswered after this is 504 (its work goes on).",
        ),
    ] = 600.0,
) -> None:
    """Serve Crucible's verifiers as a reward for RL loops: POST /v1/verify judges a
    batch of (task, code or model answer) and answers each candidate's verdict and reward,
    GET /v1/tasks lists the tasks, GET /v1/health says it is up. Every request needs the
    bearer token (generated at start unless given, written to --token-file, never logged).
    Candidates this verifier version already judged are answered from the lake; every new
    verdict and every reward lands in the lake with the request's rl_run/step tags (query
    them: crucible sql --lake LAKE "select * from rewards"). Ctrl-C stops it, after the
    verifications under way are recorded."""
    from flows.rewards import Rewarder, RewardError, Tasks
    from flows.service import ServiceSettings, create_app
    from lake.lock import LakeBusy
    from verifiers.reward import RewardConfig, RewardConfigError

    for name, value in (("--max-items", max_items), ("--max-body-mb", max_body_mb),
                        ("--max-code-kb", max_code_kb), ("--max-inflight", max_inflight),
                        ("--client-concurrency", client_concurrency),
                        ("--request-timeout", request_timeout)):  # fmt: skip
        if not value > 0:
            raise typer.BadParameter(f"must be above 0, not {value}", param_hint=name)
    if infra_retries < 0:
        raise typer.BadParameter("must be 0 or more", param_hint="--infra-retries")
    domains = list(domain or DEFAULT_DOMAINS)
    try:
        config = RewardConfig.from_dict(_json_arg(reward, "--reward") if reward else None)
    except RewardConfigError as e:
        raise typer.BadParameter(str(e), param_hint="--reward") from None
    settings = parse_verifier_settings(verifier_settings)
    con = render.console()
    try:
        if tasks_from_lake:
            if tasks:
                raise typer.BadParameter("give --tasks or --tasks-from-lake, not both")
            chosen = Tasks.from_lake(require_lake(lake))
        elif tasks and len(tasks) > 1:
            raise typer.BadParameter("one --tasks root or task directory", param_hint="--tasks")
        elif tasks:
            chosen = Tasks.directory(tasks[0])
        else:
            chosen = Tasks.catalog(domains=domains)
    except RewardError as e:
        raise UserError(str(e)) from None
    if domains:
        chosen = Tasks([t for t in chosen if t.domain in domains], chosen.where)
        if not len(chosen):
            raise UserError(f"no task of {', '.join(domains)} in {chosen.where}")
    token = _token(token_file)
    limits = {
        d: limits_for(d, fast=fast, unconfined=unconfined) for d in {t.domain for t in chosen}
    }
    try:
        service = ServiceSettings(
            token=token,
            max_body_bytes=int(max_body_mb * 1024 * 1024),
            max_items=max_items,
            max_code_bytes=int(max_code_kb * 1024),
            max_inflight_items=max_inflight,
            client_concurrency=client_concurrency,
            request_timeout_s=request_timeout,
        )
    except ValueError as e:
        raise UserError(str(e)) from None
    if host not in LOOPBACK:
        say_error(
            f"listening on {host}: anyone there who has the token runs code in the sandbox",
            "warning:",
        )
    try:
        rewarder = Rewarder(
            chosen,
            lake=open_lake(lake),
            reward=config,
            limits=limits,
            settings=settings,
            infra_retries=infra_retries,
            command="reward-server",
        )
    except LakeBusy as e:
        say_error(str(e), "lake error:")
        raise typer.Exit(2) from None
    url = f"http://{host if ':' not in host else f'[{host}]'}:{port}"
    shown = "$" + TOKEN_ENV if os.environ.get(TOKEN_ENV) else f"$(cat {token_file})"
    con.print(
        f"reward service on {url} ({len(chosen)} tasks from {chosen.where}; lake {lake}; "
        f"run {rewarder.run_id[:12]})\n"
        f'try: curl -s -H "Authorization: Bearer {shown}" {url}/v1/tasks',
        highlight=False,
        soft_wrap=True,
    )
    try:
        # connections past the in-flight limit (idle or slow senders) get 503, not a thread
        _serve(create_app(rewarder, service), host, port, max_inflight + 64)
    finally:
        rewarder.close()
        con.print(f"stopped; counts: {dict(sorted(rewarder.counts.items()))}", highlight=False)


class _Stopped(Exception):
    pass


def _serve(app, host: str, port: int, connections: int) -> None:
    """Serve until Ctrl-C or SIGTERM. uvicorn shuts down gracefully, then raises the signal
    again for the handler it found: ours ends `serve` with an exception, so the caller's
    `finally` records the run instead of the process dying on the default handler."""
    import signal

    import uvicorn

    def stop(signum: int, _frame: object) -> None:
        raise _Stopped(signum)

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        limit_concurrency=connections,
    )
    server = uvicorn.Server(config)
    before = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run()
    except _Stopped:
        pass
    except SystemExit as e:  # uvicorn exits when it cannot bind
        raise UserError(f"cannot listen on {host}:{port} (in use, or not this machine's)") from e
    finally:
        for s, h in before.items():
            signal.signal(s, h)


def _token(token_file: Path) -> str:
    """The token: the environment's, the file's, or a new one written to the file (0600)."""
    given = os.environ.get(TOKEN_ENV, "").strip()
    if given:
        if len(given) < 16:
            raise UserError(f"{TOKEN_ENV} is shorter than 16 characters: use a longer token")
        return given
    path = token_file.expanduser()
    if path.exists():
        text = path.read_text().strip()
        if len(text) < 16:
            raise UserError(
                f"token file {path} holds under 16 characters: delete it to get a new one"
            )
        return text
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token
