import torch
import torch.nn as nn

CUDA_SRC = r"""
#define NT 256

// sum over the block (blockDim.x == NT, a multiple of 32): warp shuffles, then the NT / 32
// warp totals through shared memory; every thread gets the result
__device__ float block_sum(float v, float* sh)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = (lane < NT / 32) ? sh[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();  // sh is reused by the next call
    return v;
}

// one block of NT threads per row; s = x + r is cached in dynamic shared memory (D floats):
// LayerNorm(s) with biased variance
extern "C" __global__ void residual_layernorm_kernel(const float* __restrict__ X,
                                                     const float* __restrict__ R,
                                                     const float* __restrict__ W,
                                                     const float* __restrict__ B,
                                                     float* __restrict__ Y, int D, float eps)
{
    extern __shared__ float row_buf[];
    __shared__ float sh[NT / 32];
    const long long row = blockIdx.x;
    const float* x = X + row * D;
    const float* r = R + row * D;
    float* y = Y + row * D;
    float acc = 0.0f;
#pragma unroll 4
    for (int j = threadIdx.x; j < D; j += NT) {
        float v = x[j] + r[j];
        row_buf[j] = v;
        acc += v;
    }
    const float mean = block_sum(acc, sh) / D;
    acc = 0.0f;
    for (int j = threadIdx.x; j < D; j += NT) {
        float d = row_buf[j] - mean;
        acc += d * d;
    }
    const float rstd = rsqrtf(block_sum(acc, sh) / D + eps);
    for (int j = threadIdx.x; j < D; j += NT)
        y[j] = (row_buf[j] - mean) * rstd * W[j] + B[j];
}
"""


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.k = cuda_kernel("residual_layernorm_kernel")

    def forward(self, x, residual):
        x = x.contiguous()
        residual = residual.contiguous()
        M, D = x.shape
        y = torch.empty_like(x)
        self.k(grid=(M,), block=(256,),
               args=(x, residual, self.norm.weight, self.norm.bias, y, D, float(self.norm.eps)),
               shared_mem=4 * D)
        return y
