import torch
import torch.nn as nn

CUDA_SRC = r"""
/* One block per row. The row is processed in tiles of blockDim.x elements (one per
   thread, coalesced): warp-level inclusive scan with shuffles, a scan of the warp totals
   in warp 0, then the carry from the previous tiles is added.
   blockDim.x must be a multiple of 32 and at most 1024. */
extern "C" __global__ void cumsum_rows_kernel(const float* __restrict__ x,
                                              float* __restrict__ y,
                                              int n_cols)
{
    __shared__ float warp_tot[32];
    const float* xr = x + (long long)blockIdx.x * n_cols;
    float* yr = y + (long long)blockIdx.x * n_cols;
    int lane = threadIdx.x & 31;
    int wid = threadIdx.x >> 5;
    int nwarps = blockDim.x >> 5;
    float carry = 0.0f;
    for (int start = 0; start < n_cols; start += blockDim.x) {
        int i = start + threadIdx.x;
        float v = (i < n_cols) ? xr[i] : 0.0f;
        for (int off = 1; off < 32; off <<= 1) {
            float t = __shfl_up_sync(0xffffffffu, v, off);
            if (lane >= off) v += t;
        }
        if (lane == 31) warp_tot[wid] = v;
        __syncthreads();
        if (wid == 0) {
            float w = (lane < nwarps) ? warp_tot[lane] : 0.0f;
            for (int off = 1; off < 32; off <<= 1) {
                float t = __shfl_up_sync(0xffffffffu, w, off);
                if (lane >= off) w += t;
            }
            if (lane < nwarps) warp_tot[lane] = w;   /* inclusive scan of warp totals */
        }
        __syncthreads();
        float prefix = (wid > 0) ? warp_tot[wid - 1] : 0.0f;
        if (i < n_cols) yr[i] = carry + (prefix + v);
        carry += warp_tot[nwarps - 1];
        __syncthreads();   /* warp_tot is rewritten by the next tile */
    }
}
"""

THREADS = 256


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = cuda_kernel("cumsum_rows_kernel")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        self.k(grid=(n_rows,), block=(THREADS,), args=(x, y, n_cols), shared_mem=0)
        return y
