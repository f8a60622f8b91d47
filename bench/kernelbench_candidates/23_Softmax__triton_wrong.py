# WRONG on purpose: KernelBench level1/23_Softmax whose max / sum pass covers only the first
# block of each row (a loop bound of BLOCK instead of n_cols): with 4096 of 393216 columns
# each row sums to about 96, not 1. Every output stays below 1e-3, so only a tolerance
# tighter than that sees it (KernelBench's 1e-4 does; an atol of 1e-2 does not).
# Expected: fail.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # row * stride passes 2**31 in other shapes
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    cols = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK,), tl.float32)
    # WRONG: the statistics pass stops after the first block (bound BLOCK, not n_cols)
    for start in range(0, BLOCK, BLOCK):
        c = start + cols
        x = tl.load(x_row + c, mask=c < n_cols, other=float("-inf"))
        m_new = tl.maximum(m, x)
        live = m_new > float("-inf")  # a lane that has seen no element yet adds nothing
        s = tl.where(live, s * tl.exp(m - m_new) + tl.exp(x - m_new), 0.0)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(tl.where(m > float("-inf"), s * tl.exp(m - row_max), 0.0), axis=0)
    for start in range(0, n_cols, BLOCK):
        c = start + cols
        mask = c < n_cols
        x = tl.load(x_row + c, mask=mask, other=float("-inf"))
        tl.store(y_row + c, tl.exp(x - row_max) / row_sum, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        BLOCK = min(4096, triton.next_power_of_2(n_cols))
        softmax_kernel[(n_rows,)](x, y, n_cols, x.stride(0), y.stride(0), BLOCK=BLOCK, num_warps=8)
        return y
