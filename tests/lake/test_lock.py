"""The lake's run lock (`lake.lock`): one writing command at a time per lake, readers never
blocked, and a holder that dies (a SIGKILL included) keeps nothing."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lake import db
from lake.lock import LakeBusy, hold, holder_of
from lake.maintenance import repair
from lake.store import Lake
from lake.writer import BatchWriter
from tests.lake.conftest import make_task

ROOT = Path(__file__).resolve().parents[2]

HOLDER = """
import sys
from lake.lock import hold
with hold(sys.argv[1], "crucible run", "run-held-elsewhere"):
    print("held", flush=True)
    sys.stdin.read()  # until the test closes it, or kills this process
"""


@contextmanager
def held_elsewhere(root: Path) -> Iterator[subprocess.Popen]:
    """Another process holding the lake's lock until the block ends (or it is killed)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        if proc.poll() is None:
            proc.stdin.close()
        proc.wait(30)


def test_a_second_writer_is_refused_naming_the_holder_and_readers_are_not(lake: Lake):
    from flows.stages import PipelineSettings, stage_context
    from lake.ingest import ingest_verdicts

    with BatchWriter(lake) as w:
        w.add_task(make_task("adder"))
    with held_elsewhere(lake.root) as proc:
        settings = PipelineSettings(lake=lake.root)
        with pytest.raises(LakeBusy) as busy, stage_context(settings, "second-run"):
            pytest.fail("a second run got the lake")
        text = str(busy.value)
        assert f"lake {lake.root} is in use by crucible run (run run-held-elsewhere, " in text
        assert f"pid {proc.pid} on {socket.gethostname()}, since " in text
        with pytest.raises(LakeBusy):
            ingest_verdicts(lake, [])
        with pytest.raises(LakeBusy):
            repair(Lake(lake.root, check_files=False))
        assert repair(Lake(lake.root, check_files=False), dry_run=True)  # reads only
        con = db.connect(Lake(lake.root, readonly=True))  # readers never wait
        try:
            assert con.execute("SELECT count(*) FROM tasks").fetchone() == (1,)
        finally:
            con.close()
        assert holder_of(lake.root).run_id == "run-held-elsewhere"
    # the refused run wrote nothing: no runs row of its own
    con = db.connect(Lake(lake.root, readonly=True))
    try:
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)
    finally:
        con.close()
    assert holder_of(lake.root) is None  # released at the holder's end


def test_a_holder_killed_by_sigkill_keeps_nothing(lake: Lake):
    with held_elsewhere(lake.root) as proc:
        with pytest.raises(LakeBusy), hold(lake.root, "test"):
            pass
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        assert holder_of(lake.root) is None
        with hold(lake.root, "the next run", "run-2"):
            assert holder_of(lake.root).run_id == "run-2"


def test_the_lock_is_reentrant_within_a_process_and_records_the_inner_run_id(lake: Lake):
    """The command line takes the lock before its flow starts, and the flow (which has the
    run id) takes it again in the same process."""
    with hold(lake.root, "crucible run"):
        assert holder_of(lake.root).run_id is None
        with hold(lake.root, "the pipeline flow", "run-1"):
            got = holder_of(lake.root)
            assert (got.command, got.run_id, got.pid) == ("crucible run", "run-1", os.getpid())
        assert holder_of(lake.root) is not None  # still the outer hold's
    assert holder_of(lake.root) is None
