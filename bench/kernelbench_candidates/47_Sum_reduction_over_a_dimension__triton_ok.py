# KernelBench level1/47_Sum_reduction_over_a_dimension at its own size (128 x 4096 x 4095
# float32, 2.1e9 elements, summed over dim 1): x seen as (outer, R, inner); one program per
# (outer index, block of inner columns), summing [BLOCK_R, BLOCK_J] tiles down the R rows.
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_dim_kernel(x_ptr, y_ptr, R, inner, n_jblocks, BLOCK_R: tl.constexpr, BLOCK_J: tl.constexpr):
    pid = tl.program_id(0)
    o = (pid // n_jblocks).to(tl.int64)  # o * R * inner passes 2**31
    j = (pid % n_jblocks) * BLOCK_J + tl.arange(0, BLOCK_J)
    r = tl.arange(0, BLOCK_R)
    base = x_ptr + o * R * inner
    acc = tl.zeros((BLOCK_J,), tl.float32)
    for r0 in range(0, R, BLOCK_R):
        rows = r0 + r
        ptrs = base + rows[:, None].to(tl.int64) * inner + j[None, :]
        tile = tl.load(ptrs, mask=(rows[:, None] < R) & (j[None, :] < inner), other=0.0)
        acc += tl.sum(tile, axis=0)
    tl.store(y_ptr + o * inner + j, acc, mask=j < inner)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        d = self.dim % x.dim()
        shape = list(x.shape)
        outer, R, inner = math.prod(shape[:d]), shape[d], math.prod(shape[d + 1 :])
        shape[d] = 1
        y = torch.empty(shape, device=x.device, dtype=x.dtype)
        BLOCK_R, BLOCK_J = 32, 128
        n_jblocks = triton.cdiv(inner, BLOCK_J)
        sum_dim_kernel[(outer * n_jblocks,)](
            x, y, R, inner, n_jblocks, BLOCK_R=BLOCK_R, BLOCK_J=BLOCK_J, num_warps=4
        )
        return y
