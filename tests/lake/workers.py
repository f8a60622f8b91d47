"""Writer processes for the concurrency and kill tests (importable by spawned children)."""

from __future__ import annotations

from datetime import datetime
from multiprocessing.synchronize import Event

from lake.store import Lake
from lake.writer import BatchWriter

STAMP = datetime(2025, 1, 1)


def candidate_row(cid: str, batch: str) -> dict[str, object]:
    return {
        "candidate_id": cid,
        "task_id": "t",
        "domain": "rtl",
        "code": "module m; endmodule // " + cid,
        "origin": "perturb",
        "generator": "test",
        "prompt": None,
        "parent_id": None,
        "attempt": 0,
        "run_id": batch,  # which batch a row came in, so the test can check batches whole
        "created_at": STAMP,
    }


def write_range(root: str, start: int, stop: int, batch_size: int) -> dict[str, int]:
    """Append candidate ids start..stop-1 (overlapping ranges across processes)."""
    with BatchWriter(Lake(root), batch_size=batch_size) as w:
        w.add("candidates", (candidate_row(f"c{i:07d}", "-") for i in range(start, stop)))
    s = w.stats["candidates"]
    return {"written": s.written, "retries": s.retries, "commits": s.commits}


def write_forever(root: str, first_batch: int, batch_size: int, committing: Event) -> None:
    """Append whole batches until killed; `committing` is set as each commit starts.

    The parent waits for it and kills a few milliseconds later, so the kill lands inside
    write_deltalake (data files written, log entry not yet) rather than anywhere.
    """

    class SignallingWriter(BatchWriter):
        def _commit(self, table: str, rows: list) -> int:  # type: ignore[override]
            committing.set()
            return super()._commit(table, rows)

    w = SignallingWriter(Lake(root), batch_size=batch_size)
    batch = first_batch
    while True:
        tag = f"b{batch:07d}"
        w.add("candidates", [candidate_row(f"{tag}-{i:05d}", tag) for i in range(batch_size)])
        batch += 1


def open_lake(root: str) -> dict[str, int]:
    return Lake(root).versions()
