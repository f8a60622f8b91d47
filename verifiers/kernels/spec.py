"""Kernel task specs: `tasks/{cuda,triton}/<name>/task.toml` + problem.py + ref.py.

The Task carries the texts themselves (problem and reference), so a GPU node needs nothing
but the JSONL line. See tasks/README.md for the format.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from verifiers.specfields import (
    Field,
    TaskSpecError,
    check_fields,
    parse_python,
    read_task_file,
)

# dtype row -> (atol, rtol). float32, float16 and bfloat16 are KernelBench's own
# (`get_tolerance_for_precision`, after torchbench); tf32 is float32 data that matrix units
# may round to tf32; float64 is torch.testing's default.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-4, 1e-4),
    "tf32": (1e-2, 1e-2),
    "float16": (1e-2, 1e-2),
    "bfloat16": (1e-2, 1e-2),
    "float64": (1e-7, 1e-7),
}
# outputs of these dtypes compare exactly, whatever the task's dtype
EXACT_DTYPES = frozenset(
    ("bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64")
)
_DTYPE_ALIASES = {
    "fp32": "float32",
    "float": "float32",
    "fp16": "float16",
    "half": "float16",
    "bf16": "bfloat16",
    "fp64": "float64",
    "double": "float64",
    "short": "int16",
    "int": "int32",
    "long": "int64",
}
MIN_TRIALS = 5
DEFAULT_SPEED_BAR = 0.8  # a task.toml without speed_bar; `speed_bar = 0`: no bar at all
PATHS = ("device", "extension")


HARNESS_FIELDS = (
    Field("problem", str, "the problem file (KernelBench layout), e.g. problem.py"),
    Field("reference", str, "the known-good solution file, e.g. ref.py", required=False),
    Field("dtype", str, f"one of {', '.join(TOLERANCES)}", check=lambda v: v in TOLERANCES),
    Field("atol", (int, float), "a non-negative number", required=False, check=lambda v: v >= 0),
    Field("rtol", (int, float), "a non-negative number", required=False, check=lambda v: v >= 0),
    Field(
        "trials",
        int,
        f"an integer >= {MIN_TRIALS}",
        required=False,
        check=lambda v: v >= MIN_TRIALS,
    ),
    Field(
        "speed_bar",
        (int, float),
        "a positive number, or 0 for no bar (speed recorded, never `slow`)",
        required=False,
        check=lambda v: v >= 0,
    ),
    Field("small", dict, "a [harness.small] table of problem.py globals", required=False),
    Field(
        "shift",
        (int, float),
        "a number added to floating inputs in one extra trial",
        required=False,
    ),
)
INTERFACE_FIELDS = (
    Field("entry", str, "the class the candidate defines, e.g. ModelNew", required=False),
    Field("path", str, f"one of {', '.join(PATHS)}", required=False, check=lambda v: v in PATHS),
)


def problem_facts(source: str, where: Path | str) -> dict[str, Any]:
    """Check a KernelBench problem file's layout; return what the prompt can show."""
    tree = parse_python(source, where, "problem")
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for need in ("Model", "get_inputs", "get_init_inputs"):
        if need not in names:
            raise TaskSpecError(where, "problem", f"a KernelBench file defining {need}")
    sizes = {}
    for n in tree.body:
        if (
            isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and isinstance(n.value, ast.Constant)
            and isinstance(n.value.value, (int, float))
        ):
            sizes[n.targets[0].id] = n.value.value
    forward_args: list[str] = []
    for n in tree.body:
        if isinstance(n, ast.ClassDef) and n.name == "Model":
            for fn in n.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
                    forward_args = [a.arg for a in fn.args.args[1:]]
    return {"sizes": sizes, "forward_args": forward_args}


def build_harness(
    where: Path | str,
    domain: str,
    harness: dict,
    problem: str,
    interface: dict | None = None,
) -> tuple[dict, dict]:
    """(interface, harness) of a kernel task from its toml tables and problem text."""
    facts = problem_facts(problem, where)
    dtype = harness["dtype"]
    atol, rtol = TOLERANCES[dtype]
    override = {k: float(harness[k]) for k in ("atol", "rtol") if k in harness}
    bar = harness.get("speed_bar", DEFAULT_SPEED_BAR)
    small = dict(harness.get("small", {}))
    for key in small:
        if key not in facts["sizes"]:
            raise TaskSpecError(
                where, f"harness.small.{key}", "a size global that problem.py defines", key
            )
    iface = {
        "entry": (interface or {}).get("entry", "ModelNew"),
        "forward_args": facts["forward_args"],
        "language": "CUDA C++ (sm_90) launched from PyTorch" if domain == "cuda" else "Triton",
    }
    if domain == "cuda":
        iface["path"] = (interface or {}).get("path", "device")
    return iface, {
        "problem": problem,
        "dtype": dtype,
        # the task-level pair, for readers of a single atol/rtol; `tolerance()` decides
        "atol": override.get("atol", atol),
        "rtol": override.get("rtol", rtol),
        "tolerances": {k: list(v) for k, v in TOLERANCES.items()},
        "tolerance_override": override,
        "trials": int(harness.get("trials", MIN_TRIALS)),
        "speed_bar": float(bar) if bar else None,  # None: no bar, never `slow`
        "small": small,
        "sizes": facts["sizes"],
        **({"shift": float(harness["shift"])} if harness.get("shift") else {}),
    }


def dtype_name(dtype: Any) -> str:
    """`torch.float32`, "torch.float32", "float32", "fp32" -> "float32"."""
    name = str(dtype).removeprefix("torch.")
    return _DTYPE_ALIASES.get(name, name)


def tolerance(harness: Mapping[str, Any], dtype: Any) -> tuple[float, float]:
    """(atol, rtol) for one output of `dtype` (a torch dtype or its name).

    The task's own atol/rtol win. Otherwise integer and bool outputs compare exactly and a
    floating output takes the looser of its dtype's row and the task's: float16 outputs
    of a float32 task are rounded to float16, float32 outputs of a tf32 task carry tf32's
    error. A Task from before per-dtype rows (no "tolerances") keeps its single pair."""
    if "tolerances" not in harness:
        return float(harness["atol"]), float(harness["rtol"])
    table = harness["tolerances"]
    name = dtype_name(dtype)
    task = tuple(table[harness["dtype"]])
    if name in EXACT_DTYPES:
        row: tuple[float, ...] = (0.0, 0.0)
    elif name in table:
        row = tuple(max(a, b) for a, b in zip(table[name], task, strict=True))
    else:  # complex, float8, ...: the task's row
        row = task
    override = harness.get("tolerance_override", {})
    return float(override.get("atol", row[0])), float(override.get("rtol", row[1]))


def load_kernel_spec(toml_path: Path, spec: dict) -> tuple[dict, dict, str | None]:
    domain = toml_path.parent.parent.name
    harness = spec["harness"]
    check_fields(toml_path, harness, HARNESS_FIELDS, "harness.")
    check_fields(toml_path, spec["interface"], INTERFACE_FIELDS, "interface.")
    problem = read_task_file(toml_path, "harness.problem", harness["problem"])
    reference = None
    if "reference" in harness:
        reference = read_task_file(toml_path, "harness.reference", harness["reference"])
        parse_python(reference, toml_path, "harness.reference")
    iface, h = build_harness(toml_path, domain, harness, problem, spec["interface"])
    return iface, h, reference
