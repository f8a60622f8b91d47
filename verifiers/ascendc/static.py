"""Static checks on AscendC C++ (placeholder: filled in by the static-checks change)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    code: str  # taxonomy code
    status: str  # the verdict status it gives
    line: int | None  # 1-based line in `file`
    file: str
    message: str  # what is wrong, for the feedback
    rationale: str  # why the rule exists


def check(
    files: dict[str, str], kernel: str, host: str | None, tiling: str | None, path: str
) -> list[Finding]:
    return []
