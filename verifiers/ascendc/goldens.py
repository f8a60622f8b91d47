"""Goldens of an ascendc task: each case's inputs and the PyTorch reference's outputs on
them, kept beside the task as `golden/case<ID>.npz` (the spec records their sha256).

Inputs: a `torch.Generator` seeded with the harness's seed + the case id; each `in`
argument is `torch.randn` of its shape (`spec.arg_shape`) drawn in float32 and cast to its
dtype, unless model.py defines `get_inputs(shape, dtype, generator) -> tuple` (an op that
needs another range, e.g. sqrt's positive inputs). Integer inputs are `randint(-100, 100)`.

Outputs: `Model(**scalars)` (the `scalar` arguments named in its `__init__`) run on the CPU.
float16 / bfloat16 inputs are computed in float32 and the outputs cast back to their
argument's dtype, as NPUKernelBench's golden is the op's exact value rounded once. bfloat16
arrays are stored as float32 (NumPy has no bfloat16) and `meta` says so.

Each file holds one array per argument (its name) and `meta`, a JSON string: task, case,
seed, dtypes, shapes, the note. Same task, same bytes (`np.savez_compressed` writes fixed
zip timestamps; the JSON is sorted): `--check` recomputes and compares them.

    python -m verifiers.ascendc.goldens tasks/ascendc/add tasks/ascendc/relu
    python -m verifiers.ascendc.goldens --check tasks/ascendc/*
"""

from __future__ import annotations

import argparse
import inspect
import io
import json
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from verifiers.ascendc.spec import arg_shape, case_env, scalar_value
from verifiers.catalog import load_task
from verifiers.contract import Task

NOTE = (
    "inputs: torch.randn (or model.get_inputs) from torch.Generator(seed + case_id); "
    "outputs: Model on CPU, float16/bfloat16 computed in float32 and cast back once"
)
_LOW = ("float16", "bfloat16")


def golden_dir(task_dir: Path) -> Path:
    spec = tomllib.loads((task_dir / "task.toml").read_text(encoding="utf-8"))
    return task_dir / spec.get("harness", {}).get("goldens", "golden")


def _torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, name)


def _model_namespace(task: Task) -> dict[str, Any]:
    # the catalog's own reference (never a candidate's code): run as NPUKernelBench runs it
    ns: dict[str, Any] = {"__name__": f"crucible_golden_{task.name}"}
    exec(compile(task.harness["model"], f"{task.name}/model.py", "exec"), ns)
    return ns


def _arg_dtype(arg: dict[str, Any], case: dict[str, Any]) -> str:
    return case["dtype"] if arg["dtype"] == "case" else arg["dtype"]


def case_inputs(task: Task, ns: dict[str, Any], case: dict[str, Any]) -> dict[str, Any]:
    """The case's input tensors by argument name, in argument order."""
    import torch

    env = case_env(case, task.harness["block_dim"])
    ins = [a for a in task.interface["args"] if a["kind"] == "in"]
    gen = torch.Generator().manual_seed(task.harness["seed"] + case["case_id"])
    if "get_inputs" in ns:
        made = ns["get_inputs"](list(case["shape"]), _torch_dtype(case["dtype"]), gen)
        if len(made) != len(ins):
            raise ValueError(f"{task.name}: get_inputs made {len(made)} tensors, not {len(ins)}")
        return {a["name"]: t for a, t in zip(ins, made, strict=True)}
    out = {}
    for a in ins:
        shape, dtype = arg_shape(a, env), _arg_dtype(a, case)
        if dtype in ("float16", "bfloat16", "float32"):
            t = torch.randn(shape, generator=gen, dtype=torch.float32)
        elif dtype == "bool":
            t = torch.randint(0, 2, shape, generator=gen)
        else:
            t = torch.randint(-100, 100, shape, generator=gen)
        out[a["name"]] = t.to(_torch_dtype(dtype))
    return out


def case_golden(task: Task, ns: dict[str, Any], case: dict[str, Any]) -> dict[str, np.ndarray]:
    """One case's arrays: every `in` and `out` argument by name, plus `meta`."""
    import torch

    env = case_env(case, task.harness["block_dim"])
    args = task.interface["args"]
    inputs = case_inputs(task, ns, case)
    params = inspect.signature(ns["Model"].__init__).parameters
    init = {
        a["name"]: scalar_value(a, env)
        for a in args
        if a["kind"] == "scalar" and a["name"] in params
    }
    model = ns["Model"](**init).eval()
    wide = [
        t.float() if str(t.dtype).removeprefix("torch.") in _LOW else t for t in inputs.values()
    ]
    with torch.no_grad():
        result = model(*wide)
    outs = [a for a in args if a["kind"] == "out"]
    result = result if isinstance(result, (tuple, list)) else (result,)
    if len(result) != len(outs):
        raise ValueError(f"{task.name}: Model returned {len(result)} tensors, not {len(outs)}")
    arrays: dict[str, np.ndarray] = {}
    meta: dict[str, Any] = {
        "task": task.name,
        "case_id": case["case_id"],
        "seed": task.harness["seed"] + case["case_id"],
        "shape": case["shape"],
        "dtype": case["dtype"],
        "args": {},
        "note": NOTE,
    }
    ins = [a for a in args if a["kind"] == "in"]
    for arg, t in [*zip(ins, inputs.values(), strict=True), *zip(outs, result, strict=True)]:
        dtype, shape = _arg_dtype(arg, case), arg_shape(arg, env)
        t = t.detach().to(_torch_dtype(dtype)).contiguous()
        if list(t.shape) != shape:
            raise ValueError(f"{task.name}: {arg['name']} is {list(t.shape)}, not {shape}")
        stored = t.float() if dtype == "bfloat16" else t
        arrays[arg["name"]] = stored.numpy()
        meta["args"][arg["name"]] = {
            "kind": arg["kind"],
            "dtype": dtype,
            "stored": str(arrays[arg["name"]].dtype),
        }
    meta["bfloat16_as_float32"] = any(v["dtype"] == "bfloat16" for v in meta["args"].values())
    arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
    return arrays


def golden_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


# how far (units in the last place) a golden's outputs may lie from what this host computes
# for `make_goldens(check=True)`: torch's elementwise math takes another vector path on
# another CPU (exp: 71 of 4,096 values 1 ULP apart between an AVX-512 host and the one
# that made the goldens)
CHECK_ULP = 4


def _agrees(old: bytes, new: bytes, arrays: dict[str, np.ndarray]) -> bool:
    """Whether the golden file `old` is the one this host makes (`new`, from `arrays`):
    the same bytes, or the same meta, names, dtypes, shapes and inputs with every output
    within CHECK_ULP of this host's."""
    if old == new:
        return True
    try:
        with np.load(io.BytesIO(old), allow_pickle=False) as z:
            got = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):  # not an npz any more
        return False
    if set(got) != set(arrays) or str(got["meta"]) != str(arrays["meta"]):
        return False
    kinds = {k: v["kind"] for k, v in json.loads(str(arrays["meta"]))["args"].items()}
    for name, want in arrays.items():
        if name == "meta":
            continue
        have = got[name]
        if have.dtype != want.dtype or have.shape != want.shape:
            return False
        if kinds.get(name) != "out" or want.dtype.kind != "f":
            if have.tobytes() != want.tobytes():
                return False
            continue
        if not _within_ulp(have, want, CHECK_ULP):
            return False
    return True


def _within_ulp(a: np.ndarray, b: np.ndarray, ulp: int) -> bool:
    """Every element of `a` within `ulp` representable floats of `b` (NaN where both are)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    both_nan = np.isnan(a64) & np.isnan(b64)
    step = np.spacing(np.abs(b).astype(b.dtype)).astype(np.float64)
    ok = (a64 == b64) | both_nan | (np.abs(a64 - b64) <= ulp * step)
    return bool(ok.all())


def make_goldens(task_dir: Path | str, check: bool = False) -> list[Path]:
    """Write (or with `check`, compare) every case's golden file; the paths that were
    written (or, with `check`, that differ from what the task makes now: not the same
    bytes, and not the same inputs with outputs within CHECK_ULP, `_agrees`)."""
    task_dir = Path(task_dir)
    task = load_task(task_dir, "ascendc")
    ns = _model_namespace(task)
    out_dir = golden_dir(task_dir)
    changed = []
    for case in task.harness["cases"]:
        path = out_dir / f"case{case['case_id']}.npz"
        arrays = case_golden(task, ns, case)
        data = golden_bytes(arrays)
        if check:
            if not path.is_file() or not _agrees(path.read_bytes(), data, arrays):
                changed.append(path)
            continue
        out_dir.mkdir(exist_ok=True)
        path.write_bytes(data)
        changed.append(path)
    return changed


def golden_mismatches(task: Task, task_dir: Path | str) -> list[str]:
    """The case ids whose golden file on disk is missing or is not the one the task was
    loaded with (its sha256 in the harness): a golden changed after the task was made."""
    import hashlib

    out_dir = golden_dir(Path(task_dir))
    bad = []
    for cid, sha in sorted(task.harness["goldens"].items()):
        path = out_dir / f"case{cid}.npz"
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != sha:
            bad.append(cid)
    missing = {str(c["case_id"]) for c in task.harness["cases"]} - set(task.harness["goldens"])
    return sorted(set(bad) | missing, key=int)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m verifiers.ascendc.goldens",
        description="Make the goldens (golden/case<ID>.npz) of ascendc tasks from their "
        "model.py and cases, with each case's seeded inputs.",
    )
    ap.add_argument("task_dirs", nargs="+", type=Path, metavar="TASK_DIR")
    ap.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if a golden is missing or differs from what it makes",
    )
    ns = ap.parse_args(argv)
    bad = 0
    for d in ns.task_dirs:
        paths = make_goldens(d, check=ns.check)
        if ns.check:
            bad += len(paths)
            for p in paths:
                sys.stderr.write(f"differs or missing: {p}\n")
        else:
            sys.stdout.write(f"{d}: {len(paths)} golden(s)\n")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
