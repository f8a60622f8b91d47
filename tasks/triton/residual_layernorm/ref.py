import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def residual_layernorm_kernel(x_ptr, r_ptr, w_ptr, b_ptr, y_ptr, D,
                              stride_xm, stride_rm, stride_ym, eps, BLOCK: tl.constexpr):
    # one program per row; the whole row fits in one block
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < D
    x = tl.load(x_ptr + pid * stride_xm + offs, mask=mask, other=0.0)
    r = tl.load(r_ptr + pid * stride_rm + offs, mask=mask, other=0.0)
    s = x + r
    mean = tl.sum(s, axis=0) / D
    diff = tl.where(mask, s - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / D
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + pid * stride_ym + offs, diff * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x, residual):
        x = x.contiguous()
        residual = residual.contiguous()
        M, D = x.shape
        y = torch.empty_like(x)
        BLOCK = triton.next_power_of_2(D)
        residual_layernorm_kernel[(M,)](x, residual, self.norm.weight, self.norm.bias, y, D,
                                        x.stride(0), residual.stride(0), y.stride(0),
                                        self.norm.eps, BLOCK=BLOCK, num_warps=8)
        return y
