"""Kernel task specs: `tasks/{cuda,triton}/<name>/task.toml` + problem.py + ref.py.

The Task carries the texts themselves (problem and reference), so a GPU node needs nothing
but the JSONL line. See tasks/README.md for the format.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from verifiers.specfields import (
    Field,
    TaskSpecError,
    check_fields,
    parse_python,
    read_task_file,
)

# dtype row -> (atol, rtol)
TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-4, 1e-4),
    "tf32": (1e-2, 1e-2),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
}
MIN_TRIALS = 5
DEFAULT_SPEED_BAR = 0.8
PATHS = ("device", "extension")


def _positive(v: Any) -> bool:
    return v > 0


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
    Field("speed_bar", (int, float), "a positive number", required=False, check=_positive),
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
        "atol": float(harness.get("atol", atol)),
        "rtol": float(harness.get("rtol", rtol)),
        "trials": int(harness.get("trials", MIN_TRIALS)),
        "speed_bar": float(harness.get("speed_bar", DEFAULT_SPEED_BAR)),
        "small": small,
        "sizes": facts["sizes"],
        **({"shift": float(harness["shift"])} if harness.get("shift") else {}),
    }


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
