"""Opening a lake: what it creates, and the clear errors for roots it cannot use."""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from lake import db
from lake.schema import TABLES
from lake.store import MARKER, Lake, LakeError
from lake.writer import BatchWriter
from tests.lake import workers
from tests.lake.conftest import make_candidate, make_task


def test_new_lake_has_every_table_empty_with_declared_schema(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "new" / "lake")  # parents are created too
    assert (lake.root / MARKER).is_file()
    for name, spec in TABLES.items():
        dt = lake.table(name)
        assert dt.version() == 0
        assert dt.schema().to_arrow().names == list(spec.columns)
        assert dt.metadata().partition_columns == list(spec.partition_by)
        assert dt.to_pyarrow_table().num_rows == 0
    assert lake.versions() == dict.fromkeys(TABLES, 0)


def test_reopening_keeps_tables(lake: Lake) -> None:
    again = Lake(lake.root)
    assert again.versions() == lake.versions()


def test_root_that_is_a_file(tmp_path: Path) -> None:
    f = tmp_path / "lake"
    f.write_text("not a lake")
    with pytest.raises(LakeError, match="is a file, not a directory"):
        Lake(f)


def test_root_under_a_file(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(LakeError, match="a parent of it is a file"):
        Lake(f / "lake")


def test_foreign_non_empty_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(LakeError, match="not a Crucible lake"):
        Lake(tmp_path)


@pytest.fixture
def unwritable_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory even root cannot write into.

    chmod does not stop root (and os.access() says yes to root), so as root the directory
    gets the immutable attribute, which the kernel enforces for every uid.
    """
    d = tmp_path / "ro"
    d.mkdir()
    if os.geteuid() != 0:
        d.chmod(0o555)
        yield d
        d.chmod(0o755)
        return
    chattr = shutil.which("chattr")
    if not chattr or subprocess.run([chattr, "+i", d], capture_output=True).returncode:
        pytest.skip("running as root on a file system without chattr +i")
    try:
        yield d
    finally:
        subprocess.run([chattr, "-i", d], check=True)


def test_unwritable_existing_root(unwritable_dir: Path) -> None:
    with pytest.raises(LakeError, match=r"is not writable .*fix its permissions"):
        Lake(unwritable_dir)


def test_root_that_cannot_be_created(unwritable_dir: Path) -> None:
    with pytest.raises(LakeError, match="cannot create lake root"):
        Lake(unwritable_dir / "lake")


def test_garbage_delta_log_is_reported_as_corrupt(lake: Lake) -> None:
    log0 = lake.table_path("verdicts") / "_delta_log" / "00000000000000000000.json"
    log0.write_text("{garbage")
    with pytest.raises(LakeError, match=r"table 'verdicts' .* is corrupt .*_delta_log") as err:
        Lake(lake.root)
    assert "\n" not in str(err.value)  # no Rust backtrace in the message


def test_truncated_newest_commit_is_reported_as_corrupt(lake: Lake) -> None:
    (lake.table_path("tasks") / "_delta_log" / "00000000000000000001.json").write_text('{"add": ')
    with pytest.raises(LakeError, match=r"table 'tasks' .* is corrupt"):
        Lake(lake.root)


def test_unreadable_delta_log_is_not_a_delta_table(lake: Lake) -> None:
    log_dir = lake.table_path("runs") / "_delta_log"
    shutil.rmtree(log_dir)
    log_dir.mkdir()
    (log_dir / "00000000000000000000.json").mkdir()  # a directory where the log file was
    with pytest.raises(LakeError, match=r"table 'runs' .* is not a Delta table"):
        Lake(lake.root)


def test_table_directory_without_log(lake: Lake) -> None:
    shutil.rmtree(lake.table_path("candidates") / "_delta_log")
    (lake.table_path("candidates") / "part-0.parquet").write_bytes(b"PAR1")
    with pytest.raises(LakeError, match=r"table 'candidates' .* is not a Delta table"):
        Lake(lake.root)


def test_table_that_is_a_file(lake: Lake) -> None:
    shutil.rmtree(lake.table_path("trajectories"))
    (lake.table_path("trajectories")).write_text("x")
    with pytest.raises(LakeError, match="is a file, not a Delta table"):
        Lake(lake.root)


def test_a_deleted_data_file_is_refused_at_open_and_repair_drops_it(lake: Lake) -> None:
    task = make_task()
    first, second = make_candidate(task, "a"), make_candidate(task, "b")
    for c in (first, second):  # two commits, two data files
        with BatchWriter(lake) as w:
            w.add_candidate(c, "rtl")
    data = sorted(
        (lake.root / "tables" / "candidates").rglob("*.parquet"), key=lambda p: p.stat().st_mtime
    )
    assert len(data) == 2
    data[1].unlink()
    gone = str(data[1].relative_to(lake.root))
    for readonly in (False, True):  # before any work, for queries too
        with pytest.raises(LakeError, match="missing 1 of its data files") as err:
            Lake(lake.root, readonly=readonly)
        assert gone in str(err.value) and "crucible repair" in str(err.value)
    from lake.maintenance import repair

    damaged = Lake(lake.root, check_files=False)
    assert repair(damaged, dry_run=True)["candidates"] == [gone.split("candidates/", 1)[1]]
    assert repair(damaged)["candidates"] and not repair(damaged)["candidates"]
    con = db.connect(Lake(lake.root))  # opens again; the other file's rows are all there
    try:
        assert con.execute("SELECT candidate_id FROM candidates").fetchall() == [
            (first.candidate_id,)
        ]
    finally:
        con.close()


def test_missing_table_is_created_on_open(lake: Lake) -> None:
    shutil.rmtree(lake.table_path("runs"))
    assert Lake(lake.root).version("runs") == 0


def test_unknown_table_lists_the_known_ones(lake: Lake) -> None:
    with pytest.raises(ValueError, match="tables: tasks, candidates"):
        lake.table("verdict")


def test_unsupported_object_store_roots_are_refused_clearly() -> None:
    # s3:// is supported (tests/lake/test_s3_lake.py); other schemes are not
    with pytest.raises(LakeError, match="scheme 'gs' is not supported; use a local directory"):
        Lake("gs://bucket/lake")


def test_artifacts_are_content_addressed_and_deduped(lake: Lake) -> None:
    data = b"$dumpvars\n#0\n"
    sha = lake.put_artifact(data)
    assert sha == hashlib.sha256(data).hexdigest()
    path = lake.root / "artifacts" / sha[:2] / sha
    assert path.read_bytes() == data
    mtime = path.stat().st_mtime_ns
    assert lake.put_artifact(data) == sha
    assert path.stat().st_mtime_ns == mtime  # not rewritten
    assert lake.read_artifact(sha) == data
    assert [p.name for p in path.parent.iterdir()] == [sha]  # no temp files left


def test_damaged_or_missing_artifacts_raise(lake: Lake) -> None:
    sha = lake.put_artifact(b"log")
    (lake.root / "artifacts" / sha[:2] / sha).write_bytes(b"LOG")
    with pytest.raises(LakeError, match="damaged"):
        lake.read_artifact(sha)
    with pytest.raises(LakeError, match="not in lake"):
        lake.read_artifact("0" * 64)
    with pytest.raises(ValueError, match="not a sha256"):
        lake.read_artifact("../../etc/passwd")


def test_readonly_open_of_an_unwritable_lake(lake: Lake) -> None:
    with BatchWriter(lake) as w:
        w.add_candidate(make_candidate(make_task(), "x"), "rtl")
    chattr = shutil.which("chattr")
    frozen = bool(chattr) and os.geteuid() == 0
    if frozen:
        subprocess.run([chattr, "+i", lake.root], check=True)
    try:
        ro = Lake(lake.root, readonly=True)
        assert db.connect(ro).sql("SELECT count(*) FROM candidates").fetchone() == (1,)
        with pytest.raises(LakeError, match="read-only"):
            ro.put_artifact(b"x")
    finally:
        if frozen:
            subprocess.run([chattr, "-i", lake.root], check=True)


def test_readonly_open_needs_an_existing_lake(tmp_path: Path) -> None:
    with pytest.raises(LakeError, match="no lake at"):
        Lake(tmp_path / "absent", readonly=True)
    with pytest.raises(LakeError, match="not a Crucible lake"):
        Lake(tmp_path, readonly=True)
    assert not (tmp_path / "absent").exists()


def test_unreadable_or_newer_marker(lake: Lake) -> None:
    marker = lake.root / MARKER
    marker.write_text('{"format": 99}')
    with pytest.raises(LakeError, match="has format 99"):
        Lake(lake.root)
    marker.write_text("{")
    with pytest.raises(LakeError, match="is unreadable"):
        Lake(lake.root)


def test_processes_opening_one_new_lake_at_once_all_succeed(tmp_path: Path) -> None:
    root = str(tmp_path / "lake")
    with mp.get_context("spawn").Pool(4) as pool:
        versions = pool.map(workers.open_lake, [root] * 4)
    assert versions == [dict.fromkeys(TABLES, 0)] * 4


def test_a_lake_made_before_a_later_table_reads_it_as_empty(tmp_path):
    """`rewards` came after lake format 2 shipped: a read-only open (`crucible sql`) of a
    lake no command has written since shows it empty instead of refusing the lake; the next
    writable open creates it."""
    import shutil

    from lake import db
    from lake.store import LATER_TABLES

    root = tmp_path / "old"
    Lake(root)
    for name in LATER_TABLES:
        shutil.rmtree(root / "tables" / name)
    ro = Lake(root, readonly=True)
    assert ro.absent == LATER_TABLES and not (root / "tables" / "rewards").exists()
    con = db.connect(ro)
    assert con.execute("SELECT count(*), count(reward) FROM rewards").fetchone() == (0, 0)
    assert con.execute("SELECT count(*) FROM raw_rewards").fetchone() == (0,)
    assert "rewards" not in ro.versions()
    con.close()
    assert Lake(root).absent == frozenset() and (root / "tables" / "rewards").is_dir()
