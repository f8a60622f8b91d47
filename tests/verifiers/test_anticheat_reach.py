"""The kernel anti-cheat judges only code that runs (import-time statements, and what the
entry class reaches by name), and refuses work sent to a side stream (`side_stream`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from verifiers.catalog import load_task
from verifiers.contract import Limits, Status
from verifiers.kernels import anticheat
from verifiers.kernels.nvcc import find_nvcc
from verifiers.kernels.verifier import CudaVerifier

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "kernel_fixtures"
PROBLEM = (FIXTURES / "kb_matmul_problem.py").read_text()

TRITON_MATMUL = """
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK + tl.arange(0, BLOCK)
    rn = pid_n * BLOCK + tl.arange(0, BLOCK)
    rk = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, n, BLOCK):
        a = tl.load(a_ptr + rm[:, None] * n + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * n + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * n + rn[None, :], acc)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        n = A.shape[0]
        C = torch.empty((n, n), device=A.device, dtype=A.dtype)
        BLOCK = 64
        matmul_kernel[(triton.cdiv(n, BLOCK), triton.cdiv(n, BLOCK))](A, B, C, n, BLOCK=BLOCK)
        return C


N = 4096


def get_inputs():
    return [torch.rand(N, N), torch.rand(N, N)]


def get_init_inputs():
    return []
"""
FORWARD_HEAD = "        n = A.shape[0]\n"


def codes(code: str) -> set[str]:
    return {f.code for f in anticheat.check(code, PROBLEM)}


def with_forward(line: str, code: str = TRITON_MATMUL) -> str:
    """`code` with `line` first in forward."""
    assert FORWARD_HEAD in code
    return code.replace(FORWARD_HEAD, FORWARD_HEAD + "        " + line + "\n", 1)


def before_class(block: str, code: str = TRITON_MATMUL) -> str:
    return code.replace("class ModelNew", block + "\n\nclass ModelNew", 1)


# --- the KernelBench-style fixtures ----------------------------------------------------------
def test_side_stream_extension_is_refused_for_its_stream_alone():
    found = anticheat.check((FIXTURES / "kb_side_stream.py").read_text(), PROBLEM)
    assert {f.code for f in found} == {"side_stream"}, found
    assert any("cublasSetStream" in f.what for f in found)
    assert any("cudaStreamCreateWithFlags" in f.what for f in found)


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc is not installed")
def test_side_stream_is_rejected_at_the_anticheat_gate():
    v = CudaVerifier(device="cpu", workers=1)
    try:
        task = load_task(ROOT / "tasks/cuda/matmul_fp32")
        code = (FIXTURES / "kb_side_stream.py").read_text()
        verdict = v.verify(task, code, Limits(gates=("parse", "anticheat")))
    finally:
        v.close()
    assert (verdict.status, verdict.code) == (Status.REJECTED, "side_stream"), verdict.feedback
    assert anticheat.RULES["side_stream"][:30] in verdict.feedback


@pytest.mark.parametrize("name", ["kb_empty_result", "kb_zero_inputs"])
def test_runtime_exploits_pass_the_static_gate(name):
    # nothing static to see: they fail at run time (NaN / wrong output, inputs mutated)
    assert anticheat.check((FIXTURES / f"{name}.py").read_text(), PROBLEM) == []


def test_the_problem_file_parses_and_names_its_op():
    assert "matmul" in anticheat.reference_ops(PROBLEM)


# --- reachability ------------------------------------------------------------------------------
def test_unused_get_inputs_with_torch_rand_is_no_finding():
    assert anticheat.check(TRITON_MATMUL, PROBLEM) == []


def test_the_same_torch_call_in_forward_is_a_finding():
    assert "torch_compute" in codes(with_forward("noise = torch.rand(n, n)"))


def test_get_inputs_named_from_forward_is_judged():
    assert "torch_compute" in codes(with_forward("extra = get_inputs()"))


def test_a_helper_forward_calls_is_judged_transitively():
    helpers = (
        "def _inner(a, b):\n    return torch.matmul(a, b)\n\n\n"
        "def _outer(a, b):\n    return _inner(a, b)\n"
    )
    code = with_forward("return _outer(A, B)", before_class(helpers))
    assert "torch_fallback" in codes(code)
    assert codes(before_class(helpers)) == set()  # the same helpers, named by nothing


def test_a_helper_class_is_judged_whole():
    helper = "class _Plan:\n    def run(self, a, b):\n        return torch.matmul(a, b)\n"
    assert codes(before_class(helper)) == set()
    code = with_forward("return _Plan().run(A, B)", before_class(helper))
    assert "torch_fallback" in codes(code)


@pytest.mark.parametrize(
    ("statement", "rule"),
    [
        ("torch.matmul = lambda a, b: a", "timing_games"),
        ("torch.backends.cuda.matmul.allow_tf32 = True", "timing_games"),
        ("_src = open('/etc/hostname').read()", "reads_reference"),
        ("_s = torch.cuda.Stream()", "side_stream"),
        ("import subprocess", "forbidden_import"),
    ],
)
def test_a_statement_run_at_import_is_still_judged(statement, rule):
    assert rule in codes(before_class(statement))


def test_a_function_run_at_import_is_judged():
    setup = "def _setup():\n    return open('/etc/hostname').read()\n\n\n_HOST = _setup()\n"
    assert "reads_reference" in codes(before_class(setup))
    default = "def get_init_inputs(x=open('/etc/hostname')):\n    return []\n"
    assert "reads_reference" in codes(before_class(default))  # a default runs with the def


def test_a_function_handed_to_a_decorator_is_judged():
    # the decorator runs at import and may keep the function where forward finds it
    code = before_class(
        "_REG = []\n\n\ndef register(fn):\n    _REG.append(fn)\n    return fn\n\n\n"
        "@register\ndef _hidden(a, b):\n    return torch.matmul(a, b)\n"
    )
    assert "torch_fallback" in codes(code)


def test_a_module_getattr_is_judged():
    # PEP 562: the harness's getattr on the module can call it
    hook = "def __getattr__(name):\n    return torch.rand(3)\n"
    assert codes(before_class(hook)) == {"torch_compute"}
    assert codes(before_class(hook.replace("__getattr__", "_plain"))) == set()


def test_an_unreached_class_body_still_runs_at_import():
    body = "class _Unused:\n    x = open('/etc/hostname')\n\n    def go(self):\n        import os\n"
    assert codes(before_class(body)) == {"reads_reference"}


def test_a_main_guard_never_runs_unless_name_is_rebound():
    guard = "\nif __name__ == '__main__':\n    print(ModelNew()(*get_inputs()))\n"
    assert codes(TRITON_MATMUL + guard) == set()
    rebound = "\n__name__ = '__main__'" + guard.replace(
        "print(", "torch.matmul(*get_inputs()) or print("
    )
    assert "torch_compute" in codes(TRITON_MATMUL + rebound)  # get_inputs now runs


def test_without_an_entry_class_everything_is_judged():
    code = TRITON_MATMUL.replace("class ModelNew", "class Other")
    assert "torch_compute" in codes(code)


def test_a_match_capture_rebinding_triton_voids_the_kernel_exemption():
    # `case triton:` binds like an assignment: @triton.jit is then a home-made decorator,
    # and the "kernel" is plain Python doing arithmetic on its tensor arguments
    fake = (
        "class _Fake:\n    @staticmethod\n    def jit(fn):\n        return fn\n\n\n"
        "match _Fake():\n    case triton:\n        pass\n"
    )
    code = TRITON_MATMUL.replace("\n@triton.jit", fake + "\n@triton.jit", 1)
    assert "torch_compute" in codes(code)


# --- side streams in Python -----------------------------------------------------------------
@pytest.mark.parametrize(
    "line",
    [
        "s = torch.cuda.Stream()",
        "torch.cuda.set_stream(torch.cuda.Stream())",
        "ctx = torch.cuda.stream(None)",
        "s = torch.cuda.ExternalStream(0)",
        "s = torch.cuda.get_stream_from_external(0)",
    ],
)
def test_python_side_stream_in_forward(line):
    assert codes(with_forward(line)) == {"side_stream"}


def test_python_side_stream_in_an_unused_function_is_no_finding():
    unused = "def _warm():\n    return torch.cuda.Stream()\n"
    assert codes(before_class(unused)) == set()


def test_nvcc_per_thread_default_stream_flag():
    ext = EXTENSION.replace("verbose=False", "extra_cuda_cflags=['--default-stream=per-thread']")
    assert codes(ext) == {"side_stream"}


# --- side streams in C++ --------------------------------------------------------------------
EXTENSION = '''
import torch
from torch.utils.cpp_extension import load_inline

HOST = r"""
#include <torch/extension.h>
#include <cublas_v2.h>

__global__ void fill_kernel(float* c, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = 0.0f;
}

torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B) {
    auto C = torch::empty({A.size(0), B.size(1)}, A.options());
    long long n = C.numel();
    /*HOST*/
    return C;
}
"""

ext = load_inline(
    name="reach_ext",
    cpp_sources="torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B);",
    cuda_sources=HOST,
    functions=["matmul_cuda"],
    verbose=False,
)


class ModelNew(torch.nn.Module):
    def forward(self, A, B):
        return ext.matmul_cuda(A, B)
'''


def host(body: str, code: str = EXTENSION) -> str:
    return code.replace("/*HOST*/", body)


@pytest.mark.parametrize(
    "body",
    [
        "cudaStream_t s; cudaStreamCreate(&s);\n"
        "    fill_kernel<<<1, 1, 0, s>>>(C.data_ptr<float>(), n);",
        "auto s = at::cuda::getStreamFromPool();\n"
        "    fill_kernel<<<1, 1>>>(C.data_ptr<float>(), n);",
        "auto s = c10::cuda::getStreamFromPool(true);",
        "c10::cuda::setCurrentCUDAStream(c10::cuda::getStreamFromPool());",
        "cudaStream_t s; cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, -1);",
        "fill_kernel<<<1, 1, 0, cudaStreamPerThread>>>(C.data_ptr<float>(), n);",
        "fill_kernel<<<1, 1, 0, (cudaStream_t)2>>>(C.data_ptr<float>(), n);",
        "fill_kernel<<<1, 1, 0, reinterpret_cast<cudaStream_t>(0x2)>>>(C.data_ptr<float>(), n);",
        "cublasHandle_t h; cublasCreate(&h); cublasSetStream(h, (cudaStream_t)2);",
        "cudnnHandle_t h; cudnnCreate(&h); cudnnSetStream(h, side);",
        "at::cuda::CUDAStreamGuard g(at::cuda::getStreamFromPool());",
        'printf("//"); cublasHandle_t h; cublasSetStream(h, side);',  # a `//` in a literal
        "fill_kernel<<<1, 1, 0, /* current */ side>>>(C.data_ptr<float>(), n);",
    ],
)
def test_cpp_side_stream(body):
    assert codes(host(body)) == {"side_stream"}, body


@pytest.mark.parametrize(
    "body",
    [
        "fill_kernel<<<1, 1>>>(C.data_ptr<float>(), n);",
        "fill_kernel<<<1, 1, 0, 0>>>(C.data_ptr<float>(), n);",
        "fill_kernel<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(C.data_ptr<float>(), n);",
        "auto stream = at::cuda::getCurrentCUDAStream();\n"
        "    fill_kernel<<<1, 1, 0, stream>>>(C.data_ptr<float>(), n);",
        "cudaStream_t stream = c10::cuda::getCurrentCUDAStream(A.device().index()).stream();\n"
        "    fill_kernel<<<1, 1, 0, stream>>>(C.data_ptr<float>(), n);",
        "cublasHandle_t h; cublasCreate(&h); cublasSetStream(h, at::cuda::getCurrentCUDAStream());",
        "/* cublasSetStream(h, side); cudaStreamCreate(&side); */",
        "// cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);",
        "/* a block comment\n       cublasSetStream(handle, side);\n    */",
    ],
)
def test_cpp_current_stream_and_comments_are_no_finding(body):
    assert codes(host(body)) == set(), body


def test_a_launch_helper_taking_a_stream_parameter_is_no_finding():
    helper = (
        "void launch(float* c, long long n, cudaStream_t stream) {\n"
        "    fill_kernel<<<1, 1, 0, stream>>>(c, n);\n}\n\n"
    )
    code = host("launch(C.data_ptr<float>(), n, at::cuda::getCurrentCUDAStream());")
    code = code.replace("torch::Tensor matmul_cuda", helper + "torch::Tensor matmul_cuda", 1)
    assert codes(code) == set()


def test_cpp_in_a_name_bound_to_load_inline_is_judged_without_cpp_markers():
    # no #include / __global__ / torch:: in this literal: it is C++ because load_inline gets it
    code = host("").replace(
        'cpp_sources="torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B);"',
        "cpp_sources=[DECL, EXTRA]",
    )
    code = code.replace(
        "ext = load_inline(",
        'DECL = "torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B);"\n'
        'EXTRA = "void side() { cudaStream_t s; cudaStreamCreate(&s); }"\n\next = load_inline(',
    )
    assert codes(code) == {"side_stream"}


def test_cuda_src_is_judged():
    code = (
        'import torch\n\nCUDA_SRC = r"""\nextern "C" void side() {\n'
        '    cudaStream_t s; cudaStreamCreate(&s);\n}\n"""\n\n\n'
        "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    )
    found = anticheat.check(code)
    assert [(f.code, f.line) for f in found] == [("side_stream", 5)], found


def test_cpp_torch_op_in_a_comment_is_no_fallback():
    assert codes(host("// auto D = torch::matmul(A, B);")) == set()
    assert codes(host("auto D = torch::matmul(A, B);")) == {"torch_fallback"}


def test_the_rule_has_a_rationale():
    assert "stream" in anticheat.RULES["side_stream"]
