import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_gelu_kernel(x_ptr, w_ptr, b_ptr, y_ptr, D, stride_xm, stride_ym, eps,
                          BLOCK: tl.constexpr):
    # one program per row; the whole row fits in one block
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < D
    x = tl.load(x_ptr + pid * stride_xm + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / D
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / D
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    h = diff * rstd * w + b
    y = 0.5 * h * (1.0 + tl.math.erf(h * 0.7071067811865476))
    tl.store(y_ptr + pid * stride_ym + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        x = x.contiguous()
        M, D = x.shape
        y = torch.empty_like(x)
        BLOCK = triton.next_power_of_2(D)
        layernorm_gelu_kernel[(M,)](x, self.norm.weight, self.norm.bias, y, D,
                                    x.stride(0), y.stride(0), self.norm.eps,
                                    BLOCK=BLOCK, num_warps=8)
        return y
