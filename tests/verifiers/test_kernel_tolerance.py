"""Tolerances per output dtype, as KernelBench now uses them, and the KernelBench importer's
convention (correctness decides; no speed bar)."""

from __future__ import annotations

import tomllib

import pytest
import torch

from verifiers.catalog import load_task
from verifiers.kernels import spec
from verifiers.kernels.compare import compare
from verifiers.kernels.importer import import_kernelbench, problem_dtype
from verifiers.specfields import TaskSpecError, check_fields

PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """Sums each row."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=1)


batch_size = 64
dim = 4096


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
'''


def harness(**table) -> dict:
    return spec.build_harness("test", "triton", {"problem": "problem.py", **table}, PROBLEM)[1]


def test_the_rows_are_kernelbenchs():
    # KernelBench's src/kernelbench/eval.py get_tolerance_for_precision
    assert spec.TOLERANCES["float32"] == (1e-4, 1e-4)
    assert spec.TOLERANCES["float16"] == (1e-2, 1e-2)
    assert spec.TOLERANCES["bfloat16"] == (1e-2, 1e-2)


@pytest.mark.parametrize(
    "task_dtype, out_dtype, want",
    [
        ("float32", torch.float32, (1e-4, 1e-4)),
        ("float32", "torch.float32", (1e-4, 1e-4)),
        ("float32", "float32", (1e-4, 1e-4)),
        ("float32", torch.float16, (1e-2, 1e-2)),  # rounded to float16: its row
        ("float32", "torch.bfloat16", (1e-2, 1e-2)),
        ("float32", torch.float64, (1e-4, 1e-4)),  # computed in float32: the task's row
        ("float64", torch.float64, (1e-7, 1e-7)),
        ("float16", torch.float16, (1e-2, 1e-2)),
        ("float16", torch.float32, (1e-2, 1e-2)),  # float16 data: never tighter than its row
        ("bfloat16", "bf16", (1e-2, 1e-2)),
        ("tf32", torch.float32, (1e-2, 1e-2)),  # tf32 error in float32 outputs
        ("float32", torch.int64, (0.0, 0.0)),  # indices, counts: exact
        ("float16", torch.int32, (0.0, 0.0)),
        ("float32", torch.bool, (0.0, 0.0)),
        ("float32", torch.complex64, (1e-4, 1e-4)),  # no row of its own: the task's
    ],
)
def test_tolerance_per_output_dtype(task_dtype, out_dtype, want):
    assert spec.tolerance(harness(dtype=task_dtype), out_dtype) == pytest.approx(want)


def test_explicit_overrides_win_for_every_output():
    h = harness(dtype="float32", atol=1e-3)  # atol only: rtol stays the row's
    assert spec.tolerance(h, torch.float32) == (1e-3, 1e-4)
    assert spec.tolerance(h, torch.float16) == (1e-3, 1e-2)
    both = harness(dtype="float16", atol=2e-2, rtol=2e-2)
    for dtype in (torch.float16, torch.float32, torch.int64):
        assert spec.tolerance(both, dtype) == (2e-2, 2e-2)
    assert (both["atol"], both["rtol"]) == (2e-2, 2e-2)  # the single pair, as before
    assert spec.tolerance(harness(dtype="float32", atol=0), torch.float32) == (0.0, 1e-4)


def test_a_task_from_before_the_rows_keeps_its_pair():
    old = {"dtype": "float32", "atol": 1e-2, "rtol": 1e-2, "speed_bar": 1.0}
    for dtype in (torch.float32, "torch.float16", torch.int64):
        assert spec.tolerance(old, dtype) == (1e-2, 1e-2)


def test_the_rows_travel_with_the_task():
    h = harness(dtype="float32")
    assert h["tolerances"]["float32"] == [1e-4, 1e-4] and h["tolerance_override"] == {}
    # a row changed later in the code does not change a loaded task's verdicts
    h["tolerances"]["float32"] = [5e-4, 5e-4]
    assert spec.tolerance(h, torch.float32) == (5e-4, 5e-4)


def test_speed_bar_default_and_none():
    assert harness(dtype="float32")["speed_bar"] == spec.DEFAULT_SPEED_BAR
    assert harness(dtype="float32", speed_bar=0.5)["speed_bar"] == 0.5
    assert harness(dtype="float32", speed_bar=0)["speed_bar"] is None  # no bar: never slow
    check_fields(
        "t.toml", {"problem": "p", "dtype": "float32", "speed_bar": 0}, spec.HARNESS_FIELDS
    )
    with pytest.raises(TaskSpecError, match="speed_bar"):
        check_fields(
            "t.toml", {"problem": "p", "dtype": "float32", "speed_bar": -1}, spec.HARNESS_FIELDS
        )


def test_dropping_one_of_4096_summands_fails_at_the_float32_row():
    torch.manual_seed(0)
    x = torch.rand(64, 4096)  # each row sums to about 2048
    want = [x.sum(dim=1)]
    got = [x[:, :-1].sum(dim=1)]  # a candidate that skips the last element of each row
    atol, rtol = spec.tolerance(harness(dtype="float32"), want[0].dtype)
    strict = compare(got, want, atol, rtol)
    assert not strict.ok and strict.code == "numeric_mismatch", strict
    assert "atol=0.0001 rtol=0.0001" in strict.summary
    # KernelBench v0/v0.1's 1e-2 for every dtype lets it through: 1e-2 * 2048 > any summand
    assert compare(got, want, 1e-2, 1e-2).ok
    # while a correct sum in another order passes at the float32 row
    reordered = [x.flip(dims=[1]).sum(dim=1)]
    assert compare(reordered, want, atol, rtol).ok


@pytest.mark.parametrize(
    "inputs, dtype",
    [
        ("torch.rand(batch_size, dim)", "float32"),
        ("torch.rand(batch_size, dim, dtype=torch.float16)", "float16"),
        ("torch.rand(batch_size, dim).bfloat16()", "bfloat16"),
        ("torch.rand(batch_size, dim).half(), torch.rand(dim)", "float16"),
        ("torch.rand(batch_size, dim, dtype=torch.float16), torch.rand(dim).double()", "float32"),
        ("torch.randint(0, 10, (batch_size, dim), dtype=torch.int64)", "float32"),
    ],
)
def test_importer_dtype_from_the_problem(inputs, dtype):
    assert problem_dtype(PROBLEM.replace("torch.rand(batch_size, dim)", inputs)) == dtype


def test_imported_float32_problem_has_no_override_and_no_speed_bar(tmp_path):
    src = tmp_path / "KernelBench" / "level1"
    src.mkdir(parents=True)
    (src / "47_Sum_rows.py").write_text(PROBLEM)
    out = import_kernelbench(tmp_path / "KernelBench", tmp_path / "out", domains=("triton",))
    assert [p.name for p in out] == ["kb_l1_47_sum_rows"]
    table = tomllib.loads((out[0] / "task.toml").read_text())["harness"]
    assert "atol" not in table and "rtol" not in table and table["speed_bar"] == 0
    t = load_task(out[0])
    h = t.harness
    assert (h["dtype"], h["tolerance_override"], h["speed_bar"]) == ("float32", {}, None)
    assert spec.tolerance(h, torch.float32) == (1e-4, 1e-4)
    assert spec.tolerance(h, torch.float16) == (1e-2, 1e-2)


def test_each_output_at_its_own_dtype():
    h = harness(dtype="float32")
    want = [torch.full((4,), 1000.0), torch.arange(20000, 20004)]
    near = [want[0] + 0.05, want[1].clone()]  # within 1e-4 + 1e-4 * 1000: passes
    tol = lambda dtype: spec.tolerance(h, dtype)  # noqa: E731
    assert compare(near, want, tol=tol).ok
    # an index off by one: float32's row would allow 1e-4 * 20000 = 2; integers are exact
    off_by_one = [want[0].clone(), want[1] + torch.tensor([0, 0, 1, 0])]
    assert compare(off_by_one, want, 1e-4, 1e-4).ok
    verdict = compare(off_by_one, want, tol=tol)
    assert not verdict.ok and "output 1" in verdict.summary


def test_compare_reads_each_chunk_once_and_names_what_it_did_before(monkeypatch, host_reads):
    """`compare` reads a chunk's NaN count, largest error and count out of tolerance back
    together; the verdicts are what they were: a NaN anywhere wins over a mismatch
    before it, the worst mismatch over every chunk is the one named, the largest error
    spans the chunks, integers compare exactly and equal infinities pass."""
    from verifiers.kernels import compare as cmp

    monkeypatch.setattr(cmp, "CHUNK", 4)
    want = torch.arange(12, dtype=torch.float32)
    got = want.clone()
    host_reads.clear()
    assert compare([got], [want], 1e-3, 0.0).ok
    assert host_reads == {"tolist": 3}, host_reads  # three chunks, one read each
    got[2] += 0.5  # chunk 0: out of tolerance
    got[9] = float("nan")  # chunk 2: a NaN
    v = compare([got], [want], 1e-3, 0.0)
    assert (v.ok, v.code) == (False, "nan_output"), v
    assert "1 NaN element(s) (first at [9]" in v.summary
    got[9] = want[9] + 2.0  # chunk 2 now holds the worst mismatch, chunk 0 a smaller one
    v = compare([got], [want], 1e-3, 0.0)
    assert (v.ok, v.code) == (False, "numeric_mismatch"), v
    assert "2 of 12 elements" in v.summary and "worst at [9]: got 11, expected 9" in v.summary
    assert v.max_abs_err == 2.0
    v = compare([got], [want], 3.0, 0.0)  # all within: the largest error over the chunks
    assert v.ok and v.max_abs_err == 2.0
    ints = torch.arange(10)
    assert compare([ints.clone()], [ints], 0.0, 0.0).ok
    off = ints.clone()
    off[7] += 1
    v = compare([off], [ints], 0.0, 0.0)
    assert (v.ok, v.code) == (False, "numeric_mismatch") and "worst at [7]" in v.summary
    inf = torch.tensor([1.0, float("inf"), -float("inf"), 2.0, 3.0])
    assert compare([inf.clone()], [inf], 0.0, 0.0).ok
    flipped = inf.clone()
    flipped[1] = -float("inf")
    assert not compare([flipped], [inf], 0.0, 0.0).ok
    empty = torch.empty(0)
    assert compare([empty], [empty.clone()], 0.0, 0.0).ok
