# KernelBench level1/1_Square_matrix_multiplication_ at its own size (4096 x 4096 float32),
# as a PyTorch extension (KernelBench's own format): 64 x 64 output tiles through shared
# memory, 4 x 4 outputs per thread, exact float32 FMA (no tensor cores: slower than cuBLAS,
# so expect Crucible's `slow` beside a correct result).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4
#define THREADS ((BM / TM) * (BN / TN))

__global__ void sgemm_kernel(const float* __restrict__ A, const float* __restrict__ B,
                             float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[BK][BM + 4];
    __shared__ float Bs[BK][BN + 4];
    const int tid = threadIdx.x;
    const int tr = tid / (BN / TN), tc = tid % (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN];
    #pragma unroll
    for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = tid; i < BM * BK; i += THREADS) {
            const int r = i / BK, c = i % BK, gr = row0 + r, gc = k0 + c;
            As[c][r] = (gr < M && gc < K) ? A[(long long)gr * K + gc] : 0.0f;
        }
        for (int i = tid; i < BK * BN; i += THREADS) {
            const int r = i / BN, c = i % BN, gr = k0 + r, gc = col0 + c;
            Bs[r][c] = (gr < K && gc < N) ? B[(long long)gr * N + gc] : 0.0f;
        }
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float a[TM], b[TN];
            #pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[kk][tr * TM + i];
            #pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tc * TN + j];
            #pragma unroll
            for (int i = 0; i < TM; ++i)
                #pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    #pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int gr = row0 + tr * TM + i;
        #pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int gc = col0 + tc * TN + j;
            if (gr < M && gc < N) C[(long long)gr * N + gc] = acc[i][j];
        }
    }
}

torch::Tensor sgemm_forward(torch::Tensor A, torch::Tensor B) {
    TORCH_CHECK(A.is_cuda() && B.is_cuda() && A.scalar_type() == torch::kFloat32 &&
                B.scalar_type() == torch::kFloat32 && A.dim() == 2 && B.dim() == 2 &&
                A.size(1) == B.size(0), "A (M, K), B (K, N): float32 CUDA matrices");
    A = A.contiguous();
    B = B.contiguous();
    const int M = (int)A.size(0), K = (int)A.size(1), N = (int)B.size(1);
    auto C = torch::empty({M, N}, A.options());
    if (C.numel() == 0) return C;
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    sgemm_kernel<<<grid, THREADS>>>(A.data_ptr<float>(), B.data_ptr<float>(),
                                    C.data_ptr<float>(), M, N, K);
    return C;
}
"""

cpp_source = "torch::Tensor sgemm_forward(torch::Tensor A, torch::Tensor B);"

sgemm_ext = load_inline(
    name="kb1_sgemm_cuda_ok",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["sgemm_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return sgemm_ext.sgemm_forward(A, B)
