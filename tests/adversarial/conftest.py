"""Fixtures of the adversarial suite: the host's canaries, planted once per test; a local
Ray and Prefect's test harness for the pipeline case."""

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


@pytest.fixture(scope="module")
def harness():
    from prefect.testing.utilities import prefect_test_harness

    from ray_actors import cluster

    cluster.start(cluster.ClusterSettings(num_cpus=2))
    with prefect_test_harness(server_startup_timeout=120):
        yield
    cluster.shutdown()
