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
