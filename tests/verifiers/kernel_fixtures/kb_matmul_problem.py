# A problem in KernelBench's layout (level 1, square matmul), written for the anti-cheat
# tests: the reference Model, the size, and the input makers the harness calls.
import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B for two square float32 matrices."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


N = 4096


def get_inputs():
    A = torch.rand(N, N)
    B = torch.rand(N, N)
    return [A, B]


def get_init_inputs():
    return []
