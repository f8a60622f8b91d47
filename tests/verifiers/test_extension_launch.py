"""Over-limit launches inside load_inline extensions: found in the source where the launch
configuration is spelled out, and classified as launch_exceeds_limit when the device
refuses one at run time."""

from __future__ import annotations

import pytest

from verifiers.contract import Status
from verifiers.kernels.errors import classify_python
from verifiers.kernels.extension import launch_violations
from verifiers.kernels.limits import DeviceLimits

KERNEL = """
#include <torch/extension.h>
__global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""


def candidate(host: str, head: str = "") -> str:
    """A load_inline candidate whose host function launches relu_kernel as `host` does."""
    cuda = f"""{head}{KERNEL}
torch::Tensor relu(torch::Tensor x) {{
    auto y = torch::empty_like(x);
    int n = x.numel();
    {host}
    return y;
}}
"""
    return f'''
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""{cuda}"""
ext = load_inline(
    name="relu_ext",
    cpp_sources="torch::Tensor relu(torch::Tensor x);",
    cuda_sources=CUDA_SRC,
    functions=["relu"],
)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return ext.relu(x)
'''


ARGS = "(x.data_ptr<float>(), y.data_ptr<float>(), n)"


def test_literal_block_past_the_limit_names_1024():
    found = launch_violations(candidate(f"relu_kernel<<<(n + 2047) / 2048, 2048>>>{ARGS};"))
    assert len(found) == 1, found
    assert "relu_kernel<<<(n + 2047) / 2048, 2048>>>" in found[0]
    assert "2048 threads per block; the device allows 1024" in found[0]


def test_dim3_block_of_literals_multiplies_out():
    host = f"dim3 block(32, 64);\n    relu_kernel<<<dim3((n + 2047) / 2048), block>>>{ARGS};"
    (msg,) = launch_violations(candidate(host))
    assert "2048 threads per block" in msg and "1024" in msg


@pytest.mark.parametrize(
    "head, host",
    [
        ("#define THREADS 2048\n", f"relu_kernel<<<(n + THREADS - 1) / THREADS, THREADS>>>{ARGS};"),
        ("const int BLOCK = 2048;\n", f"relu_kernel<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>{ARGS};"),
        ("constexpr int TILE = 32;\n", f"relu_kernel<<<n, dim3(TILE, TILE * 2)>>>{ARGS};"),
        ("", f"const int threads = 1 << 11;\n    relu_kernel<<<n, threads>>>{ARGS};"),
        ("", f"int threads = 2048;\n    relu_kernel<<<n, threads>>>{ARGS};"),  # never changed
    ],
)
def test_named_constants_are_followed(head, host):
    (msg,) = launch_violations(candidate(host, head))
    assert "2048 threads per block; the device allows 1024" in msg


def test_grid_y_past_65535():
    host = f"dim3 grid((n + 255) / 256, 70000);\n    relu_kernel<<<grid, 256>>>{ARGS};"
    (msg,) = launch_violations(candidate(host))
    assert "gridDim.y = 70000; the device allows 65535" in msg


def test_block_z_past_64_alone():
    (msg,) = launch_violations(candidate(f"relu_kernel<<<n, dim3(1, 1, 128)>>>{ARGS};"))
    assert "blockDim.z = 128; the device allows 64" in msg


@pytest.mark.parametrize(
    "host",
    [
        # known only at run time
        f"int threads = std::min(n, 4096);\n    relu_kernel<<<n, threads>>>{ARGS};",
        f"relu_kernel<<<1, x.size(0)>>>{ARGS};",
        f"dim3 grid(n, x.size(1));\n    relu_kernel<<<grid, 256>>>{ARGS};",
        # bound to a constant, then changed
        f"int threads = 2048;\n    if (n < threads) threads = n;\n    "
        f"relu_kernel<<<1, threads>>>{ARGS};",
        f"dim3 block(2048);\n    block.x = 256;\n    relu_kernel<<<n, block>>>{ARGS};",
    ],
)
def test_a_configuration_known_only_at_run_time_is_no_finding(host):
    assert launch_violations(candidate(host)) == []


def test_a_name_bound_twice_is_not_guessed():
    head = "#ifdef BIG\nconst int BLOCK = 2048;\n#else\nconst int BLOCK = 256;\n#endif\n"
    assert launch_violations(candidate(f"relu_kernel<<<n, BLOCK>>>{ARGS};", head)) == []


def test_correct_launches_are_no_finding():
    host = (
        "const int block_size = 256;\n"
        "    const int num_blocks = (n + block_size - 1) / block_size;\n"
        f"    relu_kernel<<<num_blocks, block_size>>>{ARGS};\n"
        f"    relu_kernel<<<dim3(65535, 65535, 1), dim3(32, 32), 0>>>{ARGS};\n"
        f"    relu_kernel<<<2147483647, 1024, 48 * 1024>>>{ARGS};"
    )
    assert launch_violations(candidate(host)) == []


def test_dynamic_shared_memory_needs_the_opt_in():
    host = f"relu_kernel<<<n, 256, 64 * 1024, at::cuda::getCurrentCUDAStream()>>>{ARGS};"
    (msg,) = launch_violations(candidate(host))
    assert "65536 B dynamic shared memory" in msg and "allows 49152 B without" in msg
    opted = (
        "cudaFuncSetAttribute(relu_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, "
        "64 * 1024);\n    " + host
    )
    assert launch_violations(candidate(opted)) == []
    too_much = f"relu_kernel<<<n, 256, 256 * 1024 * sizeof(char)>>>{ARGS};"
    (msg,) = launch_violations(candidate("cudaFuncSetAttribute(relu_kernel, "
        "cudaFuncAttributeMaxDynamicSharedMemorySize, 1);\n    " + too_much))  # fmt: skip
    assert "262144 B" in msg and f"allows {227 * 1024} B" in msg


def test_the_devices_own_limits_are_used():
    small = DeviceLimits(name="test device", max_threads_per_block=512)
    (msg,) = launch_violations(candidate(f"relu_kernel<<<n, 768>>>{ARGS};"), small)
    assert "768 threads per block; the device allows 512 (test device)" in msg


def test_templated_kernel_and_comments():
    host = (
        "// relu_kernel<<<n, 4096>>>(...) was too many\n"
        f"    /* relu_kernel<<<n, 8192>>> */ relu_kernel<float><<<n, 4096>>>{ARGS};"
    )
    (msg,) = launch_violations(candidate(host))
    assert msg.startswith("kernel relu_kernel<<<n, 4096>>>") and "4096 threads" in msg


def test_without_load_inline_or_parseable_code_nothing_is_found():
    assert launch_violations("x = 1\n") == []
    assert launch_violations("def broken(:\n") == []


TORCH_HINT = (
    "\nCUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\nFor debugging consider passing "
    "CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side "
    "assertions.\n"
)


@pytest.mark.parametrize(
    "message, code",
    [
        ("CUDA error: invalid configuration argument" + TORCH_HINT, "launch_exceeds_limit"),
        ("CUDA error: too many resources requested for launch", "launch_exceeds_limit"),
        ("relu failed: cudaErrorInvalidConfiguration", "launch_exceeds_limit"),
        ("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "launch_exceeds_limit"),
        ("relu_kernel launch failed: invalid argument", "launch_exceeds_limit"),
        # any API call's invalid argument: torch's hint line does not make it a launch's
        ("CUDA error: invalid argument" + TORCH_HINT, "cuda_error"),
        ("CUDA error: an illegal memory access was encountered" + TORCH_HINT, "cuda_error"),
    ],
)
def test_runner_errors_from_inside_an_extension(message, code):
    err = {"type": "RuntimeError", "types": ["RuntimeError", "Exception"], "message": message}
    for step in ("outputs", "warm"):
        assert classify_python(step, err) == (Status.RUNTIME_ERROR, code)


def test_limits_describe_names_them():
    text = DeviceLimits().describe()
    assert "1024 threads per block" in text and "65535" in text and "227 KiB" in text


# --- the CUDA file the CPU path compiles is the one load_inline would --------------------
def _load_inline_cuda_file(tmp_path, *args, **kw) -> str:
    """What torch's own load_inline writes as cuda.cu for these arguments (its build is
    stopped before anything compiles)."""
    import torch.utils.cpp_extension as ce

    def stop(*_a, **_k):
        raise RuntimeError("stopped before the build")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ce, "_jit_compile", stop)
        with pytest.raises(RuntimeError, match="stopped before the build"):
            ce.load_inline(*args, build_directory=str(tmp_path), **kw)
    return (tmp_path / "cuda.cu").read_text()


FIRST = "__device__ float twice(float v) { return 2.0f * v; }"
SECOND = "__global__ void k(float* y) { y[0] = twice(y[0]); }"


@pytest.mark.parametrize(
    ("call", "kw"),
    [
        ('"e", "int f();", cuda_sources=[FIRST, SECOND]', {}),
        ('"e", "int f();", [FIRST, SECOND]', {}),  # positional
        (
            '"e", "int f();", cuda_sources=[FIRST, SECOND], no_implicit_headers=True',
            {"no_implicit_headers": True},
        ),
    ],
)
def test_the_cuda_file_is_load_inlines_own(tmp_path, call, kw):
    """load_inline joins a call's CUDA sources into one file after three implicit headers
    (none with no_implicit_headers=True): the CPU path's nvcc compiles that same text,
    character for character. The peer is torch's own assembly."""
    from verifiers.kernels.extension import extension_calls

    code = (
        "from torch.utils.cpp_extension import load_inline\n"
        f"FIRST = {FIRST!r}\nSECOND = {SECOND!r}\n"
        f"ext = load_inline({call})\n"
    )
    (found,) = extension_calls(code)
    theirs = _load_inline_cuda_file(tmp_path, "e", "int f();", [FIRST, SECOND], **kw)
    assert found.unit() == theirs


def test_each_load_inline_call_is_its_own_cuda_file():
    from verifiers.kernels.extension import extension_calls, extension_sources

    code = (
        "from torch.utils.cpp_extension import load_inline\n"
        f"a = load_inline('a', '', cuda_sources={FIRST!r})\n"
        f"b = load_inline('b', '', cuda_sources=[{SECOND!r}], no_implicit_headers=False)\n"
        "c = load_inline('c', 'int f() { return 0; }')\n"  # no CUDA: nothing for nvcc
    )
    a, b = extension_calls(code)
    assert a.cuda_sources == (FIRST,) and b.cuda_sources == (SECOND,)
    assert a.implicit_headers and b.implicit_headers
    assert extension_sources(code) == [FIRST, SECOND]
