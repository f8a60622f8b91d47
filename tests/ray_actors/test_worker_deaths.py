"""A verifier worker that dies keeps why: its exit status or signal and its last stderr
lines reach the run's log, its counts, and the infra_error verdicts of the candidates it
held once Ray's restarts of it are spent; the run itself goes on. A real local Ray: the
worker's process really exits (`os._exit(3)`) or is really killed (SIGKILL)."""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from pathlib import Path

from tests.ray_actors import dying
from verifiers.catalog import load_task
from verifiers.contract import Limits, Status

TASK = Path(__file__).resolve().parents[2] / "tasks" / "rtl" / "mux4"


def test_a_dead_workers_exit_status_signal_and_last_words_are_kept(monkeypatch, own_ray, caplog):
    """Over 30 s: a Ray cluster of its own, and a verifier actor that dies twice (an exit,
    a kill) and is started again each time, importing the verifier anew."""
    from generators.perturb import generator_for
    from ray_actors import cluster, verify

    monkeypatch.setattr(verify, "VerifierWorker", dying.DyingWorker)
    task = load_task(TASK)
    ref = next(c for c in generator_for("rtl").generate(task) if c.origin == "reference")
    exits, kills = (replace(ref, code=f"{ref.code}{m}\n", candidate_id="") for m in dying.MARKS)
    cluster.start(cluster.ClusterSettings(num_cpus=1))
    deaths: list[dict] = []
    caplog.set_level(logging.WARNING, logger="ray_actors")
    try:
        out = list(
            verify.verify_candidates(
                "rtl",
                [ref, exits, kills],  # one batch each, in this order, on one actor
                {task.task_id: task},
                Limits(gates=("compile", "simulate")),
                verify.PoolSettings(workers=1, batch_size=1),
                on_death=deaths.append,
            )
        )
    finally:
        cluster.shutdown()
    by = {v.candidate_id: v for v in out}
    assert by[ref.candidate_id].passed  # verified before the deaths, and the run went on
    died = by[exits.candidate_id]
    assert (died.status, died.code) == (Status.INFRA_ERROR, "worker_died")
    assert re.search(
        rf"verifier worker pid \d+ on \S+ exited with status 3 while verifying candidate "
        rf"{exits.candidate_id[:12]}",
        died.feedback,
    )
    assert "last words before exit 3" in died.feedback
    assert "verifying a candidate that kills its worker" in died.checks[0].detail
    killed = by[kills.candidate_id]
    assert (killed.status, killed.code) == (Status.INFRA_ERROR, "worker_died")
    assert f"was killed by signal SIGKILL while verifying candidate {kills.candidate_id[:12]}" in (
        killed.feedback
    )
    assert "last words before SIGKILL" in killed.feedback
    # every death the watch saw is in the stage's counts and in the run's log
    assert {d["exit_status"] for d in deaths} >= {3} and {d["signal"] for d in deaths} >= {
        "SIGKILL"
    }
    for d in deaths:
        assert d["pid"] > 0 and d["stderr_tail"][-1].startswith("last words before")
        assert any(f"verifier worker pid {d['pid']} " in r.getMessage() for r in caplog.records)
    lost = [r for r in caplog.records if "get infra_error (worker_died)" in r.getMessage()]
    assert len(lost) == 2, [r.getMessage() for r in lost]
