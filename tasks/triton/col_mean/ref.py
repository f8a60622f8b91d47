import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def col_mean_kernel(x_ptr, out_ptr, M, N, stride_m,
                    ROWS_PER_PROG: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # program (pid_n, pid_m) sums rows [pid_m * ROWS_PER_PROG, +ROWS_PER_PROG) of a
    # BLOCK_N column strip and adds (partial sum) / M into the zeroed output.
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_n = offs_n < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    row_start = pid_m * ROWS_PER_PROG
    for m0 in range(0, ROWS_PER_PROG, BLOCK_M):
        offs_m = row_start + m0 + tl.arange(0, BLOCK_M)
        mask = (offs_m[:, None] < M) & mask_n[None, :]
        acc += tl.load(x_ptr + offs_m[:, None] * stride_m + offs_n[None, :], mask=mask, other=0.0)
    col = tl.sum(acc, axis=0) / M
    tl.atomic_add(out_ptr + offs_n, col, mask=mask_n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        out = torch.zeros(N, device=x.device, dtype=x.dtype)
        BLOCK_M, BLOCK_N, ROWS_PER_PROG = 32, 64, 256
        grid = (triton.cdiv(N, BLOCK_N), triton.cdiv(M, ROWS_PER_PROG))
        col_mean_kernel[grid](x, out, M, N, x.stride(0),
                              ROWS_PER_PROG=ROWS_PER_PROG, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                              num_warps=4)
        return out
