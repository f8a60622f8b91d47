"""The verifier worker class (a Ray actor at submit time) never loses a batch to a crash."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from ray_actors.verify import VerifierWorker
from verifiers.catalog import load_task
from verifiers.contract import Candidate, Limits, Status, content_id

TASK = Path(__file__).resolve().parents[2] / "tasks" / "rtl" / "mux4"


def test_a_verifier_crash_is_an_infra_verdict_and_the_batch_goes_on(monkeypatch):
    task = load_task(TASK)
    worker = VerifierWorker("rtl", Limits(gates=("compile", "simulate")).to_dict())
    ref = task.reference
    real = worker.verifier.verify

    def crash_on_marker(t, code, limits):
        if "CRASH" in code:
            raise RuntimeError("boom")
        return real(t, code, limits)

    monkeypatch.setattr(worker.verifier, "verify", crash_on_marker)
    out = worker.verify_batch(
        [task.to_dict()], [(task.task_id, ref + "// CRASH\n"), (task.task_id, ref)]
    )
    assert [v["status"] for v in out] == [Status.INFRA_ERROR.value, Status.PASS.value]
    assert out[0]["code"] == "tool_crash" and "boom" in out[0]["feedback"]
    assert out[0]["candidate_id"] == content_id(task.task_id, ref + "// CRASH\n")


def _busy_actors() -> list[int]:
    """The pids of this test process's verifier actors inside `verify_batch` (their process
    title): descendants of this process only (the local Ray it started), never those of
    another test session running beside it (pytest-xdist's other worker)."""
    import psutil

    busy = []
    for p in psutil.Process().children(recursive=True):
        try:
            cmd = p.cmdline()
        except psutil.Error:
            continue
        if any("VerifierWorker.verify_batch" in part for part in cmd) and not _forked(p):
            busy.append(p.pid)
    return busy


def _holding(pid: int) -> bool:
    """Whether the actor has said which batch it took (`lastwords.holding`, its first
    lines in `verify_batch`): killed before that, its death names no candidate. Its Ray
    title says `verify_batch` a moment earlier, a moment a loaded machine stretches."""
    from ray_actors import lastwords

    try:
        with open(f"/proc/{pid}/fd/2", "rb") as f:  # its stderr: the file Ray keeps
            return lastwords.HELD.encode() in f.read()
    except OSError:
        return False


def _forked(p) -> bool:
    """A child the actor forked (a tool's Popen) shows the actor's title until it execs."""
    import psutil

    try:
        parent = p.parent()
        return parent is not None and any("VerifierWorker" in x for x in parent.cmdline())
    except psutil.Error:
        return True  # its parent is gone: not a live actor's own process


def _busy_worker_pid(deadline: float) -> int:
    """The pid of a verifier actor while it is inside `verify_batch`."""
    while time.monotonic() < deadline:
        if busy := _busy_actors():
            return busy[0]
        time.sleep(0.02)
    raise AssertionError("no verifier actor became busy")


def test_an_actor_killed_mid_batch_loses_nothing(tmp_path, own_ray):
    from generators.perturb import generator_for
    from ray_actors import cluster
    from ray_actors.verify import PoolSettings, verify_candidates

    task = load_task(TASK)
    cands = generator_for("rtl").generate(task)
    limits = Limits(gates=("compile", "simulate"))
    cluster.start(cluster.ClusterSettings(num_cpus=2))
    try:
        verdicts = []
        runner = threading.Thread(
            target=lambda: verdicts.extend(
                verify_candidates(
                    "rtl", cands, {task.task_id: task}, limits,
                    PoolSettings(workers=1, batch_size=len(cands) // 2 + 1),
                )
            )
        )  # fmt: skip
        runner.start()
        pid = _busy_worker_pid(time.monotonic() + 60)
        os.kill(pid, signal.SIGKILL)
        runner.join(timeout=180)
        import psutil

        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
        assert not runner.is_alive()
    finally:
        cluster.shutdown()
    # the killed batch was retried on the restarted actor: every candidate, once, judged
    assert sorted(v.candidate_id for v in verdicts) == sorted(c.candidate_id for c in cands)
    assert not [v for v in verdicts if v.status is Status.INFRA_ERROR]
    ref = next(v for v in verdicts if v.candidate_id == cands[0].candidate_id)
    assert cands[0].origin == "reference" and ref.passed


def test_work_for_a_resource_no_node_has_is_infra_at_once(monkeypatch, own_ray):
    """A verifier pinned to a resource the cluster lacks must not leave actors pending
    forever: its candidates come back at once as infra_error saying what to start."""
    from ray_actors import cluster
    from ray_actors.verify import PoolSettings, verify_candidates
    from verifiers.registry import get_verifier

    task = load_task(TASK)
    cands = [Candidate(task.task_id, task.reference, "reference", "catalog:reference")]
    # a resource no machine here declares (NPU is declared where pyasc is installed)
    monkeypatch.setattr(get_verifier("rtl"), "resource", "FPGA")
    cluster.start(cluster.ClusterSettings(num_cpus=1))
    try:
        t0 = time.monotonic()
        out = list(verify_candidates("rtl", cands, {task.task_id: task}, Limits(), PoolSettings()))
        assert time.monotonic() - t0 < 10
    finally:
        cluster.shutdown()
    assert [v.status for v in out] == [Status.INFRA_ERROR]
    assert out[0].code == "tool_missing" and "FPGA" in out[0].feedback
    assert "ray start --resources" in out[0].feedback


def test_native_resources_map_to_ray_accounting():
    from ray_actors import cluster

    assert cluster.actor_options("GPU")["num_gpus"] == 1
    # a toolchain slot is a core already: no CPU besides, or two domains' warm pools
    # would hold every core between them and the second would wait forever
    assert cluster.actor_options("eda") == {"resources": {"eda": 1}, "num_cpus": 0}
    assert "resources" not in cluster.actor_options("cpu")


def test_a_new_domain_pool_releases_kept_pools_that_hold_cpus_or_gpus():
    """Kept pools whose actors hold CPUs / GPUs (CPU fallbacks, GPU verifiers) are let go
    before another domain's pool starts; toolchain pools (no CPU held) stay warm."""
    from ray_actors.verify import _release_natives

    class Pool:
        def __init__(self, natives: bool):
            self.holds_natives = natives

    pools = {"cuda": (Pool(True), 1), "rtl": (Pool(False), 2), "cad": (Pool(False), 2)}
    _release_natives(pools)
    assert sorted(pools) == ["cad", "rtl"]


def test_a_batch_that_kills_its_actor_every_time_ends_once_restarts_are_spent(own_ray):
    """Lost batches are resent without a count (a lost node must not spend them), so the
    bound on a crash loop is the actor's own restarts: 1 + max_restarts attempts, then the
    batch's candidates are infra_error `worker_died`, naming the signal, rather than a
    resend forever or a run that fails."""
    from generators.perturb import generator_for
    from ray_actors import cluster
    from ray_actors.verify import PoolSettings, verify_candidates

    task = load_task(TASK)
    cands = generator_for("rtl").generate(task)[:2]
    limits = Limits(gates=("compile", "simulate"))
    cluster.start(cluster.ClusterSettings(num_cpus=2))
    verdicts: list = []
    raised: list[BaseException] = []

    def run():
        try:
            verdicts.extend(
                verify_candidates(
                    "rtl", cands, {task.task_id: task}, limits,
                    PoolSettings(workers=1, batch_size=len(cands)),
                )
            )  # fmt: skip
        except BaseException as e:  # the test reads what ended the call
            raised.append(e)

    killed: set[int] = set()
    try:
        runner = threading.Thread(target=run)
        runner.start()
        deadline = time.monotonic() + 240
        while runner.is_alive() and time.monotonic() < deadline:
            for pid in _busy_actors():
                if pid not in killed and _holding(pid):
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
            time.sleep(0.02)
        runner.join(timeout=30)
        assert not runner.is_alive(), "the batch was resent forever"
    finally:
        cluster.shutdown()
    assert raised == []
    assert len(killed) == 3  # the first try and one per restart (max_restarts=2)
    assert sorted(v.candidate_id for v in verdicts) == sorted(c.candidate_id for c in cands)
    for v in verdicts:
        assert (v.status, v.code) == (Status.INFRA_ERROR, "worker_died")
        assert "was killed by signal SIGKILL while verifying candidate" in v.feedback
