"""The built-in ascendc catalog (tasks/ascendc): at least 20 pyasc tasks over three levels,
each with static and dynamic cases; every golden's outputs agree with a NumPy formula
written here (not torch: a second derivation of each op, on the inputs the golden stores)
under the task's precision rule, and the goldens are the bytes `make_goldens` makes; every
reference lowers and passes extract / lower / static, and with every gate ends `no_cann`
off an NPU node; a golden whose bytes change is caught against the harness's sha256."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from verifiers import registry
from verifiers.ascendc import cann
from verifiers.ascendc.goldens import (
    CHECK_ULP,
    golden_bytes,
    golden_dir,
    golden_mismatches,
    make_goldens,
)
from verifiers.ascendc.spec import FAMILIES, case_env, scalar_value
from verifiers.catalog import load_catalog, load_task
from verifiers.contract import Limits, Status
from verifiers.specfields import TaskSpecError

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "tasks" / "ascendc"
BUILD = Limits(gates=("extract", "lower", "static"))
needs_pyasc = pytest.mark.skipif(
    shutil.which("pyasc-python") is None,
    reason="pyasc not installed: bash infra/install-toolchains.sh ascendc",
)


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layernorm(x, eps):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)


# task -> (inputs by name, scalars by name) -> outputs by name; float64 throughout
FORMULAS = {
    "add": lambda i, s: {"z": i["x"] + i["y"]},
    "mul": lambda i, s: {"z": i["x"] * i["y"]},
    "sub": lambda i, s: {"z": i["x"] - i["y"]},
    "maximum": lambda i, s: {"z": np.where(i["x"] >= i["y"], i["x"], i["y"])},
    "minimum": lambda i, s: {"z": np.where(i["x"] <= i["y"], i["x"], i["y"])},
    "relu": lambda i, s: {"y": np.where(i["x"] > 0, i["x"], 0.0)},
    "abs": lambda i, s: {"y": np.hypot(i["x"], 0.0)},
    "exp": lambda i, s: {"y": np.e ** i["x"]},
    "sqrt": lambda i, s: {"y": i["x"] ** 0.5},
    "leaky_relu": lambda i, s: {"y": np.where(i["x"] >= 0, i["x"], s["alpha"] * i["x"])},
    "axpy": lambda i, s: {"z": s["alpha"] * i["x"] + i["y"]},
    "scale_shift": lambda i, s: {"y": i["x"] * s["scale"] + s["shift"]},
    "clamp": lambda i, s: {"y": np.minimum(np.maximum(i["x"], s["lo"]), s["hi"])},
    "cast_half": lambda i, s: {"y": i["x"]},  # the golden is x rounded once to float16
    "fma": lambda i, s: {"w": i["x"] * i["y"] + i["z"]},
    "squared_diff": lambda i, s: {"z": np.square(i["x"] - i["y"])},
    "sigmoid": lambda i, s: {"y": 0.5 * (1.0 + np.tanh(0.5 * i["x"]))},
    "silu": lambda i, s: {"y": i["x"] * 0.5 * (1.0 + np.tanh(0.5 * i["x"]))},
    "row_sum": lambda i, s: {"y": np.einsum("ij->i", i["x"])},
    "row_max": lambda i, s: {"y": np.sort(i["x"], axis=-1)[:, -1]},
    "row_mean": lambda i, s: {"y": np.einsum("ij->i", i["x"]) / i["x"].shape[-1]},
    "bias_add": lambda i, s: {"y": i["x"] + i["b"][None, :]},
    "bias_relu": lambda i, s: {"y": np.maximum(i["x"] + i["b"][None, :], 0.0)},
    "row_scale": lambda i, s: {"y": i["x"] * i["s"][:, None]},
    "softmax": lambda i, s: {"y": _softmax(i["x"])},
    "layernorm": lambda i, s: {"y": _layernorm(i["x"], s["eps"])},
    "rmsnorm": lambda i, s: {
        "y": i["x"] / np.sqrt((i["x"] ** 2).mean(-1, keepdims=True) + s["eps"]) * i["g"]
    },
    "matmul": lambda i, s: {"c": np.einsum("mk,kn->mn", i["a"], i["b"])},
    "matmul_relu": lambda i, s: {"c": np.maximum(np.einsum("mk,kn->mn", i["a"], i["b"]), 0.0)},
}

NAMES = sorted(p.parent.name for p in CATALOG.glob("*/task.toml"))


@pytest.fixture(scope="module")
def catalog():
    tasks, errors = load_catalog(ROOT / "tasks", ["ascendc"])
    assert not errors, [str(e) for e in errors]
    return {t.name: t for t in tasks}


def test_the_catalog_has_three_levels_with_static_and_dynamic_cases(catalog):
    assert len(catalog) >= 20 and sorted(catalog) == NAMES
    levels = Counter(t.level for t in catalog.values())
    assert levels[1] >= 9 and levels[2] >= 7 and levels[3] >= 4, levels
    for t in catalog.values():
        assert t.family in FAMILIES
        assert t.reference and t.harness["form"] == "pyasc"
        dynamic = {c["dynamic"] for c in t.harness["cases"]}
        assert dynamic == {True, False}, f"{t.name}: static and dynamic cases"
        assert sorted(t.harness["goldens"], key=int) == [
            str(c["case_id"]) for c in t.harness["cases"]
        ], f"{t.name}: a golden per case"


def _precision_failures(got: np.ndarray, want: np.ndarray, atol: float, rtol: float) -> int:
    """NPUKernelBench's rule: an element fails iff its absolute AND relative error are over
    the tolerances; NaN / Inf fail."""
    got = got.astype(np.float64)
    err = np.abs(got - want)
    bad = (err > atol) & (err > rtol * np.abs(want))
    return int((bad | ~np.isfinite(got)).sum())


@pytest.mark.parametrize("name", NAMES)
def test_each_golden_matches_an_independent_numpy_formula(name, catalog):
    task = catalog[name]
    assert name in FORMULAS, f"{name}: add its NumPy formula to FORMULAS"
    args = {a["name"]: a for a in task.interface["args"]}
    for case in task.harness["cases"]:
        path = golden_dir(CATALOG / name) / f"case{case['case_id']}.npz"
        with np.load(path) as z:
            data = {k: z[k] for k in z.files}
        meta = json.loads(str(data.pop("meta")))
        assert meta["case_id"] == case["case_id"] and meta["dtype"] == case["dtype"]
        env = case_env(case, task.harness["block_dim"])
        scalars = {n: scalar_value(a, env) for n, a in args.items() if a["kind"] == "scalar"}
        ins = {n: data[n].astype(np.float64) for n, a in args.items() if a["kind"] == "in"}
        want = FORMULAS[name](ins, scalars)
        outs = [n for n, a in args.items() if a["kind"] == "out"]
        assert sorted(want) == sorted(outs) and sorted(data) == sorted([*ins, *outs])
        for n in outs:
            dtype = case["dtype"] if args[n]["dtype"] == "case" else args[n]["dtype"]
            assert str(data[n].dtype) == ("float32" if dtype == "bfloat16" else dtype)
            assert data[n].shape == want[n].shape, (name, n, data[n].shape)
            bad = _precision_failures(data[n], want[n], task.harness["atol"], task.harness["rtol"])
            assert bad == 0, f"{name} case {case['case_id']}: {bad} elements of {n} off"


def test_inputs_follow_the_model_s_get_inputs(catalog):
    # sqrt's model draws positive inputs; the others are randn (some negative)
    with np.load(golden_dir(CATALOG / "sqrt") / "case0.npz") as z:
        assert (z["x"] > 0).all()
    with np.load(golden_dir(CATALOG / "relu") / "case0.npz") as z:
        assert (z["x"] < 0).any()


def test_the_goldens_are_the_bytes_make_goldens_makes():
    stale = [p for name in NAMES for p in make_goldens(CATALOG / name, check=True)]
    assert not stale, stale


def test_a_golden_whose_bytes_change_is_caught(tmp_path):
    d = tmp_path / "ascendc" / "relu"
    shutil.copytree(CATALOG / "relu", d)
    task = load_task(d)
    assert golden_mismatches(task, d) == []
    path = golden_dir(d) / "case1.npz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    assert golden_mismatches(task, d) == ["1"]
    assert load_task(d).task_id != task.task_id  # the task's id carries its goldens' hashes
    (golden_dir(d) / "case2.npz").unlink()
    assert golden_mismatches(task, d) == ["1", "2"]
    assert make_goldens(d, check=True) == [golden_dir(d) / "case1.npz", golden_dir(d) / "case2.npz"]


def test_a_golden_is_stale_past_a_few_ulp_of_this_hosts_outputs(tmp_path):
    """Another CPU's vector math may move an output's last bit (exp: 1 ULP on 71 of 4,096
    values between two hosts); that is the same golden. An output further off, or an
    input changed at all, is not."""
    d = tmp_path / "ascendc" / "exp"
    shutil.copytree(CATALOG / "exp", d)
    make_goldens(d)  # this host's own, so the ULP counts below are from its outputs
    path = golden_dir(d) / "case0.npz"
    with np.load(path) as z:
        orig = {k: z[k] for k in z.files}

    def write(name, idx, ulps):
        arrays = {k: v.copy() for k, v in orig.items()}
        a = arrays[name]
        for _ in range(ulps):
            a[idx] = np.nextafter(a[idx], np.float32(np.inf))
        path.write_bytes(golden_bytes(arrays))
        return make_goldens(d, check=True)

    assert write("y", (0, 0), 1) == [] and write("y", (3, 7), CHECK_ULP) == []
    assert write("y", (0, 0), CHECK_ULP + 1) == [path]
    assert write("y", (5, 5), 10_000) == [path]
    assert write("x", (0, 0), 1) == [path]  # inputs: the bytes


@pytest.mark.parametrize(
    ("arg", "why"),
    [
        ('{ name = "y", kind = "out", shape = ["rows", "shape[3]"] }', "out of range"),
        ('{ name = "y", kind = "out", shape = ["rows - 64"] }', "<= 0"),
        ('{ name = "y", kind = "out", shape = "rows" }', "list of dimension"),
        ('{ name = "y", kind = "out" }, { name = "a", kind = "scalar", value = 0.5 }', "int"),
    ],
)
def test_bad_argument_shapes_and_scalars_name_their_field(tmp_path, arg, why):
    d = tmp_path / "ascendc" / "row_sum"
    shutil.copytree(CATALOG / "row_sum", d)
    toml = (d / "task.toml").read_text()
    (d / "task.toml").write_text(
        toml.replace('{ name = "y", kind = "out", shape = ["rows"] }', arg)
    )
    with pytest.raises(TaskSpecError, match=why):
        load_task(d)


@pytest.fixture(scope="module")
def build_verdicts(catalog):
    tasks = [catalog[n] for n in NAMES]
    verdicts = registry.verify_many([(t, t.reference) for t in tasks], BUILD)
    return dict(zip(NAMES, verdicts, strict=True))


@needs_pyasc
@pytest.mark.parametrize("name", NAMES)
def test_every_reference_lowers_and_passes_the_build_gates(name, build_verdicts):
    v = build_verdicts[name]
    assert v.status == Status.PASS, (v.status, v.code, v.feedback)
    assert [c.name for c in v.checks if c.ok][-3:] == ["extract", "lower", "static"]


@needs_pyasc
@pytest.mark.skipif(cann.probe() is not None, reason="CANN is here: the NPU gates run")
def test_with_every_gate_every_reference_ends_no_cann_off_an_npu(catalog):
    verdicts = registry.verify_many([(catalog[n], catalog[n].reference) for n in NAMES])
    for name, v in zip(NAMES, verdicts, strict=True):
        assert (v.status, v.code) == (Status.INFRA_ERROR, "no_cann"), (name, v.feedback)
        assert {c.name for c in v.checks if c.ok} >= {"extract", "lower", "static"}
