import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_rstd_kernel(x_ptr, rstd_ptr, D, stride_xm, eps, BLOCK: tl.constexpr):
    # rstd[row] = 1 / sqrt(mean(x[row]^2) + eps)
    pid = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for d0 in range(0, D, BLOCK):
        offs = d0 + tl.arange(0, BLOCK)
        mask = offs < D
        x = tl.load(x_ptr + pid * stride_xm + offs, mask=mask, other=0.0)
        acc += x * x
    ms = tl.sum(acc, axis=0) / D
    tl.store(rstd_ptr + pid, 1.0 / tl.sqrt(ms + eps))


@triton.jit
def rmsnorm_linear_kernel(x_ptr, g_ptr, rstd_ptr, w_ptr, y_ptr, M, N, K,
                          stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # y = rstd[:, None] * ((x * g) @ w^T): the norm weight g scales the x tile along K,
    # the per-row rstd scales the accumulator in the epilogue
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + offs_k
        a = tl.load(x_ptr + offs_m[:, None] * stride_xm + kk[None, :] * stride_xk,
                    mask=(offs_m[:, None] < M) & (kk[None, :] < K), other=0.0)
        g = tl.load(g_ptr + kk, mask=kk < K, other=0.0)
        a = a * g[None, :]
        b = tl.load(w_ptr + offs_n[None, :] * stride_wn + kk[:, None] * stride_wk,
                    mask=(offs_n[None, :] < N) & (kk[:, None] < K), other=0.0)
        acc += tl.dot(a, b)
    rstd = tl.load(rstd_ptr + offs_m, mask=offs_m < M, other=0.0)
    acc = acc * rstd[:, None]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim, out_features):
        super().__init__()
        self.norm = nn.RMSNorm(dim, eps=1e-6)
        self.proj = nn.Linear(dim, out_features, bias=False)

    def forward(self, x):
        x = x.contiguous()
        M, K = x.shape
        w = self.proj.weight
        N = w.shape[0]
        rstd = torch.empty((M,), device=x.device, dtype=torch.float32)
        y = torch.empty((M, N), device=x.device, dtype=x.dtype)
        rms_rstd_kernel[(M,)](x, rstd, K, x.stride(0), self.norm.eps, BLOCK=1024, num_warps=4)
        BLOCK_M, BLOCK_N, BLOCK_K = 128, 64, 32
        grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
        rmsnorm_linear_kernel[grid](x, self.norm.weight, rstd, w, y, M, N, K,
                                    x.stride(0), x.stride(1), w.stride(0), w.stride(1),
                                    y.stride(0), y.stride(1),
                                    BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                                    num_warps=4, num_stages=3)
        return y
