"""A real multi-node Ray cluster on this machine: a head (no custom resources) and two
worker nodes, each started with `ray start` (own temp dir, own name, own resources: one
`eda`, one `cad`); `crucible run` connects through `RAY_ADDRESS` and nothing else changes.

The lake shows where each verdict ran: rtl only on the `eda` node, cad only on the `cad`
node. Then the `eda` node is killed mid-run (its whole process tree by pid, as a machine
loss: not `ray stop`, which would stop every Ray node of the host) and restarted with the
same command: the run finishes with exactly the verdicts of an uninterrupted run, no row
lost, none twice, no `infra_error` (a lost node is the machine's fault, retried)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from ray_actors.nodes import HealthChecks, LocalCluster, NodeSpec
from tests.flows.lakeq import q

pytest.importorskip("cadquery")

ROOT = Path(__file__).resolve().parents[2]
TASKS = {"rtl": ("mux4", "updown_counter8"), "cad": ("washer",)}
EDA, CAD = "eda-node", "cad-node"
SLOW = HealthChecks(period_ms=1000, timeout_ms=1000, failure_threshold=8)
ROWS = "SELECT candidate_id, status, code FROM verdicts ORDER BY candidate_id"


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("catalog")
    for domain, names in TASKS.items():
        for n in names:
            shutil.copytree(ROOT / "tasks" / domain / n, root / domain / n)
    return root


@pytest.fixture(scope="module", autouse=True)
def _report_to_the_sessions_prefect(prefect_api):
    """The runs report to the session's Prefect server (what this module tests is Ray)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PREFECT_API_URL", prefect_api)
        yield


@pytest.fixture(scope="module")
def ray_nodes():
    if shutil.which("iverilog") is None or shutil.which("bwrap") is None:
        pytest.skip("rtl needs iverilog and bubblewrap: infra/install-toolchains.sh rtl")
    # Ray's socket paths under a node's temp dir must stay under 108 bytes: a short root
    root = Path(tempfile.mkdtemp(prefix="crray-", dir="/tmp"))
    head = NodeSpec("head", num_cpus=1)
    workers = [NodeSpec(EDA, 1, {"eda": 1}), NodeSpec(CAD, 1, {"cad": 1})]
    try:
        with LocalCluster(root, head, workers, health=SLOW) as cluster:
            yield cluster
    finally:
        shutil.rmtree(root, ignore_errors=True)


def crucible_run(
    cluster: LocalCluster, lake: Path, catalog: Path, *extra: str, stages: str = "generate,verify"
) -> subprocess.Popen:
    """The pipeline as a user runs it against a cluster: the CLI with RAY_ADDRESS set.
    Small batches and commits, so a node loss lands between commits."""
    env = dict(os.environ, RAY_ADDRESS=cluster.address)
    cmd = [sys.executable, "-m", "flows.cli", "run", "--lake", str(lake), "--tasks", str(catalog)]
    cmd += ["--domain", "rtl", "--domain", "cad", "--stages", stages, "--fast"]
    cmd += ["--repair-rounds", "0", "--batch-size", "2", "--commit-every", "4", *extra]
    return subprocess.Popen(
        cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def finish(proc: subprocess.Popen, timeout_s: float = 300) -> str:
    out, _ = proc.communicate(timeout=timeout_s)
    assert proc.returncode == 0, out[-4000:]
    return out


@pytest.fixture(scope="module")
def baseline(ray_nodes, catalog, tmp_path_factory) -> Path:
    """An uninterrupted run: the rows a killed one must end with."""
    lake = tmp_path_factory.mktemp("baseline") / "lake"
    finish(crucible_run(ray_nodes, lake, catalog))
    return lake


def test_the_cluster_is_three_ray_start_nodes_with_their_own_resources(ray_nodes):
    """Over 30 s with its set-up: the module's three `ray start` nodes come up for it
    (`ray_nodes`, shared by every test of the module)."""
    alive = ray_nodes.alive()
    assert set(alive) == {"head", EDA, CAD}
    assert "eda" not in alive["head"] and "cad" not in alive["head"]
    assert alive[EDA]["eda"] == 1 and "cad" not in alive[EDA]
    assert alive[CAD]["cad"] == 1 and "eda" not in alive[CAD]
    # each node keeps its session files under its own temp dir
    for node in ray_nodes.nodes():
        assert list(node.temp_dir.glob("session_*/logs/raylet.out")), node.spec.name


def test_each_verdict_names_its_ray_node_and_runs_where_its_resource_is(baseline):
    """Over 30 s with its set-up: the module's uninterrupted `crucible run` (the rows the
    node-loss cases must end with) on the three-node cluster."""
    host = socket.gethostname()
    by = dict(
        ((d, n), k)
        for d, n, k in q(baseline, "SELECT domain, node, count(*) FROM verdicts GROUP BY ALL")
    )
    assert set(by) == {("rtl", f"{host}/{EDA}"), ("cad", f"{host}/{CAD}")}, by
    n_cand = q(baseline, "SELECT count(*) FROM candidates")[0][0]
    assert sum(by.values()) == n_cand
    assert q(baseline, "SELECT count(*) FROM verdicts WHERE status = 'infra_error'") == [(0,)]


def _busy(cluster: LocalCluster, name: str, deadline: float) -> None:
    """Wait until a verifier actor on node `name` is inside `verify_batch`."""
    while time.monotonic() < deadline:
        for pid in cluster.workers[name].pids():
            try:
                cmd = psutil.Process(pid).cmdline()
            except psutil.Error:
                continue
            if any("VerifierWorker.verify_batch" in part for part in cmd):
                return
        time.sleep(0.02)
    raise AssertionError(f"no verifier actor on {name} became busy")


def test_an_eda_node_killed_mid_run_and_restarted_loses_and_doubles_nothing(
    ray_nodes, catalog, baseline, tmp_path
):
    """Over 30 s: a `crucible run` against the three-node cluster, with a node killed,
    noticed (8 s of missed health checks, as a real lost node) and started again."""
    lake = tmp_path / "lake"
    proc = crucible_run(ray_nodes, lake, catalog)
    try:
        _busy(ray_nodes, EDA, time.monotonic() + 240)
        assert proc.poll() is None, "the run ended before the node could be killed"
        assert ray_nodes.kill(EDA) >= 3  # ray start, raylet, the busy worker at least
        ray_nodes.wait_dead(EDA)
        ray_nodes.restart(EDA)
        finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    rows = q(lake, ROWS)
    assert rows == q(baseline, ROWS)
    assert not [r for r in rows if r[1] == "infra_error"]
    # one verdict per candidate in the raw table too: no batch was appended twice
    raw = q(lake, "SELECT count(*), count(DISTINCT verdict_id) FROM raw_verdicts")
    assert raw == [(len(rows), len(rows))]
    # the run saw the loss: Ray restarted the eda actor on the restarted node
    counts = json.loads(q(lake, "SELECT counts FROM runs")[0][0])
    assert counts.get("worker_restarts_by_resource", {}).get("eda", 0) >= 1, counts
    host = socket.gethostname()
    nodes = dict(q(lake, "SELECT domain, list(DISTINCT node) FROM verdicts GROUP BY domain"))
    assert nodes == {"rtl": [f"{host}/{EDA}"], "cad": [f"{host}/{CAD}"]}


def test_a_node_that_does_not_come_back_in_time_leaves_infra_verdicts_the_next_run_redoes(
    ray_nodes, catalog, baseline, tmp_path
):
    """With the eda node gone for good, the run does not wait forever: after --node-wait
    the unfinished rtl candidates get `node_lost` verdicts (the machine's fault, never a
    label) and the run ends; cad is untouched. Once the node is back, the next run
    verifies them again and the lake holds exactly the rows of an uninterrupted run."""
    lake = tmp_path / "lake"
    # references checked and candidates made first, so the loss lands in the verify stage
    # (an unchecked reference is not stored: its task is checked again next run)
    finish(crucible_run(ray_nodes, lake, catalog, stages="generate"))
    proc = crucible_run(ray_nodes, lake, catalog, "--node-wait", "3")
    try:
        _busy(ray_nodes, EDA, time.monotonic() + 240)
        assert proc.poll() is None, "the run ended before the node could be killed"
        ray_nodes.kill(EDA)
        out = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        ray_nodes.restart(EDA)
    by = q(lake, "SELECT domain, code, count(*) FROM verdicts WHERE status = 'infra_error' "
                 "GROUP BY ALL ORDER BY ALL")  # fmt: skip
    assert by and {(d, c) for d, c, _ in by} == {("rtl", "node_lost")}, (by, out[-3000:])
    feedback = q(lake, "SELECT any_value(feedback) FROM verdicts WHERE code = 'node_lost'")
    assert "--node-wait" in feedback[0][0] and "next run" in feedback[0][0]
    finish(crucible_run(ray_nodes, lake, catalog))
    # every candidate's outcome is the uninterrupted run's (an infra verdict is history,
    # never an outcome: latest_verdicts ranks it below any other)
    latest = "SELECT candidate_id, status, code FROM latest_verdicts ORDER BY candidate_id"
    assert q(lake, latest) == q(baseline, ROWS)


def test_outside_ray_or_on_an_unnamed_node_a_verdict_names_the_host():
    from ray_actors.verify import VerifierWorker
    from verifiers.catalog import load_task
    from verifiers.contract import Limits

    task = load_task(ROOT / "tasks" / "rtl" / "mux4")
    worker = VerifierWorker("rtl", Limits(gates=("compile",)).to_dict())
    (v,) = worker.verify_batch([task.to_dict()], [(task.task_id, task.reference)])
    assert v["node"] == socket.gethostname() and v["status"] == "pass"


def test_a_root_too_long_for_rays_socket_paths_is_refused_with_what_to_do(tmp_path):
    from ray_actors.nodes import NodeStartError

    deep = tmp_path / ("d" * 60)
    with pytest.raises(NodeStartError, match=r"too long a root.*at most \d+ characters"):
        LocalCluster(deep, NodeSpec("head"), [NodeSpec(EDA, 1, {"eda": 1})])
    assert not deep.exists()  # refused before anything was started or made
