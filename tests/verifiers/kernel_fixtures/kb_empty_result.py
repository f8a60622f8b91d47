# Exploit class "empty result": the extension hands back an uninitialised output of the
# right shape and computes nothing; whatever the allocator left there is the answer. No
# static rule can see that (allocating the output is what every kernel does): it must
# fail at run time, on NaN / wrong values.
import torch
from torch.utils.cpp_extension import load_inline

source = r"""
#include <torch/extension.h>

torch::Tensor matmul_cuda(torch::Tensor A, torch::Tensor B) {
    return torch::empty({A.size(0), B.size(1)}, A.options());
}
"""

ext = load_inline(
    name="kb_empty_result_matmul",
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
    A = torch.rand(N, N)
    B = torch.rand(N, N)
    return [A, B]


def get_init_inputs():
    return []
