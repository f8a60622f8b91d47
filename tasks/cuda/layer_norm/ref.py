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

/* One block per row: mean, then the centered variance, then the affine write. */
extern "C" __global__ void layer_norm_kernel(const float* __restrict__ x,
                                             const float* __restrict__ w,
                                             const float* __restrict__ b,
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
        a0 += xr[i];
        a1 += xr[i + s];
        a2 += xr[i + 2 * s];
        a3 += xr[i + 3 * s];
    }
    for (; i < n_cols; i += s)
        a0 += xr[i];
    float acc = (a0 + a1) + (a2 + a3);
    float mean = block_reduce_sum(acc, sh) / (float)n_cols;
    float acc2 = 0.0f;
    for (int i = threadIdx.x; i < n_cols; i += blockDim.x) {
        float d = xr[i] - mean;
        acc2 += d * d;
    }
    float var = block_reduce_sum(acc2, sh) / (float)n_cols;
    float rstd = rsqrtf(var + eps);
    for (int i = threadIdx.x; i < n_cols; i += blockDim.x)
        yr[i] = (xr[i] - mean) * rstd * w[i] + b[i];
}
"""

THREADS = 256


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.ln = nn.LayerNorm(dim, eps=1e-5)  # parameter holder only (weight, bias)
        self.eps = 1e-5
        self.k = cuda_kernel("layer_norm_kernel")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        w = self.ln.weight.contiguous()
        b = self.ln.bias.contiguous()
        self.k(grid=(n_rows,), block=(THREADS,), args=(x, w, b, y, n_cols, self.eps), shared_mem=0)
        return y
