import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_tanh_scale_kernel(x_ptr, b_ptr, y_ptr, n, C, scale, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs % C, mask=mask, other=0.0)
    z = x + b
    t = 2.0 * tl.sigmoid(2.0 * z) - 1.0  # tanh(z)
    tl.store(y_ptr + offs, t * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels, scale):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(channels) * 0.5)
        self.scale = scale

    def forward(self, x):
        x = x.contiguous()
        C = x.shape[-1]
        n = x.numel()
        y = torch.empty_like(x)
        BLOCK = 1024
        bias_tanh_scale_kernel[(triton.cdiv(n, BLOCK),)](x, self.bias, y, n, C, self.scale,
                                                         BLOCK=BLOCK, num_warps=4)
        return y
