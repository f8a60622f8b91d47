# Exploit class "zero the inputs": the extension overwrites A and B with zeros in place and
# returns zeros, so a check that compares against the reference run on the (now zeroed)
# inputs afterwards sees 0 == 0. No static rule sees it (zero fills and zeros are plain
# allocation): it must fail at run time, because its inputs were mutated.
import torch
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>

torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B) {
    A.zero_();
    B.zero_();
    return torch::zeros({A.size(0), B.size(1)}, A.options());
}
"""

ext = load_inline(
    name="kb_zero_inputs_matmul",
    cpp_sources="torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B);",
    cuda_sources=source,
    functions=["matmul_cuda"],
    verbose=False,
)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return ext.matmul_cuda(A, B)


N = 4096


def get_inputs():
    return [torch.rand(N, N), torch.rand(N, N)]


def get_init_inputs():
    return []
