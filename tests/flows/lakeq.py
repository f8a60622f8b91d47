"""One SQL query against a lake, for assertions."""

from __future__ import annotations

from pathlib import Path

from lake import db
from lake.store import Lake


def q(lake: Path, sql: str) -> list[tuple]:
    con = db.connect(Lake(lake))
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()
