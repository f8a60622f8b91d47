"""Import problems in the SuperCoder layout (Anjiang-Wei/SuperCoder, the
LLM4Code/llm_superoptimizer_ds dataset) as x86asm program tasks.

A problem there is a whole C program (CodeNet), the assembly gcc wrote for it, and test
cases as stdin / expected stdout; the candidate is the whole program's assembly, judged on
its exact output and its speed against the baseline. Read from:

- a dataset file (`.parquet`, `.jsonl`, `.json`): rows holding `extra_info` with
  `c_code`, `inputs`, `outputs` and the given assembly (`unoptimized_assembly`), as the
  Hugging Face dataset has them, or the same fields at the top level;
- a directory of the dataset's source layout: `TopCode/<id>.c` and
  `TopIO/<id>/input.<k>.txt` / `output.<k>.txt` (or such files in the directory itself);
  or a directory of dataset files.

Each problem becomes `dest/<name>/` (task.toml, prog.c, tests.json, given.s when the row
has assembly). Crucible makes its own -O0 and -O3 baselines from the C with the installed
gcc (the given assembly is kept, and a copy of it is refused like a copy of the baseline).
With `check` (the default), a problem whose -O3 baseline does not pass its own tests is
skipped with its reason. Imported tasks are `holdout` by default.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from verifiers.specfields import ImportProblems, TaskSpecError

ROW_FILES = (".parquet", ".jsonl", ".json")
_FENCE = re.compile(r"^```[\w-]*\n|```\s*$", re.M)
_NAME = re.compile(r"[^a-z0-9_]+")


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise RuntimeError(
                f"{path}: reading parquet needs pyarrow (pip install pyarrow, or 'crucible[lake]')"
            ) from None
        yield from pq.read_table(path).to_pylist()
    elif path.suffix == ".jsonl":
        with path.open(encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)
    else:
        data = json.loads(path.read_text(encoding="utf-8"))
        yield from data if isinstance(data, list) else [data]


def _problem(row: dict[str, Any], where: str) -> dict[str, Any]:
    """(c_code, given assembly or None, tests) of one dataset row."""
    info = row.get("extra_info") if isinstance(row.get("extra_info"), dict) else row
    code = info.get("c_code") or info.get("code")
    inputs, outputs = info.get("inputs"), info.get("outputs")
    if not isinstance(code, str) or not code.strip():
        raise ValueError(f"{where}: no C program (extra_info.c_code)")
    if not isinstance(inputs, list) or not isinstance(outputs, list) or not inputs:
        raise ValueError(f"{where}: no test cases (extra_info.inputs / outputs)")
    if len(inputs) != len(outputs) or not all(isinstance(x, str) for x in inputs + outputs):
        raise ValueError(f"{where}: inputs and outputs must be lists of strings of one length")
    given = info.get("unoptimized_assembly") or info.get("assembly")
    if isinstance(given, str):
        given = _FENCE.sub("", given).strip() + "\n"
    index = info.get("index", row.get("index"))
    return {
        "code": code,
        "given": given if isinstance(given, str) and given.strip() else None,
        "tests": [{"stdin": i, "stdout": o} for i, o in zip(inputs, outputs, strict=True)],
        "id": str(index) if index is not None else None,
    }


def read_problems(src: Path) -> Iterator[tuple[str, dict[str, Any] | Exception]]:
    """(name, problem) for every problem under `src` (an Exception for one that is bad)."""
    src = Path(src)
    if src.is_file():
        files = [src]
    else:
        files = sorted(p for p in src.iterdir() if p.suffix in ROW_FILES and p.is_file())
    if files:
        for f in files:
            for k, row in enumerate(_rows(f)):
                where = f"{f.name} row {k}"
                try:
                    p = _problem(row, where)
                except ValueError as e:
                    yield f"{f.stem}_{k}", e
                    continue
                yield f"{f.stem}_{p['id'] or k}", p
        return
    code_dir = src / "TopCode" if (src / "TopCode").is_dir() else src
    io_dir = src / "TopIO" if (src / "TopIO").is_dir() else src
    for c in sorted(code_dir.glob("*.c")):
        tests_dir = io_dir / c.stem
        ins = sorted(tests_dir.glob("input.*.txt"), key=lambda p: int(p.name.split(".")[1]))
        tests = []
        for i in ins:
            o = tests_dir / i.name.replace("input.", "output.")
            if o.is_file():
                tests.append({"stdin": i.read_text(), "stdout": o.read_text()})
        if not tests:
            yield c.stem, ValueError(f"{c.name}: no TopIO/{c.stem}/input.<k>.txt with its output")
            continue
        yield c.stem, {"code": c.read_text(), "given": None, "tests": tests, "id": c.stem}


def write_task(name: str, p: dict[str, Any], dest: Path, split: str, source: str) -> Path:
    d = dest / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "prog.c").write_text(p["code"])
    (d / "tests.json").write_text(json.dumps(p["tests"], indent=1))
    given = ""
    if p["given"]:
        (d / "given.s").write_text(p["given"])
        given = 'given = "given.s"\n'
    first = next((ln.strip() for ln in p["code"].splitlines() if ln.strip()), "")
    requirement = (
        "Write the whole program below in x86-64 assembly, faster than gcc -O3 builds it: it "
        "reads its input on stdin and must print exactly what the C program prints, for "
        f"every input. (SuperCoder problem {p['id'] or name}.)"
    )
    (d / "task.toml").write_text(
        f'name = "{name}"\nfamily = "program"\nlevel = 3\nsplit = "{split}"\n'
        f"source = {json.dumps(source)}\nrequirement = {json.dumps(requirement)}\n\n"
        f'[interface]\nkind = "program"\n\n[harness]\nprogram = "prog.c"\ntests = "tests.json"\n'
        + given
        + f"# first line of the program: {first[:80]}\n"
    )
    return d


def import_supercoder(
    src: Path | str,
    dest_dir: Path | str,
    *,
    split: str = "holdout",
    source: str = "supercoder",
    check: bool = True,
    limit: int | None = None,
) -> list[Path]:
    """Import every problem under `src` into `dest_dir`; the task dirs written, sorted.
    Raises `ImportProblems` after importing the good ones when any was skipped."""
    from verifiers.catalog import load_task
    from verifiers.x86asm import kit

    src, dest_dir = Path(src), Path(dest_dir)
    if split not in ("train", "holdout"):
        raise ValueError(f"split must be 'train' or 'holdout', not {split!r}")
    if not src.exists():
        raise FileNotFoundError(f"{src}: no such file or directory")
    imported, errors = [], []
    for n, (raw, p) in enumerate(read_problems(src)):
        if limit is not None and n >= limit:
            break
        name = _NAME.sub("_", f"supercoder_{raw}".lower()).strip("_")
        if isinstance(p, Exception):
            errors.append(f"{raw}: {p}")
            continue
        d = write_task(name, p, dest_dir, split, source)
        if check:
            try:
                kit.get_kit(load_task(d, "x86asm"))
            except (TaskSpecError, kit.KitError) as e:
                shutil.rmtree(d, ignore_errors=True)
                errors.append(f"{raw}: {e}")
                continue
        imported.append(d)
    if errors:
        raise ImportProblems(sorted(imported), errors)
    return sorted(imported)
