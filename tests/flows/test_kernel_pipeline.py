"""The pipeline on the triton domain on a machine with no GPU: real Prefect (its test
harness), real Ray, real lake. The verifier's actors fall back from the `GPU` resource to
`cpu` ones; timing cannot run here, so a full run leaves the references as infra_error /
no_gpu (to be retried on a GPU node), and a verify run asked for the CPU gates only
(Limits.gates) passes them."""

from __future__ import annotations

import logging
import shutil
from dataclasses import replace
from pathlib import Path

from flows.pipeline import pipeline_flow
from flows.stages import PipelineSettings
from ray_actors import cluster
from ray_actors.verify import PoolSettings
from tests.flows.lakeq import q
from verifiers.contract import Limits
from verifiers.kernels.verifier import TritonVerifier

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("relu", "softmax_rows")
CPU_GATES = ("parse", "anticheat", "compile", "launch", "correct")


def by_origin(lake: Path) -> dict[str, list[tuple[str, str]]]:
    rows = q(
        lake,
        "SELECT c.origin, v.status, v.code FROM candidates c "
        "JOIN latest_verdicts v USING (candidate_id)",
    )
    out: dict[str, list[tuple[str, str]]] = {}
    for origin, status, code in rows:
        out.setdefault(origin, []).append((status, code))
    return out


def test_triton_pipeline_on_cpu_then_cpu_gates_pass_the_reference(tmp_path, harness, caplog):
    """Over 30 s: every candidate's correctness trials twice in Triton's interpreter (the
    full run, then the CPU-gates run), at ~1 ms a program instance."""
    assert cluster.slots("GPU") == 0, "this test is for a machine without a GPU"
    root = tmp_path / "catalog"
    for n in NAMES:
        shutil.copytree(ROOT / "tasks" / "triton" / n, root / "triton" / n)
    lake = tmp_path / "lake"
    settings = PipelineSettings(
        lake=lake,
        task_roots=(root,),
        domains=("triton",),
    )
    with caplog.at_level(logging.WARNING, logger="ray_actors.verify"):
        result = pipeline_flow(settings)
    assert "CPU fallback" in caplog.text and "no_gpu" in caplog.text
    c = result["counts"]
    assert c["tasks"] == 2 and c["generated"] >= 4
    assert q(lake, "SELECT flow, status FROM runs") == [("pipeline", "completed")]

    # every candidate has a verdict; none is "no node for the resource"
    n_cand = q(lake, "SELECT count(*) FROM candidates")[0][0]
    assert n_cand == c["generated"] + c.get("repair_candidates", 0)
    assert q(lake, "SELECT count(DISTINCT candidate_id) FROM verdicts")[0][0] == n_cand
    assert q(lake, "SELECT count(*) FROM verdicts WHERE code = 'tool_missing'") == [(0,)]
    seen = by_origin(lake)
    # timing cannot run here: the references end infra_error / no_gpu, retried later
    assert seen["reference"] == [("infra_error", "no_gpu")] * len(NAMES)
    # and the perturbations are judged on the CPU gates: some fail as the candidate's fault
    assert any(s not in ("pass", "infra_error") for s, _ in seen["perturb"])

    # the same lake, verify only, CPU gates: a verdict from some gates is a version of its
    # own (it never stands for the full one), so every candidate gets one and the
    # references pass; a second such run finds nothing left to do
    again = pipeline_flow(replace(settings, stages=("verify",), limits=Limits(gates=CPU_GATES)))
    assert again["counts"]["verified"] == n_cand
    versions = q(lake, "SELECT DISTINCT verifier_version FROM verdicts ORDER BY 1")
    v = TritonVerifier.version  # the version is the verdict's: a bump changes no flow
    assert versions == [(v,), (f"{v}+gates:" + ",".join(CPU_GATES),)]
    third = pipeline_flow(replace(settings, stages=("verify",), limits=Limits(gates=CPU_GATES)))
    assert third["counts"].get("verified", 0) == 0
    seen = by_origin(lake)
    assert seen["reference"] == [("pass", "")] * len(NAMES)
    assert not [s for ss in seen.values() for s, _ in ss if s == "infra_error"]


def test_fallback_actors_take_cores_and_start_one_runner_each(harness):
    from ray_actors.verify import make_pool

    pool, n = make_pool("triton", Limits(), PoolSettings(workers=1))
    try:
        assert n == 1
        pool.submit(
            lambda a, _: a.__ray_call__.remote(
                lambda self: (self.verifier.settings.workers, self.verifier.domain)
            ),
            None,
        )
        assert pool.next_done(timeout=60) == (None, (1, "triton"))
    finally:
        pool.stop()  # its actor holds a core of the session's cluster
