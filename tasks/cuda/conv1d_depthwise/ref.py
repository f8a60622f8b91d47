import torch
import torch.nn as nn

CUDA_SRC = r"""
// one thread per output element of the flat (B * C, L) output
extern "C" __global__ void conv1d_depthwise_kernel(const float* __restrict__ X,
                                                   const float* __restrict__ W,
                                                   const float* __restrict__ bias,
                                                   float* __restrict__ Y,
                                                   int n, int C, int L, int ksize, int pad)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int l = i % L;
    int bc = i / L;
    int c = bc % C;
    const float* x = X + (long long)bc * L;
    float acc = bias[c];
    for (int t = 0; t < ksize; t++) {
        int idx = l + t - pad;
        if (idx >= 0 && idx < L) acc += W[c * ksize + t] * x[idx];
    }
    Y[i] = acc;
}
"""


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, kernel_size=5, padding=2, groups=channels)
        self.k = cuda_kernel("conv1d_depthwise_kernel")

    def forward(self, x):
        x = x.contiguous()
        B, C, L = x.shape
        y = torch.empty_like(x)
        n = x.numel()
        ksize = self.conv.weight.shape[-1]
        BLOCK = 256
        self.k(grid=((n + BLOCK - 1) // BLOCK,), block=(BLOCK,),
               args=(x, self.conv.weight, self.conv.bias, y, n, C, L, ksize, ksize // 2),
               shared_mem=0)
        return y
