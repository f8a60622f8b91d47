import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x converted to float16 (round to nearest even)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(torch.float16)
