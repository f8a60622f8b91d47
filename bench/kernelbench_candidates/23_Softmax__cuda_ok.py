# KernelBench level1/23_Softmax at its own size (4096 rows of 393216 float32), as a PyTorch
# extension (KernelBench's own format): one block per row, an online (max, sum) per thread
# merged across the block, then a normalizing pass. Indices are 64-bit.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <math_constants.h>

#define THREADS 1024

// (m, s) stands for s * exp(-m) summed terms; merge two such pairs
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    float mn = fmaxf(m, m2);
    if (mn == -CUDART_INF_F) return;  // both empty
    s = (m == -CUDART_INF_F ? 0.0f : s * expf(m - mn)) +
        (m2 == -CUDART_INF_F ? 0.0f : s2 * expf(m2 - mn));
    m = mn;
}

__global__ void softmax_rows_kernel(const float* __restrict__ x, float* __restrict__ y,
                                    long long n_cols) {
    const float* xr = x + (long long)blockIdx.x * n_cols;
    float* yr = y + (long long)blockIdx.x * n_cols;
    float m = -CUDART_INF_F, s = 0.0f;
    for (long long c = threadIdx.x; c < n_cols; c += THREADS) merge(m, s, xr[c], 1.0f);
    for (int off = 16; off > 0; off >>= 1) {
        float m2 = __shfl_down_sync(0xffffffffu, m, off);
        float s2 = __shfl_down_sync(0xffffffffu, s, off);
        merge(m, s, m2, s2);
    }
    __shared__ float wm[THREADS / 32], ws[THREADS / 32];
    __shared__ float row_max, row_inv;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) { wm[warp] = m; ws[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        m = wm[lane]; s = ws[lane];  // THREADS / 32 == 32 warps: one per lane
        for (int off = 16; off > 0; off >>= 1) {
            float m2 = __shfl_down_sync(0xffffffffu, m, off);
            float s2 = __shfl_down_sync(0xffffffffu, s, off);
            merge(m, s, m2, s2);
        }
        if (lane == 0) { row_max = m; row_inv = 1.0f / s; }
    }
    __syncthreads();
    const float mx = row_max, inv = row_inv;
    for (long long c = threadIdx.x; c < n_cols; c += THREADS) yr[c] = expf(xr[c] - mx) * inv;
}

torch::Tensor softmax_rows_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2,
                "x: a 2-D float32 CUDA tensor");
    x = x.contiguous();
    auto y = torch::empty_like(x);
    if (x.numel() == 0) return y;
    softmax_rows_kernel<<<(unsigned int)x.size(0), THREADS>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), x.size(1));
    return y;
}
"""

cpp_source = "torch::Tensor softmax_rows_forward(torch::Tensor x);"

softmax_ext = load_inline(
    name="kb23_softmax_cuda_ok",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["softmax_rows_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softmax_ext.softmax_rows_forward(x)
