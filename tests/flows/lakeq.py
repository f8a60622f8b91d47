"""One SQL query against a lake, for assertions."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path

import duckdb

from lake import db
from lake.store import Lake

# A lake's connection is kept for its next query: making one binds every table's and
# view's `delta_scan` (~0.1-0.2 s), a query ~5 ms, and tests query one lake many times.
# Kept connections still read each table's latest version (and a lake made anew at the
# same path) at every query: the views bind `delta_scan` again each time they are read.
_KEEP = 8
_kept: OrderedDict[tuple[str, int, int], duckdb.DuckDBPyConnection] = OrderedDict()
_lock = threading.Lock()


def q(lake: Path, sql: str) -> list[tuple]:
    opened = Lake(lake)  # as before: checks the lake (and makes it if missing) each time
    # per process (a forked child never uses its parent's) and per thread (a cursor is
    # not shared between threads)
    key = (str(Path(lake).resolve()), os.getpid(), threading.get_ident())
    with _lock:
        con = _kept.pop(key, None)
    if con is None:
        con = db.connect(opened)
    try:
        rows = con.execute(sql).fetchall()
    except BaseException:
        con.close()  # a failed query leaves nothing kept
        raise
    with _lock:
        _kept[key] = con
        while len(_kept) > _KEEP:
            _kept.popitem(last=False)[1].close()
    return rows
