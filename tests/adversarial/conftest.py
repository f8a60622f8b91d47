"""Fixtures of the adversarial suite: the host's canaries, planted once per test (the
pipeline case's Ray and Prefect harness: tests/sessionfixtures.py)."""

from __future__ import annotations

import pytest

from tests.adversarial.harness import close_outside, make_outside


@pytest.fixture
def outside():
    out = make_outside()
    try:
        yield out
    finally:
        close_outside(out)
