# WRONG on purpose: KernelBench level1/19_ReLU with the threshold constant 0.5 instead of 0
# (every element in [0, 0.5) becomes 0). Expected: fail.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

// WRONG: the threshold constant is 0.5, not 0
__device__ __forceinline__ float relu_f(float v) { return v < 0.5f ? 0.0f : v; }

// each thread: 4 consecutive elements, one 16-byte access when aligned and in range
__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i >= n) return;
    bool aligned = ((reinterpret_cast<unsigned long long>(x) |
                     reinterpret_cast<unsigned long long>(y)) & 15ull) == 0;
    if (aligned && i + 4 <= n) {
        float4 v = *reinterpret_cast<const float4*>(x + i);
        v.x = relu_f(v.x); v.y = relu_f(v.y); v.z = relu_f(v.z); v.w = relu_f(v.w);
        *reinterpret_cast<float4*>(y + i) = v;
    } else {
        for (long long j = i; j < n && j < i + 4; ++j) y[j] = relu_f(x[j]);
    }
}

torch::Tensor relu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x: a float32 CUDA tensor");
    x = x.contiguous();
    auto y = torch::empty_like(x);
    long long n = x.numel();
    if (n == 0) return y;
    const int threads = 256;
    long long blocks = (n + threads * 4LL - 1) / (threads * 4LL);
    relu_kernel<<<(unsigned int)blocks, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

cpp_source = "torch::Tensor relu_forward(torch::Tensor x);"

# the same extension name= as 19_ReLU__cuda_ok.py, other code: verified in the same batch,
# each must get its own build (and its own verdict), never the other's
relu_ext = load_inline(
    name="kb19_relu_cuda_ok",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["relu_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_forward(x)
