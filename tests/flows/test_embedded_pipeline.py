"""The pipeline on the embedded domain: real Prefect (its test harness), real Ray (actors on
the `emulator` resource), real arm-none-eabi-gcc and QEMU, real lake; generate -> verify ->
repair -> dedup -> export, then a rerun that finds nothing to do."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from flows.pipeline import pipeline_flow
from flows.stages import PipelineSettings
from ray_actors import cluster
from ray_actors.verify import PoolSettings
from tests.flows.lakeq import q
from verifiers import domain as domains

ROOT = Path(__file__).resolve().parents[2]
# one task per family: GPIO/RCC registers, an interrupt (EXTI), a protocol (a CRC)
NAMES = ("gpio_clock_gating", "exti_software_irq", "crc16_ccitt")
EMBEDDED = domains.get("embedded")
MISSING = [t for t in EMBEDDED.tools if shutil.which(t) is None]

pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"{', '.join(MISSING)} not found; install: {EMBEDDED.install}"
)


def _messages(cell) -> str:
    return "\n".join(m["content"] for m in cell)


def test_embedded_pipeline_end_to_end_then_rerun_adds_nothing(tmp_path, harness):
    assert cluster.slots("emulator") > 0, "the toolchain makes this node an `emulator` node"
    root = tmp_path / "catalog"
    for n in NAMES:
        shutil.copytree(ROOT / "tasks" / "embedded" / n, root / "embedded" / n)
    lake = tmp_path / "lake"
    settings = PipelineSettings(
        lake=lake, task_roots=(root,), domains=("embedded",), pool=PoolSettings(batch_size=4)
    )
    c = pipeline_flow(settings)["counts"]
    assert c["tasks"] == 3 and c["generated"] >= 15, c

    # every candidate is judged, by the embedded verifier, never an infra error
    n_cand = q(lake, "SELECT count(*) FROM candidates")[0][0]
    assert q(lake, "SELECT count(DISTINCT candidate_id) FROM verdicts")[0][0] == n_cand
    infra = q(lake, "SELECT code, feedback FROM raw_verdicts WHERE status = 'infra_error'")
    assert not infra, infra  # machine_slow here: the machine was too loaded for the budgets
    rows = q(
        lake,
        "SELECT t.name, c.origin, c.generator, v.status, v.code FROM candidates c "
        "JOIN tasks t USING (task_id) JOIN latest_verdicts v USING (candidate_id)",
    )
    assert {t for t, *_ in rows} == set(NAMES)
    bad = [r for r in rows if r[1] in ("reference", "rewrite") and r[3] != "pass"]
    assert not bad, bad
    assert {r[1] for r in rows} >= {"reference", "rewrite", "perturb"}
    perturbed = [(t, g, s, code) for t, o, g, s, code in rows if o == "perturb"]
    survived = sorted(f"{t}:{g}" for t, g, s, _ in perturbed if s == "pass")
    failed = len(perturbed) - len(survived)
    assert perturbed and failed >= 0.7 * len(perturbed), (
        f"{len(survived)} of {len(perturbed)} perturbations survived: {survived}"
    )
    # a handler whose name misses the vector entry: the interrupt lands in Default_Handler
    irq = [(s, code) for _, g, s, code in perturbed if g == "perturb:misspelled_irq_handler"]
    assert irq and set(irq) == {("runtime_error", "unhandled_interrupt")}, irq
    clock = [(t, s) for t, g, s, _ in perturbed if g == "perturb:missing_clock_enable"]
    assert clock and all(s != "pass" for _, s in clock), clock

    # the verdicts name their verifier, its toolchain and the node that ran them
    meta = q(lake, "SELECT DISTINCT verifier, toolchain, node FROM verdicts")
    assert {v for v, _, _ in meta} == {"embedded-qemu"}
    for _, toolchain, node in meta:
        tools = json.loads(toolchain)
        assert "12.2" in tools["arm-none-eabi-gcc"], tools
        assert "QEMU emulator version 7.2" in tools["qemu-system-arm"], tools
        assert node
    assert {n for *_, n in meta} == {socket.gethostname()}
    # every check carries its descriptor's stage; build, run and judge gates all ran
    checks = q(lake, "SELECT DISTINCT gate, stage FROM checks WHERE domain = 'embedded'")
    assert all(stage == EMBEDDED.stage_of(gate) for gate, stage in checks), checks
    assert {stage for _, stage in checks} >= {"build", "run", "judge"}, checks
    assert {g for g, _ in checks} >= {"format", "compile", "link", "boot", "exit", "uart"}

    # repair closed chains; at least one ends in a pass, from a failed first attempt
    traj = q(lake, "SELECT outcome, rounds, turns FROM trajectories WHERE domain = 'embedded'")
    assert traj and all(turns[0]["status"] != "pass" for _, _, turns in traj)
    assert any(o == "pass" and turns[-1]["status"] == "pass" for o, _, turns in traj), traj

    # the export: prompts name the target, its toolchain and the emulated board
    export = Path(c["export_path"])
    sft = [r for f in (export / "data" / "sft_direct").glob("*.parquet")
           for r in pq.read_table(f).to_pylist()]  # fmt: skip
    assert sft and {r["domain"] for r in sft} == {"embedded"}
    for r in sft:
        text = _messages(r["messages"])
        for word in ("STM32F407", "arm-none-eabi-gcc", "netduinoplus2"):
            assert word in text, (word, r["task_name"])
    dpo = [r for f in (export / "data" / "dpo").glob("*.parquet")
           for r in pq.read_table(f).to_pylist()]  # fmt: skip
    assert dpo and all(r["chosen_id"] != r["rejected_id"] for r in dpo)
    rejected = ", ".join(f"'{r['rejected_id']}'" for r in dpo)
    built = q(
        lake,
        f"""SELECT k.candidate_id FROM checks k JOIN latest_verdicts v USING (verdict_id)
            WHERE k.candidate_id IN ({rejected}) AND k.stage = 'build'
            GROUP BY k.candidate_id
            HAVING bool_and(k.ok) AND count(*) FILTER (WHERE k.gate = 'link') = 1""",
    )
    assert built, "no dpo pair rejects a candidate that compiled"

    # a rerun on the same lake finds every verdict there: nothing is added
    before = {t: q(lake, f"SELECT count(*) FROM raw_{t}")[0][0]
              for t in ("candidates", "verdicts", "trajectories", "tasks")}  # fmt: skip
    again = pipeline_flow(settings)["counts"]
    assert again["verified"] == 0 and again["candidates_written"] == 0, again
    after = {t: q(lake, f"SELECT count(*) FROM raw_{t}")[0][0] for t in before}
    assert after == before
