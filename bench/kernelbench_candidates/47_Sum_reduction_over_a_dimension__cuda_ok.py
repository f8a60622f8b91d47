# KernelBench level1/47_Sum_reduction_over_a_dimension at its own size (128 x 4096 x 4095
# float32, 2.1e9 elements, summed over dim 1), as a PyTorch extension (KernelBench's own
# format). x is seen as (outer, R, inner); a block of 32 x 8 threads owns 32 inner columns
# of one outer index: 8 row groups sum strided rows (coalesced across the 32 columns), then
# the 8 partial sums are added. Indices are 64-bit.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

#define COLS 32
#define GROUPS 8

__global__ void sum_dim_kernel(const float* __restrict__ x, float* __restrict__ y,
                               long long R, long long inner, long long n_jblocks) {
    const long long o = (long long)blockIdx.x / n_jblocks;
    const long long j = ((long long)blockIdx.x % n_jblocks) * COLS + threadIdx.x;
    __shared__ float part[GROUPS][COLS + 1];
    float acc = 0.0f;
    if (j < inner) {
        const float* col = x + o * R * inner + j;
        #pragma unroll 8
        for (long long r = threadIdx.y; r < R; r += GROUPS) acc += col[r * inner];
    }
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && j < inner) {
        float total = 0.0f;
        for (int g = 0; g < GROUPS; ++g) total += part[g][threadIdx.x];
        y[o * inner + j] = total;
    }
}

torch::Tensor sum_dim_forward(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x: a float32 CUDA tensor");
    x = x.contiguous();
    const int64_t nd = x.dim();
    const int64_t d = ((dim % nd) + nd) % nd;
    long long outer = 1, inner = 1;
    for (int64_t k = 0; k < d; ++k) outer *= x.size(k);
    for (int64_t k = d + 1; k < nd; ++k) inner *= x.size(k);
    const long long R = x.size(d);
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape[d] = 1;
    auto y = torch::empty(shape, x.options());
    if (y.numel() == 0) return y;
    const long long n_jblocks = (inner + COLS - 1) / COLS;
    dim3 block(COLS, GROUPS);
    sum_dim_kernel<<<(unsigned int)(outer * n_jblocks), block>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), R, inner, n_jblocks);
    return y;
}
"""

cpp_source = "torch::Tensor sum_dim_forward(torch::Tensor x, int64_t dim);"

sum_ext = load_inline(
    name="kb47_sum_cuda_ok",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["sum_dim_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return sum_ext.sum_dim_forward(x, self.dim)
