"""The triton domain: `python -m verifiers.triton` is its JSONL worker; the verifier itself is
`verifiers.kernels.verifier` (shared by cuda and triton)."""
