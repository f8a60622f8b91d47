"""Compaction keeps the rows and cuts the files; vacuum removes what nothing references."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from lake.maintenance import BLOB_TEMPS, compact, vacuum
from lake.store import Lake
from lake.writer import BatchWriter
from tests.lake.conftest import make_candidate, make_task


def test_compact_then_vacuum(lake: Lake) -> None:
    task = make_task()
    for i in range(12):  # twelve small commits, twelve files
        with BatchWriter(lake) as w:
            w.add_candidate(make_candidate(task, f"x{i}"), "rtl")
    before = lake.table("candidates")
    assert len(before.file_uris()) == 12
    rows = sorted(before.to_pyarrow_table().column("candidate_id").to_pylist())

    metrics = compact(lake, "candidates")
    after = lake.table("candidates")
    assert metrics["candidates"]["numFilesRemoved"] == 12
    assert len(after.file_uris()) == 1
    assert sorted(after.to_pyarrow_table().column("candidate_id").to_pylist()) == rows

    with pytest.raises(ValueError, match="force=True"):
        vacuum(lake, retention_hours=0)
    assert vacuum(lake, retention_hours=0, force=True, dry_run=True)["candidates"]
    removed = vacuum(lake, retention_hours=0, force=True)
    assert len(removed["candidates"]) == 12
    assert sorted(lake.table("candidates").to_pyarrow_table().column(0).to_pylist()) == rows


def test_vacuum_sweeps_old_blob_temp_files(lake: Lake) -> None:
    sha = lake.put_artifact(b"blob")
    tmp = lake.root / "artifacts" / sha[:2] / f".{sha}.abc.tmp"  # a killed put_artifact
    tmp.write_bytes(b"bl")
    old = time.time() - 3600
    os.utime(tmp, (old, old))
    removed = vacuum(lake, retention_hours=0, force=True)
    assert removed[BLOB_TEMPS] == [str(tmp.relative_to(lake.root))]
    assert not tmp.exists()
    assert lake.read_artifact(sha) == b"blob"  # a full vacuum of every table spares blobs


def test_full_vacuum_removes_data_files_no_commit_references(lake: Lake) -> None:
    with BatchWriter(lake) as w:
        w.add_candidate(make_candidate(make_task(), "x"), "rtl")
    committed = lake.table("candidates").file_uris()
    part = Path(committed[0]).parent
    orphan = part / "part-00000-killed-writer.parquet"  # what a SIGKILL mid-write leaves
    shutil.copy(committed[0], orphan)
    old = time.time() - 3600
    os.utime(orphan, (old, old))
    removed = vacuum(lake, retention_hours=0, force=True, table="candidates")
    assert [Path(p).name for p in removed["candidates"]] == [orphan.name]
    assert not orphan.exists()
    assert lake.table("candidates").to_pyarrow_table().num_rows == 1
