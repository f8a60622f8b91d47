"""What the pipeline tests share: a local Ray and Prefect's test harness, per module."""

from __future__ import annotations

import pytest

from flows import reaper
from ray_actors import cluster

# What these tests start in-process (Ray's cluster, Prefect's test server) is reaped when
# pytest ends, also when it is killed: the same watchdog as the `crucible` command's.
reaper.guard(scratch=False)


@pytest.fixture(scope="module")
def harness():
    from prefect.testing.utilities import prefect_test_harness

    cluster.start(cluster.ClusterSettings(num_cpus=2))
    with prefect_test_harness(server_startup_timeout=120):
        yield
    cluster.shutdown()


@pytest.fixture(scope="module")
def local_ray():
    """Ray alone, for stage functions called without Prefect."""
    cluster.start(cluster.ClusterSettings(num_cpus=2))
    yield
    cluster.shutdown()
