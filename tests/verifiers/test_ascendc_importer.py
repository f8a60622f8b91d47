"""The NPUKernelBench importer, on a tree in the benchmark's layout written for these tests
(tests/fixtures/npukernelbench: three operators of our own, one without an expert answer)
plus malformed operators made from them here: each operator becomes a Device-Only and a
Host+Device task that the catalog loads, the expert's files make a candidate the
verifier's extract gate takes, and with every gate the verdict ends where CANN is needed
(infra_error / no_cann); a malformed operator is skipped with its reason while the good
ones are still imported; the CLI runs it."""

from __future__ import annotations

import collections
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from verifiers.ascendc.npukernelbench import import_npukernelbench, strip_npu
from verifiers.ascendc.parts import join
from verifiers.catalog import load_task
from verifiers.contract import Status
from verifiers.specfields import ImportProblems

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "npukernelbench"
VEC_MUL = FIXTURE / "tasks" / "level1" / "Math" / "VecMul"
needs_tools = pytest.mark.skipif(
    shutil.which("pyasc-python") is None or shutil.which("bwrap") is None,
    reason="the ascendc verifier's tools (bash infra/install-toolchains.sh ascendc)",
)


def _tree(tmp: Path, static: bool = True) -> Path:
    """The fixture tree and three malformed operators made from VecMul."""
    src = tmp / "npukb"
    shutil.copytree(FIXTURE, src)
    if not static:
        cfg = src / "base_config.yaml"
        cfg.write_text(
            cfg.read_text().replace("static_shape_mode: True", "static_shape_mode: False")
        )
    tasks = src / "tasks"
    for op in ("level1/Math/NoCases", "level2/Norm/BadShape", "level1/Comparison/NoEntry"):
        shutil.copytree(VEC_MUL, tasks / op)
    (tasks / "level1/Math/NoCases/validation/test_cases.csv").unlink()
    (tasks / "level2/Norm/BadShape/validation/test_cases.csv").write_text(
        "case_id;shape;dtype\n0;[48, 2048];float16\n1;[4, -1];float16\n"
    )
    kernel = tasks / "level1/Comparison/NoEntry/answer/0/op_kernel/vec_mul.cpp"
    kernel.write_text(kernel.read_text().replace('extern "C" __global__', "__global__"))
    return src


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("npukb")
    dest = tmp / "out" / "ascendc"
    with pytest.raises(ImportProblems) as e:
        import_npukernelbench(_tree(tmp), dest)
    return dest, e.value


def test_each_operator_is_a_task_per_path_and_the_malformed_are_skipped_with_why(imported):
    _, problems = imported
    names = sorted(p.name for p in problems.imported)
    assert names == [
        "npukb_foreach_scale_device_only",
        "npukb_foreach_scale_host_device",
        "npukb_row_max_host_device",
        "npukb_vec_mul_device_only",
        "npukb_vec_mul_host_device",
    ]
    tasks = [load_task(p, "ascendc") for p in problems.imported]
    per = collections.Counter((t.level, t.harness["path"]) for t in tasks)
    assert per == {
        (1, "device_only"): 1,
        (1, "host_device"): 1,
        (2, "device_only"): 1,
        (2, "host_device"): 1,
        (3, "host_device"): 1,
    }
    why = {e.split(":", 1)[0]: e for e in problems.errors}
    assert len(problems.errors) == 4, problems.errors
    assert "no validation/test_cases.csv" in why["level1/Math/NoCases"]
    assert "line 3" in why["level2/Norm/BadShape"] and "no shape" in why["level2/Norm/BadShape"]
    assert "kernel entry" in why["level1/Comparison/NoEntry"]
    assert "no host driver" in why["level3/Reduce/RowMax (device_only)"]
    for t in tasks:
        assert (t.split, t.source, t.domain) == ("holdout", "npukernelbench", "ascendc")
        assert t.harness["form"] == "cpp" and t.harness["goldens"] == {}


def test_device_only_writes_the_kernel_against_the_experts_host_driver(imported):
    dest, _ = imported
    t = load_task(dest / "npukb_vec_mul_device_only", "ascendc")
    h = t.harness
    assert (t.family, t.interface["kernel"]) == ("elementwise", "vec_mul")
    assert h["files"] == ["op_kernel/vec_mul.cpp"]
    assert sorted(h["host_driver"]) == ["op_host/vec_mul.cpp", "op_host/vec_mul_tiling.h"]
    expert = VEC_MUL / "answer" / "0"
    assert h["host_driver"]["op_host/vec_mul.cpp"] == (expert / "op_host/vec_mul.cpp").read_text()
    assert t.reference == (expert / "op_kernel/vec_mul.cpp").read_text()
    assert sorted(h["expert"]) == [
        "CMakeLists.txt",
        "op_host/vec_mul.cpp",
        "op_host/vec_mul_tiling.h",
        "op_kernel/vec_mul.cpp",
    ]
    assert list(h["question"]) == ["question/op_kernel/vec_mul.cpp"]
    # the benchmark's own cases verbatim; the normalised ones (`float` is torch.float32)
    assert h["test_cases"] == (VEC_MUL / "validation/test_cases.csv").read_text()
    assert [(c["shape"], c["dtype"], c["dynamic"]) for c in h["cases"]] == [
        ([48, 2048], "float16", False),
        ([96, 4096], "float32", False),
        ([48, 64, 1024], "float32", False),
    ]
    # the reference model without what only runs on an NPU; the original kept beside it
    assert "torch_npu" not in h["model"] and "ModelNew" not in h["model"]
    assert "class Model(nn.Module):" in h["model"] and "ModelNew" in h["module"]
    assert "get_inputs" in h["prepare_inputs"] and h["custom_check"] is False
    assert "PYBIND11_MODULE" in h["pybind"]
    assert "z = x * y" in t.requirement and "op_kernel/vec_mul.cpp" in t.requirement


def test_host_device_writes_host_tiling_and_kernel_and_the_expert_split_host_side(imported):
    dest, _ = imported
    t = load_task(dest / "npukb_foreach_scale_host_device", "ascendc")
    h = t.harness
    # the expert splits its host side (op def, tiling function): both are the candidate's,
    # the tiling header right after the op file; its shape inference and kernel header are
    # built beside them
    assert h["files"] == [
        "op_host/foreach_scale_def.cpp",
        "op_host/foreach_scale_tiling.h",
        "op_host/foreach_scale_tiling.cpp",
        "op_kernel/foreach_scale.cpp",
    ]
    assert sorted(h["host_driver"]) == [
        "op_host/foreach_scale_proto.cpp",
        "op_kernel/foreach_scale_base.h",
    ]
    ans = FIXTURE / "tasks/level2/Foreach/ForeachScale/answer/0"
    assert t.reference == join({f: (ans / f).read_text() for f in h["files"]})
    assert (t.family, t.level) == ("foreach", 2)
    # a list of tensors: the case's shape is the first one's; its own precision rule kept
    assert [c["shape"] for c in h["cases"]] == [[48, 1024], [512, 3]]
    assert h["custom_check"] is True
    assert len(h["question"]) == 2


def test_an_operator_without_an_expert_is_host_device_with_no_reference(imported):
    dest, _ = imported
    t = load_task(dest / "npukb_row_max_host_device", "ascendc")
    assert t.reference is None and t.harness["expert"] == {}
    assert t.interface["kernel"] == "row_max"  # the skeleton's entry
    assert t.harness["files"] == [
        "op_host/row_max.cpp",
        "op_host/row_max_tiling.h",
        "op_kernel/row_max.cpp",
    ]
    # no shape column: its size columns; no dtype column: prepare_inputs' default
    assert [(c["shape"], c["dtype"]) for c in t.harness["cases"]] == [
        ([64, 4096], "float32"),
        ([1024, 128], "float32"),
    ]


def test_static_shape_mode_off_makes_the_cases_dynamic(tmp_path):
    with pytest.raises(ImportProblems) as e:
        import_npukernelbench(
            _tree(tmp_path, static=False), tmp_path / "out", paths=("host_device",)
        )
    assert sorted(p.name for p in e.value.imported) == [
        "npukb_foreach_scale_host_device",
        "npukb_row_max_host_device",
        "npukb_vec_mul_host_device",
    ]
    t = load_task(tmp_path / "out" / "npukb_vec_mul_host_device", "ascendc")
    assert all(c["dynamic"] for c in t.harness["cases"])


@needs_tools
@pytest.mark.parametrize("name", ["npukb_vec_mul_device_only", "npukb_foreach_scale_host_device"])
def test_the_expert_passes_extract_and_ends_where_cann_is_needed(imported, name):
    from verifiers.ascendc.verifier import AscendcVerifier

    dest, _ = imported
    t = load_task(dest / name, "ascendc")
    v = AscendcVerifier().verify(t, t.reference)
    assert (v.status, v.code) == (Status.INFRA_ERROR, "no_cann"), v.feedback
    ran = {c.name: c.ok for c in v.checks}
    assert ran["extract"] is True
    # a Host+Device answer missing its host side is the candidate's format error
    if t.harness["path"] == "host_device":
        kernel_only = t.reference.split("// file: op_kernel/")[1]
        bad = AscendcVerifier().verify(t, "// file: op_kernel/" + kernel_only)
        assert (bad.status, bad.code) == (Status.FORMAT_ERROR, "missing_entry_point")


def test_importing_twice_writes_the_same_bytes(imported, tmp_path):
    dest, problems = imported
    with pytest.raises(ImportProblems):
        import_npukernelbench(_tree(tmp_path), tmp_path / "again")
    for d in problems.imported:
        for f in sorted(p for p in d.rglob("*") if p.is_file()):
            rel = f.relative_to(dest)
            assert (tmp_path / "again" / rel).read_bytes() == f.read_bytes(), rel


def test_strip_npu_cuts_lines_and_keeps_the_reference_as_written():
    module = (VEC_MUL / "validation" / "module.py").read_text()
    model = strip_npu(module)
    assert '    """The reference: z = x * y."""\n' in model
    assert "import torch\nimport torch.nn as nn\n" in model
    assert "transfer_to_npu" not in model and "kernel_gen_ops" not in model


def test_the_cli_imports_and_says_what_it_does(tmp_path):
    runner = CliRunner()
    help_ = runner.invoke(app, ["import-npukernelbench", "--help"])
    assert help_.exit_code == 0
    assert "NPUKernelBench" in help_.output
    assert "--path" in help_.output and "no_cann" in help_.output
    src = _tree(tmp_path)
    res = runner.invoke(app, ["import-npukernelbench", str(src), "--dest", str(tmp_path / "cat")])
    assert res.exit_code == 1, res.output  # some were skipped: said, and a non-zero exit
    assert "5 imported" in res.output and "4 skipped" in res.output
    assert "NoCases" in res.output
    written = sorted(p.name for p in (tmp_path / "cat" / "ascendc").iterdir())
    assert len(written) == 5
    one = runner.invoke(
        app,
        [
            "import-npukernelbench",
            str(src),
            "--dest",
            str(tmp_path / "hd"),
            "--path",
            "host_device",
        ],
    )
    assert "3 imported" in one.output, one.output
    bad = runner.invoke(app, ["import-npukernelbench", str(src), "--path", "both"])
    assert bad.exit_code == 2
