import torch
import torch.nn as nn


class Model(nn.Module):
    """AXPY: out = alpha * x + y, with a scalar alpha fixed at construction."""

    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.alpha * x + y


batch_size = 8192
dim = 4093
alpha = 1.7


def get_inputs():
    x = torch.randn(batch_size, dim)
    y = torch.randn(batch_size, dim)
    return [x, y]


def get_init_inputs():
    return [alpha]
