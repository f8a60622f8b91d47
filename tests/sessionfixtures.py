"""Fixtures every test directory may ask for (a plugin of the root conftest): one local Ray
and one Prefect test harness per pytest session (per xdist worker), which every module
that asks for them reuses.

Starting them costs 10-17 s (Ray 4-5 s, Prefect's harness 6-8 s, more on a loaded
machine); per module that was ~3 minutes of the suite. Sharing is honest only while no
module leaves anything behind, so each module's `local_ray` checks at its end that every
slot of the cluster is free again (no actor of its runs outlives them: a flow that leaked
its verifier actors would starve the next run of the same process, as a long-lived
`crucible serve` would be). Prefect's runs, logs and artifacts are keyed by flow-run id,
which the tests that read them use. A test that needs a cluster of its own shape starts
it with `own_ray` (the shared one is stopped first and started again by the next module
that asks for it).
"""

from __future__ import annotations

import time

import pytest

SHARED_CPUS = 2
IDLE_WAIT_S = 30.0  # a killed actor's slot comes back when Ray has noticed: seconds
# Idle, the shared Ray's daemons spend ~6 % of a core; starting it again costs ~5 CPU-s:
# past ~90 s of idling a restart is cheaper, so that is when it is stopped (the rent-or-buy
# rule: never more than twice the cost of knowing the next module in advance)
RAY_IDLE_STOP_S = 90.0
_last_used: list[float] = []  # when the shared Ray's last module ended (monotonic)


def _guard() -> None:
    """What these fixtures start in-process (Ray's cluster, Prefect's test server) is
    reaped when pytest ends, also when it is killed: the `crucible` command's watchdog."""
    from flows import reaper

    reaper.guard(scratch=False)


def _shared_ray() -> None:
    import ray

    from ray_actors import cluster

    _guard()
    if ray.is_initialized() and ray.cluster_resources().get("CPU") != SHARED_CPUS:
        cluster.shutdown()  # someone's cluster of another shape: not the shared one
    cluster.start(cluster.ClusterSettings(num_cpus=SHARED_CPUS))


def _held() -> dict[str, float]:
    """Resources some actor or task still holds (total minus available)."""
    import ray

    total, free = ray.cluster_resources(), ray.available_resources()
    return {
        k: v - free.get(k, 0.0)
        for k, v in total.items()
        if not k.startswith(("node:", "memory", "object_store_memory"))
        and v - free.get(k, 0.0) > 1e-9
    }


@pytest.fixture(scope="session")
def _ray_session():
    yield
    from ray_actors import cluster

    cluster.shutdown()


@pytest.fixture(scope="session")
def _prefect_session():
    from prefect.testing.utilities import prefect_test_harness

    _guard()
    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="module")
def local_ray(_ray_session):
    """The session's local Ray (2 CPUs and this machine's toolchain slots), for stage
    functions called without Prefect; at the module's end every slot must be free."""
    import ray

    _shared_ray()
    yield
    _last_used[:] = [time.monotonic()]
    if not ray.is_initialized():  # a test of the module stopped it: nothing to check
        return
    deadline = time.monotonic() + IDLE_WAIT_S
    while (held := _held()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not held, f"this module's runs left Ray resources held: {held}"


@pytest.fixture(scope="module")
def harness(local_ray, _prefect_session):
    """Ray and Prefect's test harness (a real API server on SQLite), both shared."""
    yield


@pytest.fixture(scope="module")
def prefect_api(_prefect_session) -> str:
    """The session's Prefect API URL, for `crucible` commands run as subprocesses whose
    test is about something else (a Ray cluster): with PREFECT_API_URL set they report to
    it instead of each starting an ephemeral server (~8 s of CPU a command)."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value()


@pytest.fixture
def own_ray():
    """For a test that starts a cluster of its own shape with `cluster.start`: whatever
    Ray this process runs is stopped first (cluster.start would reuse it), and the test's
    own is stopped after it."""
    from ray_actors import cluster

    _guard()
    cluster.shutdown()
    yield
    cluster.shutdown()


RAY_FIXTURES = {"local_ray", "harness"}


@pytest.fixture(autouse=True)
def _no_idle_ray(request):
    """The shared Ray is stopped before a test that does not ask for it once it has been
    idle for RAY_IDLE_STOP_S; the next module that asks for it starts it again."""
    import sys

    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized() or RAY_FIXTURES & set(request.fixturenames):
        return
    if _last_used and time.monotonic() - _last_used[0] < RAY_IDLE_STOP_S:
        return
    from ray_actors import cluster

    cluster.shutdown()
