"""Prefect's server on PostgreSQL, as a user runs it: a real PostgreSQL (Debian's
`postgresql`, initdb into a temp dir, run as the unprivileged `postgres` user when we are
root), `crucible server --database postgresql://...` on it, `crucible serve` with a cron
schedule against that server, and a SCHEDULED flow run of the pipeline seen COMPLETED
through Prefect's client; then the same run read straight out of PostgreSQL's `flow_run`
table, and out of the lake. A database that is down, refuses the user or is missing, and
a scheme Prefect cannot use, are each refused in one line before Prefect starts."""

from __future__ import annotations

import asyncio
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.flows.lakeq import q

ROOT = Path(__file__).resolve().parents[2]
CRUCIBLE = [sys.executable, "-m", "flows.cli"]
TASK = "mux4"
PASSWORD = "s3cret-Pw"  # must never be printed
_BINS = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
PG_BIN = Path(_BINS[-1]).parent if _BINS else None

pytestmark = pytest.mark.skipif(
    PG_BIN is None,
    reason="needs PostgreSQL's server binaries (infra/install-toolchains.sh postgres)",
)
runner = CliRunner()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen | None, sig: int = signal.SIGTERM, wait_s: float = 60) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@pytest.fixture(scope="module")
def postgres() -> Iterator[dict]:
    """A PostgreSQL server of its own: data, socket and log in one temp dir owned by the
    user it runs as (initdb and postgres refuse root), listening on 127.0.0.1 only, on a
    free port; a `crucible` login with a password owning the database `prefect`."""
    as_root = os.geteuid() == 0
    ids: dict = {}
    if as_root:
        pw = pwd.getpwnam("postgres")  # made by Debian's postgresql package
        ids = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
    # not pytest's tmp_path: its parents are closed to other users
    top = Path(tempfile.mkdtemp(prefix="crucible-pg-", dir="/tmp"))
    if as_root:
        os.chown(top, ids["user"], ids["group"])
    data, sock, port = top / "data", top / "sock", _free_port()
    run_as = {"cwd": top, "check": True, "capture_output": True, "text": True, **ids}
    log = top / "postgres.log"
    proc = None
    try:
        subprocess.run(["mkdir", str(sock)], **run_as)
        initdb = f"-D {data} -U postgres --auth-local=trust --auth-host=scram-sha-256"
        subprocess.run([PG_BIN / "initdb", *initdb.split(), "--no-sync", "-E", "UTF8"], **run_as)
        # durability off: a throwaway cluster, and the machine is shared and slow
        flags = (
            f"-D {data} -p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off"
        )
        with open(log, "w") as f:
            proc = subprocess.Popen(
                [PG_BIN / "postgres", *flags.split()], cwd=top, stdout=f, stderr=f, **ids
            )
        ready = [PG_BIN / "pg_isready", "-q", "-h", sock, "-p", str(port)]
        for _ in range(240):
            if subprocess.run(ready, **{**run_as, "check": False}).returncode == 0:
                break
            assert proc.poll() is None, log.read_text()[-2000:]
            time.sleep(0.25)
        else:
            pytest.fail("PostgreSQL did not start: " + log.read_text()[-2000:])
        psql = [PG_BIN / "psql", *f"-h {sock} -p {port} -U postgres -d postgres".split()]
        psql += ["-v", "ON_ERROR_STOP=1"]
        create = [
            "-c",
            f"CREATE ROLE crucible LOGIN PASSWORD '{PASSWORD}'",
            "-c",
            "CREATE DATABASE prefect OWNER crucible",
        ]
        subprocess.run([*psql, *create], **run_as)
        yield {
            "port": port,
            "url": f"postgresql://crucible:{PASSWORD}@127.0.0.1:{port}/prefect",
            "psql": psql,
            "run_as": run_as,
        }
    finally:
        _stop(proc, signal.SIGINT)  # a fast shutdown
        shutil.rmtree(top, ignore_errors=True)


def _sql(postgres: dict, query: str, *args):
    """Rows straight from PostgreSQL, as the `crucible` user over TCP."""
    import asyncpg

    async def go():
        conn = await asyncpg.connect(postgres["url"], timeout=30)
        try:
            return await conn.fetch(query, *args)
        finally:
            await conn.close()

    return asyncio.run(go())


def _spawn(args: list[str], out: Path, env: dict) -> subprocess.Popen:
    with open(out, "w") as f:
        return subprocess.Popen(args, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT)


def _wait_for(path: Path, text: str, proc: subprocess.Popen, timeout_s: float = 240) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        out = path.read_text()
        if text in out:
            return out
        assert proc.poll() is None, f"exited {proc.returncode} before {text!r}:\n{out[-3000:]}"
        time.sleep(0.5)
    pytest.fail(f"no {text!r} within {timeout_s} s:\n{path.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def served(postgres, tmp_path_factory) -> Iterator[dict]:
    """`crucible server --database <postgres>` on a free port, and `crucible serve`
    against it with a cron schedule of every minute (cron's shortest), on one rtl task."""
    tmp = tmp_path_factory.mktemp("pgserve")
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {
        **os.environ,
        "PREFECT_HOME": str(tmp / "prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    for k in (
        "PREFECT_API_URL",
        "PREFECT_UI_API_URL",
        "PREFECT_API_DATABASE_CONNECTION_URL",
        "PREFECT_SERVER_DATABASE_CONNECTION_URL",
    ):
        env.pop(k, None)
    shutil.copytree(ROOT / "tasks" / "rtl" / TASK, tmp / "catalog" / "rtl" / TASK)
    server = serve = None
    try:
        server = _spawn(
            [*CRUCIBLE, "server", "--port", str(port), "--database", postgres["url"]],
            tmp / "server.log",
            env,
        )
        printed = _wait_for(tmp / "server.log", "Prefect UI:", server)
        serve = _spawn(
            [
                *CRUCIBLE,
                *["serve", "--cron", "* * * * *", "--name", "pg-minutely"],
                *["--tasks", str(tmp / "catalog"), "--lake", str(tmp / "lake")],
                *f"--domain rtl --task {TASK} --stages generate,verify --fast".split(),
                *["--candidates-per-task", "1"],
            ],
            tmp / "serve.log",
            {**env, "PREFECT_API_URL": api},
        )
        yield {"api": api, "tmp": tmp, "printed": printed, "serve": serve, "server": server}
    finally:
        _stop(serve)  # its reaper takes the runner's flow-run processes with it
        _stop(server)  # and this one's the Prefect server, a moment later:
        _wait_closed(port)  # gone before PostgreSQL is stopped under it


def _wait_closed(port: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) != 0:
                return
        time.sleep(0.25)


def _scheduled_run_completed(served: dict, timeout_s: float = 480):
    """The first flow run of the `pg-minutely` deployment that the schedule made, once it
    is COMPLETED (the test fails at once if it ends otherwise), with its state history."""
    from prefect.client.orchestration import PrefectClient
    from prefect.exceptions import ObjectNotFound

    async def poll():
        async with PrefectClient(served["api"]) as client:
            deadline, runs = time.monotonic() + timeout_s, []
            while time.monotonic() < deadline:
                try:  # made by `crucible serve` once it has started
                    dep = await client.read_deployment_by_name("pipeline/pg-minutely")
                except ObjectNotFound:
                    dep = None
                runs = [
                    r for r in await client.read_flow_runs() if dep and r.deployment_id == dep.id
                ]
                for run in runs:
                    if run.state is not None and run.state.is_final():
                        states = await client.read_flow_run_states(run.id)
                        return run, states
                assert served["serve"].poll() is None, (served["tmp"] / "serve.log").read_text()
                await asyncio.sleep(2)
            log = (served["tmp"] / "serve.log").read_text()[-3000:]
            pytest.fail(f"no scheduled run finished in {timeout_s} s; runs {runs}\n{log}")

    return asyncio.run(poll())


def test_a_scheduled_pipeline_run_completes_on_a_postgres_backed_server(served, postgres):
    """Over 30 s: a PostgreSQL cluster, `crucible server` on it, and a deployment's
    scheduled run picked up by its worker and carried out whole."""
    printed = served["printed"]
    assert PASSWORD not in printed, printed
    assert f"database: postgresql+asyncpg://crucible:***@127.0.0.1:{postgres['port']}" in printed

    run, states = _scheduled_run_completed(served)
    log = (served["tmp"] / "serve.log").read_text()[-3000:]
    assert run.state.type.value == "COMPLETED", (run.state, log)
    # made by the server's scheduler from the cron, not started by hand
    assert run.auto_scheduled and states[0].type.value == "SCHEDULED", states
    assert [s.type.value for s in states][-3:] == ["PENDING", "RUNNING", "COMPLETED"]
    assert run.expected_start_time.second == 0  # on a minute of the cron line

    # the same run, read from PostgreSQL's own tables (not a SQLite file under PREFECT_HOME)
    rows = _sql(
        postgres,
        "SELECT fr.state_type::text, fr.auto_scheduled, d.name FROM flow_run fr "
        "JOIN deployment d ON d.id = fr.deployment_id WHERE fr.id = $1",
        run.id,
    )
    assert [tuple(r) for r in rows] == [("COMPLETED", True, "pg-minutely")]
    kinds = _sql(postgres, "SELECT type::text FROM flow_run_state WHERE flow_run_id = $1", run.id)
    assert {"SCHEDULED", "RUNNING", "COMPLETED"} <= {r[0] for r in kinds}
    assert not list((served["tmp"] / "prefect").rglob("*.db")), "a SQLite database was made"

    # and it did the pipeline's work: the lake records this flow run as its run
    lake = served["tmp"] / "lake"
    recorded = q(lake, f"SELECT flow, status FROM runs WHERE run_id = '{run.id}'")
    assert recorded == [("pipeline", "completed")]
    (verdicts,) = q(lake, "SELECT count(*) FROM verdicts")[0]
    assert verdicts > 0


def test_a_wrong_password_or_a_missing_database_is_refused_in_one_line(postgres):
    port = postgres["port"]
    cases = [
        (f"postgresql://crucible:wrong@127.0.0.1:{port}/prefect", "refused user 'crucible'"),
        (f"postgresql://crucible:{PASSWORD}@127.0.0.1:{port}/nodb", "database 'nodb' does not"),
    ]
    for url, said in cases:
        res = runner.invoke(app, ["server", "--database", url, "--port", str(_free_port())])
        assert res.exit_code == 2, res.output
        assert said in res.output and "Traceback" not in res.output, res.output
        assert PASSWORD not in res.output and ":wrong@" not in res.output


def test_an_unreachable_database_is_refused_before_prefect_starts(tmp_path):
    down = _free_port()  # nothing listens there
    url = f"postgresql://crucible:{PASSWORD}@127.0.0.1:{down}/prefect"
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect")}
    p = subprocess.run(
        [*CRUCIBLE, "server", "--database", url, "--port", str(_free_port())],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = p.stdout + p.stderr
    assert p.returncode == 2, out
    assert f"cannot reach PostgreSQL at 127.0.0.1:{down}" in out
    assert "start PostgreSQL there or fix the host and port" in out
    assert PASSWORD not in out and "Traceback" not in out and "starting Prefect" not in out
    assert not (tmp_path / "prefect").exists()  # Prefect never ran


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("mysql://u:p@127.0.0.1/db", "unsupported scheme 'mysql'"),
        ("postgresql+psycopg2://u:p@127.0.0.1/db", "unsupported scheme 'postgresql+psycopg2'"),
        ("not a url", "not a database URL"),
        ("postgresql://u:p@127.0.0.1", "names no host or no database"),
    ],
)
def test_a_url_prefect_cannot_use_is_refused(url, said):
    res = runner.invoke(app, ["server", "--database", url])
    assert res.exit_code == 2, res.output
    assert said in res.output and ":p@" not in res.output, res.output


def test_postgresql_urls_are_given_the_async_driver():
    from flows.database import parse_database

    db = parse_database("postgresql://u:p%40ss@db.example:5433/prefect")
    assert db.url == "postgresql+asyncpg://u:p%40ss@db.example:5433/prefect"
    assert db.shown == "postgresql+asyncpg://u:***@db.example:5433/prefect"
    assert parse_database("sqlite:////tmp/x.db").url == "sqlite+aiosqlite:////tmp/x.db"
    same = "postgresql+asyncpg://u@h/d"
    assert parse_database(same).url == same


def test_help_explains_the_database_option():
    res = runner.invoke(app, ["server", "--help"])
    assert res.exit_code == 0
    text = " ".join(res.output.split())
    assert "--database" in text and "postgresql://USER:PASSWORD@HOST:5432/DB" in text
