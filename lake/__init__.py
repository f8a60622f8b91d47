"""The lake: Delta tables of every record, the batching writer, DuckDB over both."""

__crucible__ = True  # the mark flows/cli/install.py looks for: this module is Crucible's

from lake.db import connect, rows, run_sql
from lake.maintenance import compact, vacuum
from lake.schema import TABLES, Run, Trajectory, Turn
from lake.store import Lake, LakeError
from lake.writer import BatchWriter

__all__ = [
    "TABLES",
    "BatchWriter",
    "Lake",
    "LakeError",
    "Run",
    "Trajectory",
    "Turn",
    "compact",
    "connect",
    "rows",
    "run_sql",
    "vacuum",
]
