"""DuckDB over the lake: one view per table (deduped by id) plus every `sql/` file by name.

What a query is (`crucible sql`, and every stage): a single identifier-like word is the
name of a shipped `sql/<name>.sql` file; its `$name`s are its parameters. Result columns
are made unique the way DuckDB names a subquery's duplicates (`a`, `a_1`), so a row as a
dict never loses a value and every output format shows the same headers.

The delta extension is loaded from the `duckdb-extension-delta` wheel, never downloaded:
nodes have no network, and DuckDB's autoinstall would otherwise try. A lake on S3 also
loads httpfs from the `duckdb-extension-httpfs` wheel, and DuckDB reads the tables itself
with an S3 secret made from the lake's settings (lake/objectstore.py).
"""

from __future__ import annotations

import difflib
import importlib
import json
import os
import re
import threading
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from lake.schema import TABLES
from lake.store import Lake, LakeError
from verifiers.datadirs import data_dir

SQL_DIR = data_dir("sql")  # the checkout's sql/, or the wheel's copy when installed
VIEWS_DIR = SQL_DIR / "views"


def _pip_hint(name: str) -> str:
    return f"pip install 'duckdb-extension-{name}=={duckdb.__version__}'"


def extension_path(name: str) -> Path:
    """The `<name>.duckdb_extension` file shipped in the pip package `duckdb-extension-
    <name>` matching this DuckDB."""
    hint = _pip_hint(name)
    try:
        module = importlib.import_module(f"duckdb_extension_{name}")
    except ImportError:
        raise LakeError(f"the DuckDB {name} extension is not installed: {hint}") from None
    pkg = Path(module.__file__ or "").parent
    exact = pkg / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if exact.is_file():
        return exact
    found = sorted(pkg.rglob("*.duckdb_extension"))
    raise LakeError(
        f"no {name} extension for DuckDB {duckdb.__version__} in {pkg} (found: "
        f"{', '.join(str(p.relative_to(pkg)) for p in found) or 'none'}); the two versions "
        f"must match exactly: {hint}"
    )


def delta_extension_path() -> Path:
    return extension_path("delta")


def load_delta(con: duckdb.DuckDBPyConnection, lake: Lake | None = None) -> None:
    """Load the delta extension offline, and set what every lake connection needs; for a
    lake on S3, httpfs too and the secret that reaches it."""
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    # DuckDB 1.5.5 crashed (SIGSEGV in BloomFilter::LookupHashes) in the writer's semi-join
    # of a batch's ids against a delta_scan, in a 2,000-candidate pipeline run; its
    # runtime join filters (bloom filters) have open wrong-result and race reports
    # (duckdb#22075, #25702). Our joins are small: correctness first.
    con.execute("SET disabled_optimizers = 'join_filter_pushdown'")
    if lake is not None and lake.s3 is not None:
        con.execute(f"LOAD {quote(str(extension_path('httpfs')))}")
        con.execute(lake.s3_settings.duckdb_secret(lake.s3))
    con.execute(f"LOAD {quote(str(delta_extension_path()))}")


_instance_lock = threading.Lock()
_shared: tuple[int, duckdb.DuckDBPyConnection] | None = None  # (pid, its instance)


def _instance() -> duckdb.DuckDBPyConnection:
    """This process's DuckDB instance, the delta extension loaded once. LOAD checks the
    extension's signature, a hash over its 82 MB: 0.15 s of CPU each time, which per
    connection was most of what a connection cost (a pipeline run opens a dozen). A
    connection is a cursor of this instance: the extension and the settings of
    `load_delta` (all global) are shared, everything else is the cursor's own (its temp
    views, registered tables). A forked child makes its own: an instance is never used
    across a fork."""
    global _shared
    pid = os.getpid()
    with _instance_lock:
        if _shared is None or _shared[0] != pid:
            con = duckdb.connect(":memory:")
            load_delta(con)
            _shared = (pid, con)
        return _shared[1]


def new_connection(lake: Lake | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection that can `delta_scan` the lake: a cursor of this process's
    instance for a local lake; for a lake on S3 an instance of its own, with httpfs and
    the secret that reaches that lake (a secret is instance-wide: never shared)."""
    if lake is not None and lake.s3 is not None:
        con = duckdb.connect(":memory:")
        try:
            load_delta(con, lake)
        except BaseException:
            con.close()
            raise
        return con
    return _instance().cursor()


def quote(text: str) -> str:
    """A SQL string literal (for paths and partition values, which cannot be parameters)."""
    return "'" + text.replace("'", "''") + "'"


def ident(name: str) -> str:
    """A SQL identifier, quoted."""
    return '"' + name.replace('"', '""') + '"'


def scan(lake: Lake, table: str) -> str:
    """The `delta_scan(...)` expression for one table (latest version at each query)."""
    return f"delta_scan({quote(lake.table_uri(table))})"


_CREATE_VIEW = re.compile(r"\bCREATE\s+OR\s+REPLACE\s+VIEW\b", re.IGNORECASE)


def view_sql() -> list[str]:
    """The `sql/views/` files in name order (views may build on each other: prefix a
    number to order them)."""
    return [path.read_text() for path in sorted(VIEWS_DIR.glob("*.sql"))]


def connect(
    lake: Lake | str | os.PathLike[str], *, readonly: bool = False, database: str = ":memory:"
) -> duckdb.DuckDBPyConnection:
    """A connection with `raw_<table>` (every row) and `<table>` (one row per id) views,
    and every `sql/views/` file's view.

    Given a path, opens the lake (creating it unless `readonly`). The views are the
    connection's own (TEMP: gone with it, unseen by any other connection of the process's
    shared instance, see `_instance`); with a `database` file they are written into it.

    The dedupe costs one window over the id column, ~0.14 s per million rows on two cores
    (a plain scan + GROUP BY is ~0.015 s): every exact dedupe has to hash all ids, and this
    is the cheapest form measured (see bench/bench_lake.py).
    """
    lake = lake if isinstance(lake, Lake) else Lake(lake, readonly=readonly)
    if database == ":memory:":
        con, kind = new_connection(lake), "TEMP VIEW"
    else:
        con, kind = duckdb.connect(database), "VIEW"
    try:
        if database != ":memory:":
            load_delta(con, lake)
        for statement in view_statements(lake, kind):
            con.execute(statement)
    except BaseException:
        con.close()
        raise
    return con


_DUCK_TYPES = {"string": "VARCHAR", "int64": "BIGINT", "double": "DOUBLE", "bool": "BOOLEAN",
               "timestamp[us]": "TIMESTAMP"}  # fmt: skip


def _empty(schema: pa.Schema) -> str:
    """A table of `schema` with no rows: what a read-only view shows for a table the lake
    was made before (`Lake.absent`)."""
    cols = ", ".join(f"NULL::{_DUCK_TYPES[str(f.type)]} AS {ident(f.name)}" for f in schema)
    return f"(SELECT {cols} WHERE false)"


def view_statements(lake: Lake, kind: str = "VIEW") -> list[str]:
    """What `connect` runs once the delta extension is loaded: `raw_<table>` and `<table>`
    for every table, then every `sql/views/` file."""
    out: list[str] = []
    for name, spec in TABLES.items():
        source = _empty(spec.schema) if name in lake.absent else scan(lake, name)
        out.append(f"CREATE OR REPLACE {kind} raw_{name} AS SELECT * FROM {source}")
        out.append(
            f"CREATE OR REPLACE {kind} {name} AS SELECT * FROM raw_{name} QUALIFY "
            f"row_number() OVER (PARTITION BY {spec.id_column} "
            f"ORDER BY {spec.order_by}) = 1"
        )
    out += [_CREATE_VIEW.sub(f"CREATE OR REPLACE {kind}", text) for text in view_sql()]
    return out


def duckdb_script(lake: Lake) -> str:
    """A SQL script that opens the lake in a plain DuckDB of this version (its CLI, `duckdb
    -init FILE`, or `duckdb.connect().execute(script)`), offline: the delta extension is
    loaded from the wheel's file, never downloaded, and every view `connect` makes is made.
    For a lake on S3 the script loads httpfs but holds no credentials: it says where the
    user's own CREATE SECRET goes."""
    lines = [
        f"-- Crucible lake {lake.root}: its tables and views for DuckDB {duckdb.__version__}",
        "-- (`crucible sql --duckdb-script`; the delta extension file must match that version)",
        "SET autoinstall_known_extensions = false;",
        "SET autoload_known_extensions = false;",
        "SET disabled_optimizers = 'join_filter_pushdown';  -- as Crucible's own connections",
    ]
    if lake.s3 is not None:
        lines += [
            f"LOAD {quote(str(extension_path('httpfs')))};",
            f"-- add your CREATE SECRET (TYPE s3, KEY_ID ..., SECRET ..., SCOPE "
            f"{quote(lake.s3.url)}) here: no credentials are written into this script",
        ]
    lines.append(f"LOAD {quote(str(delta_extension_path()))};")
    for s in view_statements(lake):  # a view file may end in a comment: `;` on its own line
        lines.append(s.rstrip() if s.rstrip().endswith(";") else s.rstrip() + "\n;")
    return "\n".join(lines) + "\n"


def available_sql() -> list[str]:
    """Names `run_sql` accepts: `sql/<name>.sql`, views excluded."""
    return sorted(p.stem for p in SQL_DIR.glob("*.sql"))


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_query_name(text: str) -> bool:
    """A single identifier-like word names a shipped query; anything else is SQL or a file."""
    return _NAME.fullmatch(text.strip()) is not None


def unknown_query(name: str) -> str:
    """What to say about a query name that is not shipped: the close ones, then all."""
    known = available_sql()
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return f"no query named {name!r}{hint} known: {', '.join(known)}"


def sql_text(name: str) -> str:
    path = SQL_DIR / f"{name}.sql"
    if not is_query_name(name) or not path.is_file():
        raise LakeError(unknown_query(name))
    return path.read_text()


# String literals, quoted identifiers and comments: a `$` inside them is not a parameter
# (`json_extract_string(metrics, '$.key')`).
_NOT_CODE = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", re.DOTALL)
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def sql_params(text: str) -> list[str]:
    """The `$name` parameters a query takes, in order of first use."""
    code = _NOT_CODE.sub(" ", text)
    return list(dict.fromkeys(_PARAM.findall(code)))


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """`k=v` pairs to parameters: a value that parses as JSON is that (numbers, true,
    null, ["a","b"]), anything else is the string itself (quote it as JSON, '"123"', to
    pass digits as a string)."""
    params: dict[str, Any] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        key = key.strip().removeprefix("$")
        if not eq or not _NAME.fullmatch(key):
            raise LakeError(f"--param takes NAME=VALUE (e.g. --param domain=x), got {pair!r}")
        if key in params:
            raise LakeError(f"--param {key} given twice")
        try:
            params[key] = json.loads(value)
        except ValueError:
            params[key] = value
    return params


def check_params(text: str, params: dict[str, Any], what: str = "the query") -> None:
    """Refuse a missing or unknown parameter, naming the ones `text` takes."""
    takes = sql_params(text)
    listed = ", ".join(f"${p}" for p in takes) if takes else "no parameters"
    unknown = [k for k in params if k not in takes]
    if unknown:
        raise LakeError(
            f"{what} has no parameter {', '.join(f'${k}' for k in unknown)}; it takes {listed}"
        )
    missing = [p for p in takes if p not in params]
    if missing:
        example = " ".join(f"--param {p}=..." for p in missing)
        raise LakeError(
            f"{what} takes {listed}: missing {', '.join(f'${p}' for p in missing)} "
            f"(pass {example}; null for none)"
        )


def unique_columns(names: list[str]) -> list[str]:
    """Column names made unique exactly as DuckDB names a subquery's duplicates: a name
    met again (case-insensitively) gets `_1`, `_2`, ..., the first one free so far
    (`SELECT * FROM (SELECT 1 AS a, 2 AS a, 3 AS a_1)` is `a, a_1, a_1_1`)."""
    seen: set[str] = set()
    out = []
    for name in names:
        new, i = name, 0
        while new.lower() in seen:
            i += 1
            new = f"{name}_{i}"
        seen.add(new.lower())
        out.append(new)
    return out


def arrow(cursor: duckdb.DuckDBPyConnection) -> pa.Table:
    """A cursor's result with unique column names (`to_pylist` keeps one of two `a`s)."""
    table = cursor.to_arrow_table()
    names = unique_columns(table.column_names)
    return table if names == table.column_names else table.rename_columns(names)


def run_sql(con: duckdb.DuckDBPyConnection, name: str, /, **params: Any) -> pa.Table:
    """Run `sql/<name>.sql`; `params` bind its `$name` parameters."""
    text = sql_text(name)
    return arrow(con.execute(text, params) if params else con.execute(text))


def rows(con: duckdb.DuckDBPyConnection, name: str, /, **params: Any) -> list[dict[str, Any]]:
    """`run_sql` as a list of dicts: for tests and small CLI tables."""
    return run_sql(con, name, **params).to_pylist()
