"""The verifier worker class (a Ray actor at submit time) never loses a batch to a crash."""

from __future__ import annotations

from pathlib import Path

from ray_actors.verify import VerifierWorker
from verifiers.catalog import load_task
from verifiers.contract import Limits, Status, content_id

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
