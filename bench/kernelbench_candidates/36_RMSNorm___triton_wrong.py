# WRONG on purpose: KernelBench level1/36_RMSNorm_ dividing by the mean square instead of
# its square root (outputs about 1.7x too large on rand inputs). Expected: fail.
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
    rms = mean_sq + eps  # WRONG: the square root is missing
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
