"""A verifier worker that dies mid-verify: Ray restarts it and retries its batches, the run
counts the restart (and on which resource), the summary says so, and Ray's own raw
`(raylet)` lines (ANSI-coloured) never reach the console: they become plain log records."""

from __future__ import annotations

import io
import logging
import os
import shutil
import signal
import time
from pathlib import Path

from rich.console import Console

from flows import stages
from flows.cli.run import _print_result
from flows.stages import PipelineSettings, Reporter, reporting
from ray_actors import cluster
from ray_actors.verify import PoolSettings, VerifierWorker
from verifiers.registry import get_verifier

ROOT = Path(__file__).resolve().parents[2]
TASK = "mux4"


class KillOneWorker(Reporter):
    """After the first batch of verdicts, SIGKILLs the process of one live verifier
    actor (as the kernel's OOM killer would): its queued batches are still to come."""

    def __init__(self) -> None:
        self.killed: int | None = None

    def advance(self, n: int = 1) -> None:
        if self.killed is not None:
            return
        from ray._private import state

        job = __import__("ray").get_runtime_context().get_job_id()
        alive = [
            a
            for a in state.actors().values()
            if a["ActorClassName"] == VerifierWorker.__name__
            and a["JobID"] == job
            and a["State"] == "ALIVE"
        ]
        assert alive, "no live verifier actor"
        self.killed = alive[0]["Pid"]
        os.kill(self.killed, signal.SIGKILL)


def test_a_worker_killed_mid_verify_is_counted_and_ray_says_so_in_plain_logs(
    tmp_path, local_ray, capfd, caplog
):
    caplog.set_level(logging.INFO, logger="ray_actors")
    shutil.copytree(ROOT / "tasks" / "rtl" / TASK, tmp_path / "catalog" / "rtl" / TASK)
    settings = PipelineSettings(
        lake=tmp_path / "lake",
        task_roots=(tmp_path / "catalog",),
        domains=("rtl",),
        pool=PoolSettings(workers=1, batch_size=1),
    )
    with stages.stage_context(settings, "run-with-a-death") as ctx:
        stages.ingest(ctx)
        stages.generate(ctx)
        killer = KillOneWorker()
        with reporting(killer):
            stages.verify(ctx)
        c = dict(ctx.counts)
        reports = stages.report(ctx.con)
        statuses = ctx.con.execute("SELECT status FROM verdicts").fetchall()
        unjudged = ctx.con.execute(
            "SELECT count(*) FROM candidates WHERE candidate_id NOT IN "
            "(SELECT candidate_id FROM verdicts)"
        ).fetchone()[0]
    assert killer.killed
    # every candidate still got its verdict, none of them an infra_error of the kill
    assert c["verified"] > 1 and unjudged == 0
    assert ("infra_error",) not in statuses
    resource = get_verifier("rtl").resource
    assert c["worker_restarts"] >= 1
    assert c["worker_restarts_by_resource"] == {resource: c["worker_restarts"]}

    # Ray pushes its raylet's account of the death to the driver a moment later
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _raylet_records(caplog):
        time.sleep(0.2)
    records = _raylet_records(caplog)
    assert records, [r.getMessage() for r in caplog.records][-10:]
    assert all("\x1b[" not in r.getMessage() for r in records)
    out, err = capfd.readouterr()
    assert "(raylet)" not in out + err and "\x1b[33m" not in out + err, (out + err)[-2000:]

    con = Console(file=io.StringIO(), width=200, record=True)
    result = {"run_id": "run-with-a-death", "refused": [], "counts": c, "seconds": 1.0}
    _print_result(con, {**result, **reports}, settings.lake)
    text = con.export_text()
    assert f"{c['worker_restarts']} verifier worker(s) died and were restarted" in text
    assert f"on `{resource}`" in text


def _raylet_records(caplog) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name == cluster.log.name and r.getMessage().startswith("ray raylet:")
    ]
