"""Sandbox uids: one per warm worker of the whole process (every pool, every domain), and
uid ranges one process's at a time on the machine. RLIMIT_NPROC counts a uid's processes
machine-wide: two sandboxes on one uid share one process limit, and a candidate that
holds it makes its neighbour's fork fail, a failure the neighbour would be labelled with."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys

import pytest

from verifiers import sandbox
from verifiers.contract import Limits

from .scriptworker import script_worker

SERVER = """
import json, os, sys, time
out = os.fdopen(int(sys.argv[1]), "w", buffering=1)
out.write('{"ready": true}\\n')
for line in sys.stdin:
    job = json.loads(line)
    n, error = 0, ""
    while n < job["forks"]:
        try:
            pid = os.fork()
        except OSError as e:
            error = str(e)
            break
        if pid == 0:  # held until the worker is stopped
            time.sleep(60)
            os._exit(0)
        n += 1
    out.write(json.dumps({"forked": n, "error": error}) + "\\n")
"""

# two domains' pools in one process (the reward service's): each makes its worker 0
HogWorker = script_worker(SERVER, "uidhog")
NeighbourWorker = script_worker(SERVER, "uidneighbour")


@pytest.mark.skipif(os.geteuid() != 0, reason="a sandbox uid of its own needs root")
def test_worker_0_of_two_pools_in_one_process_keeps_its_own_process_limit():
    """Before, a worker's uid slot was its index in its pool: worker 0 of two pools ran
    as one uid, and one's candidate holding the process limit failed the other's fork."""
    lim = Limits(nproc=8)
    hog = HogWorker(lim, index=0)
    try:
        neighbour = NeighbourWorker(lim, index=0)
        try:
            assert hog._uid != neighbour._uid
            held = hog.run({"forks": 100}, 30)
            assert held["error"] and 0 < held["forked"] < 8, held  # the limit, reached
            got = neighbour.run({"forks": 3}, 30)
            assert got == {"forked": 3, "error": ""}, got
        finally:
            neighbour.close()
    finally:
        hog.close()


def test_a_uid_range_is_one_processes_at_a_time(tmp_path, monkeypatch):
    """A range is held by an flock on its file for the holder's life: another process
    starting from the same range (two pids equal mod the ranges' count) takes the next."""
    monkeypatch.setattr(sandbox, "UID_LOCK_DIR", str(tmp_path))
    mine, fd = sandbox._claim_range(5)
    try:
        assert mine == 5
        child = subprocess.run(
            [
                sys.executable,
                "-c",
                "from verifiers import sandbox; print(sandbox._claim_range(5)[0])",
            ],
            env={**os.environ, "CRUCIBLE_UID_LOCK_DIR": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert int(child.stdout) == 6
    finally:
        os.close(fd)
    # let go with its holder: free again
    again, fd = sandbox._claim_range(5)
    os.close(fd)
    assert again == 5


@pytest.fixture
def fresh_ranges(monkeypatch):
    """This process's uid ranges and slots as a new process's. In the machine's own lock
    dir: the ranges the process already holds stay locked by it, so the fresh ones are
    others. (A lock dir of the test's own handed out the held range again, pid mod the
    ranges' count, and a warm worker an earlier test left running as its slot 1 kept the
    fresh slot 1 from ever being free.)"""
    for name, value in (
        ("_uids_pid", os.getpid()),
        ("_ranges", []),
        ("_range_fds", []),
        ("_slots_taken", 1),
        ("_slots_free", []),
    ):
        monkeypatch.setattr(sandbox, name, value)
    yield
    for fd in sandbox._range_fds:
        os.close(fd)


def test_slots_are_never_handed_out_twice_and_spill_into_further_ranges(fresh_ranges):
    slots = [sandbox.claim_slot() for _ in range(sandbox.UID_SLOTS + 3)]
    assert slots == list(range(1, sandbox.UID_SLOTS + 4))
    uids = [sandbox.sandbox_uid(s) for s in [0, *slots]]
    assert len(set(uids)) == len(uids)
    assert len(sandbox._ranges) == 2  # the 64th worker slot on is the second range's
    assert set(uids) <= sandbox.own_sandbox_uids()


def test_a_forked_child_claims_ranges_of_its_own(fresh_ranges):
    parent = sandbox.sandbox_uid(0)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own range, and its slots counted from 1 again
        try:
            os.write(w, json.dumps([sandbox.sandbox_uid(0), sandbox.claim_slot()]).encode())
        finally:
            os._exit(0)
    os.close(w)
    try:
        ready, _, _ = select.select([r], [], [], 30)
        assert ready, "the forked child never answered"
        child_uid, child_slot = json.loads(os.read(r, 4096))
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    assert child_uid != parent and child_slot == 1
    assert child_uid not in sandbox.own_sandbox_uids()


def test_a_lock_dir_that_cannot_be_made_falls_back_to_tmps_and_says_so(monkeypatch, caplog):
    monkeypatch.setattr(sandbox, "UID_LOCK_DIR", "/proc/crucible-no-such-dir")
    monkeypatch.setattr(sandbox, "_lock_dir_said", False)
    with caplog.at_level("WARNING", logger="verifiers.sandbox"):
        assert sandbox.uid_lock_dir() == "/tmp/crucible-sandbox-uids"
        assert sandbox.uid_lock_dir() == "/tmp/crucible-sandbox-uids"
    said = [r for r in caplog.records if "CRUCIBLE_UID_LOCK_DIR" in r.getMessage()]
    assert len(said) == 1  # once


@pytest.fixture
def earlier_worker():
    """A warm worker an earlier test of this process left running (made before
    `fresh_ranges`): its slot 1 where nothing else of the process holds one, as when this
    file runs alone, the order in which the old fixture failed every time."""
    worker = HogWorker(Limits(), index=0)
    yield worker
    worker.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="a sandbox uid of its own needs root")
def test_a_closed_workers_uid_goes_to_the_next_worker_once_nothing_runs_as_it(
    earlier_worker, fresh_ranges, monkeypatch
):
    first = HogWorker(Limits(), index=0)
    slot = first._slot
    first.close()
    second = NeighbourWorker(Limits(), index=0)
    try:
        assert second._slot == slot == 1  # handed back, taken again: the ranges stay few
    finally:
        second.close()
    # a process still running as the uid keeps the slot taken
    monkeypatch.setattr(sandbox, "_runs_as", lambda uid: True)
    third = HogWorker(Limits(), index=0)
    kept = third._slot
    third.close()  # waits 2 s for the uid's processes, then keeps the slot
    assert sandbox.claim_slot() != kept
