import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A float16 Linear layer with bias followed by the tanh-approximated GELU."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features).half()

    def forward(self, x):
        return F.gelu(self.fc(x), approximate="tanh")


batch_size = 4093
in_features = 1024
out_features = 2000


def get_inputs():
    return [torch.randn(batch_size, in_features, dtype=torch.float16)]


def get_init_inputs():
    return [in_features, out_features]
