import torch
import torch.nn as nn

CUDA_SRC = r"""
#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;

#define BM 128
#define BN 128
#define BK 32
#define APAD 8
#define BPAD 8
#define NTHREADS 256

/* C(M,N) = A(M,K) @ B(K,N), row-major half inputs and output, float32 accumulation on
   tensor cores (WMMA 16x16x16). block = (256,) = 8 warps; grid = (ceil(N/128), ceil(M/128)).
   Each block computes a 128x128 tile; warp w computes rows (w / 4) * 64 .. +64 and
   columns (w % 4) * 32 .. +32 as 4 x 2 fragments. The A and B tiles are staged in shared
   memory, zero-filled outside the matrices; 16-byte vector loads are used when the row
   length is a multiple of 8 halves and the pointer is 16-byte aligned, else scalar loads. */
extern "C" __global__ void matmul_fp16_kernel(const __half* __restrict__ A,
                                              const __half* __restrict__ B,
                                              __half* __restrict__ C,
                                              int M, int N, int K)
{
    __shared__ __align__(128) __half As[BM][BK + APAD];
    __shared__ __align__(128) __half Bs[BK][BN + BPAD];
    __shared__ __align__(128) float Cs[NTHREADS / 32][16][16];

    int tid = threadIdx.x;
    int warp = tid >> 5, lane = tid & 31;
    int wm = warp >> 2;          /* 0..1 */
    int wn = warp & 3;           /* 0..3 */
    int row0 = blockIdx.y * BM;
    int col0 = blockIdx.x * BN;
    bool a_vec = ((K & 7) == 0) && ((reinterpret_cast<unsigned long long>(A) & 15ull) == 0);
    bool b_vec = ((N & 7) == 0) && ((reinterpret_cast<unsigned long long>(B) & 15ull) == 0);
    const __half zero = __float2half(0.0f);

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
            wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        /* A tile: BM x BK halves in chunks of 8 */
        for (int c = tid; c < BM * BK / 8; c += NTHREADS) {
            int r = c / (BK / 8);
            int kc = (c % (BK / 8)) * 8;
            int gr = row0 + r, gk = k0 + kc;
            __half* dst = &As[r][kc];
            if (a_vec && gr < M && gk + 8 <= K) {
                *reinterpret_cast<uint4*>(dst) =
                    *reinterpret_cast<const uint4*>(A + (long long)gr * K + gk);
            } else {
                for (int e = 0; e < 8; ++e)
                    dst[e] = (gr < M && gk + e < K) ? A[(long long)gr * K + gk + e] : zero;
            }
        }
        /* B tile: BK x BN halves in chunks of 8 */
        for (int c = tid; c < BK * BN / 8; c += NTHREADS) {
            int r = c / (BN / 8);
            int nc = (c % (BN / 8)) * 8;
            int gk = k0 + r, gn = col0 + nc;
            __half* dst = &Bs[r][nc];
            if (b_vec && gk < K && gn + 8 <= N) {
                *reinterpret_cast<uint4*>(dst) =
                    *reinterpret_cast<const uint4*>(B + (long long)gk * N + gn);
            } else {
                for (int e = 0; e < 8; ++e)
                    dst[e] = (gk < K && gn + e < N) ? B[(long long)gk * N + gn + e] : zero;
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> af[4];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> bf[2];
#pragma unroll
            for (int i = 0; i < 4; ++i)
                wmma::load_matrix_sync(af[i], &As[wm * 64 + i * 16][kk], BK + APAD);
#pragma unroll
            for (int j = 0; j < 2; ++j)
                wmma::load_matrix_sync(bf[j], &Bs[kk][wn * 32 + j * 16], BN + BPAD);
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j)
                    wmma::mma_sync(acc[i][j], af[i], bf[j], acc[i][j]);
        }
        __syncthreads();
    }

    /* epilogue: each fragment goes through a per-warp 16x16 float scratch tile */
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            wmma::store_matrix_sync(&Cs[warp][0][0], acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            for (int e = lane; e < 256; e += 32) {
                int r = row0 + wm * 64 + i * 16 + e / 16;
                int c = col0 + wn * 32 + j * 16 + e % 16;
                if (r < M && c < N)
                    C[(long long)r * N + c] = __float2half(Cs[warp][e / 16][e % 16]);
            }
            __syncwarp();
        }
    }
}
"""

BM = 128
BN = 128
NTHREADS = 256


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = cuda_kernel("matmul_fp16_kernel")

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        A = A.contiguous()
        B = B.contiguous()
        M, K = A.shape
        N = B.shape[1]
        C = torch.empty(M, N, device=A.device, dtype=A.dtype)
        grid = ((N + BN - 1) // BN, (M + BM - 1) // BM)
        self.k(grid=grid, block=(NTHREADS,), args=(A, B, C, M, N, K), shared_mem=0)
        return C
