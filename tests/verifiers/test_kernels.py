"""The CUDA and Triton verifiers on the CPU: every gate has a candidate that fails it.

No GPU here (nor in CI): Triton runs under its interpreter at the tasks' small shapes and
is compiled ahead of time for sm_90; CUDA is compiled for sm_90 with nvcc and its launches
are dry-run at the timing shapes. The GPU-only gates must end the verdict as infra_error
(`no_gpu`), never pass. The GPU itself is exercised by bench/bench_kernels.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from verifiers.catalog import load_task
from verifiers.contract import Candidate, Limits, Status
from verifiers.kernels import anticheat
from verifiers.kernels.limits import (
    DeviceLimits,
    KernelResources,
    LaunchLimitError,
    check_launch,
    parse_ptxas,
)
from verifiers.kernels.nvcc import find_nvcc
from verifiers.kernels.verifier import CudaVerifier, TritonVerifier, judge_speed

ROOT = Path(__file__).resolve().parents[2]
CPU_GATES = ("parse", "anticheat", "compile", "launch", "correct")


TRITON_RELU = """
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
        return y
"""

CUDA_RELU = '''
import torch

CUDA_SRC = r"""
extern "C" __global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y,
                                       long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}
"""


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.k = cuda_kernel("relu_kernel")

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        self.k(grid=((n + 255) // 256,), block=(256,), args=(x, y, n))
        return y
'''


@pytest.fixture(scope="module")
def cuda_v():
    if find_nvcc() is None:  # the Triton tests still run
        pytest.skip("nvcc is not installed")
    v = CudaVerifier(device="cpu", workers=2)
    yield v
    v.close()


@pytest.fixture(scope="module")
def relu_c():
    return load_task(ROOT / "tasks/cuda/relu")


def check(v, task, code, gates=CPU_GATES, **limits):
    verdict = v.verify(task, code, Limits(gates=gates, **limits))
    return verdict


def failed_gate(verdict) -> str:
    return next(c.name for c in verdict.checks if not c.ok)


# --- a good candidate passes the CPU gates, and never passes the GPU ones here ------------
def test_triton_candidate_passes_cpu_gates(triton_v, relu_t):
    v = check(triton_v, relu_t, TRITON_RELU)
    assert v.status is Status.PASS, v.feedback
    names = [c.name for c in v.checks]
    assert names == ["format", *CPU_GATES]
    assert v.metrics["gates_skipped"] == ["timing"]
    assert v.metrics["triton_aot"] and v.metrics["triton_aot"][0]["cubin_bytes"] > 0
    assert len(v.metrics["trial_seeds"]) == 5


def test_without_gpu_the_timing_gate_is_infra_never_pass(triton_v, cuda_v, relu_t, relu_c):
    t = triton_v.verify(relu_t, TRITON_RELU)
    assert t.status is Status.INFRA_ERROR and t.code == "no_gpu"
    assert t.metrics["gates_not_run"] == ["timing"]
    assert "timing" in t.feedback
    c = cuda_v.verify(relu_c, CUDA_RELU)
    assert c.status is Status.INFRA_ERROR and c.code == "no_gpu"
    assert c.metrics["gates_not_run"] == ["correct", "timing"]
    assert [ch.name for ch in c.checks if ch.ok] == [
        "format",
        "parse",
        "anticheat",
        "compile",
        "launch",
    ]


def test_cuda_candidate_compiles_to_cubin_with_ptxas_report(cuda_v, relu_c):
    v = check(cuda_v, relu_c, CUDA_RELU, gates=("parse", "anticheat", "compile", "launch"))
    assert v.status is Status.PASS, v.feedback
    assert v.metrics["path"] == "device"
    assert v.metrics["ptxas"]["relu_kernel"]["registers"] > 0
    assert v.metrics["launches"][0]["grid"][0] == (24576 * 4093 + 255) // 256


# --- parse -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("code", "status", "tcode"),
    [
        ("def broken(:\n    pass\n", Status.COMPILE_ERROR, "syntax_error"),
        (
            "import torch\nclass Other(torch.nn.Module):\n    pass\n",
            Status.FORMAT_ERROR,
            "missing_entry_point",
        ),
    ],
)
def test_parse_gate(triton_v, relu_t, code, status, tcode):
    v = check(triton_v, relu_t, code)
    assert (v.status, v.code, failed_gate(v)) == (status, tcode, "parse")


def test_cuda_candidate_without_cuda_source_is_format_error(cuda_v, relu_c):
    code = (
        "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x\n"
    )
    v = check(cuda_v, relu_c, code)
    assert (v.status, v.code) == (Status.FORMAT_ERROR, "missing_entry_point")


# --- anti-cheat: each rule has a candidate that trips it -------------------------------------
ANTICHEAT = {
    "torch_fallback": ("        return y\n", "        return torch.relu(x)\n"),
    "torch_compute": ("        return y\n", "        return y * 1.0\n"),
    "try_except_fallback": (
        "        relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)\n",
        "        try:\n            relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)\n"
        "        except Exception:\n            pass\n",
    ),
    "reads_reference": ("import torch\n", "import torch\nimport inspect\n"),
    "timing_games": ("        return y\n", "        torch.cuda.synchronize()\n        return y\n"),
    "forbidden_import": ("import torch\n", "import torch\nimport subprocess\n"),
}


@pytest.mark.parametrize("rule", sorted(ANTICHEAT))
def test_anticheat_rule_trips(triton_v, relu_t, rule):
    old, new = ANTICHEAT[rule]
    assert old in TRITON_RELU
    v = check(triton_v, relu_t, TRITON_RELU.replace(old, new, 1))
    assert v.status is Status.REJECTED, v.feedback
    assert v.code == rule and failed_gate(v) == "anticheat"
    assert anticheat.RULES[rule][:30] in v.feedback  # the rationale travels with it


@pytest.mark.parametrize(
    ("snippet", "rule"),
    [
        (
            "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        self.last = x\n"
            "        return x\n",
            "timing_games",
        ),
        (
            "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
            "        return Model()(x)\n",
            "reads_reference",
        ),
        (
            "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
            "        return getattr(torch, 'rel' + 'u')(x)\n",
            "reads_reference",
        ),
        (
            "class ModelNew(torch.nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.act = torch.nn.ReLU()\n"
            "    def forward(self, x):\n        return self.act(x)\n",
            "torch_fallback",
        ),
        (
            "class ModelNew(torch.nn.Module):\n    def forward(self, a, b):\n"
            "        return a @ b\n",
            "torch_compute",
        ),
        ("torch.relu = lambda x: x\n", "timing_games"),
        (
            "import torch.nn.functional as F\nclass ModelNew(torch.nn.Module):\n"
            "    def forward(self, x):\n        return F.relu(x)\n",
            "torch_fallback",
        ),
    ],
)
def test_anticheat_more_rules(snippet, rule):
    problem = (ROOT / "tasks/triton/relu/problem.py").read_text()
    found = anticheat.check("import torch\n" + snippet, problem)
    assert rule in {f.code for f in found}, found


def test_anticheat_leaves_kernels_and_plain_launch_code_alone():
    for domain in ("triton", "cuda"):
        for d in sorted((ROOT / "tasks" / domain).iterdir()):
            t = load_task(d)
            assert anticheat.check(t.reference, t.harness["problem"]) == [], d.name


def test_extension_cpp_that_calls_torch_ops_is_a_fallback():
    code = (ROOT / "tests/verifiers/kernel_fixtures/relu_extension.py").read_text()
    assert anticheat.check(code) == []
    bad = code.replace("auto y = torch::empty_like(x);", "auto y = torch::relu(x);")
    assert "torch_fallback" in {f.code for f in anticheat.check(bad)}


# --- compile ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("old", "new", "tcode"),
    [
        ("tl.maximum(x, 0.0)", "tl.maximumm(x, 0.0)", "wrong_api"),
        ("tl.maximum(x, 0.0)", "tl.maximum(x, 0.0, 1.0, 2.0)", "wrong_api"),
        ("offs = pid * BLOCK + tl.arange(0, BLOCK)", "offs = pid * BLOCK + tl.arange(0, n)", None),
        ("tl.maximum(x, 0.0)", "tl.maximum(x, undefined_name)", "undefined_identifier"),
    ],
)
def test_triton_compile_errors(triton_v, relu_t, old, new, tcode):
    v = check(triton_v, relu_t, TRITON_RELU.replace(old, new))
    assert v.status is Status.COMPILE_ERROR, (v.status, v.feedback)
    assert failed_gate(v) == "compile"
    if tcode:
        assert v.code == tcode, v.feedback
    assert v.feedback


@pytest.mark.parametrize(
    ("old", "new", "tcode"),
    [
        ("if (i < n)", "if (i < m)", "undefined_identifier"),
        ("float v = x[i];", "float* v = x[i];", "type_error"),
        ("y[i] = v > 0.0f ? v : 0.0f;", "y[i] = v > 0.0f ? v : 0.0f", "syntax_error"),
    ],
)
def test_cuda_compile_errors(cuda_v, relu_c, old, new, tcode):
    assert old in CUDA_RELU
    v = check(cuda_v, relu_c, CUDA_RELU.replace(old, new))
    assert (v.status, v.code, failed_gate(v)) == (Status.COMPILE_ERROR, tcode, "compile"), (
        v.feedback
    )
    assert "error" in v.feedback


# --- launch limits ------------------------------------------------------------------------
# the ReLU launched on grid axis 1: past 65535 programs at the timing shapes
TRITON_GRID_Y = (
    TRITON_RELU.replace("tl.program_id(0)", "tl.program_id(1)")
    .replace("[(triton.cdiv(n, BLOCK),)]", "[(1, triton.cdiv(n, BLOCK))]")
    .replace("BLOCK = 1024", "BLOCK = 256")
)


def test_triton_grid_past_the_limit(triton_v, relu_t):
    v = check(triton_v, relu_t, TRITON_GRID_Y)
    assert (v.status, v.code, failed_gate(v)) == (
        Status.RUNTIME_ERROR,
        "launch_exceeds_limit",
        "launch",
    ), v.feedback
    assert "gridDim.y" in v.feedback and "65535" in v.feedback


def test_triton_too_many_threads(triton_v, relu_t):
    code = TRITON_RELU.replace("BLOCK=BLOCK)", "BLOCK=BLOCK, num_warps=64)")
    v = check(triton_v, relu_t, code)
    assert (v.status, v.code) == (Status.RUNTIME_ERROR, "launch_exceeds_limit"), v.feedback


@pytest.mark.parametrize(
    ("old", "new", "tcode", "says"),
    [
        (
            "grid=((n + 255) // 256,)",
            "grid=(1, (n + 255) // 256)",
            "launch_exceeds_limit",
            "gridDim.y",
        ),
        ("block=(256,)", "block=(2048,)", "launch_exceeds_limit", "blockDim.x"),
        (
            "args=(x, y, n))",
            "args=(x, y, n), shared_mem=300000)",
            "launch_exceeds_limit",
            "shared memory",
        ),
        ("args=(x, y, n)", "args=(x, y)", "launch_arg_mismatch", "takes 3 arguments"),
        ("args=(x, y, n)", "args=(x, y, x)", "launch_arg_mismatch", "pass a Python int"),
    ],
)
def test_cuda_launch_checks(cuda_v, relu_c, old, new, tcode, says):
    assert old in CUDA_RELU
    v = check(cuda_v, relu_c, CUDA_RELU.replace(old, new))
    assert (v.status, v.code, failed_gate(v)) == (Status.RUNTIME_ERROR, tcode, "launch"), v.feedback
    assert says in v.feedback


def test_cuda_unknown_kernel_name(cuda_v, relu_c):
    v = check(
        cuda_v, relu_c, CUDA_RELU.replace('cuda_kernel("relu_kernel")', 'cuda_kernel("relu")')
    )
    assert (v.status, v.code) == (Status.RUNTIME_ERROR, "launch_arg_mismatch"), v.feedback
    assert "relu_kernel" in v.feedback


def test_check_launch_registers_and_limits():
    lim = DeviceLimits()
    check_launch("k", (2**31 - 1, 65535, 65535), (1024, 1, 1), 0, None, lim)
    with pytest.raises(LaunchLimitError, match="registers"):
        check_launch("k", (1, 1, 1), (1024, 1, 1), 0, KernelResources(registers=128), lim)
    check_launch("k", (1, 1, 1), (512, 1, 1), 0, KernelResources(registers=128), lim)
    with pytest.raises(LaunchLimitError, match=r"gridDim\.z"):
        check_launch("k", (1, 1, 65536), (32, 1, 1), 0, None, lim)
    with pytest.raises(LaunchLimitError, match=r"blockDim\.z"):
        check_launch("k", (1, 1, 1), (1, 1, 65), 0, None, lim)


def test_parse_ptxas_report():
    report = (
        "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
        "ptxas info    : Function properties for k\n"
        "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem\n"
    )
    r = parse_ptxas(report)["k"]
    assert (r.registers, r.static_shared, r.stack, r.spill_stores) == (40, 2048, 8, 4)


# --- correctness (Triton's interpreter on CPU tensors) -------------------------------------
@pytest.mark.parametrize(
    ("old", "new", "tcode"),
    [
        ("tl.maximum(x, 0.0)", "tl.maximum(x, 0.01)", "numeric_mismatch"),
        ("(triton.cdiv(n, BLOCK),)", "(n // BLOCK,)", "nan_output"),  # grid off by one
        ("        return y\n", "        return y.view(-1)\n", "shape_mismatch"),
    ],
)
def test_wrong_answers(triton_v, relu_t, old, new, tcode):
    v = check(triton_v, relu_t, TRITON_RELU.replace(old, new))
    assert (v.status, v.code, failed_gate(v)) == (Status.WRONG_ANSWER, tcode, "correct"), v.feedback
    assert "trial 1" in v.feedback


def test_nan_never_passes_and_worst_element_is_named(triton_v, relu_t):
    code = TRITON_RELU.replace(
        "tl.maximum(x, 0.0)", "tl.where(offs == 7, float('nan'), tl.maximum(x, 0.0))"
    )
    v = check(triton_v, relu_t, code)
    assert (v.status, v.code) == (Status.WRONG_ANSWER, "nan_output")
    assert "[0, 7]" in v.feedback


def test_runtime_exception_and_timeout(triton_v, relu_t):
    raising = TRITON_RELU.replace("        return y\n", "        raise ValueError('boom')\n")
    v = check(triton_v, relu_t, raising)
    assert (v.status, v.code) == (Status.RUNTIME_ERROR, "kernel_exception")
    assert "boom" in v.feedback
    # loops only on real CPU tensors (the dry run uses meta ones): the correctness run hangs
    hang = TRITON_RELU.replace(
        "        return y\n",
        "        while x.device.type == 'cpu':\n            n = n\n        return y\n",
    )
    # a CPU budget under the wall: a busy hang spends it (the candidate's); cut by the wall
    # far short of it, it would be the machine's (verifiers.sandbox.Stop: machine_slow)
    run, aot = triton_v.pool(Limits()), triton_v.pool(Limits(), aot=True)
    before = restarts(run), restarts(aot)
    v = check(triton_v, relu_t, hang, timeout_s=2.0, cpu_s=1)
    assert (v.status, v.code, failed_gate(v)) == (Status.TIMEOUT, "kernel_timeout", "correct")
    # the pool replaced the hung worker: a good candidate passes right after
    assert check(triton_v, relu_t, TRITON_RELU).status is Status.PASS
    # the hung runner restarted; the AOT compiler, whose job ended clean, did not
    assert (restarts(run), restarts(aot)) == (before[0] + 1, before[1])


def restarts(pool) -> int:
    """Restarts of a pool's workers so far, once none is in flight (they run behind)."""
    deadline = time.monotonic() + 120
    while pool._restarting and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pool._restarting, "a restart did not finish in 120 s"
    return sum(w.starts - 1 for w in pool._all if w is not None)


def test_every_runner_primes_the_meta_device_its_job_children_use():
    """Both runners' children run forwards on meta tensors (the launch dry run; the AOT
    compiler's `precompile`), and the meta device's first math op imports torch._dynamo
    (0.9 s here, seconds on a 16-way build node): each runner pays it once at its start,
    never each job's forked child again."""
    code = (
        "import sys\n"
        "from verifiers.kernels.runner import prime\n"
        "prime('cpu', aot=True)\n"
        "print('triton' in sys.modules, 'torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.stdout.split() == ["True", "True"], out.stderr[-2000:]


def test_a_store_past_the_end_is_out_of_bounds_write_every_time(triton_v, relu_t):
    """The tail mask dropped: the last block writes past `y`. That write lands in a red
    zone (runner.RedZones), not in whatever the heap holds next (which crashed, hung or
    passed by chance), so the label is the same on every run."""
    unmasked = TRITON_RELU.replace(", tl.maximum(x, 0.0), mask=mask)", ", tl.maximum(x, 0.0))")
    assert unmasked != TRITON_RELU
    for _ in range(2):
        v = check(triton_v, relu_t, unmasked)
        assert (v.status, v.code, failed_gate(v)) == (
            Status.WRONG_ANSWER,
            "out_of_bounds_write",
            "correct",
        ), v.feedback
        assert "past the end of buffer 0 (float32" in v.feedback, v.feedback


def test_red_zones_see_a_byte_on_either_side_and_leave_the_buffer_as_asked(host_reads):
    import ctypes

    import torch

    from verifiers.kernels.runner import OutOfBoundsWrite, RedZones, poisoned_allocations

    for offset, said in ((4 * 10, "past the end of buffer 0"), (-1, "before buffer 0")):
        zones = RedZones()
        with poisoned_allocations(zones):
            y = torch.empty_like(torch.ones(10))
            strided = torch.empty_strided((2, 3), (1, 2))
            meta = torch.empty(3, device="meta")  # no memory: no zone
            none = torch.empty(0)
        assert torch.isnan(y).all() and y.shape == (10,) and y.is_contiguous()
        assert strided.stride() == (1, 2) and meta.is_meta and none.numel() == 0
        assert len(zones.zones) == 2
        zones.check()  # nothing written outside yet
        y[:] = 1.0  # inside: fine
        zones.check()
        ctypes.memset(y.data_ptr() + offset, 0x5A, 1)
        with pytest.raises(OutOfBoundsWrite, match=said):
            zones.check()
    # a temporary forward lets go is freed (zones hold their buffers weakly): a forward
    # allocating in a loop never holds more than it would have without them
    zones = RedZones()
    with poisoned_allocations(zones):
        for _ in range(3):
            tmp = torch.empty(1 << 20)
            del tmp
    assert [ref.expired() for _, ref, _, _ in zones.zones] == [True] * 3
    zones.check()  # nothing left to check
    # ... and a temporary's zones are judged as it goes (an accumulator dropped in forward)
    zones = RedZones()
    with poisoned_allocations(zones):
        acc = torch.zeros(8)
        ctypes.memset(acc.data_ptr() + 4 * 8, 0x5A, 1)
        del acc
    assert [ref.expired() for _, ref, _, _ in zones.zones] == [True]
    with pytest.raises(OutOfBoundsWrite, match="past the end of buffer 0"):
        zones.check()
    # an input is copied between zones of its own, as it was (a non-contiguous one stays)
    zones = RedZones()
    x, t = torch.arange(6.0), torch.ones(4, 3).t()
    inputs = [x, t, 3]
    zones.guard_inputs(inputs)
    assert torch.equal(inputs[0], x) and inputs[0].data_ptr() != x.data_ptr()
    assert inputs[1] is t and inputs[2] == 3 and len(zones.zones) == 1
    zones.check()
    ctypes.memset(inputs[0].data_ptr() - 3, 0x5A, 1)
    with pytest.raises(OutOfBoundsWrite, match=r"before input 0 .*which forward was given"):
        zones.check()
    # torch.zeros & co. come zoned and still zero (an atomic_add accumulates into them)
    zones = RedZones()
    with poisoned_allocations(zones):
        acc = torch.zeros(5)
    assert torch.equal(acc, torch.zeros(5)) and len(zones.zones) == 1
    ctypes.memset(acc.data_ptr() + 4 * 5, 0x5A, 1)
    with pytest.raises(OutOfBoundsWrite, match="past the end of buffer 0"):
        zones.check()
    # every live zone is compared in one pass: a byte past the second of three buffers is
    # named as that buffer's, whatever the others hold
    zones = RedZones()
    with poisoned_allocations(zones):
        bufs = [torch.empty(16), torch.empty(7), torch.empty(3)]  # all three live
    host_reads.clear()
    zones.check()  # untouched: one read back for all three
    assert host_reads == {"tolist": 1}, host_reads
    ctypes.memset(bufs[1].data_ptr() + 4 * 7 + 5, 0x5A, 1)
    with pytest.raises(OutOfBoundsWrite, match=r"past the end of buffer 1 \(float32\[7\]\)"):
        zones.check()
    # a buffer forward grows (`out=` of another shape resizes it: new memory, no zones)
    # is not judged by the bytes past its old end
    zones = RedZones()
    with poisoned_allocations(zones):
        grown = torch.empty(4)
        torch.cat([torch.ones(1 << 16), torch.ones(1 << 16)], out=grown)
    assert grown.numel() == 1 << 17
    zones.check()


def test_a_child_killed_mid_job_is_judged_at_the_step_it_died_in(triton_v, relu_t):
    """A read far past every buffer kills the runner's child with SIGSEGV while forward
    runs: a runtime error of the correct gate, not the compile error of the job's first
    step (`load`), as it was labelled before the child told its steps."""
    wild = TRITON_RELU.replace(
        "x = tl.load(x_ptr + offs, mask=mask, other=0.0)",
        "x = tl.load(x_ptr + offs + (1 << 44), mask=mask, other=0.0)",
    )
    v = check(triton_v, relu_t, wild)
    assert (v.status, failed_gate(v)) == (Status.RUNTIME_ERROR, "correct"), v.feedback
    assert "SIGSEGV" in v.feedback, v.feedback


def test_printing_a_pass_does_not_pass(triton_v, relu_t):
    code = TRITON_RELU.replace("tl.maximum(x, 0.0)", "x").replace(
        "        return y\n", '        print(\'{"ok": true, "outputs": []}\')\n        return y\n'
    )
    v = check(triton_v, relu_t, code)
    assert v.status is Status.WRONG_ANSWER


# --- timing decision (the measurement needs a GPU: bench/bench_kernels.py) --------------
def test_judge_speed():
    assert judge_speed(2.0, 1.0, 0.8).slow  # 0.5x eager under a 0.8 bar
    fast = judge_speed(0.5, 1.0, 0.8)
    assert not fast.slow and not fast.implausible and fast.speedup == 2.0
    assert judge_speed(0.001, 1.0, 0.8).implausible  # 1000x
    assert judge_speed(0.1, 0.2, 0.8, floor_ms=0.5).implausible  # faster than the memory


# --- the catalog -------------------------------------------------------------------------
TRITON_TASKS = sorted(p.name for p in (ROOT / "tasks/triton").iterdir())
CUDA_TASKS = sorted(p.name for p in (ROOT / "tasks/cuda").iterdir())


def test_catalog_size_and_levels():
    tasks = [
        load_task(ROOT / "tasks" / d / n)
        for d in ("cuda", "triton")
        for n in (CUDA_TASKS if d == "cuda" else TRITON_TASKS)
    ]
    assert len(CUDA_TASKS) >= 30 and CUDA_TASKS == TRITON_TASKS
    assert {t.level for t in tasks} == {1, 2, 3}
    for t in tasks:
        assert t.reference and t.harness["trials"] >= 5 and t.harness["small"], t.name


@pytest.mark.parametrize("name", TRITON_TASKS)
def test_triton_reference_passes_under_the_interpreter(triton_v, name):
    t = load_task(ROOT / "tasks/triton" / name)
    v = check(triton_v, t, t.reference)
    assert v.status is Status.PASS, f"{name}: {v.code} {v.feedback}"


@pytest.mark.parametrize("name", CUDA_TASKS)
def test_cuda_reference_compiles_for_sm90(cuda_v, name):
    t = load_task(ROOT / "tasks/cuda" / name)
    v = check(cuda_v, t, t.reference, gates=("parse", "anticheat", "compile", "launch"))
    assert v.status is Status.PASS, f"{name}: {v.code} {v.feedback}"
    assert v.metrics["ptxas"], name


def test_extension_path_compiles_against_torch_headers(cuda_v, relu_c):
    """Over 30 s: a real load_inline build, the KernelBench-style layout whose CUDA file
    includes torch/extension.h: torch's precompiled header made, then g++ over main.cpp
    with it and nvcc over the torch headers, one unit after another (146 s alone on the
    2-core dev machine, 2026-12-08; the suite's longest test). The only test of the
    precompiled header's first build."""
    code = (ROOT / "tests/verifiers/kernel_fixtures/relu_extension.py").read_text()
    v = cuda_v.verify(relu_c, code)
    assert v.metrics["path"] == "extension"
    (built,) = v.metrics["extension_build"]
    assert built["pch"] == "built", built
    assert built["units_cached"] == {"main.cpp": False, "cuda.cu": False}, built
    assert [c.name for c in v.checks if c.ok][-1] == "launch", v.feedback
    assert v.status is Status.INFRA_ERROR and v.code == "no_gpu"


def test_an_extensions_cuda_sources_are_one_file_as_load_inline_builds_them(cuda_v, relu_c):
    """load_inline joins a call's cuda_sources into one CUDA file: a launcher in the second
    source calls the kernel the first defines, and the real nvcc build passes (compiled
    one by one, the second would not know the kernel). No implicit headers: seconds."""
    code = (ROOT / "tests/verifiers/kernel_fixtures/relu_extension_launcher.py").read_text()
    kernel, launcher = code.split("void relu_launch(const float* x, float* y, long long n) {")
    assert "cuda_sources=cuda_source," in code
    code = (
        kernel
        + '"""\n\nlauncher_source = r"""\n'
        + "void relu_launch(const float* x, float* y, long long n) {"
        + launcher
    ).replace("cuda_sources=cuda_source,", "cuda_sources=[cuda_source, launcher_source],")
    from verifiers.kernels.extension import extension_calls

    (call,) = extension_calls(code)
    assert len(call.cuda_sources) == 2 and "relu_kernel<<<" in call.cuda_sources[1]
    v = cuda_v.verify(relu_c, code)
    assert v.metrics["path"] == "extension"
    assert [c.name for c in v.checks if c.ok][-1] == "launch", v.feedback
    assert v.status is Status.INFRA_ERROR and v.code == "no_gpu"


# --- output floods, the runners' limits, the compile floor, missing tools ------------------
def _printing(n: int, chunk: int = 4096) -> str:
    """The Triton relu printing `n` lines of `chunk` bytes while it is built."""
    init = "        super().__init__()\n"
    loop = f"        for i in range({n}):\n            print('x' * {chunk})\n"
    return TRITON_RELU.replace(init, init + loop)


PRINTING_SERVER = """
import json, os, sys
out = os.fdopen(int(sys.argv[1]), "w", buffering=1)
out.write('{"ready": true}\\n')
for line in sys.stdin:
    job = json.loads(line)
    for _ in range(job["chunks"]):
        os.write(job.get("fd", 1), b"p" * 4096)
        if job.get("truncate"):
            try:
                os.ftruncate(1, 0)
            except OSError:
                pass
    out.write('{"ok": true}\\n')
"""


def test_a_warm_worker_counts_what_each_job_prints():
    """verifiers.warm, for every domain: the host drains the server's stdout and stderr
    and counts each job's bytes per stream; over the job's cap it stops the worker
    (`OutputFlood`); truncating its stdout does not lower the count; no cap, no limit."""
    from verifiers.warm import OutputFlood, Worker, WorkerCommand

    class Printer(Worker):
        prefix = "printer"

        def command(self, fd: int) -> WorkerCommand:
            argv = [sys.executable, "-I", "-S", "-c", PRINTING_SERVER, str(fd)]
            return WorkerCommand(argv, self.python_env(), ro=self.python_paths())

    w = Printer(Limits(), index=5)
    try:
        assert w.run({"chunks": 4}, 30, output_bytes=64 * 1024) == {"ok": True}
        assert w.printed() == {"stdout": 4 * 4096, "stderr": 0}
        assert w.log_tail(10) == "p" * 10
        assert w.run({"chunks": 4, "fd": 2}, 30, output_bytes=5 * 4096) == {"ok": True}
        assert w.printed() == {"stdout": 0, "stderr": 4 * 4096}  # each job afresh
        # 64 MiB without a cap (a domain whose candidates print elsewhere): counted only
        assert w.run({"chunks": 16384}, 60) == {"ok": True}
        assert w.printed()["stdout"] == 16384 * 4096
        for job in ({"chunks": 64}, {"chunks": 64, "truncate": True}, {"chunks": 64, "fd": 2}):
            with pytest.raises(OutputFlood) as err:
                w.run(job, 30, output_bytes=64 * 1024)
            assert err.value.printed > err.value.cap == 64 * 1024
            assert err.value.stream == ("stderr" if job.get("fd") == 2 else "stdout")
            assert w.proc is None  # stopped at the cap
        assert w.run({"chunks": 1}, 30, output_bytes=64 * 1024) == {"ok": True}  # restarted
    finally:
        w.close()


# a server that is ready at once on its first start and takes a long time on every other
# (a restart that imports its library on a loaded machine)
SLOW_RESTART_SERVER = """
import json, os, sys, time
if sys.argv[2] != "1":
    time.sleep(600)
out = os.fdopen(int(sys.argv[1]), "w", buffering=1)
out.write('{"ready": true}\\n')
for line in sys.stdin:
    out.write('{"ok": true}\\n')
"""


def test_closing_a_pool_cancels_its_restarts_in_flight():
    """verifiers.warm: a worker left dirty restarts in the background; when its pool
    closes meanwhile, the restart is killed, not waited for (it would import the domain's
    library for a worker nobody uses), and nothing of it is left running. A cancel that
    comes before the server exists stops the start that follows it."""
    from verifiers.warm import Worker, WorkerCommand, WorkerPool, WorkerStartError

    class SlowRestart(Worker):
        prefix = "slowrestart"

        def command(self, fd: int) -> WorkerCommand:
            argv = [sys.executable, "-I", "-S", "-c", SLOW_RESTART_SERVER, str(fd)]
            return WorkerCommand(
                [*argv, str(self.starts)], self.python_env(), ro=self.python_paths()
            )

    pool = WorkerPool(lambda i: SlowRestart(Limits(), 7 + i), 1)
    w = pool.lease()
    assert w.run({}, 30) == {"ok": True}
    pool.release(w, dirty=True)
    for _ in range(600):  # the restart's server is running (asleep before its ready line)
        if w.starts == 2 and w.proc is not None:
            break
        time.sleep(0.05)
    assert w.starts == 2 and w.proc is not None
    server = w.proc
    [restart] = list(pool._restarting)
    pool.close()
    assert not restart.is_alive()  # close returned after the restart ended, not in 60 s
    assert server.poll() is not None  # killed
    assert w.proc is None and not w.home.exists()

    w = SlowRestart(Limits(), 9)
    try:
        w.cancel()
        with pytest.raises(WorkerStartError, match="cancelled"):
            w.restart()
        assert w.proc is None
    finally:
        w.close()


def test_an_output_flood_is_output_limit(triton_v, relu_t):
    """The runner's prints go to pipes the host drains and counts per job: past
    Limits.output_bytes on a stream the job is stopped, the candidate's output_limit."""
    v = check(triton_v, relu_t, _printing(256), output_bytes=64 * 1024)  # 1 MiB
    assert (v.status, v.code, failed_gate(v)) == (
        Status.RESOURCE_LIMIT,
        "output_limit",
        "compile",
    ), v.feedback
    assert "65536 bytes" in v.feedback
    # an endless flood is stopped at the cap, not by the wall clock
    endless = TRITON_RELU.replace(
        "        super().__init__()\n",
        "        super().__init__()\n        while True:\n            print('y' * 4096)\n",
    )
    v = check(triton_v, relu_t, endless, output_bytes=64 * 1024, timeout_s=60.0)
    assert (v.status, v.code) == (Status.RESOURCE_LIMIT, "output_limit"), v.feedback
    assert v.duration_ms < 30_000, v.duration_ms
    # under the cap a candidate may print (each job's count starts afresh)
    v = check(triton_v, relu_t, _printing(4), output_bytes=64 * 1024)
    assert v.status is Status.PASS, v.feedback


def test_pools_are_keyed_by_the_runners_sandbox_limits():
    """Calls whose limits differ only per job (deadline, CPU budget, output cap, gates)
    share warm runners; any other difference (memory, processes, file size, confinement)
    gets runners of its own, never an earlier call's."""
    from verifiers.kernels.pool import PER_JOB_LIMITS, runner_limits

    v = TritonVerifier(device="cpu", workers=1)
    try:
        base = v.pool(Limits())
        same = Limits(timeout_s=3.0, cpu_s=7, output_bytes=1024, gates=("parse",))
        assert v.pool(same) is base
        assert v.pool(Limits(), aot=True) is not base
        for change in ({"memory_mb": 1024}, {"nproc": 16}, {"fsize_mb": 32}):
            pool = v.pool(Limits(**change))
            assert pool is not base and pool is v.pool(Limits(cpu_s=5, **change))
            [(name, value)] = change.items()
            assert getattr(pool.spec.limits, name) == value
            assert pool.gpu is base.gpu  # one GPU: timing is alone across every pool
        assert all(getattr(base.spec.limits, f) == getattr(Limits(), f) for f in PER_JOB_LIMITS)
        assert runner_limits(same) == runner_limits(Limits())
    finally:
        v.close()  # no runner was started: pools start theirs on the first lease


def test_the_runners_sandbox_does_not_depend_on_per_job_limits(tmp_path):
    """What `runner_limits` sets aside really is per job: the worker's sandbox command
    is the same whatever those fields say (else a pool would run one call's sandbox for
    another's limits)."""
    import dataclasses

    from verifiers.kernels.pool import PER_JOB_LIMITS
    from verifiers.warm import confine

    base = Limits()
    other = {"gates": ("parse",)}
    for f in PER_JOB_LIMITS:
        value = other.get(f, getattr(base, f))
        if f not in other:
            value = type(value)(value * 3 + 1)
        changed = dataclasses.replace(base, **{f: value})
        assert confine(tmp_path, changed, {}) == confine(tmp_path, base, {}), f
    assert confine(tmp_path, Limits(fsize_mb=7), {}) != confine(tmp_path, base, {})


def test_each_call_gets_its_own_cpu_budget(triton_v, relu_t, monkeypatch):
    """Two calls with different cpu_s on one verifier (one pool): each job is measured
    against its own call's CPU budget (the machine rule's), not the first call's."""
    from verifiers import warm

    budgets: list[float] = []
    real = warm.Worker._read_line

    def spy(self, timeout_s, what, began=None):
        if began is not None:
            budgets.append(began.budget_s)
        return real(self, timeout_s, what, began)

    monkeypatch.setattr(warm.Worker, "_read_line", spy)
    gates = ("parse", "anticheat", "compile")
    for cpu in (7, 11):
        assert check(triton_v, relu_t, TRITON_RELU, gates=gates, cpu_s=cpu).status is Status.PASS
    assert budgets and set(budgets[: len(budgets) // 2]) == {7}, budgets
    assert set(budgets[len(budgets) // 2 :]) == {11}, budgets


def test_compile_timeout_is_a_setting(relu_c, monkeypatch, tmp_path):
    """nvcc's wall limit (and the floor of the runner's build jobs) is
    KernelSettings.compile_timeout_s, its CPU budget at least as large: a run the wall
    clock cuts short of it is the machine's (machine_slow), never the candidate's."""
    from verifiers.kernels import nvcc
    from verifiers.kernels import verifier as kv
    from verifiers.settings import SettingsError

    with pytest.raises(SettingsError, match="compile_timeout_s"):
        CudaVerifier(device="cpu", compile_timeout_s=0)
    v = CudaVerifier(device="cpu", compile_timeout_s=90.0, cache_dir=tmp_path)
    assert v.settings.recorded() == {"device": "cpu", "compile_timeout_s": 90.0,
                                     "cache_dir": str(tmp_path)}  # fmt: skip
    seen = {}
    real_compile = kv.compile_cubin

    def compile_spy(src, sandbox, **kw):
        seen["compile"] = kw["timeout_s"]
        return real_compile(src, sandbox, **kw)

    def run_spy(self, argv, workdir, **kw):
        seen["run"] = (kw["timeout_s"], kw["cpu_s"])
        return real_run(self, argv, workdir, **kw)

    real_run = nvcc.Sandbox.run
    monkeypatch.setattr(kv, "compile_cubin", compile_spy)
    monkeypatch.setattr(nvcc.Sandbox, "run", run_spy)
    ctx = type("Ctx", (), {"state": {}, "limits": Limits(timeout_s=2.0)})()
    assert v._build_timeout(ctx) == 90.0
    if find_nvcc() is None:
        return
    marker = 'CUDA_SRC = r"""'
    code = CUDA_RELU.replace(marker, f"{marker}\n// nonce {tmp_path.name}", 1)
    ok = v.verify(relu_c, code, Limits(gates=("parse", "anticheat", "compile")))
    assert ok.status is Status.PASS, ok.feedback
    assert seen["compile"] == 90.0
    wall, cpu = seen["run"]
    assert wall == 90.0 and cpu >= wall
    # tiny: the uncached compile is cut by its wall, well under its CPU budget
    slow = CudaVerifier(device="cpu", compile_timeout_s=0.01, cache_dir=tmp_path)
    code = CUDA_RELU.replace(marker, f"{marker}\n// nonce 2 {tmp_path.name}", 1)
    v = slow.verify(relu_c, code, Limits(gates=("parse", "anticheat", "compile")))
    assert (v.status, v.code) == (Status.INFRA_ERROR, "machine_slow"), v.feedback
    assert "cpu" in v.feedback.lower()


def test_missing_tools_name_the_descriptors_install_hint(relu_t, relu_c, monkeypatch):
    from verifiers import domain as domains
    from verifiers.kernels import verifier as kv

    # Triton itself missing (torch present): tool_missing, the triton domain's hint
    monkeypatch.setitem(sys.modules, "triton", None)
    tv = TritonVerifier(device="cpu")
    assert [t.name for t in tv.missing_tools()] == ["triton"]
    v = tv.verify(relu_t, TRITON_RELU)
    assert (v.status, v.code) == (Status.INFRA_ERROR, "tool_missing")
    assert domains.get("triton").install in v.feedback
    monkeypatch.undo()
    # nvcc missing: its own install text and the cuda domain's hint
    monkeypatch.setattr(kv, "find_nvcc", lambda: None)
    cv = CudaVerifier(device="cpu")
    v = cv.verify(relu_c, CUDA_RELU)
    assert (v.status, v.code) == (Status.INFRA_ERROR, "tool_missing")
    assert domains.get("cuda").install in v.feedback
    assert kv.NVCC_INSTALL_HINT in v.feedback


# --- the worker: JSONL in, verdicts out -----------------------------------------------------
def test_worker_jsonl(tmp_path, relu_t):
    good = Candidate(relu_t.task_id, TRITON_RELU, "llm", "test")
    bad = Candidate(relu_t.task_id, TRITON_RELU.replace("0.0)", "1.0)"), "llm", "test")
    lim = Limits(gates=CPU_GATES).to_dict()
    lines = [
        json.dumps({"task": relu_t.to_dict(), "candidate": c.to_dict(), "limits": lim})
        for c in (good, bad)
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join([lines[0], "{not json", lines[1]]) + "\n")
    out = tmp_path / "out.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "verifiers.triton", str(src), "--out", str(out), "--workers", "1"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 1 and "line 2: skipped, malformed" in proc.stderr
    verdicts = [json.loads(x) for x in out.read_text().splitlines()]
    assert [v["status"] for v in verdicts] == ["pass", "wrong_answer"]
    assert [v["candidate_id"] for v in verdicts] == [good.candidate_id, bad.candidate_id]


# --- the KernelBench importer -----------------------------------------------------------
KB_RELU = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Simple model that performs a ReLU activation."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 16
dim = 300


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
'''


def test_import_kernelbench(tmp_path, triton_v):
    from typer.testing import CliRunner

    from flows.cli import app
    from verifiers.kernels.importer import ImportProblems, import_kernelbench

    src = tmp_path / "KernelBench"
    (src / "level1").mkdir(parents=True)
    (src / "level2").mkdir()
    (src / "level1" / "19_ReLU.py").write_text(KB_RELU)
    (src / "level2" / "7_Broken.py").write_text("import torch\nx = 1\n")
    with pytest.raises(ImportProblems) as e:
        import_kernelbench(src, tmp_path / "out")
    assert len(e.value.errors) == 1 and "7_Broken.py" in e.value.errors[0]
    assert "get_inputs" in e.value.errors[0] or "Model" in e.value.errors[0]
    written = sorted(p.relative_to(tmp_path / "out").as_posix() for p in e.value.imported)
    assert written == ["cuda/kb_l1_19_relu", "triton/kb_l1_19_relu"]
    t = load_task(tmp_path / "out" / "triton" / "kb_l1_19_relu")
    assert (t.level, t.split, t.source, t.reference) == (1, "holdout", "kernelbench", None)
    # KernelBench's convention: float32's row (1e-4), no override, no speed bar
    assert (t.harness["problem"], t.harness["dtype"]) == (KB_RELU, "float32")
    assert (t.harness["tolerance_override"], t.harness["speed_bar"]) == ({}, None)
    assert "ReLU" in t.requirement
    # importing is deterministic, and an imported task verifies candidates like any other
    again = CliRunner().invoke(
        app, ["import-kernelbench", str(src), "--dest", str(tmp_path / "again")]
    )
    assert again.exit_code == 1 and "skipped" in again.output
    for rel in written:
        for f in ("task.toml", "problem.py"):
            assert (tmp_path / "again" / rel / f).read_bytes() == (
                tmp_path / "out" / rel / f
            ).read_bytes()
    v = check(triton_v, t, TRITON_RELU)
    assert v.status is Status.PASS, v.feedback
    bad = check(triton_v, t, TRITON_RELU.replace("tl.maximum(x, 0.0)", "x"))
    assert bad.status is Status.WRONG_ANSWER


# stand-ins for the CUDA runtime (none can run here): one refuses what a device would,
# another (torch's own, another soname) accepts everything
FAKE_CUDART_FOR_TESTS = """
typedef struct { unsigned int x, y, z; } dim3_t;
int cudaLaunchKernel(const void *f, dim3_t g, dim3_t b, void **a, unsigned long s, void *st) {
#ifdef ACCEPTS_ALL
    return 0;
#else
    return (g.y > 65535 || g.z > 65535) ? 1 : (b.x * b.y * b.z > 1024 ? 9 : 0);
#endif
}
"""
EXTENSION_FOR_TESTS = """
typedef struct { unsigned int x, y, z; } dim3_t;
int cudaLaunchKernel(const void *f, dim3_t g, dim3_t b, void **a, unsigned long s, void *st);
int ext_launch(unsigned gx, unsigned gy, unsigned bx) {
    dim3_t g = {gx, gy, 1}, b = {bx, 1, 1};
    return cudaLaunchKernel(0, g, b, 0, 0, 0);
}
"""
REFUSED_LAUNCHES = """
import ctypes, sys
from verifiers.kernels.launchrec import refused_launch
from verifiers.kernels.limits import DeviceLimits
torch_like = ctypes.CDLL(sys.argv[2])  # RTLD_LOCAL, as Python loads torch and extensions
ext = ctypes.CDLL(sys.argv[1])
for gy, bx, said in ((10, 256, "invalid argument"), (70000, 256, "invalid argument"),
                     (10, 2048, "invalid configuration argument")):
    err = ext.ext_launch(4, gy, bx)
    print(err, refused_launch(RuntimeError("CUDA error: " + said), DeviceLimits()))
print("torch's", torch_like.ext_launch(4, 70000, 2048))
"""


def test_a_cpp_launch_the_runtime_refuses_is_judged_by_its_configuration(tmp_path):
    """`<<<...>>>` in an extension: the runtime says only "invalid argument". The shim
    (launchrec) keeps the refused configuration; past a device limit it is that limit,
    named (launch_exceeds_limit); a launch that ran leaves nothing to report. Each launch
    reaches the runtime its caller was linked with (torch's and an extension's may be two).
    The runtimes are stand-ins that refuse as a device would (none can run here)."""
    import shutil

    from verifiers.kernels import launchrec

    if shutil.which("gcc") is None:
        pytest.skip("no C compiler")
    shim = launchrec.build(tmp_path / "cache")
    assert shim is not None and launchrec.build(tmp_path / "cache") == shim  # built once
    (tmp_path / "rt.c").write_text(FAKE_CUDART_FOR_TESTS)
    (tmp_path / "ext.c").write_text(EXTENSION_FOR_TESTS)
    libs = {}
    for name, soname, flags in (("ext", "12", []), ("torch", "13", ["-DACCEPTS_ALL"])):
        d = tmp_path / name
        d.mkdir()
        rt = d / f"libcudart.so.{soname}"
        gcc = ["gcc", "-shared", "-fPIC", *flags]
        subprocess.run([*gcc, "-o", rt, tmp_path / "rt.c"], check=True)
        link = ["-L", str(d), f"-l:{rt.name}", f"-Wl,-rpath,{d}"]
        libs[name] = d / "libcaller.so"
        subprocess.run([*gcc, "-o", libs[name], tmp_path / "ext.c", *link], check=True)
    env = {**os.environ, "LD_PRELOAD": str(shim), launchrec.ENV: str(shim), "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", REFUSED_LAUNCHES, str(libs["ext"]), str(libs["torch"])],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = out.stdout.splitlines()
    assert len(lines) == 4, out.stderr[-2000:]
    assert lines[0] == "0 None"  # it ran: nothing refused
    assert lines[1].startswith("1 a kernel launched from C++: gridDim.y = 70000 exceeds")
    assert lines[2].startswith("9 a kernel launched from C++: blockDim.x = 2048 exceeds")
    assert lines[3] == "torch's 0"  # its own runtime took it, not the extension's
    # without the shim nothing is known: the error stays what it was
    assert launchrec.refused_launch(RuntimeError("CUDA error: invalid argument"), None) is None


REAL_LAUNCH = """
import ctypes, sys
from verifiers.kernels.launchrec import last_refusal
lib = ctypes.CDLL(sys.argv[1])  # nvcc's <<<...>>>, through the real runtime (no GPU here)
lib.launch(None, 1000)
rt = ctypes.CDLL(sys.argv[2])
print(rt.cudaGetLastError(), last_refusal())
"""


def test_the_launch_shim_passes_a_real_runtime_launch_on_unchanged(tmp_path):
    """nvcc 13 compiles `<<<...>>>` to `__cudaLaunchKernel` (versioned, of libcudart.so.13):
    the shim takes it, hands it to the real runtime, and the runtime's answer is the same
    as without the shim (here, with no GPU, it refuses with its driver error, which the
    shim keeps with the configuration: 4 blocks of 256 for n = 1000)."""
    import shutil

    from verifiers.kernels import launchrec

    nvcc = find_nvcc()
    if nvcc is None or shutil.which("gcc") is None:
        pytest.skip("nvcc and a C compiler are needed")
    lib64 = Path(nvcc).resolve().parent.parent / "lib64"
    rt = next(iter(sorted(lib64.glob("libcudart.so.[0-9]*"))), None)
    if rt is None:
        pytest.skip("no shared CUDA runtime beside nvcc")
    src = tmp_path / "k.cu"
    src.write_text(
        "__global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
        " if (i < n) y[i] = 1; }\n"
        'extern "C" void launch(float* y, int n) { k<<<(n + 255) / 256, 256>>>(y, n); }\n'
    )
    lib = tmp_path / "libk.so"
    flags = ["-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared"]
    subprocess.run(
        [nvcc, *flags, "-Xlinker", f"-rpath={lib64}", "-o", lib, src],
        check=True,
        capture_output=True,
        timeout=120,
    )
    shim = launchrec.build(tmp_path / "cache")
    said = {}
    for preload in ("", str(shim)):
        env = {**os.environ, "LD_PRELOAD": preload, launchrec.ENV: str(shim)}
        env["PYTHONPATH"] = str(ROOT)
        out = subprocess.run(
            [sys.executable, "-c", REAL_LAUNCH, str(lib), str(rt)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        said[bool(preload)] = out.stdout.split(" ", 1)
    assert said[False][0] == said[True][0]  # the runtime's own answer, unchanged
    assert said[False][1].strip() == "None"  # no shim: nothing recorded
    kept = said[True][1]
    assert "'grid': (4, 1, 1), 'block': (256, 1, 1)" in kept, kept
    assert f"'error': {said[True][0]}," in kept, kept


def _unstarted_gpu_runner(tmp_path, monkeypatch):
    """A GPU runner (its server never started: there is no GPU to serve here) and the
    command it would start with."""
    from verifiers.kernels import nvcc
    from verifiers.kernels.pool import KernelWorker, WorkerSpec

    class UnstartedWorkerForTests(KernelWorker):
        """TEST ONLY: a GPU runner's command and sandbox, its server never started."""

        def start(self) -> None:
            self.started_as = self._sandbox.drop_uid  # the uid its server would run as
            self._fresh_work()

    monkeypatch.setattr(nvcc, "default_cache_dir", lambda: tmp_path)
    worker = UnstartedWorkerForTests(WorkerSpec("cuda", Limits()), 0)
    r, w = os.pipe()
    try:
        return worker, worker.command(w)
    finally:
        os.close(r)
        os.close(w)


def test_a_gpu_runner_reaches_an_mps_daemon_only_when_the_operator_names_one(tmp_path, monkeypatch):
    """The MPS experiment's switch (#30): with CRUCIBLE_GPU_MPS_PIPE naming a dir, the GPU
    runner's jobs get it as the CUDA driver's pipe dir, bound in, and (as root) run as the
    one uid an MPS server serves; without it (or naming no dir), nothing of it reaches the
    sandbox and the runner keeps a uid of its own."""
    import shutil

    from verifiers.kernels.pool import MPS_PIPE_ENV
    from verifiers.sandbox import UID_SLOTS, sandbox_uid

    if shutil.which("gcc") is None or shutil.which("bwrap") is None:
        pytest.skip("needs a C compiler (the runner's launch shim) and bubblewrap")
    pipe = tmp_path / "mps-pipe"
    for value, on in ((None, False), (str(tmp_path / "absent"), False), (str(pipe), True)):
        pipe.mkdir(exist_ok=True)
        if value is None:
            monkeypatch.delenv(MPS_PIPE_ENV, raising=False)
        else:
            monkeypatch.setenv(MPS_PIPE_ENV, value)
        worker, spec = _unstarted_gpu_runner(tmp_path, monkeypatch)
        worker.close()
        assert (spec.env.get("CUDA_MPS_PIPE_DIRECTORY") == str(pipe)) is on, spec.env
        assert (str(pipe) in spec.rw) is on and ("/dev/shm" in spec.rw) is on, spec.rw
        if os.geteuid() == 0:  # the uid is the sandbox's only as root
            assert (worker.started_as == sandbox_uid(slot=0)) is on, worker.started_as
            # the one uid's process limit: the sum of the runner uids' it stands for
            assert (spec.limits.nproc == Limits().nproc * (UID_SLOTS - 1)) is on, spec.limits


def test_a_gpu_runner_starts_with_the_launch_shim_in_its_sandbox(tmp_path, monkeypatch):
    """The GPU runner's command preloads the shim from a dir of its own, bound into the
    sandbox (which binds dirs, not files): a process started there has it mapped."""
    import shutil

    from verifiers.sandbox import SANDBOX_PATH
    from verifiers.warm import confine

    if shutil.which("gcc") is None or shutil.which("bwrap") is None:
        pytest.skip("needs a C compiler and bubblewrap")

    worker, spec = _unstarted_gpu_runner(tmp_path, monkeypatch)
    shim = spec.env["LD_PRELOAD"]
    assert shim.startswith(str(tmp_path / "launchrec")) and str(Path(shim).parent) in spec.ro
    cmd = confine(worker.work, spec.limits, spec.env, ro=spec.ro, uid=worker._sandbox.drop_uid)
    maps = "print(sum('crucible-launchrec' in line for line in open('/proc/self/maps')))"
    out = subprocess.run(
        [*cmd, sys.executable, "-c", maps],
        capture_output=True,
        text=True,
        cwd=worker.work,
        env={"PATH": SANDBOX_PATH},
        timeout=60,
    )
    worker.close()
    assert out.returncode == 0 and int(out.stdout) > 0, out.stderr[-1500:]
