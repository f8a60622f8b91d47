import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, n_cols, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + pid * stride_x + cols, mask=mask, other=0.0)
    ms = tl.sum(x * x, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(ms + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + pid * stride_y + cols, x * rstd * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # loaded from Model's state_dict

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        w = self.weight.contiguous()
        BLOCK = triton.next_power_of_2(n_cols)
        num_warps = 16 if BLOCK >= 4096 else (8 if BLOCK >= 2048 else 4)
        rms_norm_kernel[(n_rows,)](x, w, y, n_cols, x.stride(0), y.stride(0), self.eps,
                                   BLOCK=BLOCK, num_warps=num_warps)
        return y
