"""The field helpers every task spec loader shares: the error that names the file and the
field, field rules as data, and reading the files a task.toml names.

A leaf module (stdlib only, imports nothing of Crucible's): the catalog and each domain's
spec loader import it, so neither imports the other.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifiers import pyast

__all__ = [
    "Field",
    "ImportProblems",
    "TaskSpecError",
    "check_fields",
    "parse_python",
    "read_task_file",
]


class TaskSpecError(ValueError):
    """A task spec that cannot be loaded: where, which field, what was expected."""

    def __init__(self, path: Path | str, field: str, expected: str, got: Any = None):
        self.path, self.field, self.expected, self.got = str(path), field, expected, got
        msg = f"{path}: field `{field}`: expected {expected}"
        if got is not None:
            msg += f", got {_show(got)}"
        super().__init__(msg)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True)
class Field:
    name: str
    kind: type | tuple[type, ...]
    expected: str
    required: bool = True
    check: Callable[[Any], bool] | None = None


def check_fields(path: Path, table: dict, fields: Iterable[Field], prefix: str = "") -> None:
    for f in fields:
        key = prefix + f.name
        if f.name not in table:
            if f.required:
                raise TaskSpecError(path, key, f"{f.expected} (missing)")
            continue
        value = table[f.name]
        # bool is an int in Python; a level of `true` is still a wrong type.
        wrong_type = not isinstance(value, f.kind) or (
            isinstance(value, bool) and f.kind in (int, float, (int, float))
        )
        if wrong_type or (f.check is not None and not f.check(value)):
            raise TaskSpecError(path, key, f.expected, value)


def parse_python(source: str, where: Path | str, field: str) -> ast.Module:
    """The module's syntax tree, or a TaskSpecError naming the field, line and message."""
    try:
        return pyast.parse(source)
    except SyntaxError as e:
        raise TaskSpecError(where, field, f"valid Python ({e.msg}, line {e.lineno})") from None


def read_task_file(toml_path: Path, field: str, relname: Any) -> str:
    """A file a task.toml field names, relative to the task directory."""
    if not isinstance(relname, str) or not relname.strip():
        raise TaskSpecError(toml_path, field, "a file name relative to the task directory", relname)
    path = (toml_path.parent / relname).resolve()
    if toml_path.parent.resolve() not in path.parents:
        raise TaskSpecError(toml_path, field, "a file inside the task directory", relname)
    if not path.is_file():
        raise TaskSpecError(toml_path, field, f"an existing file ({path} not found)", relname)
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TaskSpecError(toml_path, field, "a UTF-8 text file", relname) from None


class ImportProblems(Exception):
    """A benchmark importer imported some problems and not others: `errors` names each
    file it skipped (every domain's importer raises this one)."""

    def __init__(self, imported: list[Path], errors: list[str]):
        super().__init__(f"{len(errors)} problem(s) skipped:\n  " + "\n  ".join(errors))
        self.imported = imported
        self.errors = errors
