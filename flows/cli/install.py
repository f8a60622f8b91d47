"""The top-level module names the distribution installs, checked to be Crucible's.

The wheel installs `verifiers`, `generators`, `lake`, `ray_actors` and `flows` as top-level
modules. Four of those names are also distributions on PyPI (`verifiers` is Prime
Intellect's RL environments, which an RL user may well install beside Crucible): whichever
is installed second overwrites the other's files in site-packages, or shadows it from
earlier on `sys.path`. Moving Crucible's code under one `crucible.` namespace removes the
clash and is planned as a change of its own (every import and `python -m verifiers.<domain>`
line moves with it); until then the command refuses to run on a mixed install, in one line
that names the other owner, instead of failing somewhere inside with an ImportError.

Each of Crucible's top-level `__init__.py` holds `__crucible__ = True`; the check reads those
files (no import: a foreign `verifiers` may not even import) and costs well under 1 ms."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

TOP_LEVEL = ("verifiers", "generators", "lake", "ray_actors", "flows")
MARK = "__crucible__ = True"


def foreign_modules() -> list[tuple[str, str]]:
    """(name, where) for each top-level module that is not Crucible's own copy."""
    bad: list[tuple[str, str]] = []
    roots: set[Path] = set()
    for name in TOP_LEVEL:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec else None
        if origin is None or not origin.endswith("__init__.py"):
            bad.append((name, origin or "missing"))
            continue
        try:
            ours = MARK in Path(origin).read_text(encoding="utf-8", errors="replace")
        except OSError:
            ours = False
        if not ours:
            bad.append((name, str(Path(origin).parent)))
        roots.add(Path(origin).parents[1])
    if not bad and len(roots) > 1:  # each ours, but from two installs: one shadows the other
        bad = [(n, str(importlib.util.find_spec(n).origin)) for n in TOP_LEVEL]
    return bad


def _owners(name: str) -> list[str]:
    """The installed distributions that declare a top-level module `name` (slow: error path)."""
    from importlib.metadata import packages_distributions

    return sorted(set(packages_distributions().get(name, [])))


def check_modules() -> None:
    """Exit 2 with one line when a top-level module of Crucible's is someone else's."""
    bad = foreign_modules()
    if not bad:
        return
    name, where = bad[0]
    others = [d for d in _owners(name) if d.replace("_", "-") != "crucible-data"]
    by = f" (installed by {', '.join(others)})" if others else ""
    print(
        f"error: the module `{name}` at {where} is not Crucible's{by}: Crucible installs "
        f"top-level modules named {', '.join(TOP_LEVEL)}; install crucible-data in a venv "
        "of its own",
        file=sys.stderr,
    )
    raise SystemExit(2)
