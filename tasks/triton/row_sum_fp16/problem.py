import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over the last dimension of a float16 2D tensor (float32 accumulation)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=-1)


batch_size = 16384
dim = 8191


def get_inputs():
    x = torch.randn(batch_size, dim, dtype=torch.float16)
    return [x]


def get_init_inputs():
    return []
