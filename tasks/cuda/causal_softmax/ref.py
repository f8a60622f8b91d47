import torch
import torch.nn as nn

CUDA_SRC = r"""
#include <math.h>
#define NT 256

// max / sum over the block's NT threads (NT a power of two); every thread gets the result
__device__ float block_max(float v, float* sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = NT / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

__device__ float block_sum(float v, float* sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = NT / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

// one block per row of the flattened (batch * S, S) input; row i keeps columns j <= i
extern "C" __global__ void causal_softmax_kernel(const float* __restrict__ X,
                                                 float* __restrict__ Y, int S)
{
    __shared__ float sh[NT];
    const long long row = blockIdx.x;
    const int i = (int)(row % S);
    const float* x = X + row * S;
    float* y = Y + row * S;
    float m = -INFINITY;
    for (int j = threadIdx.x; j <= i; j += NT) m = fmaxf(m, x[j]);
    m = block_max(m, sh);
    float acc = 0.0f;
    for (int j = threadIdx.x; j <= i; j += NT) acc += expf(x[j] - m);
    const float inv = 1.0f / block_sum(acc, sh);
    for (int j = threadIdx.x; j < S; j += NT)
        y[j] = (j <= i) ? expf(x[j] - m) * inv : 0.0f;
}
"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = cuda_kernel("causal_softmax_kernel")

    def forward(self, x):
        x = x.contiguous()
        B, S, _ = x.shape
        y = torch.empty_like(x)
        self.k(grid=(B * S,), block=(256,), args=(x, y, S), shared_mem=0)
        return y
