import torch
import torch.nn as nn


class Model(nn.Module):
    """z = max(x, y), elementwise."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.maximum(x, y)
