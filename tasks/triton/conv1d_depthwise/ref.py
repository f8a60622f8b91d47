import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv1d_depthwise_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C, L,
                            KSIZE: tl.constexpr, PAD: tl.constexpr, BLOCK: tl.constexpr):
    # program = (one (batch, channel) row, one block of positions)
    pid = tl.program_id(0)
    num_l = tl.cdiv(L, BLOCK)
    bc = pid // num_l
    lb = pid % num_l
    c = bc % C
    offs = lb * BLOCK + tl.arange(0, BLOCK)
    mask = offs < L
    acc = tl.zeros((BLOCK,), dtype=tl.float32) + tl.load(b_ptr + c)
    for t in tl.static_range(KSIZE):
        idx = offs + (t - PAD)
        m = (idx >= 0) & (idx < L)
        xv = tl.load(x_ptr + bc * L + idx, mask=m, other=0.0)
        acc += tl.load(w_ptr + c * KSIZE + t) * xv
    tl.store(y_ptr + bc * L + offs, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, kernel_size=5, padding=2, groups=channels)

    def forward(self, x):
        x = x.contiguous()
        B, C, L = x.shape
        y = torch.empty_like(x)
        ksize = self.conv.weight.shape[-1]
        BLOCK = 1024
        grid = (B * C * triton.cdiv(L, BLOCK),)
        conv1d_depthwise_kernel[grid](x, self.conv.weight, self.conv.bias, y, C, L,
                                      KSIZE=ksize, PAD=ksize // 2, BLOCK=BLOCK, num_warps=4)
        return y
