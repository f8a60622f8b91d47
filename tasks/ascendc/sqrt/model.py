import torch
import torch.nn as nn


class Model(nn.Module):
    """y = sqrt(x), x > 0."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(x)


def get_inputs(shape, dtype, generator):
    # sqrt needs positive inputs: |randn| + 0.01
    x = torch.randn(shape, generator=generator, dtype=torch.float32).abs() + 0.01
    return (x.to(dtype),)
