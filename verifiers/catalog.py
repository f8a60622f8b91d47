"""Load task directories (`tasks/<domain>/<name>/task.toml` + files) into Task records.

Every problem is refused with the file, the field and what is expected, so a malformed
task never reaches the lake. The field rules are tables (data), checked in one place.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from verifiers import domain as all_domains
from verifiers.contract import SPLITS, Task
from verifiers.specfields import (  # noqa: F401 (re-exported: loaders and callers use them)
    Field,
    TaskSpecError,
    check_fields,
    parse_python,
    read_task_file,
)


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


def load_task(task_dir: Path | str, domain: str | None = None) -> Task:
    task_dir = Path(task_dir)
    toml_path = task_dir / "task.toml"
    domain = domain or task_dir.parent.name
    try:
        desc = all_domains.get(domain)
    except all_domains.UnknownDomain:
        raise TaskSpecError(
            toml_path,
            "domain",
            f"a task under tasks/<domain>/ with domain one of {', '.join(all_domains.names())}",
            domain,
        ) from None
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
    # the domain's own loader, imported on first use: loading one domain's catalog never
    # needs another domain's tools
    loader = all_domains.load_dotted(desc.spec_loader)
    interface, harness, reference = loader(toml_path, spec)
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
    for domain in sorted(domains or all_domains.names()):
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
