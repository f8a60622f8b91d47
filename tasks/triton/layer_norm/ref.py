import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_cols, stride_x, stride_y, eps,
                      BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + pid * stride_x + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    y = diff * rstd * w + b
    tl.store(y_ptr + pid * stride_y + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.ln = nn.LayerNorm(dim, eps=1e-5)  # parameter holder only (weight, bias)
        self.eps = 1e-5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        w = self.ln.weight.contiguous()
        b = self.ln.bias.contiguous()
        BLOCK = triton.next_power_of_2(n_cols)
        num_warps = 16 if BLOCK >= 4096 else (8 if BLOCK >= 2048 else 4)
        layer_norm_kernel[(n_rows,)](x, w, b, y, n_cols, x.stride(0), y.stride(0), self.eps,
                                     BLOCK=BLOCK, num_warps=num_warps)
        return y
