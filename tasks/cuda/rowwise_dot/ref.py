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

// one block per row: y[row] = sum_j a[row, j] * b[row, j]
extern "C" __global__ void rowwise_dot_kernel(const float* __restrict__ A,
                                              const float* __restrict__ B,
                                              float* __restrict__ Y, int D)
{
    __shared__ float sh[NT / 32];
    const long long row = blockIdx.x;
    const float* a = A + row * D;
    const float* b = B + row * D;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < D; j += NT) acc += a[j] * b[j];
    const float s = block_sum(acc, sh);
    if (threadIdx.x == 0) Y[row] = s;
}
"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = cuda_kernel("rowwise_dot_kernel")

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        M, D = a.shape
        y = torch.empty((M,), device=a.device, dtype=a.dtype)
        self.k(grid=(M,), block=(256,), args=(a, b, y, D), shared_mem=0)
        return y
