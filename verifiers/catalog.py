"""Load task directories (`tasks/<domain>/<name>/task.toml` + files) into Task records.

Every problem is refused with the file, the field and what is expected, so a malformed
task never reaches the lake. The field rules are tables (data), checked in one place.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifiers.contract import DOMAINS, SPLITS, Task


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


def _nonempty(v: Any) -> bool:
    return bool(str(v).strip())


TOP_FIELDS = (
    Field("name", str, "the task's slug, equal to its directory name", check=_nonempty),
    Field("family", str, "a non-empty family name", check=_nonempty),
    Field("level", int, "an integer level 1, 2 or 3", check=lambda v: v in (1, 2, 3)),
    Field("requirement", str, "the plain-language requirement (non-empty)", check=_nonempty),
    Field("split", str, f"one of {', '.join(SPLITS)}", required=False, check=lambda v: v in SPLITS),
    Field("source", str, "where the task came from", required=False, check=_nonempty),
    Field("interface", dict, "a [interface] table"),
    Field("platform", dict, "a [platform] table", required=False),
    Field("harness", dict, "a [harness] table"),
)


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


# Domain hooks: turn the parsed toml (already checked for the common fields) into the
# domain-specific parts of a Task: (interface, harness, reference). Imported lazily so
# loading one domain's catalog does not need another domain's tools.
def _rtl_hook(toml_path: Path, spec: dict) -> tuple[dict, dict, str | None]:
    from verifiers.rtl.spec import load_rtl_spec

    return load_rtl_spec(toml_path, spec)


def _kernel_hook(toml_path: Path, spec: dict) -> tuple[dict, dict, str | None]:
    from verifiers.kernels.spec import load_kernel_spec

    return load_kernel_spec(toml_path, spec)


def _cad_hook(toml_path: Path, spec: dict) -> tuple[dict, dict, str | None]:
    from verifiers.cad.spec import load_cad_spec

    return load_cad_spec(toml_path, spec)


DOMAIN_HOOKS: dict[str, Callable[[Path, dict], tuple[dict, dict, str | None]]] = {
    "rtl": _rtl_hook,
    "cuda": _kernel_hook,
    "triton": _kernel_hook,
    "cad": _cad_hook,
}


def load_task(task_dir: Path | str, domain: str | None = None) -> Task:
    task_dir = Path(task_dir)
    toml_path = task_dir / "task.toml"
    domain = domain or task_dir.parent.name
    if domain not in DOMAINS:
        raise TaskSpecError(
            toml_path,
            "domain",
            f"a task under tasks/<domain>/ with domain one of {', '.join(DOMAINS)}",
            domain,
        )
    if not toml_path.is_file():
        raise TaskSpecError(toml_path, "task.toml", "a task.toml file in the task directory")
    try:
        spec = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise TaskSpecError(toml_path, "(file)", f"valid TOML ({e})") from None
    check_fields(toml_path, spec, TOP_FIELDS)
    if spec["name"] != task_dir.name:
        raise TaskSpecError(
            toml_path, "name", f"the directory name {task_dir.name!r}", spec["name"]
        )
    if spec.get("domain", domain) != domain:
        raise TaskSpecError(
            toml_path, "domain", f"{domain!r} (the catalog folder)", spec.get("domain")
        )
    hook = DOMAIN_HOOKS.get(domain)
    if hook is None:
        raise TaskSpecError(
            toml_path,
            "domain",
            f"a domain with a catalog loader ({', '.join(DOMAIN_HOOKS)})",
            domain,
        )
    interface, harness, reference = hook(toml_path, spec)
    return Task(
        name=spec["name"],
        domain=domain,
        family=spec["family"],
        level=spec["level"],
        requirement=spec["requirement"].strip(),
        interface=interface,
        platform=spec.get("platform", {}),
        reference=reference,
        harness=harness,
        source=spec.get("source", "crucible"),
        split=spec.get("split", "train"),
    )


def load_catalog(
    root: Path | str, domains: Iterable[str] | None = None, names: Iterable[str] | None = None
) -> tuple[list[Task], list[TaskSpecError]]:
    """Every task under `root/<domain>/`; bad ones come back as errors, not tasks."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(
            f"task catalog {root} does not exist (expected tasks/<domain>/<name>/)"
        )
    wanted = set(names) if names is not None else None
    tasks, errors = [], []
    for domain in sorted(domains or DOMAINS):
        ddir = root / domain
        if not ddir.is_dir():
            continue
        for task_dir in sorted(p for p in ddir.iterdir() if p.is_dir()):
            if wanted is not None and task_dir.name not in wanted:
                continue
            try:
                tasks.append(load_task(task_dir, domain))
            except TaskSpecError as e:
                errors.append(e)
    return tasks, errors


def parse_python(source: str, where: Path | str, field: str) -> ast.Module:
    """The module's syntax tree, or a TaskSpecError naming the field, line and message."""
    try:
        return ast.parse(source)
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
