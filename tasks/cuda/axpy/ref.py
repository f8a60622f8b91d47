import torch
import torch.nn as nn

CUDA_SRC = r"""
/* Each thread handles VEC = 4 consecutive elements: one 16-byte vector load/store when
   the pointers are 16-byte aligned and all 4 are in range, else scalar (the tail). */
#define VEC 4

extern "C" __global__ void axpy_kernel(const float* __restrict__ x,
                                       const float* __restrict__ y,
                                       float* __restrict__ out,
                                       float alpha,
                                       long long n)
{
    long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * VEC;
    if (i >= n) return;
    bool aligned = ((reinterpret_cast<unsigned long long>(x) |
                     reinterpret_cast<unsigned long long>(y) |
                     reinterpret_cast<unsigned long long>(out)) & 15ull) == 0;
    if (aligned && i + VEC <= n) {
        float4 a = *reinterpret_cast<const float4*>(x + i);
        float4 b = *reinterpret_cast<const float4*>(y + i);
        float4 r;
        r.x = alpha * a.x + b.x; r.y = alpha * a.y + b.y;
        r.z = alpha * a.z + b.z; r.w = alpha * a.w + b.w;
        *reinterpret_cast<float4*>(out + i) = r;
    } else {
        for (long long j = i; j < n && j < i + VEC; ++j)
            out[j] = alpha * x[j] + y[j];
    }
}
"""

BLOCK = 256          # threads per block
ELEMS = BLOCK * 4    # elements per block (VEC = 4 per thread)


class ModelNew(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha
        self.k = cuda_kernel("axpy_kernel")

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        self.k(grid=((n + ELEMS - 1) // ELEMS,), block=(BLOCK,),
               args=(x, y, out, self.alpha, n), shared_mem=0)
        return out
