import torch
import torch.nn as nn


class Model(nn.Module):
    """Depthwise 1D convolution: Conv1d(C, C, kernel_size=5, padding=2, groups=C) with bias."""

    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, kernel_size=5, padding=2, groups=channels)

    def forward(self, x):
        return self.conv(x)


batch_size = 16
channels = 256
length = 4093


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [channels]
