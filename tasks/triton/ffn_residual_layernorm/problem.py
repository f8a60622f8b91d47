import torch
import torch.nn as nn


class Model(nn.Module):
    """Post-norm feed-forward sublayer: LayerNorm(x + Linear2(ReLU(Linear1(x))))."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.norm = nn.LayerNorm(dim)
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.2)
            self.norm.bias.normal_(0.0, 0.2)

    def forward(self, x):
        return self.norm(x + self.fc2(torch.relu(self.fc1(x))))


batch_size = 4093
dim = 1000
hidden = 2000


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, hidden]
