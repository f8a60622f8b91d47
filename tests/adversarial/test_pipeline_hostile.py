"""The pipeline case: one hostile answer from a model among right and wrong ones must not
change any other verdict, nor the export.

A local OpenAI-compatible stand-in (no model server can run here) answers every CAD task
with its reference (right) and a part 1 mm too thick (wrong). In the hostile run, one
extra answer is the attack that once made 11 other wrong parts pass with IoU 1.0: it
reaches `os` through a module attribute of CadQuery, plants a judge (`verifiers/cad/
judge.py`, `sitecustomize.py`) in every place it can write, and kills its worker to force
a restart that would import them. In the clean run that answer is a plain anti-cheat
rejection (an `import os`). Every candidate the two runs share gets the same status and
code, and the exports hold the same rows.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from flows.pipeline import pipeline_flow
from flows.stages import PipelineSettings
from tests.flows.lakeq import q
from tests.generators.standin_openai import StandinOpenAI, fenced
from verifiers.catalog import load_task

pytest.importorskip("cadquery")

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("washer", "plate_four_holes", "hex_nut_blank")
HOSTILE_TASK = "washer"

PLANT = """
import cadquery as cq
os = cq.occ_impl.exporters.os
judge = "def judge(job, brep, ref, art):\\n    return {'metrics': {'iou': 1.0}, 'steps': {}}\\n"
for base in (os.getcwd(), os.path.expanduser("~"), "/tmp", os.path.dirname(os.getcwd())):
    try:
        os.makedirs(os.path.join(base, "verifiers", "cad"), exist_ok=True)
        for f in ("verifiers/__init__.py", "verifiers/cad/__init__.py"):
            open(os.path.join(base, f), "w").close()
        with open(os.path.join(base, "verifiers", "cad", "judge.py"), "w") as fh:
            fh.write(judge)
        with open(os.path.join(base, "sitecustomize.py"), "w") as fh:
            fh.write("import verifiers.cad.judge\\n")
    except OSError:
        pass
result = cq.Workplane("XY").box(1, 1, 1)
os.kill(os.getppid(), 9)
"""


BENIGN_REJECT = """
import os
import cadquery as cq
result = cq.Workplane("XY").box(1, 1, 1)
"""


def _answers(refs: dict[str, str], hostile: bool):
    asks = {n: load_task(ROOT / "tasks" / "cad" / n).requirement.strip()[:80] for n in refs}

    def answer(body: dict, index: int) -> str:
        user = body["messages"][1]["content"]
        name = next(n for n, ask in asks.items() if ask in user)
        ref = refs[name]
        if len(body["messages"]) > 2:  # a repair request: the model answers the reference
            return fenced(ref, "python")
        if index == 0:
            return fenced(ref, "python")
        if index == 1:  # wrong: the part half a millimetre too high
            return fenced(ref + "\nresult = result.translate((0, 0, 0.5))\n", "python")
        if name == HOSTILE_TASK:
            # the clean run's counterpart is a plain anti-cheat rejection: both runs then
            # hold one rejected candidate there, and any difference is the attack's doing
            return fenced(PLANT if hostile else BENIGN_REJECT, "python")
        return "I would model it as a revolved profile."

    return answer


def _run(tmp: Path, hostile: bool, harness_root: Path) -> tuple[Path, dict]:
    refs = {n: load_task(ROOT / "tasks" / "cad" / n).reference for n in NAMES}
    lake = tmp / ("hostile" if hostile else "clean")
    with StandinOpenAI(_answers(refs, hostile)) as server:
        llm = {"model": "standin-coder", "base_url": server.base_url, "n": 3, "retries": 1}
        settings = PipelineSettings(
            lake=lake,
            task_roots=(harness_root,),
            domains=("cad",),
            generator="openai",
            llm=llm,
            repair_rounds=1,
            export_dir=tmp / f"exports-{lake.name}",
            export={"name": "ex"},
        )
        result = pipeline_flow(replace(settings))
    return lake, result


def _verdicts(lake: Path) -> dict[str, tuple[str, str]]:
    rows = q(lake, "SELECT candidate_id, status, code FROM latest_verdicts")
    return {cid: (status, code) for cid, status, code in rows}


def _export_rows(tmp: Path, lake: Path) -> dict[str, list[str]]:
    import pyarrow.parquet as pq

    out = {}
    for kind_dir in sorted((tmp / f"exports-{lake.name}" / "ex" / "data").iterdir()):
        rows = [r for f in sorted(kind_dir.iterdir()) for r in pq.read_table(f).to_pylist()]
        out[kind_dir.name] = sorted(repr(sorted(r.items())) for r in rows)
    return out


def test_one_hostile_answer_changes_no_other_verdict_nor_the_export(tmp_path, harness):
    """Over 30 s: two whole CAD pipeline runs (clean, then with the hostile answer) to
    compare, every candidate through OCC booleans and rendered."""
    root = tmp_path / "catalog"
    for n in NAMES:
        shutil.copytree(ROOT / "tasks" / "cad" / n, root / "cad" / n)
    clean, _ = _run(tmp_path, False, root)
    hostile, _ = _run(tmp_path, True, root)
    a, b = _verdicts(clean), _verdicts(hostile)
    extra, missing = set(b) - set(a), set(a) - set(b)
    # the one answer that differs: the attack here, the washer's prose there
    assert len(extra) == 1 and len(missing) == 1, (extra, missing)
    (attack,) = extra
    assert b[attack][0] not in ("pass", "infra_error"), b[attack]
    shared = set(a) & set(b)
    assert len(shared) == len(a) - 1 >= 8
    assert {cid: b[cid] for cid in shared} == {cid: a[cid] for cid in shared}
    statuses = sorted(s for s, _ in a.values())
    assert "pass" in statuses and "wrong_answer" in statuses  # the runs judged both kinds
    assert _export_rows(tmp_path, clean) == _export_rows(tmp_path, hostile)
    # nothing the attack planted is on the host
    for base in (Path.home(), Path("/tmp")):
        assert not (base / "verifiers" / "cad" / "judge.py").exists()
        assert not (base / "sitecustomize.py").exists()
