import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Transformer MLP block: Linear(dim, hidden) -> tanh-GELU -> Linear(hidden, dim)."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


batch_size = 4093
dim = 1000
hidden = 2000


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, hidden]
