import torch
import torch.nn as nn

CUDA_SRC = r"""
#define BM 64
#define BN 64
#define BK 16
#define GT 256

// One BM x BN tile of A @ B with 256 threads: A(m, k) = A[m * sam + k * sak],
// B(k, n) = B[k * sbk + n * sbn]. Thread (tx, ty) owns rows row0 + ty + 16 * i and
// columns col0 + tx + 16 * j (i, j < 4). Out-of-range elements load as 0, so any M, N, K work.
__device__ __forceinline__ void gemm_tile(const float* __restrict__ A, long long sam, long long sak,
                                          const float* __restrict__ B, long long sbk, long long sbn,
                                          int M, int N, int K, int row0, int col0,
                                          float acc[4][4])
{
    __shared__ float As[BK][BM + 1];
    __shared__ float Bs[BK][BN + 1];
    const int tid = threadIdx.x;
    const int tx = tid % 16, ty = tid / 16;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = tid; e < BM * BK; e += GT) {
            int r = e / BK, kk = e % BK;
            int gm = row0 + r, gk = k0 + kk;
            As[kk][r] = (gm < M && gk < K) ? A[gm * sam + gk * sak] : 0.0f;
        }
        if (sbk == 1) {  // B contiguous along k (a weight read as its transpose): k fastest
            for (int e = tid; e < BN * BK; e += GT) {
                int c = e / BK, kk = e % BK;
                int gn = col0 + c, gk = k0 + kk;
                Bs[kk][c] = (gn < N && gk < K) ? B[gk + gn * sbn] : 0.0f;
            }
        } else {  // n fastest
            for (int e = tid; e < BN * BK; e += GT) {
                int kk = e / BN, c = e % BN;
                int gn = col0 + c, gk = k0 + kk;
                Bs[kk][c] = (gn < N && gk < K) ? B[gk * sbk + gn * sbn] : 0.0f;
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; i++) a[i] = As[kk][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < 4; j++) b[j] = Bs[kk][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
}
// y = x @ w^T + bias, then relu (relu != 0) and/or + R[r, c] (residual != 0)
extern "C" __global__ void linear_epilogue_kernel(const float* __restrict__ X,
                                                  const float* __restrict__ W,
                                                  const float* __restrict__ bias,
                                                  const float* __restrict__ R,
                                                  float* __restrict__ Y, int M, int N, int K,
                                                  long long sxm, long long sxk,
                                                  long long swn, long long swk,
                                                  long long srm, int relu, int residual)
{
    float acc[4][4];
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    gemm_tile(X, sxm, sxk, W, swk, swn, M, N, K, row0, col0, acc);
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    for (int i = 0; i < 4; i++) {
        const int r = row0 + ty + 16 * i;
        for (int j = 0; j < 4; j++) {
            const int c = col0 + tx + 16 * j;
            if (r < M && c < N) {
                float h = acc[i][j] + bias[c];
                if (relu) h = fmaxf(h, 0.0f);
                if (residual) h += R[r * srm + c];
                Y[(long long)r * N + c] = h;
            }
        }
    }
}

#define NT 256

// sum over the block's NT threads (NT a power of two); every thread gets the result
__device__ float block_sum(float v, float* sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = NT / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

// one block of NT threads per row: LayerNorm over D (biased variance)
extern "C" __global__ void layernorm_kernel(const float* __restrict__ X,
                                            const float* __restrict__ W,
                                            const float* __restrict__ B,
                                            float* __restrict__ Y, int D, float eps)
{
    __shared__ float sh[NT];
    const long long row = blockIdx.x;
    const float* x = X + row * D;
    float* y = Y + row * D;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < D; j += NT) acc += x[j];
    const float mean = block_sum(acc, sh) / D;
    acc = 0.0f;
    for (int j = threadIdx.x; j < D; j += NT) {
        float d = x[j] - mean;
        acc += d * d;
    }
    const float rstd = rsqrtf(block_sum(acc, sh) / D + eps);
    for (int j = threadIdx.x; j < D; j += NT) y[j] = (x[j] - mean) * rstd * W[j] + B[j];
}
"""


class ModelNew(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.norm = nn.LayerNorm(dim)
        self.k_linear = cuda_kernel("linear_epilogue_kernel")
        self.k_norm = cuda_kernel("layernorm_kernel")

    def forward(self, x):
        x = x.contiguous()
        M, D = x.shape
        w1, w2 = self.fc1.weight, self.fc2.weight
        H = w1.shape[0]
        h = torch.empty((M, H), device=x.device, dtype=x.dtype)
        s = torch.empty((M, D), device=x.device, dtype=x.dtype)
        y = torch.empty((M, D), device=x.device, dtype=x.dtype)
        self.k_linear(grid=((H + 63) // 64, (M + 63) // 64), block=(256,),
                      args=(x, w1, self.fc1.bias, x, h, M, H, D,
                            x.stride(0), x.stride(1), w1.stride(0), w1.stride(1), 0, 1, 0),
                      shared_mem=0)
        self.k_linear(grid=((D + 63) // 64, (M + 63) // 64), block=(256,),
                      args=(h, w2, self.fc2.bias, x, s, M, D, H,
                            h.stride(0), h.stride(1), w2.stride(0), w2.stride(1),
                            x.stride(0), 0, 1),
                      shared_mem=0)
        self.k_norm(grid=(M,), block=(256,),
                    args=(s, self.norm.weight, self.norm.bias, y, D, float(self.norm.eps)),
                    shared_mem=0)
        return y
