import torch
import torch.nn as nn


class Model(nn.Module):
    """Row-wise dot product of two matrices: sum(a * b, dim=-1)."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.sum(a * b, dim=-1)


batch_size = 8191
dim = 2000


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
