# KernelBench level1/36_RMSNorm_ at its own size (112 x 64 x 512 x 512 float32, 1.9e9
# elements, normalized over dim 1): x seen as (B, F, inner); one program per (b, block of
# inner positions) loads the [F, BLOCK] tile once, reduces over F and writes it normalized.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(
    x_ptr, y_ptr, F, inner, n_blocks, eps, BLOCK_F: tl.constexpr, BLOCK: tl.constexpr
):
    pid = tl.program_id(0)
    b = (pid // n_blocks).to(tl.int64)  # b * F * inner passes 2**31
    p = (pid % n_blocks) * BLOCK + tl.arange(0, BLOCK)
    f = tl.arange(0, BLOCK_F)
    offs = b * F * inner + f[:, None].to(tl.int64) * inner + p[None, :]
    mask = (f[:, None] < F) & (p[None, :] < inner)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    mean_sq = tl.sum(x * x, axis=0) / F
    rms = tl.sqrt(mean_sq + eps)
    tl.store(y_ptr + offs, x / rms[None, :], mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        B, F = x.shape[0], x.shape[1]
        inner = x.numel() // (B * F)
        BLOCK_F = triton.next_power_of_2(F)
        BLOCK = max(16, 8192 // BLOCK_F)
        n_blocks = triton.cdiv(inner, BLOCK)
        rms_norm_kernel[(B * n_blocks,)](
            x, y, F, inner, n_blocks, self.eps, BLOCK_F=BLOCK_F, BLOCK=BLOCK, num_warps=8
        )
        return y
