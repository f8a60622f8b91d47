"""`q()`, the assertion helper, keeps a lake's connection between queries: a kept one
must read what a new one would, or "a rerun adds nothing" could pass on stale data."""

from __future__ import annotations

import shutil
import threading

from lake import db
from lake.store import Lake
from lake.writer import BatchWriter
from tests.flows import lakeq
from tests.flows.lakeq import q
from tests.lake.conftest import make_task


def _add_tasks(path, *names: str) -> None:
    with BatchWriter(Lake(path)) as w:
        for n in names:
            w.add_task(make_task(n))


def _fresh(path, sql: str) -> list[tuple]:
    con = db.connect(Lake(path))
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_kept_connection_reads_new_commits_and_a_lake_made_anew(tmp_path) -> None:
    path = tmp_path / "lake"
    names = "SELECT name FROM tasks ORDER BY name"
    assert q(path, names) == []
    (kept,) = _kept(path)  # the connection is kept for the next query

    _add_tasks(path, "adder")
    assert q(path, names) == [("adder",)] == _fresh(path, names)
    _add_tasks(path, "mux")
    assert q(path, names) == [("adder",), ("mux",)] == _fresh(path, names)
    assert _kept(path) == [kept]  # the same connection read both commits

    shutil.rmtree(path)  # a lake made again at the same path, with other rows
    _add_tasks(path, "shifter")
    assert q(path, names) == [("shifter",)] == _fresh(path, names)


def test_a_failed_query_keeps_nothing_and_threads_never_share(tmp_path) -> None:
    path = tmp_path / "lake"
    _add_tasks(path, "adder")
    try:
        q(path, "SELECT no_such_column FROM tasks")
    except Exception:
        pass
    else:
        raise AssertionError("a bad query raised nothing")
    assert _kept(path) == []  # closed, not kept
    assert q(path, "SELECT count(*) FROM tasks") == [(1,)]

    seen: list = []
    t = threading.Thread(target=lambda: seen.append(q(path, "SELECT count(*) FROM tasks")))
    t.start()
    t.join()
    assert seen == [[(1,)]]
    assert len(_kept(path)) == 2  # one per thread


def _kept(path) -> list:
    """The connections `q()` keeps for this lake (the process's other tests keep theirs)."""
    return [c for k, c in lakeq._kept.items() if k[0] == str(path.resolve())]
