"""The ascendc verifier's own gates on this node (no CANN): the task spec refuses what it
cannot use, candidates are split per path, the DSL is checked on the host and lowered in
the sandbox with its errors classed and placed, the lowered C++ is the verdict's artifact,
and every verdict that asks for the CANN gates ends `infra_error` / `no_cann`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from verifiers.ascendc import dsl, parts
from verifiers.ascendc.spec import evaluate, parse_shape
from verifiers.catalog import load_task
from verifiers.contract import Limits, Status
from verifiers.registry import get_verifier
from verifiers.specfields import TaskSpecError

ROOT = Path(__file__).resolve().parents[2]
ADD = ROOT / "tasks" / "ascendc" / "add"
HERE = Limits(gates=("extract", "lower", "static"))
needs_pyasc = pytest.mark.skipif(
    shutil.which("pyasc-python") is None or shutil.which("bwrap") is None,
    reason="needs pyasc and bubblewrap: bash infra/install-toolchains.sh ascendc",
)


@pytest.fixture(scope="module")
def task():
    return load_task(ADD)


@pytest.fixture(scope="module")
def verifier():
    return get_verifier("ascendc")


# --- the spec ------------------------------------------------------------------------------


def _task_dir(tmp_path: Path, toml_edit=None, cases: str | None = None) -> Path:
    d = tmp_path / "ascendc" / "add"
    shutil.copytree(ADD, d, ignore=shutil.ignore_patterns("golden"))
    if toml_edit:
        p = d / "task.toml"
        p.write_text(toml_edit(p.read_text()))
    if cases is not None:
        (d / "cases.csv").write_text(cases)
    return d


@pytest.mark.parametrize(
    "edit, cases, field",
    [
        (lambda t: t.replace('form = "pyasc"', 'form = "cuda"'), None, "harness.form"),
        (lambda t: t.replace('path = "device_only"', 'path = "both"'), None, "harness.path"),
        (lambda t: t.replace('kind = "out"', 'kind = "in"'), None, "interface.args"),
        (lambda t: t.replace("numel // block_dim", "__import__('os')"), None, "value"),
        (None, "case_id;shape;dtype\n0;[4, -1];float32\n", "harness.cases line 2"),
        (None, "case_id;shape;dtype\n0;[4, 4];float64\n", "harness.cases line 2"),
        (None, "case_id;shape;dtype\n0;[4];float32\n0;[8];float32\n", "harness.cases line 3"),
        (None, "id;dims\n0;[4]\n", "harness.cases"),
        (None, "case_id;shape;dtype;dynamic\n0;[4];float32;yes\n", "harness.cases line 2"),
    ],
)
def test_a_task_the_verifier_cannot_use_is_refused_naming_its_field(tmp_path, edit, cases, field):
    d = _task_dir(tmp_path, edit, cases)
    with pytest.raises(TaskSpecError) as err:
        load_task(d)
    assert field in str(err.value)


def test_shapes_and_values_are_read_never_evaluated():
    assert parse_shape("[4, 1, 5]") == [4, 1, 5] and parse_shape("7") == [7]
    assert parse_shape("__import__('os').system('x')") is None
    assert parse_shape("[0, 4]") is None and parse_shape("[True]") is None
    env = {"numel": 4096, "block_dim": 8, "last": 512, "rows": 8, "shape": [8, 512]}
    assert evaluate("min(numel // block_dim, 1024)", env) == 512
    assert evaluate("shape[-1] * 2 + rows % 3", env) == 1026
    for bad in ("numel / 2", "open('x')", "numel ** 2", "shape[5]", "numel // 0", "x.y"):
        with pytest.raises(ValueError):
            evaluate(bad, env)


def test_the_task_keeps_cases_precision_rule_and_path(task):
    h = task.harness
    assert task.domain == "ascendc" and h["form"] == "pyasc" and h["path"] == "device_only"
    assert (h["atol"], h["rtol"]) == (1e-3, 1e-3)
    assert {c["dynamic"] for c in h["cases"]} == {False, True}
    assert "class Model" in h["model"]


# --- parts ---------------------------------------------------------------------------------

FILES = ["op_host/op.cpp", "op_host/op_tiling.h", "op_kernel/op.cpp"]


def test_parts_split_the_files_a_task_lists_and_join_reads_back():
    files = {f: f"// body of {f}\nint x;\n" for f in FILES}
    p = parts.split(parts.join(files), FILES, "host_device")
    assert p.files == files
    assert (p.kernel, p.host, p.tiling) == (
        "op_kernel/op.cpp",
        "op_host/op.cpp",
        "op_host/op_tiling.h",
    )
    assert parts.split("int k;\n", ["op_kernel/op.cpp"], "device_only").kernel == "op_kernel/op.cpp"


@pytest.mark.parametrize(
    "code, why",
    [
        ("int k;\n", "put each after"),
        ("// file: op_kernel/op.cpp\nint k;\n", "missing file(s)"),
        ("junk\n// file: op_kernel/op.cpp\n", "text before"),
        ("// file: op_kernel/other.cpp\nint k;\n", "is not one of"),
        ("// file: op_kernel/op.cpp\n// file: op_kernel/op.cpp\n", "appears twice"),
    ],
)
def test_parts_refuse_what_is_not_the_tasks_files(code, why):
    with pytest.raises(parts.PartsError) as err:
        parts.split(code, FILES, "host_device")
    assert why in str(err.value)


# --- the DSL on the host -------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, status, code",
    [
        ("import torch", Status.REJECTED, "torch_fallback"),
        ("from torch_npu import npu", Status.REJECTED, "torch_fallback"),
        ("import numpy as np", Status.REJECTED, "torch_fallback"),
        ("import os", Status.REJECTED, "forbidden_import"),
        ("import asc.runtime.config", Status.REJECTED, "forbidden_import"),
        ("X = __import__('os')", Status.REJECTED, "forbidden_call"),
        ("X = asc.lib", Status.REJECTED, "forbidden_call"),
        ("X = asc.__dict__", Status.REJECTED, "forbidden_call"),
        ("X = __builtins__['open']", Status.REJECTED, "forbidden_call"),
        ("def f(:\n  pass", Status.COMPILE_ERROR, "syntax_error"),
    ],
)
def test_the_dsl_file_may_hold_only_the_dsl(task, line, status, code):
    found = dsl.check_source(line + "\n" + task.reference, "add_kernel")
    assert found is not None and (found.status, found.code) == (status, code), found
    assert found.line == 1


def test_a_file_without_the_tasks_jit_kernel_is_format_error(task):
    assert dsl.check_source(task.reference, "add_kernel") is None
    renamed = task.reference.replace("def add_kernel", "def other_kernel")
    assert dsl.check_source(renamed, "add_kernel").code == "missing_entry_point"
    undecorated = task.reference.replace("@asc.jit\ndef add_kernel", "def add_kernel")
    assert dsl.check_source(undecorated, "add_kernel").code == "missing_entry_point"
    other_deco = task.reference.replace("@asc.jit\ndef add_kernel", "@staticmethod\ndef add_kernel")
    assert dsl.check_source(other_deco, "add_kernel").code == "forbidden_call"


# --- the gates here ------------------------------------------------------------------------


@needs_pyasc
def test_the_reference_lowers_and_every_cann_gate_is_no_cann(task, verifier):
    v = verifier.verify(task, task.reference, HERE)
    assert v.status == Status.PASS, v.feedback
    assert v.verifier_version.endswith("+gates:extract,lower,static")  # never a full pass
    kinds = {a.kind for a in v.artifacts}
    assert kinds == {"ascendc_cpp"} and len(v.artifacts) == 2  # float32 and float16
    cpp = v.artifacts[0].data.decode()
    assert "AscendC::" in cpp and "__global__ __aicore__ void add_kernel(" in cpp

    full = verifier.verify(task, task.reference)
    assert (full.status, full.code) == (Status.INFRA_ERROR, "no_cann"), full.feedback
    assert [c.name for c in full.checks if c.ok] == ["format", "extract", "lower", "static"]
    assert "compile, precision, speedup" in full.checks[-1].detail
    assert full.verifier_version == verifier.version


@needs_pyasc
@pytest.mark.parametrize(
    "old, new, code, needle",
    [
        ("asc.add(zl, xv, yv, tile)", "asc.vadd(zl, xv, yv, tile)", "api_signature",
         "closest: asc.add"),
        ("asc.add(zl, xv, yv, tile)", "asc.add(zl, xv, tile)", "api_signature",
         "AscendC: template"),
        ("asc.add(zl, xv, yv, tile)", "asc.add(zl, xv, yv_missing, tile)", "scope_lifetime",
         "yv_missing"),
    ],
)  # fmt: skip
def test_a_kernel_that_does_not_lower_is_compile_error_at_its_line(task, verifier, old, new,
                                                                   code, needle):  # fmt: skip
    bad = task.reference.replace(old, new)
    assert bad != task.reference
    v = verifier.verify(task, bad, HERE)
    assert (v.status, v.code) == (Status.COMPILE_ERROR, code), v.feedback
    line = 1 + bad.splitlines().index(next(x for x in bad.splitlines() if new in x))
    assert v.checks[-1].detail.startswith(f"line {line}: pyasc:"), v.checks[-1].detail
    assert f">{line:5d} |" in v.feedback and needle in v.feedback, v.feedback
