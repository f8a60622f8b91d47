"""DuckDB over the lake: one view per table (deduped by id) plus every `sql/` file by name.

The delta extension is loaded from the `duckdb-extension-delta` wheel, never downloaded:
nodes have no network, and DuckDB's autoinstall would otherwise try.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from lake.schema import TABLES
from lake.store import Lake, LakeError

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
VIEWS_DIR = SQL_DIR / "views"
_PIP_HINT = f"pip install 'duckdb-extension-delta=={duckdb.__version__}'"


def delta_extension_path() -> Path:
    """The `.duckdb_extension` file shipped in the pip package matching this DuckDB."""
    try:
        import duckdb_extension_delta
    except ImportError:
        raise LakeError(f"the DuckDB delta extension is not installed: {_PIP_HINT}") from None
    pkg = Path(duckdb_extension_delta.__file__).parent
    exact = pkg / "extensions" / f"v{duckdb.__version__}" / "delta.duckdb_extension"
    if exact.is_file():
        return exact
    found = sorted(pkg.rglob("*.duckdb_extension"))
    raise LakeError(
        f"no delta extension for DuckDB {duckdb.__version__} in {pkg} (found: "
        f"{', '.join(str(p.relative_to(pkg)) for p in found) or 'none'}); the two versions "
        f"must match exactly: {_PIP_HINT}"
    )


def load_delta(con: duckdb.DuckDBPyConnection) -> None:
    """Load the delta extension offline, and set what every lake connection needs."""
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    # DuckDB 1.5.5 crashed (SIGSEGV in BloomFilter::LookupHashes) in the writer's semi-join
    # of a batch's ids against a delta_scan, in a 2,000-candidate pipeline run; its
    # runtime join filters (bloom filters) have open wrong-result and race reports
    # (duckdb#22075, #25702). Our joins are small: correctness first.
    con.execute("SET disabled_optimizers = 'join_filter_pushdown'")
    con.execute(f"LOAD {quote(str(delta_extension_path()))}")


def quote(text: str) -> str:
    """A SQL string literal (for paths and partition values, which cannot be parameters)."""
    return "'" + text.replace("'", "''") + "'"


def scan(lake: Lake, table: str) -> str:
    """The `delta_scan(...)` expression for one table (latest version at each query)."""
    return f"delta_scan({quote(lake.table_uri(table))})"


def connect(
    lake: Lake | str | os.PathLike[str], *, readonly: bool = False, database: str = ":memory:"
) -> duckdb.DuckDBPyConnection:
    """A connection with `raw_<table>` (every row) and `<table>` (one row per id) views.

    Given a path, opens the lake (creating it unless `readonly`).

    The dedupe costs one window over the id column, ~0.14 s per million rows on two cores
    (a plain scan + GROUP BY is ~0.015 s): every exact dedupe has to hash all ids, and this
    is the cheapest form measured (see bench/bench_lake.py).
    """
    lake = lake if isinstance(lake, Lake) else Lake(lake, readonly=readonly)
    con = duckdb.connect(database)
    try:
        load_delta(con)
        for name, spec in TABLES.items():
            con.execute(f"CREATE OR REPLACE VIEW raw_{name} AS SELECT * FROM {scan(lake, name)}")
            con.execute(
                f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM raw_{name} QUALIFY "
                f"row_number() OVER (PARTITION BY {spec.id_column} "
                f"ORDER BY {spec.order_by}) = 1"
            )
        # Views may build on each other: files run in name order (prefix a number to order).
        for path in sorted(VIEWS_DIR.glob("*.sql")):
            con.execute(path.read_text())
    except BaseException:
        con.close()
        raise
    return con


def available_sql() -> list[str]:
    """Names `run_sql` accepts: `sql/<name>.sql`, views excluded."""
    return sorted(p.stem for p in SQL_DIR.glob("*.sql"))


def sql_text(name: str) -> str:
    path = SQL_DIR / f"{name}.sql"
    if "/" in name or os.sep in name or not path.is_file():
        raise LakeError(f"no SQL named {name!r}; available: {', '.join(available_sql())}")
    return path.read_text()


def run_sql(con: duckdb.DuckDBPyConnection, name: str, /, **params: Any) -> pa.Table:
    """Run `sql/<name>.sql`; `params` bind its `$name` parameters."""
    text = sql_text(name)
    cur = con.execute(text, params) if params else con.execute(text)
    return cur.to_arrow_table()


def rows(con: duckdb.DuckDBPyConnection, name: str, /, **params: Any) -> list[dict[str, Any]]:
    """`run_sql` as a list of dicts: for tests and small CLI tables."""
    return run_sql(con, name, **params).to_pylist()
