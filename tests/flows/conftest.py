"""What the pipeline tests share: a local Ray and Prefect's test harness, per module."""

from __future__ import annotations

import pytest

from ray_actors import cluster


@pytest.fixture(scope="module")
def harness():
    from prefect.testing.utilities import prefect_test_harness

    cluster.start(cluster.ClusterSettings(num_cpus=2))
    with prefect_test_harness(server_startup_timeout=120):
        yield
    cluster.shutdown()
