"""Nothing of a `crucible` command outlives it: no Prefect server, Ray process, worker,
sandbox or scratch file, after a normal exit and after a SIGKILL of the driver alone
(`flows.reaper`). Each command runs as a user runs it, in its own process, with a
`CRUCIBLE_GUARD` token of the test's that every process it starts inherits."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from flows import reaper
from tests.flows.lakeq import q
from tests.flows.test_pipeline import _commits, catalog_subset, no_duplicates

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("mux4", "updown_counter8")


@pytest.fixture
def scratch():
    """The commands' temp dir: short, as Ray's socket paths under it must be."""
    path = Path(tempfile.mkdtemp(prefix="lb-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _env(tmp_path: Path, scratch: Path, token: str) -> dict[str, str]:
    env = dict(os.environ, CRUCIBLE_GUARD=token, TMPDIR=str(scratch))
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    env.pop("PREFECT_API_URL", None)
    return env


def _crucible(*args: str) -> list[str]:
    return [sys.executable, "-m", "flows.cli", *args]


def _gone_within(token: str, seconds: float) -> set[int]:
    deadline = time.monotonic() + seconds
    while (left := reaper.processes_of(token)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _describe(pids: set[int]) -> str:
    out = []
    for pid in sorted(pids):
        try:
            out.append(f"{pid}: {Path(f'/proc/{pid}/cmdline').read_bytes()[:100]!r}")
        except OSError:
            out.append(f"{pid}: (gone)")
    return "; ".join(out)


def _scratch_left(scratch: Path) -> list[str]:
    return sorted(p.name for p in scratch.iterdir() if p.name.startswith("crucible-"))


def test_a_sigkilled_run_leaves_nothing_and_the_rerun_finishes(tmp_path, scratch):
    """Over 30 s: two whole `crucible run` commands, each starting its own Prefect server
    and Ray cluster (that the reaper sweeps is the point), one killed mid-verify."""
    root = catalog_subset(tmp_path, NAMES)
    lake = tmp_path / "lake"
    token = f"test{secrets.token_hex(6)}"
    cmd = _crucible(
        "run", "--lake", str(lake), "--tasks", str(root), "--stages", "generate,verify",
        "--batch-size", "2", "--commit-every", "2", "--workers", "1",
    )  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=_env(tmp_path, scratch, token),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        started = False
        while time.monotonic() < deadline and proc.poll() is None:
            # mid-verify: Ray's cluster and a verifier actor are up, verdicts are landing
            ray = any(b"ray::" in _cmdline(p) for p in reaper.processes_of(token))
            if ray and (lake / "tables").is_dir() and _commits(lake, "verdicts") >= 2:
                started = True
                break
            time.sleep(0.1)
        assert started and proc.poll() is None, (
            f"the run ended before the kill: {proc.stderr.read()[-3000:]}"
        )
        before = reaper.processes_of(token)
        assert len(before) > 5, _describe(before)  # Prefect's server, Ray's, workers
        os.kill(proc.pid, signal.SIGKILL)  # the driver alone, as the OOM killer would
        proc.wait(timeout=10)
        t0 = time.monotonic()
        left = _gone_within(token, 30)
        assert not left, f"left behind: {_describe(left)}"
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
        reaper.sweep(token, exclude=set(), timeout_s=10)  # never leave them to the suite
    deadline = time.monotonic() + 10
    while _scratch_left(scratch) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _scratch_left(scratch) == []
    print(f"reaped {len(before)} processes in {took:.1f}s after the SIGKILL")

    # the rerun (a normal exit) finishes the work and leaves nothing either
    partial = q(lake, "SELECT count(*) FROM verdicts")[0][0]
    res = subprocess.run(cmd, cwd=ROOT, env=_env(tmp_path, scratch, token), capture_output=True,
                         text=True, timeout=400)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert reaper.processes_of(token) == set(), _describe(reaper.processes_of(token))
    assert _scratch_left(scratch) == []
    pending = q(
        lake,
        "SELECT count(*) FROM candidates c WHERE NOT EXISTS "
        "(SELECT 1 FROM verdicts v WHERE v.candidate_id = c.candidate_id)",
    )
    assert pending == [(0,)]
    assert q(lake, "SELECT count(*) FROM verdicts")[0][0] > partial
    no_duplicates(lake)


def test_verify_leaves_no_process_and_no_worker_dir(tmp_path, scratch):
    token = f"test{secrets.token_hex(6)}"
    ref = tmp_path / "ref.sv"
    shutil.copy(ROOT / "tasks" / "rtl" / "mux4" / "ref.sv", ref)
    res = subprocess.run(
        _crucible("verify", "--task", "mux4", str(ref)),
        cwd=ROOT, env=_env(tmp_path, scratch, token), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    left = reaper.processes_of(token)
    assert not left, f"left behind: {_describe(left)}"
    assert _scratch_left(scratch) == []


def test_the_reaper_finds_descendants_that_dropped_the_marker(tmp_path):
    """A sandbox starts with a cleaned environment: it is found below its marked parent,
    also when it made a session of its own."""
    token = f"test{secrets.token_hex(6)}"
    script = (
        "import subprocess, sys, time;"
        "subprocess.Popen(['sleep', '300'], env={}, start_new_session=True);"
        "print('up', flush=True); time.sleep(300)"
    )
    env = dict(os.environ, CRUCIBLE_GUARD=f"outer:{token}")
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"up\n"
        found = reaper.processes_of(token)
        assert proc.pid in found and len(found) == 2  # the marked parent and its sleep
        assert reaper.sweep(token, exclude=set(), timeout_s=10) == set()
        assert reaper.processes_of(token) == set()
    finally:
        proc.kill()
        proc.wait()


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
