"""The batching writer: idempotent, dedupes, loses nothing to races or kills."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pyarrow.compute as pc
import pytest
from deltalake import write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError

from lake import db
from lake.schema import Run, Trajectory, Turn, candidate_row, to_arrow
from lake.store import Lake, LakeFull
from lake.writer import BatchWriter
from tests.lake import workers
from tests.lake.conftest import make_candidate, make_task, make_verdict
from verifiers.contract import Artifact


def ids(lake: Lake, table: str, column: str) -> list[str]:
    return lake.table(table).to_pyarrow_table(columns=[column]).column(0).to_pylist()


def test_reappending_the_same_records_adds_nothing(lake: Lake) -> None:
    task = make_task()
    cands = [make_candidate(task, f"module m{i}; endmodule") for i in range(30)]
    for attempt in range(2):
        with BatchWriter(lake, batch_size=7) as w:
            w.add_task(task)
            for c in cands:
                w.add_candidate(c, task.domain)
                w.add_verdict(make_verdict(c, task, "pass"), run_id=f"run{attempt}")
        if attempt == 0:
            versions = lake.versions()
            assert w.stats["verdicts"].written == 30
            assert w.stats["verdicts"].commits == 5  # 7+7+7+7+2
    assert lake.versions() == versions  # the rerun made no commit at all
    assert w.stats["verdicts"].written == 0
    assert w.stats["verdicts"].skipped_existing == 30
    assert w.stats["candidates"].skipped_existing == 30
    assert sorted(ids(lake, "candidates", "candidate_id")) == sorted(c.candidate_id for c in cands)
    assert len(ids(lake, "verdicts", "verdict_id")) == 30


def test_duplicate_ids_within_one_batch_are_written_once(lake: Lake) -> None:
    task = make_task()
    c = make_candidate(task, "module m; endmodule")
    with BatchWriter(lake) as w:
        for _ in range(5):
            w.add_candidate(c, "rtl")
    assert ids(lake, "candidates", "candidate_id") == [c.candidate_id]
    assert w.stats["candidates"].skipped_duplicate == 4
    assert w.stats["candidates"].commits == 1


def test_the_closing_log_line_is_short_and_rounded(lake: Lake, caplog) -> None:
    # it reaches the Prefect UI's Logs tab: no dict repr, no 17-digit seconds
    task = make_task()
    c = make_candidate(task, "module m; endmodule")
    with caplog.at_level("INFO", logger="lake.writer"):
        with BatchWriter(lake) as w:
            w.add_candidate(c, "rtl")
            w.add_candidate(c, "rtl")
        with BatchWriter(lake):
            pass
    lines = [r.getMessage() for r in caplog.records if "writer closed" in r.getMessage()]
    assert len(lines) == 2
    assert re.fullmatch(
        r"lake writer closed: candidates \+2 \(1 skipped\) in 1 commit, \d+\.\d\ds", lines[0]
    ), lines[0]
    assert lines[1] == "lake writer closed: nothing added"


def test_partly_present_batch_appends_only_new_ids(lake: Lake) -> None:
    task = make_task()
    cands = [make_candidate(task, f"x{i}") for i in range(10)]
    with BatchWriter(lake) as w:
        for c in cands[:4]:
            w.add_candidate(c, "rtl")
    with BatchWriter(lake) as w:
        for c in cands:
            w.add_candidate(c, "rtl")
    assert (w.stats["candidates"].written, w.stats["candidates"].skipped_existing) == (6, 4)
    assert len(ids(lake, "candidates", "candidate_id")) == 10


def test_rows_must_have_exactly_the_table_columns(lake: Lake) -> None:
    row = candidate_row(make_candidate(make_task(), "x"), "rtl")
    w = BatchWriter(lake)
    with pytest.raises(ValueError, match=r"missing \['origin'\], unknown \['colour'\]"):
        w.add("candidates", [{**{k: v for k, v in row.items() if k != "origin"}, "colour": 1}])
    with pytest.raises(ValueError, match="unknown lake table 'candidate'"):
        w.add("candidate", [row])
    w.close()
    assert w.summary() == {}


def test_digit_strings_stay_strings(lake: Lake) -> None:
    task = make_task()
    c = make_candidate(task, "x")
    v = make_verdict(c, task, "pass", version="0012")
    with BatchWriter(lake) as w:
        w.add_verdict(v, run_id="007")
    t = lake.table("verdicts").to_pyarrow_table()
    assert t.column("verifier_version").to_pylist() == ["0012"]
    assert t.column("run_id").to_pylist() == ["007"]


def test_verdict_artifacts_become_blobs_and_rows_committed_before_the_verdict(
    lake: Lake,
) -> None:
    task = make_task()
    log = Artifact("log", "sim.log", b"mismatch at t=5\n")
    vcd = Artifact("vcd", "dump.vcd", b"$var wire 1 ! a $end\n")
    verdicts = [
        make_verdict(make_candidate(task, f"c{i}"), task, "wrong_answer", artifacts=(log, vcd))
        for i in range(3)
    ]
    with BatchWriter(lake, batch_size=3) as w:
        for v in verdicts:
            w.add_verdict(v)
        # The verdict buffer filled first; its flush took the artifact rows along, before it.
        assert w.stats["verdicts"].commits == 1
        assert w.stats["artifacts"].written == 6
    history = lake.table("verdicts").history()
    assert w.blobs.stored == 2 and w.blobs.existing == 4
    assert lake.read_artifact(log.sha256) == log.data
    rows = lake.table("artifacts").to_pyarrow_table().to_pylist()
    assert {r["path"] for r in rows} == {f"artifacts/{a.sha256[:2]}/{a.sha256}" for a in (log, vcd)}
    assert {r["verdict_id"] for r in rows} == {v.verdict_id for v in verdicts}
    # artifact rows are committed no later than the verdicts that point at them
    art_commit = max(h["timestamp"] for h in lake.table("artifacts").history())
    verdict_commits = [h["timestamp"] for h in history if h["operation"] == "WRITE"]
    assert verdict_commits and art_commit <= min(verdict_commits)


@pytest.mark.parametrize("race", [False, True])
def test_the_same_artifact_from_two_runs_is_one_row_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, race: bool
) -> None:
    """Two runs verify the same candidate: one verdict id, and each run's waveform differs
    only in the `$date` the simulator writes into it. The artifact id, like the verdict
    id, names what the row is, not when it was made: one row id, one row in the view,
    also when both writers checked the lake before either committed (`race`)."""
    lake = Lake(tmp_path / "lake")
    task = make_task()
    cand = make_candidate(task, "c")
    runs = []
    for day in ("Mon Dec  1 10:00:00 2026", "Mon Dec  1 10:00:01 2026"):
        vcd = Artifact("vcd", "wave.vcd", f"$date {day} $end\n$var wire 1 ! a $end\n".encode())
        runs.append(make_verdict(cand, task, "wrong_answer", artifacts=(vcd,)))
    assert runs[0].verdict_id == runs[1].verdict_id
    if race:
        monkeypatch.setattr(BatchWriter, "existing_ids", lambda self, *a, **kw: set())
    for i, v in enumerate(runs):
        with BatchWriter(lake, run_id=f"run{i}") as w:
            w.add_verdict(v)
    raw = lake.table("artifacts").to_pyarrow_table().to_pylist()
    assert len(raw) == (2 if race else 1)
    assert len({r["artifact_id"] for r in raw}) == 1
    con = db.connect(lake)
    try:
        assert con.execute("SELECT count(*) FROM artifacts").fetchall() == [(1,)]
    finally:
        con.close()


def test_an_exception_in_the_block_still_flushes_complete_records(lake: Lake) -> None:
    task = make_task()
    c = make_candidate(task, "x")
    with pytest.raises(RuntimeError, match="stage crashed"), BatchWriter(lake) as w:
        w.add_candidate(c, "rtl")
        raise RuntimeError("stage crashed")
    assert ids(lake, "candidates", "candidate_id") == [c.candidate_id]


def test_trajectory_and_run_rows(lake: Lake) -> None:
    turns = (Turn("c1", "v1", "compile_error"), Turn("c2", "v2", "pass"))
    traj = Trajectory(task_id="t", domain="rtl", turns=turns, outcome="pass", run_id="r")
    run = Run(
        run_id="r",
        flow="repair",
        status="completed",
        started_at="2025-01-01T00:00:00+00:00",
        finished_at="2025-01-01T00:01:00+00:00",
        seconds=60.0,
        counts={"verdicts": 2},
        lake_versions_written={"verdicts": 3},
    )
    with BatchWriter(lake, run_id="r") as w:
        w.add_trajectory(traj)
        w.add_trajectory(Trajectory(task_id="t", domain="rtl", turns=turns, outcome="pass"))
        w.add_run(run)
    rows = lake.table("trajectories").to_pyarrow_table().to_pylist()
    assert len(rows) == 1  # same chain, same id
    assert rows[0]["rounds"] == 2
    assert rows[0]["turns"][1] == {"candidate_id": "c2", "verdict_id": "v2", "status": "pass"}
    run_rows = lake.table("runs").to_pyarrow_table().to_pylist()
    assert run_rows[0]["counts"] == '{"verdicts":2}'
    assert run_rows[0]["finished_at"].isoformat() == "2025-01-01T00:01:00"


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    Lake(root)
    # Four processes, overlapping id ranges, many small commits: the worst case for races.
    ranges = [(p * 1500, p * 1500 + 2000) for p in range(4)]
    with mp.get_context("spawn").Pool(4) as pool:
        results = pool.starmap(workers.write_range, [(root, a, b, 250) for a, b in ranges])
    expected = {f"c{i:07d}" for a, b in ranges for i in range(a, b)}
    got = ids(Lake(root), "candidates", "candidate_id")
    assert set(got) == expected
    # Racing on the same new id can append it twice (the views hide that); never more.
    assert max(Counter(got).values()) <= 2
    assert sum(r["written"] for r in results) == len(got)


def test_a_killed_writer_leaves_only_whole_batches(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    Lake(root)
    batch = 300
    ctx = mp.get_context("spawn")
    rng = random.Random(7)
    kills = 10
    for k in range(kills):
        committing = ctx.Event()
        args = (root, k * 100_000, batch, committing)
        proc = ctx.Process(target=workers.write_forever, args=args)
        proc.start()
        assert committing.wait(60), "writer never reached a commit"
        # Past the first commit, then into a later one: the kill lands mid-write_deltalake.
        for _ in range(rng.randint(1, 3)):
            committing.clear()
            assert committing.wait(60)
        time.sleep(rng.uniform(0.0, 0.012))  # measured: often leaves orphan data files
        proc.kill()
        proc.join()
        assert proc.exitcode == -signal.SIGKILL
    lake = Lake(root)  # still opens: no log damage
    dt = lake.table("candidates")
    t = dt.to_pyarrow_table(columns=["candidate_id", "run_id"])
    per_batch = Counter(t.column("run_id").to_pylist())
    assert len(per_batch) >= kills
    assert set(per_batch.values()) == {batch}
    assert pc.count_distinct(t.column("candidate_id")).as_py() == t.num_rows


def test_raw_duplicates_written_around_the_writer_are_still_skipped(lake: Lake) -> None:
    row = candidate_row(make_candidate(make_task(), "x"), "rtl")
    write_deltalake(lake.table_uri("candidates"), to_arrow("candidates", [row, row]), mode="append")
    with BatchWriter(lake) as w:
        w.add("candidates", [row])
    assert w.stats["candidates"].skipped_existing == 1


def test_a_lost_commit_race_is_retried(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    # Fault injection: the race itself is rare (~1 in 500 commits with 4 writers).
    real = BatchWriter._commit
    calls = []

    def lose_first_race(self: BatchWriter, table: str, rows: list) -> int:
        calls.append(len(rows))
        if len(calls) == 1:
            raise CommitFailedError("Transaction failed: version 1 already exists")
        return real(self, table, rows)

    monkeypatch.setattr(BatchWriter, "_commit", lose_first_race)
    with BatchWriter(lake, backoff_s=0.001) as w:
        w.add_candidate(make_candidate(make_task(), "x"), "rtl")
    assert calls == [1, 1]
    assert (w.stats["candidates"].retries, w.stats["candidates"].written) == (1, 1)


def test_other_commit_errors_raise_and_keep_the_rows(
    lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = BatchWriter._commit

    def broken_disk(self: BatchWriter, table: str, rows: list) -> int:
        raise DeltaError("Generic error: Input/output error (os error 5)")

    w = BatchWriter(lake)
    w.add_candidate(make_candidate(make_task(), "x"), "rtl")
    monkeypatch.setattr(BatchWriter, "_commit", broken_disk)
    with pytest.raises(DeltaError, match="Input/output"):
        w.flush()
    monkeypatch.setattr(BatchWriter, "_commit", real)
    w.close()  # the disk is back: the kept rows go in now
    assert w.stats["candidates"].written == 1
    assert len(ids(lake, "candidates", "candidate_id")) == 1


def test_an_infra_error_verdict_and_its_retry_both_stay(lake: Lake) -> None:
    task = make_task()
    c = make_candidate(task, "x")
    crashed = make_verdict(c, task, "infra_error", category="infra", code="tool_crash")
    retried = make_verdict(c, task, "wrong_answer", created_at="2025-01-02T00:00:00+00:00")
    crashed_later = make_verdict(
        c, task, "infra_error", category="infra", code="tool_crash", created_at="2025-01-03"
    )
    for attempt, verdict in enumerate([crashed, crashed, retried, retried, crashed_later]):
        with BatchWriter(lake) as w:
            w.add_verdict(verdict, run_id=f"run{attempt}")
    # The contract salts an infra_error's id with its time: every crash is its own row,
    # and a rerun of the same records still adds nothing.
    statuses = lake.table("verdicts").to_pyarrow_table().column("status").to_pylist()
    assert sorted(statuses) == ["infra_error", "infra_error", "wrong_answer"]
    con = db.connect(lake)
    # The real outcome beats a newer infrastructure failure.
    assert con.sql("SELECT status, run_id FROM latest_verdicts").fetchall() == [
        ("wrong_answer", "run2")
    ]


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 2 MiB file system (tmpfs, size-capped): mounting needs root."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a size-capped tmpfs needs root")
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True
    )
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_full_disk_stops_with_what_to_do_and_keeps_every_committed_row(
    small_disk: Path,
) -> None:
    filler = small_disk / "filler"
    filler.write_bytes(os.urandom(700_000))  # room to free afterwards
    lake = Lake(small_disk / "lake")
    task = make_task()
    rng = random.Random(0)
    added: list[str] = []
    w = BatchWriter(lake, batch_size=4)
    with pytest.raises(LakeFull, match=r"disk is full at .*: free space and run again") as err:
        for i in range(10_000):  # ~90 KB of incompressible code per candidate
            c = make_candidate(task, f"// {i}\n" + rng.randbytes(45_000).hex())
            added.append(c.candidate_id)
            w.add_candidate(c, "rtl")
    assert "nothing was half-written" in str(err.value)
    assert str(lake.root) in str(err.value)
    committed = w.stats["candidates"].written
    assert committed >= 4, "the disk filled before the first commit: the test proves nothing"
    # the lake still opens (no missing file, no torn log) and holds every committed row
    assert sorted(ids(Lake(lake.root), "candidates", "candidate_id")) == sorted(added[:committed])
    # a blob that does not fit: the same stop, and no partial blob or temp file left
    with pytest.raises(LakeFull, match="a blob of 800,000 bytes not committed"):
        lake.put_artifact(os.urandom(800_000))
    assert not [p for p in (lake.root / "artifacts").rglob("*") if p.is_file()]
    # the failed batch was put back, once: with space freed it goes in, nothing twice
    filler.unlink()
    w.close()
    assert sorted(ids(lake, "candidates", "candidate_id")) == sorted(added)
    assert w.stats["candidates"].skipped_existing == 0


def test_a_full_disk_in_the_writer_puts_the_rows_back_once(
    lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def full(self: BatchWriter, table: str, rows: list) -> int:
        calls.append(len(rows))
        raise DeltaError(
            "Failed to parse parquet: External: Generic LocalFileSystem error: Unable to "
            "copy data to file: No space left on device (os error 28)"
        )

    monkeypatch.setattr(BatchWriter, "_commit", full)
    with pytest.raises(LakeFull, match="disk is full"), BatchWriter(lake) as w:
        w.add_candidate(make_candidate(make_task(), "x"), "rtl")
    assert calls == [1]  # no retry loop, no second flush while unwinding
    assert len(w._buffers["candidates"]) == 1
