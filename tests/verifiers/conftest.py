"""Fixtures the kernel verifier tests share: a CPU Triton verifier (its runners warm for a
module), the catalog's Triton ReLU task, and a count of a tensor's reads back to the
host."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from verifiers.catalog import load_task
from verifiers.kernels.verifier import TritonVerifier

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def triton_v():
    v = TritonVerifier(device="cpu", workers=2)
    yield v
    v.close()


@pytest.fixture(scope="module")
def relu_t():
    return load_task(ROOT / "tasks/triton/relu")


# the Tensor methods that read a value back to the host (on a GPU: wait for it)
READS = ("tolist", "item", "__float__", "__int__", "__bool__")


@pytest.fixture
def host_reads(monkeypatch) -> Counter:
    """Counts each read back of a tensor's value (`READS`) while the test runs: on a
    time-sliced GPU each one waits for the process's turn, so a check's reads are part
    of its contract. Zero it before the part to count (`.clear()`)."""
    import torch

    reads: Counter = Counter()

    def counted(name, f):
        def read(self, *a, **k):
            reads[name] += 1
            return f(self, *a, **k)

        return read

    for name in READS:
        monkeypatch.setattr(torch.Tensor, name, counted(name, getattr(torch.Tensor, name)))
    return reads
