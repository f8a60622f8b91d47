import torch
import torch.nn as nn


class Model(nn.Module):
    """RMSNorm (with a learned weight, eps 1e-6) over the last dimension, then a Linear without bias."""

    def __init__(self, dim, out_features):
        super().__init__()
        self.norm = nn.RMSNorm(dim, eps=1e-6)
        self.proj = nn.Linear(dim, out_features, bias=False)
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.2)

    def forward(self, x):
        return self.proj(self.norm(x))


batch_size = 4093
dim = 2000
out_features = 1000


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, out_features]
