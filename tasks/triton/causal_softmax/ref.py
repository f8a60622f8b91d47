import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def causal_softmax_kernel(x_ptr, y_ptr, S, BLOCK: tl.constexpr):
    # one program per row of the flattened (batch * seq_len, seq_len) input
    pid = tl.program_id(0)
    i = pid % S
    offs = tl.arange(0, BLOCK)
    mask = offs < S
    keep = mask & (offs <= i)
    x = tl.load(x_ptr + pid * S + offs, mask=keep, other=-float("inf"))
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    e = tl.where(keep, e, 0.0)
    denom = tl.sum(e, axis=0)
    tl.store(y_ptr + pid * S + offs, e / denom, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        B, S, _ = x.shape
        y = torch.empty_like(x)
        BLOCK = triton.next_power_of_2(S)
        causal_softmax_kernel[(B * S,)](x, y, S, BLOCK=BLOCK, num_warps=4)
        return y
