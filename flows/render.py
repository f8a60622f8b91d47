"""Rich rendering of verdicts and query results for the CLI."""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from verifiers.contract import Status, Verdict

STATUS_STYLE = {
    Status.PASS: "bold green",
    Status.INFRA_ERROR: "bold magenta",
    Status.SLOW: "yellow",
}


def verdict_panel(v: Verdict, title: str = "") -> Panel:
    head = Text.assemble(
        ("status ", "dim"),
        (v.status.value, STATUS_STYLE.get(v.status, "bold red")),
        ("   code ", "dim"),
        (v.code or "-", "bold"),
        ("   category ", "dim"),
        (v.category or "-", ""),
        ("   ", ""),
        (f"{v.duration_ms:.0f} ms", "dim"),
    )
    checks = Table(box=None, pad_edge=False, show_edge=False)
    for col in ("gate", "ok", "seconds", "detail"):
        checks.add_column(col, overflow="fold")
    for c in v.checks:
        checks.add_row(
            c.name,
            "[green]yes[/]" if c.ok else "[red]no[/]",
            f"{c.seconds:.3f}",
            escape(c.detail.splitlines()[0][:100]) if c.detail else "",
        )
    metrics = {k: m for k, m in v.metrics.items() if k != "tool_runs"}
    parts: list[Any] = [head, checks]
    if metrics:
        parts.append(Text("metrics " + json.dumps(metrics, sort_keys=True), style="dim"))
    if v.feedback:
        parts.append(Panel(Text(v.feedback), title="feedback", border_style="dim"))
    return Panel(Group(*parts), title=title or f"verdict {v.verdict_id[:12]}")


# Longest cell a table shows whole; longer cells (and every line break) are cut to this.
MAX_CELL = 60
CUT = "…"


def rows_table(
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    max_cell: int | None = MAX_CELL,
    cut_note: str = "",
) -> Table:
    """A table of rows, one cell per column (columns are positional: duplicates are safe).

    Cells are `cell()` text; with `max_cell`, one longer than that (or of several lines)
    is cut to its first `max_cell` characters and ends in `…`, and `cut_note` (how to see
    them whole) becomes the caption when any cell was cut.
    """
    table = Table(title=title, title_justify="left", caption_justify="left")
    for col in columns:
        table.add_column(escape(col), overflow="fold")
    cut = False
    for row in rows:
        texts = []
        for x in row:
            text = cell(x)
            if max_cell is not None:
                short = clip(text, max_cell)
                cut = cut or short != text
                text = short
            texts.append(escape(text))
        table.add_row(*texts)
    if cut and cut_note:
        table.caption = f"{CUT} cells cut at {max_cell} characters: {cut_note}"
    return table


def clip(text: str, limit: int) -> str:
    """`text` on one line of at most `limit` characters, ending in `…` where it was cut."""
    first, _, rest = text.partition("\n")
    if len(first) <= limit and not rest:
        return text
    return first[: max(limit - 1, 0)].rstrip() + CUT


def cell(x: Any) -> str:
    """A value as a table shows it: floats rounded, dicts and lists as compact JSON."""
    if x is None:
        return ""
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, float | Decimal):
        return number(float(x))
    if isinstance(x, dict | list | tuple):
        return compact_json(x)
    return str(x)


def number(x: float) -> str:
    """Three decimals (rates, seconds); significant digits where those would show 0.000."""
    if x != x or x in (float("inf"), float("-inf")):
        return str(x)
    if x != 0 and abs(x) < 0.0005:
        return f"{x:.3g}"
    return f"{x:.3f}"


def compact_json(x: Any) -> str:
    return json.dumps(x, separators=(",", ":"), ensure_ascii=False, default=str)


def console() -> Console:
    return Console()
