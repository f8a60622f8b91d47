"""The pipeline end to end on a handful of catalog tasks: real tools, real Prefect (its
test harness), real Ray, real lake; and what a kill does to it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from flows.pipeline import pipeline_flow
from flows.stages import PipelineSettings
from lake.store import Lake, LakeError
from ray_actors.verify import PoolSettings
from tests.flows.lakeq import q

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "tasks"
NAMES = ("mux4", "updown_counter8", "seq_det_1011_mealy")
HOLDOUT = "cmp8_mode"  # a holdout task of the catalog: verified, never exported


def catalog_subset(tmp_path: Path, names=NAMES) -> Path:
    root = tmp_path / "catalog"
    for n in names:
        shutil.copytree(CATALOG / "rtl" / n, root / "rtl" / n)
    return root


def settings_for(lake: Path, root: Path, **kw) -> PipelineSettings:
    return PipelineSettings(lake=lake, task_roots=(root,), pool=PoolSettings(batch_size=4), **kw)


def test_holdout_fixture_is_a_holdout_task():
    assert 'split = "holdout"' in (CATALOG / "rtl" / HOLDOUT / "task.toml").read_text()


def test_pipeline_end_to_end_then_rerun_adds_nothing(tmp_path, harness):
    """Over 30 s: two whole pipeline runs (every stage, four tasks, two repair rounds)."""
    root = catalog_subset(tmp_path, (*NAMES, HOLDOUT))
    lake = tmp_path / "lake"
    settings = settings_for(lake, root)
    result = pipeline_flow(settings)
    c = result["counts"]

    n_cand = q(lake, "SELECT count(*) FROM candidates")[0][0]
    assert c["tasks"] == 4 and n_cand == c["generated"] + c["repair_candidates"]
    # every candidate has exactly one verdict, none of them infra
    assert q(lake, "SELECT count(*), count(DISTINCT candidate_id) FROM raw_verdicts") == [
        (n_cand, n_cand)
    ]
    assert q(lake, "SELECT count(*) FROM verdicts WHERE status = 'infra_error'") == [(0,)]
    # repair: failed training candidates got fixes; closed chains end in a pass
    traj = q(lake, "SELECT outcome, rounds, turns FROM trajectories")
    assert traj and all(r >= 2 for _, r, _ in traj)
    for outcome, _, turns in traj:
        assert turns[0]["status"] != "pass"
        assert outcome != "pass" or turns[-1]["status"] == "pass"
    holdout_repairs = q(
        lake,
        f"""SELECT count(*) FROM candidates c JOIN tasks t USING (task_id)
            WHERE t.name = '{HOLDOUT}' AND c.origin = 'repair'""",
    )
    assert holdout_repairs == [(0,)]
    repairs = q(lake, "SELECT parent_id, attempt FROM candidates WHERE origin = 'repair'")
    assert all(p and a >= 1 for p, a in repairs)
    # dedup covered every candidate; the export holds data and names its files
    assert q(lake, "SELECT count(DISTINCT candidate_id) FROM latest_dedup") == [(n_cand,)]
    export = Path(c["export_path"])
    assert (export / "manifest.json").is_file() and (export / "README.md").is_file()
    assert list((export / "data").rglob("train-00000-of-*.parquet"))
    # the run is recorded with its stage counts and the lake versions it saw
    runs = q(lake, "SELECT flow, status, counts, lake_versions_written FROM runs")
    assert [(f, s) for f, s, _, _ in runs] == [("pipeline", "completed")]
    assert '"verified"' in runs[0][2] and '"verdicts"' in runs[0][3]
    assert result["pass_rates_by_level"] and result["taxonomy"]

    before = {t: q(lake, f"SELECT count(*) FROM raw_{t}")[0][0] for t in ("candidates",
              "verdicts", "trajectories", "dedup", "tasks")}  # fmt: skip
    again = pipeline_flow(settings)["counts"]
    assert again["verified"] == 0 and again["candidates_written"] == 0
    assert again.get("repair_candidates", 0) == 0
    after = {t: q(lake, f"SELECT count(*) FROM raw_{t}")[0][0] for t in before}
    assert after == before
    assert q(lake, "SELECT count(*) FROM runs") == [(2,)]


def lake_state(lake: Path) -> dict[str, set]:
    """What a resumed run must equal: the ids in every stage's table."""
    return {
        "tasks": set(q(lake, "SELECT task_id FROM tasks")),
        "candidates": set(q(lake, "SELECT candidate_id, parent_id, attempt FROM candidates")),
        "verdicts": set(
            q(lake, "SELECT verdict_id, status FROM verdicts WHERE status <> 'infra_error'")
        ),
        "trajectories": set(q(lake, "SELECT trajectory_id, outcome FROM trajectories")),
    }


def no_duplicates(lake: Path) -> None:
    for table, key in (("candidates", "candidate_id"), ("verdicts", "verdict_id"),
                       ("trajectories", "trajectory_id"), ("tasks", "task_id")):  # fmt: skip
        assert q(lake, f"SELECT count(*) - count(DISTINCT {key}) FROM raw_{table}") == [(0,)]


def _commits(lake: Path, table: str) -> int:
    return len(list((lake / "tables" / table / "_delta_log").glob("*.json")))


def test_a_run_killed_mid_verify_resumes_to_the_same_lake(tmp_path, harness):
    """Over 30 s: three runs, the uninterrupted one, a `crucible run` command killed
    mid-verify (its own Prefect and Ray start) and the resume."""
    root = catalog_subset(tmp_path)
    stages = ("generate", "verify", "repair")
    # the reference: one uninterrupted run
    whole = tmp_path / "whole"
    pipeline_flow(settings_for(whole, root, stages=stages))

    # the same run in its own process (own Prefect, own Ray), killed with SIGKILL once
    # some verdicts are committed and before verification is done
    killed = tmp_path / "killed"
    env = dict(os.environ, PREFECT_HOME=str(tmp_path / "prefect-home"))
    env.pop("PREFECT_API_URL", None)
    cmd = [sys.executable, "-m", "flows.cli", "run", "--lake", str(killed), "--tasks",
           str(root), "--stages", ",".join(stages), "--batch-size", "2",
           "--commit-every", "4", "--workers", "1"]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if (killed / "tables").is_dir() and _commits(killed, "verdicts") >= 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr}"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    partial = q(killed, "SELECT count(*) FROM verdicts")[0][0]
    n_whole = len(lake_state(whole)["verdicts"])
    assert 0 < partial < n_whole

    pipeline_flow(settings_for(killed, root, stages=stages))
    assert lake_state(killed) == lake_state(whole)
    no_duplicates(killed)
    no_duplicates(whole)


def test_unusable_lake_path_stops_before_any_work(tmp_path, harness):
    root = catalog_subset(tmp_path)
    blocker = tmp_path / "afile"
    blocker.write_text("not a lake")
    with pytest.raises(LakeError, match="not a directory"):
        pipeline_flow(settings_for(blocker / "lake", root))
    with pytest.raises(LakeError, match="is a file"):
        pipeline_flow(settings_for(blocker, root))


def test_corrupt_lake_stops_before_any_work(tmp_path, harness):
    lake = tmp_path / "lake"
    Lake(lake)
    log = sorted((lake / "tables" / "verdicts" / "_delta_log").glob("*.json"))[-1]
    log.write_text("{ this is not json")
    with pytest.raises(LakeError):
        pipeline_flow(settings_for(lake, catalog_subset(tmp_path)))


def test_the_pipeline_with_a_model_behind_an_openai_endpoint(tmp_path, harness):
    """generate -> verify -> repair with the `openai` generator against a stand-in server
    (no model server can run here): answers become candidates with their prompt and token
    counts, prose becomes a format_error, and the model's repair closes a trajectory."""
    import re

    from tests.generators.standin_openai import StandinOpenAI, fenced
    from verifiers.catalog import load_task

    refs = {n: load_task(CATALOG / "rtl" / n).reference for n in NAMES[:2]}

    def answer(body: dict, index: int) -> str:
        msgs = body["messages"]
        top = re.search(r"Top module `(\w+)`", msgs[1]["content"]).group(1)
        if len(msgs) > 2:  # a repair request: the model fixes it
            return fenced(refs[top])
        return [fenced(refs[top]), "Use a counter.", fenced(refs[top].replace(";", "", 1))][
            index % 3
        ]

    root = catalog_subset(tmp_path, NAMES[:2])
    lake = tmp_path / "lake"
    with StandinOpenAI(answer) as server:
        llm = {"model": "standin-coder", "base_url": server.base_url, "n": 3, "retries": 1}
        settings = settings_for(
            lake, root, generator="openai", llm=llm, stages=("generate", "verify", "repair")
        )
        counts = pipeline_flow(settings)["counts"]
        asked = len(server.requests)
        again = pipeline_flow(settings)["counts"]
        assert len(server.requests) == asked  # every task has its samples: nothing asked

    assert counts["generated"] == 6 and again["generated"] == 0
    rows = q(lake, """SELECT c.origin, c.generator, v.status, c.prompt FROM candidates c
                      JOIN latest_verdicts v USING (candidate_id)""")  # fmt: skip
    by_status = sorted((o, s) for o, _, s, _ in rows)
    assert by_status.count(("llm", "pass")) == 2
    assert by_status.count(("llm", "format_error")) == 2
    assert by_status.count(("llm", "compile_error")) == 2
    assert {g for _, g, _, _ in rows} == {"openai:standin-coder"}
    import json

    prompt = json.loads(rows[0][3])
    assert prompt["messages"][1]["role"] == "user" and "usage" in prompt
    # the two llm failures (per task) were repaired by the model, and the fixes pass
    assert by_status.count(("repair", "pass")) == 0  # the fix is the reference: same id
    traj = q(lake, "SELECT outcome, rounds FROM trajectories ORDER BY 1, 2")
    assert traj == [("pass", 2)] * 4


def test_each_stage_is_a_flow_of_its_own(tmp_path, harness):
    """The stand-alone flows (what a deployment per stage would run) chain through the
    lake alone, and each records its run."""
    from flows.pipeline import dedup_flow, export_flow, generate_flow, repair_flow, verify_flow

    root = catalog_subset(tmp_path, NAMES[:1])
    lake = tmp_path / "lake"
    settings = settings_for(lake, root)
    assert generate_flow(settings)["counts"]["generated"] > 5
    assert verify_flow(settings)["counts"]["verified"] > 5
    assert repair_flow(settings)["counts"]["trajectories_written"] > 0
    assert dedup_flow(settings)["counts"]["dedup_candidates"] > 5
    out = export_flow(settings)
    assert Path(out["counts"]["export_path"], "manifest.json").is_file()
    runs = q(lake, "SELECT flow, status FROM runs ORDER BY started_at")
    assert runs == [(f, "completed") for f in ("generate", "verify", "repair", "dedup", "export")]
    # nothing is pending after the chain: the pipeline finds no work
    again = pipeline_flow(replace(settings, stages=("generate", "verify", "repair")))["counts"]
    assert again["generated"] == 0 and again["verified"] == 0


def test_flow_parameters_are_real_types_for_served_runs():
    """A served deployment validates its JSON parameters in a process that loads
    flows/pipeline.py by path, where a string annotation cannot be resolved: the flows'
    annotations must be the classes themselves (and JSON must round-trip to them)."""
    import inspect

    from fastapi.encoders import jsonable_encoder

    from flows import pipeline

    for f in (pipeline.generate_flow, pipeline.verify_flow, pipeline.repair_flow,
              pipeline.dedup_flow, pipeline.export_flow, pipeline.pipeline_flow):  # fmt: skip
        assert inspect.signature(f.fn).parameters["settings"].annotation is PipelineSettings
    s = PipelineSettings(lake=Path("/tmp/x"), task_names=("mux4",), repair_rounds=3)
    back = pipeline.pipeline_flow.validate_parameters(jsonable_encoder({"settings": s}))
    assert back["settings"] == s
