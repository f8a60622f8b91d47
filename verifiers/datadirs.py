"""Where the project's data directories are: `sql/` (queries and views) and `tasks/` (the
built-in catalog).

In a checkout (and an editable install) they are the repository's own top-level dirs, so
editing them there takes effect at once. A wheel carries them as `crucible_data/sql` and
`crucible_data/tasks` next to the code packages (`setup.py` copies them in at build time),
and an installed copy reads those. Stdlib only: every layer (lake, flows) may ask.
"""

from __future__ import annotations

from pathlib import Path

DATA_DIRS = ("sql", "tasks")
PACKAGE = "crucible_data"  # the wheel's home for DATA_DIRS, beside verifiers/, lake/, ...

_ROOT = Path(__file__).resolve().parents[1]  # the checkout, or site-packages when installed


def data_dir(name: str) -> Path:
    """The directory `name` (one of DATA_DIRS): the wheel's packaged copy when this code runs
    from an installed wheel, else the checkout's own top-level dir."""
    if name not in DATA_DIRS:
        raise ValueError(f"no data dir named {name!r}; known: {', '.join(DATA_DIRS)}")
    packaged = _ROOT / PACKAGE / name
    return packaged if packaged.is_dir() else _ROOT / name
