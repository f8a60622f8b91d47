"""Fixtures the kernel verifier tests share: a CPU Triton verifier (its runners warm for a
module) and the catalog's Triton ReLU task."""

from __future__ import annotations

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
