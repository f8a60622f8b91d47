import torch
import torch.nn as nn


class Model(nn.Module):
    """y[i] = mean_j x[i, j]: the mean of each row."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=-1)
