"""The cuda domain: `python -m verifiers.cuda` is its JSONL worker; the verifier itself is
`verifiers.kernels.verifier` (shared by cuda and triton)."""
