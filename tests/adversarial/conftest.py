"""Fixtures of the adversarial suite: the host's canaries, planted once per test; a local
Ray and Prefect's test harness for the pipeline case."""

from __future__ import annotations

import pytest

from tests.adversarial.harness import close_outside, make_outside
from tests.flows.conftest import harness  # noqa: F401  (the pipeline case)


@pytest.fixture
def outside():
    out = make_outside()
    try:
        yield out
    finally:
        close_outside(out)
