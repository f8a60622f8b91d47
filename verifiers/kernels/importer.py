"""Import a directory of KernelBench-style problem files as cuda / triton tasks.

A problem file defines `Model(nn.Module)`, `get_inputs()` and `get_init_inputs()` (the
layout of KernelBench's `level1/19_ReLU.py`). Each becomes `dest/<domain>/<slug>/` with
the file copied verbatim as problem.py and a task.toml: no reference (imported tasks have
none), the level from the directory (`level2/`) or the task.toml default, split holdout by
default. Importing is deterministic.

The task follows KernelBench's own convention: the dtype is float32 unless the problem's
`get_inputs` makes its floating inputs in another one, with no atol/rtol override (the
dtype row, which is KernelBench's `get_tolerance_for_precision`: 1e-4 for float32, 1e-2
for float16/bfloat16), and `speed_bar = 0`: correctness decides, speed is recorded and
never makes a verdict `slow`.
"""

from __future__ import annotations

import re
from pathlib import Path

from verifiers import domain as domain_registry
from verifiers import pyast
from verifiers.kernels.spec import problem_facts
from verifiers.specfields import ImportProblems, TaskSpecError

# a floating dtype that get_inputs names -> the task's dtype row
_INPUT_DTYPES = {
    "float32": "float32",
    "float": "float32",
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "float64": "float64",
    "double": "float64",
}


def slug(path: Path, level: int) -> str:
    stem = re.sub(r"[^a-z0-9]+", "_", path.stem.lower()).strip("_")
    return f"kb_l{level}_{stem}"


def level_of(path: Path, default: int) -> int:
    for part in reversed(path.parts[:-1]):
        m = re.fullmatch(r"level_?(\d)", part.lower())
        if m and m.group(1) in "123":
            return int(m.group(1))
    return default


def _toml_str(text: str) -> str:
    return '"""\n' + text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"') + '\n"""'


def problem_dtype(source: str) -> str:
    """float32, unless get_inputs names one other floating dtype (`dtype=torch.float16`,
    `.half()`, `.to(torch.bfloat16)`)."""
    import ast

    found = set()
    for node in pyast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == "get_inputs":
            for sub in ast.walk(node):
                if not (isinstance(sub, ast.Attribute) and sub.attr in _INPUT_DTYPES):
                    continue
                on_torch = isinstance(sub.value, ast.Name) and sub.value.id == "torch"
                # torch.float16 anywhere, or a cast method: x.half(), x.bfloat16()
                if on_torch or sub.attr in ("half", "bfloat16", "double", "float"):
                    found.add(_INPUT_DTYPES[sub.attr])
    return found.pop() if len(found) == 1 else "float32"


def task_toml(
    name: str, level: int, source: str, split: str, doc: str, domain: str, dtype: str
) -> str:
    what = (
        "CUDA kernels (a CUDA_SRC string launched with cuda_kernel, or load_inline)"
        if (domain == "cuda")
        else "Triton kernels (@triton.jit)"
    )
    requirement = (
        f"Write ModelNew, a drop-in replacement for Model in problem.py (same __init__ and "
        f"forward signatures, same outputs within tolerance), computing with {what}.\n"
        + (f"Model: {doc.strip()}\n" if doc.strip() else "")
    )
    lines = [
        f'name = "{name}"',
        'family = "imported"',
        f"level = {level}",
        f'split = "{split}"',
        f'source = "{source}"',
        f"requirement = {_toml_str(requirement)}",
        "",
        "[interface]",
        'entry = "ModelNew"',
    ]
    if domain == "cuda":
        lines.append('path = "device"')
    lines += [
        "",
        "[platform]",
        'arch = "sm_90"',
        "",
        "[harness]",
        'problem = "problem.py"',
        f'dtype = "{dtype}"',
        "# KernelBench's convention: the dtype row's tolerance (no atol/rtol override);",
        "# correctness decides, speed is recorded but sets no bar",
        "trials = 5",
        "speed_bar = 0",
        "",
    ]
    return "\n".join(lines)


def _docstring(source: str) -> str:
    import ast

    for node in pyast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            return ast.get_docstring(node) or ""
    return ""


BENCHMARK = "kernelbench"  # the name descriptors give this importer (`Domain.importers`)


def import_kernelbench(
    src: Path,
    dest: Path,
    *,
    domains: tuple[str, ...] | None = None,
    split: str = "holdout",
    source: str = "kernelbench",
    level: int = 1,
) -> list[Path]:
    """Write one task per problem file per domain; raise ImportProblems listing the files
    that were skipped (the others are written). `domains`: by default every domain whose
    descriptor names this importer."""
    if domains is None:
        domains = domain_registry.importer(BENCHMARK)[1]
    files = sorted(p for p in Path(src).rglob("*.py") if not p.name.startswith("_"))
    if not files:
        raise ImportProblems([], [f"{src}: no .py problem files"])
    imported: list[Path] = []
    errors: list[str] = []
    seen: dict[str, Path] = {}
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
            problem_facts(text, path)
        except (TaskSpecError, UnicodeDecodeError) as e:
            errors.append(f"{path}: {e}")
            continue
        lvl = level_of(path.relative_to(src), level)
        name = slug(path, lvl)
        if name in seen:
            errors.append(f"{path}: its task name {name} is taken by {seen[name]}")
            continue
        seen[name] = path
        doc = _docstring(text)
        dtype = problem_dtype(text)
        for domain in domains:
            out = Path(dest) / domain / name
            out.mkdir(parents=True, exist_ok=True)
            (out / "problem.py").write_text(text, encoding="utf-8")
            (out / "task.toml").write_text(
                task_toml(name, lvl, source, split, doc, domain, dtype), encoding="utf-8"
            )
            imported.append(out)
    if errors:
        raise ImportProblems(imported, errors)
    return imported
