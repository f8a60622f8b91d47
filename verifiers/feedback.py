"""Bounded feedback: what a repair prompt shows must fit a budget."""

from __future__ import annotations


def trim(text: str, budget: int) -> str:
    """Keep the head and the tail of `text` within `budget` characters.

    Compiler errors matter most at the top and the final summary at the bottom, so the
    middle is what goes.
    """
    text = text or ""
    if len(text) <= budget:
        return text
    marker = "\n[... {} characters cut ...]\n"
    keep = max(0, budget - len(marker) - 8)
    head = keep * 2 // 3
    tail = keep - head
    cut = len(text) - head - tail
    return text[:head] + marker.format(cut) + (text[-tail:] if tail else "")


END_OF_OUTPUT = "(end of output)"


def first_line_difference(got: str, want: str) -> tuple[int, str, str]:
    """(index, got line, wanted line) of the first line where two outputs differ;
    END_OF_OUTPUT stands for a line one of them lacks. Equal lines at the index mean the
    two differ only in their line endings."""
    got_lines, want_lines = got.splitlines(), want.splitlines()
    i = next(
        (k for k, (a, b) in enumerate(zip(got_lines, want_lines, strict=False)) if a != b),
        min(len(got_lines), len(want_lines)),
    )
    g = got_lines[i] if i < len(got_lines) else END_OF_OUTPUT
    w = want_lines[i] if i < len(want_lines) else END_OF_OUTPUT
    return i, g, w
