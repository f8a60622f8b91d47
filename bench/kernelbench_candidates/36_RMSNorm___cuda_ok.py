# KernelBench level1/36_RMSNorm_ at its own size (112 x 64 x 512 x 512 float32, 1.9e9
# elements, normalized over dim 1), as a PyTorch extension (KernelBench's own format). x is
# seen as (B, F, inner); one thread per (b, inner position) reads its F values once (kept in
# registers up to F = 64), then writes them normalized. Indices are 64-bit.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

#define MAX_F 64

__global__ void rms_norm_regs_kernel(const float* __restrict__ x, float* __restrict__ y,
                                     long long B, int F, long long inner, float eps) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * inner) return;
    const long long b = idx / inner, p = idx - b * inner;
    const float* xp = x + b * F * inner + p;
    float* yp = y + b * F * inner + p;
    float v[MAX_F];
    float ss = 0.0f;
    #pragma unroll
    for (int f = 0; f < MAX_F; ++f) {
        if (f < F) { v[f] = xp[(long long)f * inner]; ss += v[f] * v[f]; }
    }
    const float rms = sqrtf(ss / F + eps);
    #pragma unroll
    for (int f = 0; f < MAX_F; ++f) {
        if (f < F) yp[(long long)f * inner] = v[f] / rms;
    }
}

// any F: read twice
__global__ void rms_norm_loop_kernel(const float* __restrict__ x, float* __restrict__ y,
                                     long long B, int F, long long inner, float eps) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * inner) return;
    const long long b = idx / inner, p = idx - b * inner;
    const float* xp = x + b * F * inner + p;
    float* yp = y + b * F * inner + p;
    float ss = 0.0f;
    for (int f = 0; f < F; ++f) { float t = xp[(long long)f * inner]; ss += t * t; }
    const float rms = sqrtf(ss / F + eps);
    for (int f = 0; f < F; ++f) yp[(long long)f * inner] = xp[(long long)f * inner] / rms;
}

torch::Tensor rms_norm_forward(torch::Tensor x, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() >= 2,
                "x: a float32 CUDA tensor of at least 2 dims");
    x = x.contiguous();
    auto y = torch::empty_like(x);
    const long long B = x.size(0);
    const int F = (int)x.size(1);
    if (x.numel() == 0) return y;
    const long long inner = x.numel() / (B * F);
    const int threads = 256;
    const long long blocks = (B * inner + threads - 1) / threads;
    if (F <= MAX_F)
        rms_norm_regs_kernel<<<(unsigned int)blocks, threads>>>(
            x.data_ptr<float>(), y.data_ptr<float>(), B, F, inner, (float)eps);
    else
        rms_norm_loop_kernel<<<(unsigned int)blocks, threads>>>(
            x.data_ptr<float>(), y.data_ptr<float>(), B, F, inner, (float)eps);
    return y;
}
"""

cpp_source = "torch::Tensor rms_norm_forward(torch::Tensor x, double eps);"

rms_norm_ext = load_inline(
    name="kb36_rms_norm_cuda_ok",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["rms_norm_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm_ext.rms_norm_forward(x, self.eps)
