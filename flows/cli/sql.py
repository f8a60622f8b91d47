"""`crucible sql`: DuckDB over the lake, one query or a shell."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from flows import render
from flows.cli.base import (
    app,
    say_error,
)
from flows.options import (
    DEFAULT_LAKE,
    LakeOpt,
    UserError,
    lake_text,
    require_lake,
)

DEFAULT_MAX_ROWS = 40  # a screen of rows: `SELECT * FROM candidates` is not 14,000 lines
FORMATS = ("table", "json", "csv")


@app.command(
    short_help="Query the lake with DuckDB (one query or a shell).",
    rich_help_panel="Lake",
    needs=("lake",),
)
def sql(
    query: Annotated[
        str | None,
        typer.Argument(
            help="A shipped query's name (a single word: pass_rates, error_taxonomy, ...), "
            "a .sql file, or SQL text. Left out: an interactive shell on the lake.",
            show_default=False,
        ),
    ] = None,
    lake: LakeOpt = DEFAULT_LAKE,
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param",
            "-p",
            metavar="NAME=VALUE",
            help="Bind the query's $NAME (repeatable). A VALUE that parses as JSON is that "
            '(3, true, null, \'["a","b"]\'), anything else a string (\'"123"\' for digits).',
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Rows as JSON lines.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Rows as CSV with a header.")] = False,
    wide: Annotated[
        bool,
        typer.Option("--wide", help="Show whole cells in the table (default: cut at 60)."),
    ] = False,
    max_rows: Annotated[
        int,
        typer.Option(
            "--max-rows",
            min=0,
            help="Rows the table shows, titled `first N of M rows` when there are more "
            "(0: all). --json and --csv write every row.",
        ),
    ] = DEFAULT_MAX_ROWS,
    duckdb_script: Annotated[
        bool,
        typer.Option(
            "--duckdb-script",
            help="Print a SQL script that opens the lake in plain DuckDB, offline (`duckdb "
            "-init FILE`, or execute it in Python's duckdb), and exit.",
        ),
    ] = False,
) -> None:
    """Query the lake with DuckDB: every table is a view (tasks, candidates, verdicts,
    artifacts, trajectories, dedup, exports, runs; raw_<table> without the dedupe), with
    the views of sql/views (latest_verdicts, checks, metrics, ...; docs/lake.md). With no
    QUERY, a shell: statements end with `;`; `.tables`, `.schema [NAME]`, `.mode
    table|json|csv`, `.maxrows N`, `.queries`, `.quit` or Ctrl-D; it reads statements from
    stdin when stdin is not a terminal.

    Output columns are unique in every format: a repeated name gets DuckDB's suffix
    (`SELECT 1 AS a, 2 AS a` shows a, a_1). The table rounds floats to 3 decimals and
    cuts long cells (--wide, --json or --csv show them whole). The lake is opened
    read-only: a path that is not a lake is refused, never created."""
    import duckdb

    from lake import db
    from lake.store import LakeError

    con = render.console()
    if as_json and as_csv:
        raise UserError("pick one of --json and --csv")
    out = _Output("json" if as_json else "csv" if as_csv else "table", wide, max_rows)
    if duckdb_script:
        if query is not None or param:
            raise UserError("--duckdb-script takes no QUERY or --param: it prints the script")
        try:
            typer.echo(db.duckdb_script(require_lake(lake)), nl=False)
        except (LakeError, UserError) as e:
            say_error(str(e), "lake error:")
            raise typer.Exit(2) from None
        return
    try:  # the query and its parameters are checked before the lake is opened
        params = db.parse_params(param or [])
        text, what = _sql_query_text(query, db) if query is not None else ("", "")
        if query is not None:
            db.check_params(text, params, what)
        elif params:
            raise LakeError("--param needs a QUERY (in the shell, write values in the SQL)")
    except LakeError as e:
        say_error(str(e))
        raise typer.Exit(2) from None
    try:
        duck = db.connect(require_lake(lake))
    except (LakeError, UserError) as e:
        say_error(str(e), "lake error:")
        raise typer.Exit(2) from None
    try:
        if query is None:
            failed = _sql_shell(duck, con, Path(lake), out)
            if failed:
                raise typer.Exit(1)
            return
        try:
            table = db.arrow(duck.execute(text, params) if params else duck.execute(text))
        except duckdb.Error as e:
            say_error(str(e), "query failed:")
            raise typer.Exit(1) from None
        _sql_print(con, table, out)
    finally:
        duck.close()


def _sql_query_text(query: str, db) -> tuple[str, str]:
    """The SQL a QUERY argument stands for, and what to call it in messages. One word is a
    shipped query's name; a path ending in .sql is a file; anything else is SQL text."""
    from lake.store import LakeError

    if db.is_query_name(query):
        name = query.strip()
        if name not in db.available_sql():
            from lake.schema import TABLES

            hint = f" (a table: crucible sql 'SELECT * FROM {name}')" if name in TABLES else ""
            raise LakeError(db.unknown_query(name) + hint)
        return db.sql_text(name), f"query {name!r}"
    if query.strip().endswith(".sql") and "\n" not in query:
        path = Path(query.strip())
        if not path.is_file():
            raise LakeError(f"no file {path} (a shipped query is named without .sql)")
        return path.read_text(), str(path)
    return query, "the query"


@dataclass
class _Output:
    """How results print: `.mode` and `.maxrows` change it in the shell."""

    fmt: str  # table, json or csv
    wide: bool
    max_rows: int  # table rows shown; 0: all


def _sql_print(con, table, out: _Output) -> None:
    """One result in the chosen format; `table`'s column names are unique already. The
    table shows its first `max_rows` rows and says how many there are."""
    import csv

    names = table.column_names
    total = table.num_rows
    title = f"{total:,} row{'s' if total != 1 else ''}"
    cut = out.fmt == "table" and out.max_rows and total > out.max_rows
    if cut:
        table = table.slice(0, out.max_rows)
    records = [list(r) for r in zip(*(c.to_pylist() for c in table.columns), strict=True)]
    if out.fmt == "json":
        for r in records:
            row = dict(zip(names, r, strict=True))
            typer.echo(json.dumps(row, default=str, ensure_ascii=False))
    elif out.fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(names)
        for r in records:
            writer.writerow([_csv_value(x) for x in r])
    else:
        con.print(
            render.rows_table(
                title,
                names,
                records,
                max_cell=None if out.wide else render.MAX_CELL,
                cut_note="--wide, --json or --csv shows them whole",
            )
        )
        if cut:  # a line of its own: a title or caption wraps at the table's width
            con.print(
                f"first {out.max_rows} of {total:,} rows shown (all: --max-rows 0 or .maxrows 0)",
                highlight=False,
            )


def _csv_value(x):
    """As DuckDB's own CSV writer: true/false, nested values as JSON, null as empty."""
    if isinstance(x, bool):
        return str(x).lower()
    return render.compact_json(x) if isinstance(x, dict | list) else x


SHELL_HELP = (
    "SQL ends with `;` (DuckDB's dialect). .tables: the tables and views; .schema [NAME]: "
    "their columns and types; .mode [table|json|csv]: the output format; .maxrows [N]: rows "
    "a table shows (0: all); .queries: the shipped queries and their $parameters (run one "
    "with `crucible sql NAME --param k=v`); .quit or Ctrl-D: leave."
)
SHELL_COMMANDS = ".tables .schema .mode .maxrows .queries .help .quit"


def _sql_shell(duck, con, lake: Path, out: _Output) -> int:
    """A read-eval-print loop over one lake connection; returns how many statements failed.

    A statement runs once a line ends with `;`; a line starting with `.` is a command.
    Without a terminal on stdin there is no prompt and no banner: statements are read
    from stdin (a script, a pipe), and what is left at its end without `;` runs too."""
    import duckdb
    from rich.markup import escape

    from lake import db

    interactive = sys.stdin.isatty()
    if interactive:
        import contextlib

        with contextlib.suppress(ImportError):
            import readline  # noqa: F401  (line editing and history for input())
        con.print(
            f"DuckDB on lake {escape(lake_text(lake))}: every table and view is ready. End a "
            "statement with `;`; `.tables`, `.schema`, `.mode`, `.help`, `.quit` or Ctrl-D."
        )
    failed = 0
    buf: list[str] = []

    def run(text: str) -> None:
        nonlocal failed
        try:
            statements = duck.extract_statements(text)
            for st in statements:
                table = db.arrow(duck.execute(st.query))
                if st is statements[-1] or table.num_rows:
                    _sql_print(con, table, out)
        except duckdb.Error as e:
            failed += 1
            con.print(f"[bold red]query failed:[/] {escape(str(e))}")

    while True:
        try:
            line = input(("crucible> " if not buf else "     ...> ") if interactive else "")
        except EOFError:
            if interactive:
                con.print()
            break
        except KeyboardInterrupt:  # drop the statement being typed, as DuckDB's shell does
            buf.clear()
            con.print()
            continue
        if not buf and line.strip().startswith("."):
            word, *args = line.strip().split()
            if word in (".quit", ".exit"):
                break
            problem = _shell_command(duck, con, out, word, args)
            if problem:
                failed += 0 if interactive else 1
                con.print(f"[bold red]{escape(problem)}[/]")
            continue
        buf.append(line)
        if line.rstrip().endswith(";"):
            run("\n".join(buf))
            buf.clear()
    if "\n".join(buf).strip():
        run("\n".join(buf))
    return 0 if interactive else failed


def _shell_command(duck, con, out: _Output, word: str, args: list[str]) -> str:
    """Run one `.command`; what was wrong with it, or "" when it ran."""
    import duckdb
    from rich.markup import escape

    from lake import db

    names = sorted(r[0] for r in duck.execute("SHOW TABLES").fetchall())
    if word == ".tables":
        con.print(escape(" ".join(names)))
    elif word == ".schema":
        wanted = args or names
        unknown = [n for n in wanted if n not in names]
        if unknown:
            return f"no table or view {', '.join(unknown)} (.tables lists them)"
        for name in wanted:
            try:
                cols = duck.execute(f"DESCRIBE {db.ident(name)}").fetchall()
            except duckdb.Error as e:  # a view over a table that is gone
                return f"{name}: {e}"
            if args:
                con.print(render.rows_table(name, ["column", "type"], [c[:2] for c in cols]))
            else:
                con.print(escape(f"{name}({', '.join(f'{c[0]} {c[1]}' for c in cols)})"))
    elif word == ".mode":
        if not args:
            con.print(out.fmt)
        elif args[0] in FORMATS:
            out.fmt = args[0]
        else:
            return f".mode {args[0]}: one of {', '.join(FORMATS)}"
    elif word == ".maxrows":
        if not args:
            con.print(str(out.max_rows))
        elif args[0].isdigit():
            out.max_rows = int(args[0])
        else:
            return f".maxrows {args[0]}: a number of rows (0: all)"
    elif word == ".queries":
        for name in db.available_sql():
            takes = db.sql_params(db.sql_text(name))
            con.print(name + "".join(f" ${p}" for p in takes))
    elif word == ".help":
        con.print(escape(SHELL_HELP))
    else:
        return f"unknown command {word}: {SHELL_COMMANDS}"
    return ""
