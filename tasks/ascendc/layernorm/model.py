import torch
import torch.nn as nn


class Model(nn.Module):
    """y = (x - mean) / sqrt(var + eps) over the last dimension (biased variance, no affine)."""

    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), eps=self.eps)
