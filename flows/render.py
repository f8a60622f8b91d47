"""Rich rendering of verdicts and query results for the CLI."""

from __future__ import annotations

import json
from collections.abc import Sequence
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


def rows_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*(escape(_cell(x)) for x in row))
    return table


def _cell(x: Any) -> str:
    if x is None:
        return ""
    if isinstance(x, float):
        return f"{x:.3f}"
    return str(x)


def console() -> Console:
    return Console()
