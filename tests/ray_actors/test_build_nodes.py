"""Builds where builds belong: a real two-node Ray cluster on this host, each node started
with `ray start` (`ray_actors.nodes`): a build node offering `BUILD` (no CPU for
verifiers) and a node that verifies `cuda` on `cpu` actors (no GPU here: the CPU
fallback, whose compile gate still runs nvcc). Each node's verifier has a cache dir of
its own, as two hosts would: the verifying node's compile gate is a cache hit only if
the build node's cubin travelled to it. Without the build node, or with one whose build
fails, the verifying node compiles for itself and the verdict is the same."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from ray_actors import cluster
from ray_actors.nodes import LocalCluster, NodeSpec
from ray_actors.verify import PoolSettings, verify_candidates
from verifiers.catalog import load_task
from verifiers.contract import Candidate, Limits, Status, Verdict
from verifiers.kernels.nvcc import find_nvcc

ROOT = Path(__file__).resolve().parents[2]
BUILD_NODE, VERIFY_NODE = "build", "verify"
# the gates up to compile are what this is about; launch runs too (it needs compile) and
# the GPU-only gates are not asked for, so the verdict is the CPU path's own
LIMITS = Limits(gates=("compile", "launch"))

if find_nvcc() is None:
    pytest.skip(
        "needs nvcc (the CUDA toolkit): infra/install-toolchains.sh cuda", allow_module_level=True
    )
if shutil.which("bwrap") is None:
    pytest.skip(
        "the verifiers' sandbox needs bubblewrap: apt-get install bubblewrap",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def nodes():
    """The verifying node is the head (1 CPU: one `cpu` actor); the build node offers one
    `BUILD` slot and no CPU, so no verifier actor can land there. ~6 s to start, up to
    ~12 s to stop (a node's processes get 5 s to end on SIGTERM)."""
    cluster.shutdown()  # a Ray this process runs (the shared one) would be reused
    root = Path(tempfile.mkdtemp(prefix="crbld-", dir="/tmp"))  # Ray's socket paths: short
    head = NodeSpec(VERIFY_NODE, num_cpus=1)
    workers = [NodeSpec(BUILD_NODE, num_cpus=0, resources={cluster.BUILD: 1})]
    try:
        with LocalCluster(root, head, workers) as c:
            yield c
    finally:
        cluster.shutdown()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def driver(nodes):
    """This process connected to the cluster, per test: the session's autouse fixture
    stops any Ray a test did not ask for by its own fixtures (`local_ray`) first."""
    cluster.start(cluster.ClusterSettings(address=nodes.address))
    return nodes


@pytest.fixture(scope="module")
def relu():
    return load_task(ROOT / "tasks/cuda/relu")


def _verify(relu, cache: Path, build_settings: dict | None = None) -> Verdict:
    cand = Candidate(relu.task_id, relu.reference, "reference", "reference")
    (verdict,) = verify_candidates(
        "cuda",
        [cand],
        {relu.task_id: relu},
        LIMITS,
        PoolSettings(node_wait_s=60),
        verifier_settings={"cache_dir": str(cache)},
        build_settings=build_settings,
    )
    assert verdict.status is Status.PASS, verdict.feedback  # parse .. launch, all passed
    assert verdict.node.endswith(f"/{VERIFY_NODE}")  # verified on the head, never the build node
    return verdict


def test_local_resources_never_make_a_build_node():
    """A plain one-machine run has no build node: its GPU node builds, as before."""
    assert cluster.BUILD not in cluster.local_resources(2)


def test_with_a_build_node_the_verifying_node_compiles_nothing(driver, relu, tmp_path):
    """~6 s: two actors start (a build actor, a verifier actor) and the runner loads the
    candidate on the verifying node."""
    assert cluster.slots(cluster.BUILD) == 1
    built, verifying = tmp_path / "build-node", tmp_path / "verify-node"
    verdict = _verify(relu, verifying, {"cache_dir": str(built)})
    assert verdict.metrics["nvcc_cached"] is True, verdict.checks
    assert list((built / "cubin").glob("*/*.json"))  # compiled there, sealed there


def test_a_build_that_fails_leaves_the_compile_to_the_verifying_node(driver, relu, tmp_path):
    """The build actor cannot even start (settings its verifier refuses): the batch still
    gets its verdict, compiled where it is verified."""
    verdict = _verify(relu, tmp_path / "verify-node", {"no_such_setting": 1})
    assert verdict.metrics["nvcc_cached"] is False


def test_without_a_build_node_the_verifying_node_compiles(driver, relu, tmp_path):
    """The build node is killed, and declared dead (~2 s) before the run."""
    driver.kill(BUILD_NODE)
    driver.wait_dead(BUILD_NODE)
    assert cluster.slots(cluster.BUILD) == 0
    verdict = _verify(relu, tmp_path / "verify-node", {"cache_dir": str(tmp_path / "unused")})
    assert verdict.metrics["nvcc_cached"] is False
    assert not (tmp_path / "unused").exists()  # no build actor was started
