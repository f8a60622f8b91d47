"""Shared pieces of the CUDA and Triton hostile suites: a test-only verifier subclass that
skips the static anti-cheat (so the runtime defences are probed alone), and the small
templates the hostile candidates are written from."""

from __future__ import annotations

from pathlib import Path

import pytest

from verifiers.base import Context
from verifiers.catalog import load_task
from verifiers.kernels.verifier import CudaVerifier, TritonVerifier

ROOT = Path(__file__).resolve().parents[2]


class _NoStaticGate:
    """TEST ONLY: the anticheat gate passes everything, so what a candidate does at run
    time meets only the runtime defences (runner, sandbox, host-side reads)."""

    def gate_anticheat(self, ctx: Context) -> str:
        return "static anti-cheat bypassed (adversarial test only)"


class StaticGateBypassedTritonVerifierForTests(_NoStaticGate, TritonVerifier):
    pass


class StaticGateBypassedCudaVerifierForTests(_NoStaticGate, CudaVerifier):
    pass


def fill(outside, template: str, **extra: str) -> str:
    """`outside.fill` plus {ROOT} (this checkout) and any test-specific tokens."""
    text = outside.fill(template).replace("{ROOT}", str(ROOT))
    for k, v in extra.items():
        text = text.replace("{" + k + "}", v)
    return text


def module_fixtures(domain: str, verifier_cls: type, bypassed_cls: type) -> tuple:
    """The module fixtures both kernel suites use: `relu` (the domain's relu task), a
    kernel `cache`, the CPU-path `verifier` and the static-gate-`bypassed` one (one warm
    runner each). Assign them at module level: `relu, cache, verifier, bypassed = ...`."""

    @pytest.fixture(scope="module")
    def relu():
        return load_task(ROOT / "tasks" / domain / "relu")

    @pytest.fixture(scope="module")
    def cache(tmp_path_factory):
        return tmp_path_factory.mktemp("kernel-cache")

    @pytest.fixture(scope="module")
    def verifier(cache):
        v = verifier_cls(device="cpu", workers=1, cache_dir=cache)
        yield v
        v.close()

    @pytest.fixture(scope="module")
    def bypassed(cache):
        v = bypassed_cls(device="cpu", workers=1, cache_dir=cache)
        yield v
        v.close()

    return relu, cache, verifier, bypassed
