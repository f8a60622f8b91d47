"""GPU kernel verification (CUDA and Triton): the shared core of `verifiers.cuda` and
`verifiers.triton`. torch / triton / cupy are imported only by the runner process and
the GPU side; the CPU-side gates are stdlib."""
