import torch
import torch.nn as nn

CUDA_SRC = r"""
extern "C" __global__ void bias_tanh_scale_kernel(const float* __restrict__ X,
                                                  const float* __restrict__ bias,
                                                  float* __restrict__ Y, int n, int C, float scale)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) Y[i] = tanhf(X[i] + bias[i % C]) * scale;
}
"""


class ModelNew(nn.Module):
    def __init__(self, channels, scale):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(channels) * 0.5)
        self.scale = scale
        self.k = cuda_kernel("bias_tanh_scale_kernel")

    def forward(self, x):
        x = x.contiguous()
        C = x.shape[-1]
        n = x.numel()
        y = torch.empty_like(x)
        BLOCK = 256
        self.k(grid=((n + BLOCK - 1) // BLOCK,), block=(BLOCK,),
               args=(x, self.bias, y, n, C, float(self.scale)), shared_mem=0)
        return y
