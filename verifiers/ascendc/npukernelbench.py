"""Import NPUKernelBench (weich97/NPUKernelBench) operators as AscendC C++ tasks.

The benchmark's layout, one operator per directory:

    tasks/level<N>/<Category>/<Op>/
        api_desc.md                      the operator, in words (the requirement)
        question/op_host/<op>.cpp        skeletons: what a prompt shows
        question/op_kernel/<op>.cpp
        answer/0/op_host/<op>.cpp        the expert: host side (tiling function, op def),
        answer/0/op_host/<op>_tiling.h   its tiling data, the kernel and any headers of
        answer/0/op_kernel/<op>.cpp      its own, and CMakeLists.txt
        validation/module.py             Model (the PyTorch reference), ModelNew (the op)
        validation/prepare_inputs.py     get_inputs(param) from one row of the cases;
                                         maybe custom_check_precision (its own rule)
        validation/test_cases.csv        case_id;<columns the op needs>, `;`-separated
        validation/pybind.cpp            the binding ModelNew calls
    base_config.yaml                     static_shape_mode, kernel_only_mode

`<op>` is the directory name before any `_`, in snake case (the benchmark's own
`kernel_name`). Each operator becomes up to two tasks, `npukb_<op>_device_only` (the
candidate writes `op_kernel/<op>.cpp`; the expert's host side and tiling are the fixed
host driver) and `npukb_<op>_host_device` (the candidate writes the host side, its tiling
header and the kernel, each after a `// file: <path>` line; the expert's other headers
are built beside them). The task keeps the benchmark's own files (the cases as they are,
`prepare_inputs.py`, `module.py`, `pybind.cpp`), the reference model with its NPU
imports and ModelNew removed, and one normalised case list (`case_id;shape;dtype;dynamic`,
the shape the case's first tensor's, or its size columns). The benchmark's
`static_shape_mode` (each case its own build, its tiling fixed) sets `dynamic`: 0 when it is
on, 1 when the shapes are only known at run time.

Goldens are not made here: a task imported this way has none until the goldens maker
(or the CANN node) computes them from the model and `prepare_inputs`. With `check` (the
default) a task is loaded as the catalog loads it and its reference (the expert's files)
must split into the task's files with the kernel's entry, or the task is skipped with its
reason. Imported tasks are `holdout` by default.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifiers import pyast
from verifiers.ascendc import parts
from verifiers.ascendc.spec import DTYPES, MAX_CASES, PATHS, parse_shape
from verifiers.specfields import ImportProblems, TaskSpecError

# the benchmark's categories -> spec.FAMILIES (an unknown one is "other")
FAMILY_OF = {
    "Activation": "activation",
    "Comparison": "comparison",
    "Condition": "comparison",
    "Foreach": "foreach",
    "GMM": "matmul",
    "Index": "indexing",
    "Linalg": "linalg",
    "Loss": "loss",
    "Mask": "indexing",
    "Math": "elementwise",
    "Norm": "normalization",
    "Optim": "optimizer",
    "Reduce": "reduction",
    "Sort": "sort",
    "TensorCreation": "creation",
    "TensorMove": "movement",
}
# a case's shape: the first of these columns, then any other column named *shape*
SHAPE_COLUMNS = ("shape", "input_shape", "x_shape", "self_shape", "x1_shape", "dims")
# with no shape column: the case's size columns, in the row's order
SIZE_COLUMNS = ("batch", "m", "k", "n", "num_classes", "num_rows", "num_columns")
DTYPE_COLUMNS = ("dtype", "input_dtype", "x_dtype", "values_dtype", "feeds_dtype")
DTYPE_ALIASES = {"float": "float32", "half": "float16", "int": "int32", "long": "int64"}
# `extern"C"` is C++ too (LessEqual's expert writes it so)
_ENTRY = re.compile(r'extern\s*"C"\s+__global__\s+__aicore__\s+void\s+(\w+)\s*\(')
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
_DTYPE_DEFAULT = re.compile(r"""param\.get\(\s*['"]dtype['"]\s*,\s*['"](\w+)['"]""")
_TORCH_DTYPE = re.compile(r"dtype\s*=\s*torch\.(\w+)")
_SOURCE = re.compile(r"^op_(?:host|kernel)/[A-Za-z0-9_./-]+\.(?:cpp|h|hpp|cc)$")
_NPU_ONLY = ("torch_npu", "kernel_gen_ops")
NO_GOLDENS = (
    "# goldens: none yet (golden/case<ID>.npz); the goldens maker or the CANN node computes\n"
    "# them from `model` with the inputs of `prepare_inputs` on the rows of `test_cases`\n"
)


class OpSkipped(ValueError):
    """An operator (or one path of it) that cannot become a task, and why."""


@dataclass
class Op:
    """One operator directory, read."""

    dir: Path
    level: int
    category: str
    name: str  # the directory's name, e.g. AddCustom
    snake: str  # the benchmark's kernel_name, e.g. add_custom
    api_desc: str
    validation: dict[str, str]  # test_cases.csv, module.py, prepare_inputs.py, pybind.cpp
    model: str  # module.py without its NPU imports and ModelNew
    cases: list[dict[str, Any]]
    question: dict[str, str]  # question/... -> text
    answer: dict[str, str] = field(default_factory=dict)  # path under answer/0 -> text
    kernel: str | None = None  # the entry's name
    kernel_file: str | None = None  # op_kernel/<op>.cpp (the answer's, else the skeleton's)
    host_files: list[str] = field(default_factory=list)  # the host side (Host+Device)
    tiling_file: str | None = None


def camel_to_snake(name: str) -> str:
    """NPUKernelBench's own conversion (framework/task_object.py)."""
    s1 = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z0-9])([A-Z])", r"\1_\2", s1).lower()


def find_ops(src: Path) -> Iterator[tuple[int, Path]]:
    """(level, op dir) for every `level<N>/<Category>/<Op>/` under `src` (the repository
    root or its `tasks/`), in order."""
    root = src / "tasks" if (src / "tasks").is_dir() else src
    for level_dir in sorted(root.iterdir()):
        m = re.fullmatch(r"level(\d+)", level_dir.name)
        if not m or not level_dir.is_dir():
            continue
        for cat in sorted(p for p in level_dir.iterdir() if p.is_dir()):
            for op in sorted(p for p in cat.iterdir() if p.is_dir()):
                if op.name != "common":  # shared files the benchmark looks up beside ops
                    yield int(m.group(1)), op


def static_shape_mode(src: Path) -> bool:
    """base_config.yaml's `static_shape_mode` (True, the benchmark's default, if absent)."""
    for cfg in (src / "base_config.yaml", src.parent / "base_config.yaml"):
        if cfg.is_file():
            m = re.search(r"^static_shape_mode:\s*(\w+)", cfg.read_text(encoding="utf-8"), re.M)
            if m:
                return m.group(1).lower() in ("true", "1", "yes")
    return True


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise OpSkipped(f"{path.name} is not UTF-8 text") from None


def _files(base: Path) -> dict[str, str]:
    """Every text file under `base`, by its path relative to it (binary ones left out)."""
    out = {}
    for p in sorted(base.rglob("*")):
        if p.is_file():
            try:
                out[p.relative_to(base).as_posix()] = p.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
    return out


def strip_npu(module: str) -> str:
    """module.py without what only runs on an NPU: torch_npu / kernel_gen_ops imports and
    ModelNew (the class that calls the built op). The lines are cut, not re-printed, so
    the reference reads as the benchmark wrote it."""
    try:
        tree = pyast.parse(module)
    except SyntaxError as e:
        raise OpSkipped(f"validation/module.py does not parse ({e.msg}, line {e.lineno})") from None
    drop: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            names = ["ModelNew"]
        else:
            continue
        if any(n == "ModelNew" or n.split(".")[0] in _NPU_ONLY for n in names):
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            drop.update(range(first, (node.end_lineno or node.lineno) + 1))
    lines = module.splitlines(keepends=True)
    out = "".join(ln for n, ln in enumerate(lines, start=1) if n not in drop)
    out = re.sub(r"\n{3,}(?=\S)", "\n\n\n", out).rstrip() + "\n"
    tree = pyast.parse(out)
    if not any(isinstance(n, ast.ClassDef) and n.name == "Model" for n in tree.body):
        raise OpSkipped("validation/module.py defines no class Model (the reference)")
    return out


def _shape(row: dict[str, str], columns: list[str]) -> list[int] | None:
    shaped = [c for c in SHAPE_COLUMNS if c in row] + [
        c for c in columns if c not in SHAPE_COLUMNS and "shape" in c.lower() and c in row
    ]
    for c in shaped:
        text = (row[c] or "").strip()
        got = parse_shape(text)
        if got is not None:
            return got
        try:  # a list of tensors (Foreach): the first one's shape
            v = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            continue
        if isinstance(v, (list, tuple)) and v and isinstance(v[0], (list, tuple)):
            got = parse_shape(repr(list(v[0])))
            if got is not None:
                return got
    if not shaped and {"start", "end", "step"} <= set(row):  # a range: its length
        try:
            start, end, step = (float(row[c]) for c in ("start", "end", "step"))
            length = math.ceil((end - start) / step) if step else 0
        except (TypeError, ValueError):
            length = 0
        return [length] if length > 0 else None
    sizes = [c for c in columns if c in SIZE_COLUMNS]
    if sizes and not shaped:
        vals = [(row[c] or "").strip() for c in sizes]
        if all(v.isdigit() and int(v) > 0 for v in vals):
            return [int(v) for v in vals]
    return None


def _dtype(row: dict[str, str], columns: list[str], default: str | None) -> str | None:
    named = [c for c in DTYPE_COLUMNS if c in row] + [
        c for c in columns if c not in DTYPE_COLUMNS and c.lower().endswith("dtype")
    ]
    raw = (row[named[0]] or "").strip() if named else default
    if raw is None:
        return None
    return DTYPE_ALIASES.get(raw, raw)


def _default_dtype(prepare_inputs: str) -> str | None:
    """The dtype a case without a dtype column has: the default prepare_inputs reads the
    column with, else the one dtype its tensors are made with (complex64 when it makes
    them as torch.complex of float32 parts)."""
    m = _DTYPE_DEFAULT.search(prepare_inputs)
    if m:
        return m.group(1)
    made = set(_TORCH_DTYPE.findall(prepare_inputs))
    if made and made <= {"float32", "complex64"} and "torch.complex(" in prepare_inputs:
        return "complex64"
    return made.pop() if len(made) == 1 else None


def read_cases(text: str, prepare_inputs: str, dynamic: bool) -> list[dict[str, Any]]:
    """The benchmark's test_cases.csv as spec cases: case_id, the case's shape (its first
    tensor's, or its size columns), its dtype (the `dtype` column, or the default
    prepare_inputs reads it with) and `dynamic`."""
    reader = csv.DictReader(io.StringIO(text), delimiter=";")
    columns = [c.strip() for c in reader.fieldnames or []]
    if "case_id" not in columns:
        raise OpSkipped(f"test_cases.csv has no case_id column (columns: {';'.join(columns)})")
    default = _default_dtype(prepare_inputs)
    cases = []
    for n, raw in enumerate(reader, start=2):
        row = {(k or "").strip(): v for k, v in raw.items()}
        if not any((v or "").strip() for v in row.values()):
            continue
        cid = (row.get("case_id") or "").strip()
        if not cid.isdigit():
            raise OpSkipped(f"test_cases.csv line {n}: case_id {cid!r} is not a number")
        shape = _shape(row, columns)
        if shape is None:
            raise OpSkipped(
                f"test_cases.csv line {n}: no shape of positive ints (columns: {';'.join(columns)})"
            )
        dtype = _dtype(row, columns, default)
        if dtype not in DTYPES:
            raise OpSkipped(
                f"test_cases.csv line {n}: dtype {dtype!r} is none of {', '.join(DTYPES)}"
                if dtype
                else f"test_cases.csv line {n}: no dtype column and no default in prepare_inputs.py"
            )
        cases.append({"case_id": int(cid), "shape": shape, "dtype": dtype, "dynamic": dynamic})
    if not cases:
        raise OpSkipped("test_cases.csv has no cases")
    if len(cases) > MAX_CASES:
        raise OpSkipped(f"test_cases.csv has {len(cases)} cases (at most {MAX_CASES})")
    if len({c["case_id"] for c in cases}) != len(cases):
        raise OpSkipped("test_cases.csv repeats a case_id")
    return cases


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _entry(files: dict[str, str], snake: str) -> tuple[str, str] | None:
    """(file, kernel name) of the kernel entry: op_kernel/<op>.cpp's first, else the first
    op_kernel file's that defines one (the one named <op> preferred)."""
    ordered = sorted(
        (f for f in files if f.startswith("op_kernel/")),
        key=lambda f: (f != f"op_kernel/{snake}.cpp", not f.endswith(".cpp"), f),
    )
    for f in ordered:
        names = _ENTRY.findall(_strip_comments(files[f]))
        if names:
            return f, snake if snake in names else names[0]
    return None


def read_op(level: int, op_dir: Path, dynamic: bool) -> Op:
    """One operator directory, or OpSkipped with what is missing."""
    v = op_dir / "validation"
    need = ("test_cases.csv", "module.py", "prepare_inputs.py")
    missing = [f"validation/{f}" for f in need if not (v / f).is_file()]
    if missing:
        raise OpSkipped(f"no {', '.join(missing)}")
    validation = {f: _read(v / f) for f in (*need, "pybind.cpp") if (v / f).is_file()}
    snake = camel_to_snake(op_dir.name.split("_")[0])
    question = {f"question/{k}": t for k, t in _files(op_dir / "question").items()}
    if not question:
        raise OpSkipped("no question/ skeletons")
    op = Op(
        dir=op_dir,
        level=level,
        category=op_dir.parent.name,
        name=op_dir.name,
        snake=snake,
        api_desc=_read(op_dir / "api_desc.md") if (op_dir / "api_desc.md").is_file() else "",
        validation=validation,
        model=strip_npu(validation["module.py"]),
        cases=read_cases(validation["test_cases.csv"], validation["prepare_inputs.py"], dynamic),
        question=question,
    )
    if (op_dir / "answer" / "0").is_dir():
        op.answer = _files(op_dir / "answer" / "0")
        found = _entry(op.answer, snake)
        if found is None:
            raise OpSkipped(
                'answer/0/op_kernel defines no extern "C" __global__ __aicore__ void '
                "<name>(...) kernel entry"
            )
        op.kernel_file, op.kernel = found
        op.host_files, op.tiling_file = _host_side(op.answer, snake)
    else:  # no expert: the skeleton names the entry; only Host+Device can be set
        found = _entry({k.removeprefix("question/"): t for k, t in question.items()}, snake)
        if found is None:
            raise OpSkipped("no answer/0 and the skeleton kernel defines no kernel entry")
        op.kernel_file, op.kernel = found
        host = f"op_host/{snake}.cpp"
        op.host_files = [host] if f"question/{host}" in question else []
        op.tiling_file = f"op_host/{snake}_tiling.h"
    return op


def _host_side(answer: dict[str, str], snake: str) -> tuple[list[str], str | None]:
    """The expert's host side: its op file (op_host/<op>.cpp, else the op_host .cpp that
    registers the op with OP_ADD) then any other op_host .cpp holding a tiling function
    (an expert may split them: <op>_def.cpp, <op>_tiling.cpp), and its tiling header
    (<op>_tiling.h, else the included one that defines the tiling data)."""
    cpps = [f for f in sorted(answer) if f.startswith("op_host/") and f.endswith(".cpp")]
    host = f"op_host/{snake}.cpp"
    if host not in answer:
        host = next((f for f in cpps if "OP_ADD(" in answer[f]), None)
    if host is None:
        return [], None
    hosts = [host] + [f for f in cpps if f != host and "TilingContext" in answer[f]]
    included = {f"op_host/{inc}" for h in hosts for inc in _INCLUDE.findall(answer[h])}
    headers = [
        f
        for f in sorted(answer)
        if f.startswith("op_host/") and f.endswith((".h", ".hpp")) and "tiling" in f.lower()
    ]
    own = f"op_host/{snake}_tiling.h"
    tiling = next(
        (
            f
            for f in [own] + [h for h in headers if "BEGIN_TILING_DATA_DEF" in answer[h]] + headers
            if f in answer and (f == own or f in included)
        ),
        None,
    )
    return hosts, tiling


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(x) for x in items) + "]"


def task_layout(op: Op, path: str) -> dict[str, Any]:
    """What one path's task holds: the candidate's files and the host driver."""
    if path == "device_only":
        if not op.answer:
            raise OpSkipped("no answer/0: Device-Only has no host driver (the expert's host side)")
        files = [op.kernel_file]
    else:
        if not op.host_files:
            raise OpSkipped(
                f"no host side for Host+Device (neither op_host/{op.snake}.cpp nor an op_host "
                "file that registers the op with OP_ADD)"
            )
        # the tiling header right after the op file: `parts` takes the first file named
        # *tiling* for the tiling header
        tiling = [op.tiling_file] if op.tiling_file else []
        files = [op.host_files[0], *tiling, *op.host_files[1:], op.kernel_file]
    driver = [f for f in op.answer if _SOURCE.match(f) and f not in files]
    if op.answer and any(f not in op.answer for f in files):
        gone = ", ".join(f for f in files if f not in op.answer)
        raise OpSkipped(f"answer/0 has no {gone}")
    # no reference file: the spec takes the expert's files (listed in `expert`) as the
    # reference answer, joined as a candidate writes them
    return {"files": files, "host_driver": driver}


def _requirement(op: Op, path: str, layout: dict[str, Any]) -> str:
    where = f"NPUKernelBench's {op.name} (level {op.level}, {op.category})"
    if path == "device_only":
        given = ", ".join(layout["host_driver"]) or "the host side"
        lead = (
            f"Write the AscendC kernel of {where} for an Ascend 910B NPU: the one file "
            f"{layout['files'][0]}, defining the kernel {op.kernel}. The host side is given "
            f"and fixed ({given}): it computes the tiling and launches the kernel, which reads "
            "the tiling with GET_TILING_DATA."
        )
    else:
        lead = (
            f"Write the AscendC operator {where} for an Ascend 910B NPU, host and device: "
            f"{', '.join(layout['files'])}, each after a `// file: <path>` line. The host "
            f"side computes the tiling from the inputs' shapes and launches the kernel "
            f"{op.kernel}, which reads it with GET_TILING_DATA."
        )
    return lead + "\n\n" + op.api_desc.strip() + "\n"


def write_task(op: Op, path: str, dest: Path, split: str, source: str) -> Path:
    layout = task_layout(op, path)
    name = f"npukb_{op.snake}_{path}"
    d = dest / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)

    def put(rel: str, text: str) -> None:
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")

    for rel, text in op.answer.items():
        put(rel, text)
    for rel, text in op.question.items():
        put(rel, text)
    for rel, text in op.validation.items():
        put(f"validation/{rel}", text)
    put("model.py", op.model)
    put("api_desc.md", op.api_desc)
    put(
        "cases.csv",
        "case_id;shape;dtype;dynamic\n"
        + "".join(
            f"{c['case_id']};{c['shape']};{c['dtype']};{int(c['dynamic'])}\n" for c in op.cases
        ),
    )
    question = [q for q in op.question if path == "host_device" or "/op_kernel/" in q]
    h = [
        'form = "cpp"',
        f'path = "{path}"',
        'model = "model.py"',
        'cases = "cases.csv"',
        f"files = {_toml_list(layout['files'])}",
        f"expert = {_toml_list(sorted(op.answer))}",
        f"host_driver = {_toml_list(layout['host_driver'])}",
        f"question = {_toml_list(question)}",
        'prepare_inputs = "validation/prepare_inputs.py"',
        'test_cases = "validation/test_cases.csv"',
        'module = "validation/module.py"',
    ]
    if "pybind.cpp" in op.validation:
        h.append('pybind = "validation/pybind.cpp"')
    (d / "task.toml").write_text(
        f"# NPUKernelBench {op.dir.parent.parent.name}/{op.category}/{op.name}\n"
        f'name = "{name}"\nfamily = "{FAMILY_OF.get(op.category, "other")}"\n'
        f'level = {op.level}\nsplit = "{split}"\nsource = {json.dumps(source)}\n'
        f"requirement = {json.dumps(_requirement(op, path, layout))}\n\n"
        f'[interface]\nkernel = "{op.kernel}"\n\n[harness]\n' + "\n".join(h) + "\n" + NO_GOLDENS,
        encoding="utf-8",
    )
    return d


def _check(d: Path) -> None:
    """The task loads as the catalog loads it, and its reference is the task's files with
    the kernel's entry (what the verifier's extract gate asks of any candidate)."""
    from verifiers.catalog import load_task

    t = load_task(d, "ascendc")
    if t.reference is None:
        return
    try:
        p = parts.split(t.reference, t.harness["files"], t.harness["path"])
    except parts.PartsError as e:
        raise OpSkipped(f"the expert's files do not make a candidate: {e}") from None
    names = _ENTRY.findall(_strip_comments(p.text(p.kernel)))
    if t.interface["kernel"] not in names:
        raise OpSkipped(f"{p.kernel} does not define the kernel {t.interface['kernel']}")


def import_npukernelbench(
    src: Path | str,
    dest_dir: Path | str,
    *,
    split: str = "holdout",
    source: str = "npukernelbench",
    check: bool = True,
    limit: int | None = None,
    paths: tuple[str, ...] = ("device_only", "host_device"),
) -> list[Path]:
    """Import every operator under `src` (the benchmark's root or its tasks/) into
    `dest_dir`, one task per operator and path; the task dirs written, sorted. Raises
    `ImportProblems` after importing the good ones when any operator or path was skipped
    (each error names the operator's dir, the path and why)."""
    src, dest_dir = Path(src), Path(dest_dir)
    if split not in ("train", "holdout"):
        raise ValueError(f"split must be 'train' or 'holdout', not {split!r}")
    bad = [p for p in paths if p not in PATHS]
    if bad or not paths:
        raise ValueError(f"paths must be among {', '.join(PATHS)}, not {bad or paths}")
    if not src.is_dir():
        raise FileNotFoundError(f"{src}: no such directory")
    ops = list(find_ops(src))
    if not ops:
        raise FileNotFoundError(f"{src}: no tasks/level<N>/<Category>/<Op>/ directories")
    dynamic = not static_shape_mode(src)
    imported, errors, names = [], [], {}
    for n, (level, op_dir) in enumerate(ops):
        if limit is not None and n >= limit:
            break
        where = f"level{level}/{op_dir.parent.name}/{op_dir.name}"
        try:
            op = read_op(level, op_dir, dynamic)
        except OpSkipped as e:
            errors.append(f"{where}: {e}")
            continue
        if names.setdefault(op.snake, where) != where:
            errors.append(f"{where}: the task name npukb_{op.snake} is {names[op.snake]}'s")
            continue
        for path in paths:
            try:
                d = write_task(op, path, dest_dir, split, source)
            except OpSkipped as e:
                errors.append(f"{where} ({path}): {e}")
                continue
            if check:
                try:
                    _check(d)
                except (TaskSpecError, OpSkipped) as e:
                    shutil.rmtree(d, ignore_errors=True)
                    errors.append(f"{where} ({path}): {e}")
                    continue
            imported.append(d)
    if errors:
        raise ImportProblems(sorted(imported), errors)
    return sorted(imported)
