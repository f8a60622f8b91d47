"""AscendC task specs: `tasks/ascendc/<name>/task.toml` plus the files it names (format in
tasks/README.md).

A task holds what NPUKernelBench's task directories hold, in one record: the PyTorch
reference (`model`, a `Model(nn.Module)` whose `forward` is the operator), the cases
(`cases`, NPUKernelBench's `case_id;shape;dtype` CSV, with an optional `dynamic` column:
1 = the shape is only known at run time), the precision rule (an element fails only if its
absolute AND relative error are both over 1e-3; NaN / Inf fail), the path (`device_only`:
the task's host driver launches the candidate's kernel; `host_device`: the candidate also
writes the host side and its tiling) and the candidate's form:

- `pyasc`: one Python file defining the task's kernel with `@asc.jit` in pyasc's DSL; the
  harness's `args` say how the host driver calls it (tensors in / out, scalars computed
  from the case's shape), and the DSL is lowered to AscendC C++ here;
- `cpp`: AscendC C++ in NPUKernelBench's layout; `files` lists what the candidate writes
  (the kernel alone on the Device-Only path, host + tiling + kernel on Host+Device), and
  `expert` the expert implementation the speedup is measured against; `host_driver` the
  files the harness builds beside the candidate's (on Device-Only the expert's host side
  and tiling header, the fixed host driver; on either path the expert's own headers its
  kernel includes). A task imported from NPUKernelBench also keeps the benchmark's own
  `test_cases` CSV (the rows its `prepare_inputs.get_inputs(param)` reads, every column),
  the original `module` (with `ModelNew`, which calls the built op through `pybind`) and,
  where `prepare_inputs` defines `custom_check_precision`, judges with that
  (`custom_check`), as the benchmark does.

Each `args` entry is `{name, kind, dtype?, value?, shape?}`. Tensors (`in` / `out`) take
the case's dtype unless `dtype` names one, and the case's shape unless `shape` lists one
expression per dimension (e.g. a matmul's case shape `[M, K, N]` with `a` of shape
`["shape[0]", "shape[1]"]`, a row reduction's `out` of shape `["rows"]`, a bias of
`["last"]`). `scalar` and `constexpr` values are int expressions of EXPR_NAMES (`evaluate`);
a `scalar` whose dtype is a float dtype, or `case` (the case's dtype, so a float16 case
gets a half scalar), may instead hold a float literal (an alpha, an eps):
`scalar_value` reads either. A `scalar` whose name is a parameter of the model's `__init__`
is passed to it (`Model(alpha=0.5)`), so the reference and the kernel get the same value.
The model's `forward` takes the `in` tensors in order and returns the `out` tensors in
order (one tensor, or a tuple); a model.py may define `get_inputs(shape, dtype, generator)`
for inputs other than torch.randn of each `in` arg's shape (verifiers/ascendc/goldens.py).

Goldens (the reference's outputs on each case's inputs, computed here from `model` with
the case's seed) are kept beside the task as `golden/case<ID>.npz`; their sha256 is part of
the harness, so a CANN node refuses a golden that is not the one the task was made with.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import re
from pathlib import Path
from typing import Any

from verifiers import pyast
from verifiers.ascendc import parts
from verifiers.specfields import Field, TaskSpecError, check_fields, read_task_file

FORMS = ("pyasc", "cpp")
PATHS = ("device_only", "host_device")
DTYPES = (
    "float16",
    "bfloat16",
    "float32",
    "int8",
    "uint8",
    "int16",
    "int32",
    "int64",
    "bool",
    "complex64",
)
ARG_KINDS = ("in", "out", "scalar", "constexpr")
FAMILIES = (
    "elementwise",
    "activation",
    "comparison",
    "reduction",
    "normalization",
    "matmul",
    "broadcast",
    "indexing",
    "conversion",
    "pooling",
    "loss",
    "fused",
    "attention",
    "foreach",  # one op over a list of tensors (NPUKernelBench's Foreach)
    "creation",
    "movement",
    "optimizer",
    "sort",
    "linalg",
    "other",
)
ATOL = RTOL = 1e-3  # NPUKernelBench's rule (framework/utils.py): fail iff both are over
MAX_CASES = 64
# a scalar argument's value: an arithmetic expression over these names
EXPR_NAMES = ("numel", "block_dim", "last", "rows", "shape")
FLOAT_DTYPES = ("float16", "bfloat16", "float32")
# checks an expression's form; `_check_cases` then evaluates it on every case
_SAMPLE_ENV = {"numel": 64, "block_dim": 8, "last": 8, "rows": 8, "shape": [8] * 8}
_IDENT = re.compile(r"^[A-Za-z_]\w*$")
_FILE = re.compile(r"^[A-Za-z0-9_./-]+\.(?:cpp|h|hpp|cc)$")

INTERFACE_FIELDS = (
    Field(
        "kernel",
        str,
        "the kernel's function name (a C identifier)",
        True,
        lambda v: bool(_IDENT.match(v)),
    ),
    Field(
        "args",
        list,
        "the kernel's parameters in order: [{name, kind, dtype?, value?, shape?}]",
        False,
    ),
)
HARNESS_FIELDS = (
    Field("form", str, f"one of {', '.join(FORMS)}", True, lambda v: v in FORMS),
    Field("path", str, f"one of {', '.join(PATHS)}", True, lambda v: v in PATHS),
    Field("model", str, "the PyTorch reference, e.g. model.py (class Model(nn.Module))"),
    Field("cases", str, "the cases, e.g. cases.csv (case_id;shape;dtype[;dynamic])"),
    Field(
        "reference",
        str,
        "the reference answer: kernel.py (pyasc) or one of `files`",
        required=False,
    ),
    Field(
        "files",
        list,
        "cpp: the files the candidate writes, e.g. "
        '["op_kernel/add.cpp"] (Device-Only) or host, tiling and kernel (Host+Device)',
        False,
        lambda v: bool(v) and all(isinstance(x, str) and _FILE.match(x) for x in v),
    ),
    Field(
        "expert",
        list,
        "cpp: the expert implementation's files (the speedup's baseline), "
        "paths relative to the task dir",
        False,
        lambda v: all(isinstance(x, str) for x in v),
    ),
    Field(
        "question",
        list,
        "cpp: the skeleton files the prompt shows",
        False,
        lambda v: all(isinstance(x, str) for x in v),
    ),
    Field(
        "host_driver",
        list,
        "cpp: files the harness builds beside the candidate's (Device-Only: the expert's "
        "op_host side and tiling; the expert's kernel headers), paths relative to the task dir",
        False,
        lambda v: all(isinstance(x, str) and _FILE.match(x) for x in v),
    ),
    Field(
        "test_cases",
        str,
        "the benchmark's own test_cases.csv (every column: what get_inputs(param) reads)",
        required=False,
    ),
    Field(
        "module",
        str,
        "the benchmark's module.py as it is (Model and ModelNew, which calls the built op)",
        required=False,
    ),
    Field("pybind", str, "the benchmark's pybind.cpp binding the op for ModelNew", False),
    Field(
        "prepare_inputs",
        str,
        "a prepare_inputs.py (get_inputs(param)) making the inputs",
        required=False,
    ),
    Field(
        "block_dim",
        int,
        "the cores the host driver launches (1..64, default 8)",
        False,
        lambda v: 1 <= v <= 64,
    ),
    Field("atol", float, "absolute tolerance (default 1e-3)", False, lambda v: 0 < v < 1),
    Field("rtol", float, "relative tolerance (default 1e-3)", False, lambda v: 0 < v < 1),
    Field(
        "speed_bar",
        (int, float),
        "speedup over the expert a pass needs (default 1.0)",
        False,
        lambda v: v > 0,
    ),
    Field("seed", int, "the inputs' seed (default 0)", False, lambda v: v >= 0),
    Field("goldens", str, "the dir of golden/case<ID>.npz (default golden)", False),
)


def load_ascendc_spec(toml_path: Path, spec: dict) -> tuple[dict, dict, str | None]:
    iface_in, harness_in = spec["interface"], spec["harness"]
    check_fields(toml_path, iface_in, INTERFACE_FIELDS, "interface.")
    check_fields(toml_path, harness_in, HARNESS_FIELDS, "harness.")
    if spec["family"] not in FAMILIES:
        raise TaskSpecError(toml_path, "family", f"one of {', '.join(FAMILIES)}", spec["family"])
    form, path = harness_in["form"], harness_in["path"]
    model = read_task_file(toml_path, "harness.model", harness_in["model"])
    _check_model(toml_path, model)
    cases = parse_cases(toml_path, read_task_file(toml_path, "harness.cases", harness_in["cases"]))
    args = _args(toml_path, iface_in.get("args"), form)
    _check_cases(toml_path, args, cases, int(harness_in.get("block_dim", 8)))
    harness: dict[str, Any] = {
        "form": form,
        "path": path,
        "model": model,
        "cases": cases,
        "atol": float(harness_in.get("atol", ATOL)),
        "rtol": float(harness_in.get("rtol", RTOL)),
        "block_dim": int(harness_in.get("block_dim", 8)),
        "speed_bar": float(harness_in.get("speed_bar", 1.0)),
        "seed": int(harness_in.get("seed", 0)),
    }
    if "prepare_inputs" in harness_in:
        harness["prepare_inputs"] = read_task_file(
            toml_path, "harness.prepare_inputs", harness_in["prepare_inputs"]
        )
    for key in ("test_cases", "module", "pybind"):
        if key in harness_in:
            harness[key] = read_task_file(toml_path, f"harness.{key}", harness_in[key])
    if "prepare_inputs" in harness:
        # NPUKernelBench judges such a task with it instead of the abs-and-rel rule
        harness["custom_check"] = "custom_check_precision" in _defs(harness["prepare_inputs"])
    harness["goldens"] = _goldens(toml_path, harness_in.get("goldens", "golden"), cases)
    reference = None
    if form == "pyasc":
        if "files" in harness_in or "expert" in harness_in:
            raise TaskSpecError(
                toml_path,
                "harness.files",
                "nothing on a pyasc task (its reference is the expert)",
                harness_in.get("files"),
            )
        if "reference" in harness_in:
            reference = read_task_file(toml_path, "harness.reference", harness_in["reference"])
    else:
        files = harness_in.get("files")
        if not files:
            raise TaskSpecError(
                toml_path, "harness.files", "the files the candidate writes (missing)"
            )
        if path == "device_only" and len(files) != 1:
            raise TaskSpecError(
                toml_path, "harness.files", "one kernel file on the device_only path", files
            )
        harness["files"] = list(files)
        harness["expert"] = {
            rel: read_task_file(toml_path, "harness.expert", rel)
            for rel in harness_in.get("expert", [])
        }
        harness["host_driver"] = {
            rel: read_task_file(toml_path, "harness.host_driver", rel)
            for rel in harness_in.get("host_driver", [])
        }
        clash = sorted(set(harness["host_driver"]) & set(files))
        if clash:
            raise TaskSpecError(
                toml_path, "harness.host_driver", "no file the candidate writes", clash
            )
        harness["question"] = {
            rel: read_task_file(toml_path, "harness.question", rel)
            for rel in harness_in.get("question", [])
        }
        if "reference" in harness_in:
            reference = read_task_file(toml_path, "harness.reference", harness_in["reference"])
        elif all(f in harness["expert"] for f in files):
            # the expert's own files are the reference answer, as a candidate writes them
            chosen = {f: harness["expert"][f] for f in files}
            reference = chosen[files[0]] if len(files) == 1 else parts.join(chosen)
    interface = {"kernel": iface_in["kernel"], "args": args, "form": form, "path": path}
    return interface, harness, reference


def _check_model(toml_path: Path, text: str) -> None:
    try:
        tree = pyast.parse(text)
    except SyntaxError as e:
        raise TaskSpecError(
            toml_path, "harness.model", f"Python that parses ({e.msg}, line {e.lineno})"
        ) from None
    if not any(isinstance(n, ast.ClassDef) and n.name == "Model" for n in tree.body):
        raise TaskSpecError(toml_path, "harness.model", "a file defining class Model")


def _defs(text: str | None) -> set[str]:
    """The top-level function names a Python file defines (none if it does not parse)."""
    if not text:
        return set()
    try:
        tree = pyast.parse(text)
    except SyntaxError:
        return set()
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}


def parse_cases(toml_path: Path, text: str) -> list[dict[str, Any]]:
    """NPUKernelBench's `case_id;shape;dtype` rows (plus an optional `dynamic` column),
    each shape a list of positive ints; at least one case and at most MAX_CASES."""
    rows = list(csv.DictReader(io.StringIO(text), delimiter=";"))
    if not rows:
        raise TaskSpecError(toml_path, "harness.cases", "a CSV with a header and one row per case")
    need = {"case_id", "shape", "dtype"}
    if not need <= set(rows[0]):
        raise TaskSpecError(
            toml_path, "harness.cases", "columns case_id;shape;dtype", sorted(rows[0])
        )
    if len(rows) > MAX_CASES:
        raise TaskSpecError(toml_path, "harness.cases", f"at most {MAX_CASES} cases", len(rows))
    cases, seen = [], set()
    for n, row in enumerate(rows, start=2):
        where = f"harness.cases line {n}"
        cid = (row.get("case_id") or "").strip()
        if not cid.isdigit() or cid in seen:
            raise TaskSpecError(toml_path, where, "a case_id of digits, unique", cid)
        seen.add(cid)
        shape = parse_shape(row.get("shape") or "")
        if shape is None:
            raise TaskSpecError(
                toml_path, where, "a shape like [4, 128] of positive ints", row.get("shape")
            )
        dtype = (row.get("dtype") or "").strip()
        if dtype not in DTYPES:
            raise TaskSpecError(toml_path, where, f"a dtype among {', '.join(DTYPES)}", dtype)
        dynamic = (row.get("dynamic") or "0").strip()
        if dynamic not in ("0", "1"):
            raise TaskSpecError(toml_path, where, "dynamic 0 or 1", dynamic)
        cases.append(
            {"case_id": int(cid), "shape": shape, "dtype": dtype, "dynamic": dynamic == "1"}
        )
    return cases


def parse_shape(text: str) -> list[int] | None:
    """`[4, 1, 5]` as a list of positive ints (never eval'd); None if it is not one."""
    try:
        v = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        v = [v]
    if not isinstance(v, (list, tuple)) or not v:
        return None
    if not all(isinstance(x, int) and not isinstance(x, bool) and 0 < x < 1 << 31 for x in v):
        return None
    return list(v)


def _args(toml_path: Path, raw: Any, form: str) -> list[dict[str, Any]]:
    if raw is None:
        if form == "pyasc":
            raise TaskSpecError(toml_path, "interface.args", "the kernel's parameters (missing)")
        return []
    out, names = [], set()
    for i, a in enumerate(raw):
        where = f"interface.args[{i}]"
        if not isinstance(a, dict):
            raise TaskSpecError(toml_path, where, "a table {name, kind, ...}", a)
        name, kind = a.get("name"), a.get("kind")
        if not isinstance(name, str) or not _IDENT.match(name) or name in names:
            raise TaskSpecError(toml_path, where + ".name", "a unique identifier", name)
        names.add(name)
        if kind not in ARG_KINDS:
            raise TaskSpecError(toml_path, where + ".kind", f"one of {', '.join(ARG_KINDS)}", kind)
        arg = {"name": name, "kind": kind}
        if kind in ("in", "out"):
            dtype = a.get("dtype", "case")  # "case": the case's dtype
            if dtype != "case" and dtype not in DTYPES:
                raise TaskSpecError(toml_path, where + ".dtype", "case or a dtype", dtype)
            arg["dtype"] = dtype
            if "shape" in a:
                arg["shape"] = _arg_shape(toml_path, where + ".shape", a["shape"])
        elif (
            kind == "scalar"
            and isinstance(a.get("value"), float)
            and a.get("dtype") in (*FLOAT_DTYPES, "case")
        ):
            arg["value"] = repr(a["value"])
            arg["dtype"] = a["dtype"]
        else:
            value = a.get("value")
            if not isinstance(value, (str, int)) or isinstance(value, bool):
                raise TaskSpecError(
                    toml_path,
                    where + ".value",
                    f"an int or an expression of {', '.join(EXPR_NAMES)}",
                    value,
                )
            try:
                evaluate(str(value), _SAMPLE_ENV)
            except ValueError as e:
                raise TaskSpecError(toml_path, where + ".value", str(e), value) from None
            arg["value"] = str(value)
            arg["dtype"] = a.get("dtype", "int32")
        out.append(arg)
    if form == "pyasc" and not any(a["kind"] == "out" for a in out):
        raise TaskSpecError(toml_path, "interface.args", "at least one out tensor")
    return out


def _check_cases(
    toml_path: Path, args: list[dict[str, Any]], cases: list[dict[str, Any]], block_dim: int
) -> None:
    """Every argument's value and shape evaluates on every case (positive dimensions)."""
    for c in cases:
        env = case_env(c, block_dim)
        for a in args:
            where = f"interface.args ({a['name']}) on case {c['case_id']}"
            try:
                if a["kind"] in ("in", "out"):
                    if any(d <= 0 for d in arg_shape(a, env)):
                        raise ValueError(f"a dimension <= 0: {arg_shape(a, env)}")
                else:
                    scalar_value(a, env)
            except ValueError as e:
                raise TaskSpecError(
                    toml_path, where, str(e), a.get("shape") or a.get("value")
                ) from None


def _arg_shape(toml_path: Path, where: str, raw: Any) -> list[str]:
    if not isinstance(raw, list) or not raw:
        raise TaskSpecError(toml_path, where, "a list of dimension expressions", raw)
    out = []
    for dim in raw:
        if not isinstance(dim, (str, int)) or isinstance(dim, bool):
            raise TaskSpecError(toml_path, where, f"an expression of {', '.join(EXPR_NAMES)}", dim)
        try:
            evaluate(str(dim), _SAMPLE_ENV)
        except ValueError as e:
            raise TaskSpecError(toml_path, where, str(e), dim) from None
        out.append(str(dim))
    return out


def arg_shape(arg: dict[str, Any], env: dict[str, Any]) -> list[int]:
    """A tensor argument's shape on a case (`case_env`): its `shape` or the case's."""
    if "shape" not in arg:
        return list(env["shape"])
    return [evaluate(d, env) for d in arg["shape"]]


def scalar_value(arg: dict[str, Any], env: dict[str, Any]) -> int | float:
    """A scalar / constexpr argument's value on a case: a float literal for a float
    scalar, else its int expression."""
    if arg.get("dtype") in (*FLOAT_DTYPES, "case"):
        try:
            return float(arg["value"])
        except ValueError:
            pass
    return evaluate(arg["value"], env)


def _goldens(toml_path: Path, rel: Any, cases: list[dict]) -> dict[str, str]:
    """case_id -> sha256 of golden/case<ID>.npz, for the goldens that exist (a task whose
    goldens were not made yet has none: `crucible`'s goldens maker writes them)."""
    if not isinstance(rel, str) or not rel or rel.startswith("/") or ".." in rel.split("/"):
        raise TaskSpecError(toml_path, "harness.goldens", "a dir inside the task dir", rel)
    d = toml_path.parent / rel
    out = {}
    for c in cases:
        p = d / f"case{c['case_id']}.npz"
        if p.is_file():
            out[str(c["case_id"])] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


# --- a scalar argument's value --------------------------------------------------------------

_OPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}


def evaluate(expr: str, env: dict[str, Any]) -> int:
    """An int expression of +, -, *, //, %, ints, `min`/`max`, the names in EXPR_NAMES and
    `shape[i]`; anything else is a ValueError (it is never eval'd)."""
    try:
        tree = pyast.parse(expr, mode="eval")
    except SyntaxError:
        raise ValueError(f"not an expression: {expr!r}") from None

    def ev(n: ast.AST) -> Any:
        if (
            isinstance(n, ast.Constant)
            and isinstance(n.value, int)
            and not isinstance(n.value, bool)
        ):
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            v = ev(n.operand)
            if not isinstance(v, int):
                raise ValueError("arithmetic on ints only")
            return -v
        if isinstance(n, ast.Name) and n.id in env:
            return env[n.id]
        if isinstance(n, ast.BinOp) and type(n.op) in _OPS:
            a, b = ev(n.left), ev(n.right)
            if not isinstance(a, int) or not isinstance(b, int):
                raise ValueError("arithmetic on ints only")
            if isinstance(n.op, (ast.FloorDiv, ast.Mod)) and b == 0:
                raise ValueError("division by zero")
            return _OPS[type(n.op)](a, b)
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == "shape":
            i = ev(n.slice)
            shape = env["shape"]
            if not isinstance(i, int) or not -len(shape) <= i < len(shape):
                raise ValueError("shape index out of range")
            return shape[i]
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id in ("min", "max")
            and n.args
            and not n.keywords
        ):
            vals = [ev(a) for a in n.args]
            return min(vals) if n.func.id == "min" else max(vals)
        raise ValueError(
            f"only ints, + - * // %, min/max and {', '.join(EXPR_NAMES)} (got {ast.unparse(n)!r})"
        )

    v = ev(tree.body)
    if not isinstance(v, int):
        raise ValueError(f"{expr!r} is not an int")
    return v


def case_env(case: dict[str, Any], block_dim: int) -> dict[str, Any]:
    shape = case["shape"]
    numel = 1
    for s in shape:
        numel *= s
    return {
        "numel": numel,
        "block_dim": block_dim,
        "last": shape[-1],
        "rows": numel // shape[-1],
        "shape": list(shape),
    }
