"""The GPU kernel domains' descriptors, CUDA and Triton (stdlib only)."""

import dataclasses

from verifiers.domain import Domain, ExtractRules, PerfMetric, PromptStyle

_PYTHON_FILE = r"\A(?:\s*#[^\n]*)*\s*(?:import\s|from\s+\S+\s+import\s)"

CUDA = Domain(
    name="cuda",
    summary="CUDA C++ kernels in a PyTorch module: correct on fresh inputs, timed on a GPU",
    verifier="verifiers.kernels.verifier:CudaVerifier",
    spec_loader="verifiers.kernels.spec:load_kernel_spec",
    perturb="generators.perturb.kernels:CudaPerturbGenerator",
    resource="GPU",
    install="pip install -e '.[gpu]' and nvcc",
    prompt=PromptStyle(
        "CUDA C++",
        "python",
        "a Python file defining `ModelNew(nn.Module)` whose forward launches your CUDA kernel",
    ),
    extract=ExtractRules(
        entry=r"^\s*class\s+ModelNew\b",
        named_entry=r"^\s*(?:class|def)\s+{name}\b",
        unfenced=_PYTHON_FILE,
        python=True,
        entry_const="ModelNew",
    ),
    syntax="cpp",
    gates=(
        ("parse", "build"),
        ("anticheat", "build"),
        ("compile", "build"),
        ("launch", "run"),
        ("correct", "judge"),
        ("timing", "perf"),
    ),
    perf=PerfMetric("speedup", "higher", "x vs the reference"),
    fast_gates=("compile",),
)

TRITON = dataclasses.replace(
    CUDA,
    name="triton",
    summary="Triton kernels in a PyTorch module: correct on fresh inputs, timed on a GPU",
    verifier="verifiers.kernels.verifier:TritonVerifier",
    perturb="generators.perturb.kernels:TritonPerturbGenerator",
    install="pip install -e '.[gpu]'",
    prompt=PromptStyle(
        "Triton",
        "python",
        "a Python file defining `ModelNew(nn.Module)` whose forward launches your "
        "`@triton.jit` kernel(s)",
    ),
    syntax="python",
)
