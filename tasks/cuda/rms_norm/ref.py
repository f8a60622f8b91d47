import torch
import torch.nn as nn

CUDA_SRC = r"""
__device__ __forceinline__ float warp_reduce_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

/* Sum over the whole block; every thread gets the result.
   blockDim.x must be a multiple of 32 and at most 1024; sh holds 32 floats. */
__device__ float block_reduce_sum(float v, float* sh)
{
    int lane = threadIdx.x & 31;
    int wid = threadIdx.x >> 5;
    int nwarps = blockDim.x >> 5;
    v = warp_reduce_sum(v);
    __syncthreads();              /* sh may still be read by a previous call */
    if (lane == 0) sh[wid] = v;
    __syncthreads();
    v = (lane < nwarps) ? sh[lane] : 0.0f;
    return warp_reduce_sum(v);
}

/* One block per row: mean of squares, then the scaled write. */
extern "C" __global__ void rms_norm_kernel(const float* __restrict__ x,
                                           const float* __restrict__ w,
                                           float* __restrict__ y,
                                           int n_cols,
                                           float eps)
{
    __shared__ float sh[32];
    const float* xr = x + (long long)blockIdx.x * n_cols;
    float* yr = y + (long long)blockIdx.x * n_cols;
    /* 4 independent loads in flight per thread */
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    const int s = blockDim.x;
    int i = threadIdx.x;
    for (; i + 3 * s < n_cols; i += 4 * s) {
        { float v = xr[i]; a0 += v * v; }
        { float v = xr[i + s]; a1 += v * v; }
        { float v = xr[i + 2 * s]; a2 += v * v; }
        { float v = xr[i + 3 * s]; a3 += v * v; }
    }
    for (; i < n_cols; i += s)
        { float v = xr[i]; a0 += v * v; }
    float acc = (a0 + a1) + (a2 + a3);
    float ms = block_reduce_sum(acc, sh) / (float)n_cols;
    float rstd = rsqrtf(ms + eps);
    for (int i = threadIdx.x; i < n_cols; i += blockDim.x)
        yr[i] = xr[i] * rstd * w[i];
}
"""

THREADS = 256


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # loaded from Model's state_dict
        self.k = cuda_kernel("rms_norm_kernel")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        w = self.weight.contiguous()
        self.k(grid=(n_rows,), block=(THREADS,), args=(x, w, y, n_cols, self.eps), shared_mem=0)
        return y
