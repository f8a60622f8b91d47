import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x + b, b broadcast over the rows."""

    def forward(self, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return x + b
