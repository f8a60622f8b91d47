"""Status / category / code literals in sql/ are the ones verifiers/ defines."""

from __future__ import annotations

import re

from lake.db import SQL_DIR
from verifiers.contract import Status
from verifiers.taxonomy import CATEGORIES, CODES

COLUMNS = {
    "status": {s.value for s in Status},
    "category": set(CATEGORIES),
    "code": set(CODES),
}
# `status = 'x'`, `v.code <> 'x'`, `category IN ('x', 'y')`
COMPARISON = re.compile(
    r"\b(?:\w+\.)?(status|category|code)\s*(?:=|<>|!=|\bIN\s*\()\s*((?:'[^']*'\s*,?\s*)+)",
    re.IGNORECASE,
)


def literals_in(text: str) -> list[tuple[str, str]]:
    return [
        (m.group(1).lower(), lit)
        for m in COMPARISON.finditer(text)
        for lit in re.findall(r"'([^']*)'", m.group(2))
    ]


def test_the_scanner_sees_comparisons() -> None:
    text = "WHERE v.status <> 'pass' AND code IN ('a', 'b') OR category='x'"
    assert literals_in(text) == [
        ("status", "pass"),
        ("code", "a"),
        ("code", "b"),
        ("category", "x"),
    ]


def test_sql_literals_exist_in_python() -> None:
    files = sorted(SQL_DIR.rglob("*.sql"))
    assert files
    unknown = [
        f"{path.relative_to(SQL_DIR)}: {column} '{lit}'"
        for path in files
        for column, lit in literals_in(path.read_text())
        if lit not in COLUMNS[column]
    ]
    assert not unknown, "define these in verifiers/taxonomy.py or contract.Status: " + "; ".join(
        unknown
    )
