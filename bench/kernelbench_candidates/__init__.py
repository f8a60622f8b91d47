"""Candidates for KernelBench level-1 problems at their own sizes (`bench/kernelbench_phase.py`).

Each file is a complete candidate in KernelBench's own format (a module defining `ModelNew`;
CUDA ones build a PyTorch extension with `load_inline`). `MANIFEST` says, per file, which
KernelBench problem it answers (a stem of `KernelBench/level1/`), its domain, and the verdict
a correct verifier gives it: `pass` (correct) or `fail` (wrong on purpose; `note` says how).
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent

# file -> (problem stem, domain, expected, note)
MANIFEST: dict[str, dict[str, str]] = {
    "19_ReLU__triton_ok.py": {"problem": "19_ReLU", "domain": "triton", "expected": "pass"},
    "19_ReLU__cuda_ok.py": {"problem": "19_ReLU", "domain": "cuda", "expected": "pass"},
    "19_ReLU__cuda_wrong.py": {
        "problem": "19_ReLU",
        "domain": "cuda",
        "expected": "fail",
        "note": "threshold constant 0.5 instead of 0",
    },
    "21_Sigmoid__triton_ok.py": {"problem": "21_Sigmoid", "domain": "triton", "expected": "pass"},
    "21_Sigmoid__cuda_ok.py": {"problem": "21_Sigmoid", "domain": "cuda", "expected": "pass"},
    "21_Sigmoid__triton_wrong.py": {
        "problem": "21_Sigmoid",
        "domain": "triton",
        "expected": "fail",
        "note": "exp(-2x): a wrong constant, off by up to 0.15",
    },
    "23_Softmax__triton_ok.py": {"problem": "23_Softmax", "domain": "triton", "expected": "pass"},
    "23_Softmax__cuda_ok.py": {"problem": "23_Softmax", "domain": "cuda", "expected": "pass"},
    "23_Softmax__triton_wrong.py": {
        "problem": "23_Softmax",
        "domain": "triton",
        "expected": "fail",
        "note": "max/sum over the first block only: rows sum to ~96, yet every output is "
        "< 1e-3, so an atol of 1e-2 cannot see it (KernelBench's 1e-4 can)",
    },
    "47_Sum_reduction_over_a_dimension__triton_ok.py": {
        "problem": "47_Sum_reduction_over_a_dimension",
        "domain": "triton",
        "expected": "pass",
    },
    "47_Sum_reduction_over_a_dimension__cuda_ok.py": {
        "problem": "47_Sum_reduction_over_a_dimension",
        "domain": "cuda",
        "expected": "pass",
    },
    "47_Sum_reduction_over_a_dimension__cuda_wrong.py": {
        "problem": "47_Sum_reduction_over_a_dimension",
        "domain": "cuda",
        "expected": "fail",
        "note": "off by one: the combine loop starts at 1, an eighth of the rows dropped",
    },
    "36_RMSNorm___triton_ok.py": {"problem": "36_RMSNorm_", "domain": "triton", "expected": "pass"},
    "36_RMSNorm___cuda_ok.py": {"problem": "36_RMSNorm_", "domain": "cuda", "expected": "pass"},
    "36_RMSNorm___triton_wrong.py": {
        "problem": "36_RMSNorm_",
        "domain": "triton",
        "expected": "fail",
        "note": "divides by the mean square, the square root missing",
    },
    "1_Square_matrix_multiplication___triton_ok.py": {
        "problem": "1_Square_matrix_multiplication_",
        "domain": "triton",
        "expected": "pass",
    },
    "1_Square_matrix_multiplication___cuda_ok.py": {
        "problem": "1_Square_matrix_multiplication_",
        "domain": "cuda",
        "expected": "pass",
        "note": "exact fp32 FMA tiles: correct, slower than cuBLAS",
    },
    "1_Square_matrix_multiplication___cuda_wrong.py": {
        "problem": "1_Square_matrix_multiplication_",
        "domain": "cuda",
        "expected": "fail",
        "note": "B's strides swapped: computes A @ B.T",
    },
}
