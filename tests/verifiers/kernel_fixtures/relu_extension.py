# The host+device path (KernelBench style): the same ReLU as tasks/cuda/relu, built as a
# PyTorch extension with load_inline. Used by the tests (compile only on the CPU) and the
# GPU bench (built and verified on the H200).
import torch
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

torch::Tensor relu_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    long long n = x.numel();
    const int block = 256;
    const long long grid = (n + block - 1) / block;
    relu_kernel<<<grid, block>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

cpp_source = "torch::Tensor relu_cuda(torch::Tensor x);"

relu_ext = load_inline(
    name="crucible_relu_ext",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["relu_cuda"],
    verbose=False,
)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu_ext.relu_cuda(x.contiguous())
