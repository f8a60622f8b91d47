"""A task's reference goes through its own verifier before the task is accepted: a
reference that fails (here a CAD script that raises at run time, which used to make every
candidate of the task an infra_error) is a refused task, and nothing is generated,
verified or exported for it. Ingest and generate called as stages (no Prefect)."""

from __future__ import annotations

import shutil
from pathlib import Path

from flows import stages
from flows.stages import PipelineSettings, ReferenceFails
from tests.flows.lakeq import q

CATALOG = Path(__file__).resolve().parents[2] / "tasks"


def _catalog(tmp_path: Path) -> Path:
    root = tmp_path / "catalog"
    shutil.copytree(CATALOG / "rtl" / "mux4", root / "rtl" / "mux4")
    shutil.copytree(CATALOG / "cad" / "block_with_pocket", root / "cad" / "block_with_pocket")
    bad = root / "cad" / "pocket_raises"
    shutil.copytree(CATALOG / "cad" / "block_with_pocket", bad)
    toml = (bad / "task.toml").read_text()
    (bad / "task.toml").write_text(toml.replace('"block_with_pocket"', '"pocket_raises"', 1))
    ref = (bad / "ref.py").read_text()
    (bad / "ref.py").write_text(ref + "\nraise RuntimeError('the reference breaks at run time')\n")
    return root


def _run(lake: Path, root: Path, stage_names=("generate",)) -> stages.StageContext:
    s = PipelineSettings(lake=lake, task_roots=(root,), domains=("rtl", "cad"))
    with stages.stage_context(s, "run") as ctx:
        stages.ingest(ctx)
        for name in stage_names:
            getattr(stages, name)(ctx)
        ctx.selected = stages.task_ids(ctx)  # type: ignore[attr-defined]
    return ctx


def _per_task(lake: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for name, origin, n in q(
        lake,
        "SELECT t.name, c.origin, count(*) FROM candidates AS c JOIN tasks AS t "
        "USING (task_id) GROUP BY ALL",
    ):
        out.setdefault(name, {})[origin] = n
    return out


def test_a_reference_that_fails_is_a_refused_task_checked_once(tmp_path, local_ray):
    """Over 30 s on a loaded machine: two runs of ingest and generate (the second with
    verify), the three references checked on the CAD and RTL verifiers' warm workers."""
    root = _catalog(tmp_path)
    lake = tmp_path / "lake"
    ctx = _run(lake, root)
    refused = [e for e in ctx.refused if isinstance(e, ReferenceFails)]
    assert [e.name for e in refused] == ["pocket_raises"]
    said = str(refused[0])
    assert "runtime_error script_exception" in said and "reference breaks at run time" in said
    assert ctx.counts["references_verified"] == 3 and ctx.counts["tasks_refused"] == 1
    assert ctx.counts["references_status_runtime_error"] == 1
    # nothing for the refused task (its reference's verdict is the only trace); the
    # others got their candidates, and no stage selects the refused one
    cands = _per_task(lake)
    assert "pocket_raises" not in cands
    assert cands["mux4"].get("perturb") and cands["block_with_pocket"].get("perturb")
    names = dict(q(lake, "SELECT task_id, name FROM tasks"))
    assert sorted(names[i] for i in ctx.selected) == ["block_with_pocket", "mux4"]

    # a rerun pays nothing for the checks, reports the refusal again, and its verify
    # stage finds the accepted references judged already
    again = _run(lake, root, ("generate", "verify"))
    assert again.counts["references_verified"] == 0
    assert [e.name for e in again.refused if isinstance(e, ReferenceFails)] == ["pocket_raises"]
    assert "pocket_raises" not in _per_task(lake)
    verified = q(
        lake,
        "SELECT t.name, count(*) FROM verdicts AS v JOIN tasks AS t USING (task_id) GROUP BY ALL",
    )
    assert dict(verified)["pocket_raises"] == 1  # its reference's verdict, nothing more
    assert q(lake, "SELECT count(*) - count(DISTINCT candidate_id) FROM raw_verdicts") == [(0,)]
    # the accepted references: one verdict each, found by the verify stage as the offline
    # channel's reference candidates (never verified twice)
    refs = q(
        lake,
        "SELECT c.origin, count(v.verdict_id) FROM candidates AS c JOIN raw_verdicts AS v "
        "USING (candidate_id) WHERE c.origin = 'reference' GROUP BY ALL",
    )
    assert refs == [("reference", 2)]


def test_a_run_whose_every_task_is_refused_stops_after_ingest(tmp_path, harness, local_ray):
    """Over 30 s with set-up (Ray and the Prefect harness, shared in the suite). The whole
    pipeline flow over a catalog whose one task's reference fails: the run
    stops after the reference check, with no candidate, no verdict but the reference's,
    and no export (it used to run every stage and write an empty dataset)."""
    from flows.pipeline import pipeline_flow

    full = _catalog(tmp_path)
    root = tmp_path / "only_bad"
    shutil.copytree(full / "cad" / "pocket_raises", root / "cad" / "pocket_raises")
    lake = tmp_path / "lake"
    result = pipeline_flow(PipelineSettings(lake=lake, task_roots=(root,), domains=("cad",)))
    c = result["counts"]
    assert c["all_refused"] == 1 and "pocket_raises" in result["refused"][0]
    assert "export_path" not in c and "seconds_verify" not in c
    assert not (lake / "exports").exists() or not any((lake / "exports").iterdir())
    assert q(lake, "SELECT count(*) FROM candidates") == [(0,)]
    assert q(lake, "SELECT count(*) FROM verdicts") == [(1,)]


def test_a_slow_reference_is_measured_again_each_run_and_its_latest_verdict_decides(
    tmp_path, local_ray
):
    """A `slow` reference is a measurement, and a busy machine can hide a real gain (an
    x86asm reference 1.25x faster was left `slow` by a loaded CI host): it is measured
    again on every run, never refused for the verifier's version on one reading. Here the
    reference is its own -O3 baseline (`optimized = "ref.c"` at -O3: `slow` /
    `copied_input` on every reading): refused, and measured again on the rerun; once a
    verdict of it passes (one appended, as a later run's reading would be), the task is
    neither measured again nor refused, and its candidates are made."""
    from lake.store import Lake
    from lake.writer import BatchWriter
    from verifiers.contract import Status, Verdict

    root = tmp_path / "catalog"
    task_dir = root / "x86asm" / "popcount_copy"
    shutil.copytree(CATALOG / "x86asm" / "popcount_array", task_dir)
    toml = (task_dir / "task.toml").read_text()
    toml = toml.replace('name = "popcount_array"', 'name = "popcount_copy"', 1)
    toml = toml.replace('optimized = "opt.c"', 'optimized = "ref.c"\noptimized_flags = ["-O3"]')
    (task_dir / "task.toml").write_text(toml)
    lake = tmp_path / "lake"

    def run() -> stages.StageContext:
        s = PipelineSettings(lake=lake, task_roots=(root,), domains=("x86asm",))
        with stages.stage_context(s, "run") as ctx:
            stages.ingest(ctx)
            stages.generate(ctx)
        return ctx

    for _ in range(2):  # refused each time, and each time measured again
        ctx = run()
        (refused,) = [e for e in ctx.refused if isinstance(e, ReferenceFails)]
        assert "slow copied_input" in str(refused) and "measured again" in str(refused)
        assert ctx.counts["references_verified"] == 1
        assert "popcount_copy" not in _per_task(lake)
    assert ctx.counts["references_measured_again"] == 1  # the second run's
    ((ref_id, task_id, verifier, version, n),) = q(
        lake,
        "SELECT candidate_id, task_id, verifier, verifier_version, count(*) FROM raw_verdicts "
        "GROUP BY ALL",
    )
    assert n == 2
    # the reading after them is stored with an id of its own, however it ends
    assert len({r[0] for r in q(lake, "SELECT verdict_id FROM raw_verdicts")}) == 2
    with BatchWriter(Lake(lake), run_id="a-later-reading") as w:
        w.add_verdict(
            stages.read_again(
                Verdict(
                    candidate_id=ref_id,
                    task_id=task_id,
                    domain="x86asm",
                    status=Status.PASS,
                    verifier=verifier,
                    verifier_version=version,
                )
            )
        )
    ctx = run()
    assert not [e for e in ctx.refused if isinstance(e, ReferenceFails)]
    assert ctx.counts["references_verified"] == 0
    assert _per_task(lake)["popcount_copy"].get("perturb")
