import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix product C = A @ B of 2D float32 matrices."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 4093
K = 4096
N = 4080


def get_inputs():
    scale = K ** -0.25  # keeps C = A @ B of order 1, so tf32 rounding stays within tolerance
    A = torch.randn(M, K) * scale
    B = torch.randn(K, N) * scale
    return [A, B]


def get_init_inputs():
    return []
