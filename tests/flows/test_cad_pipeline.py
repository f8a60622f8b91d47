"""The pipeline on the cad domain: real Prefect (its test harness), real Ray (actors on the
`cad` resource), real lake; then `crucible show` writes a candidate's picture out of it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.pipeline import pipeline_flow
from flows.stages import PipelineSettings
from lake import db
from lake.store import Lake
from ray_actors import cluster
from tests.flows.lakeq import q

pytest.importorskip("cadquery")

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("washer", "placed_l_bracket_xyz")
RTL = "adder8"


def test_cad_pipeline_then_show_writes_the_picture(tmp_path, harness):
    """Over 30 s on a loaded machine: a whole pipeline run over two CAD tasks and an RTL
    one (each CAD verdict builds and judges its part in warm cadquery workers), then the
    four-view render of `crucible show`."""
    assert cluster.slots("cad") > 0, "cadquery and bubblewrap make this node a `cad` node"
    root = tmp_path / "catalog"
    for n in NAMES:
        shutil.copytree(ROOT / "tasks" / "cad" / n, root / "cad" / n)
    shutil.copytree(ROOT / "tasks" / "rtl" / RTL, root / "rtl" / RTL)
    lake = tmp_path / "lake"
    # two domains, as `crucible run` does by default: the first domain's warm actors must
    # not hold the cores the second domain's actors need (they once waited forever)
    settings = PipelineSettings(
        lake=lake, task_roots=(root,), domains=("rtl", "cad"), stages=("generate", "verify")
    )
    result = pipeline_flow(settings)
    c = result["counts"]
    assert c["tasks"] == 3 and c["generated"] >= 10
    n_cand = q(lake, "SELECT count(*) FROM candidates")[0][0]
    assert q(lake, "SELECT count(DISTINCT candidate_id) FROM verdicts")[0][0] == n_cand
    rows = q(
        lake,
        "SELECT c.origin, c.generator, v.status, v.code FROM candidates c "
        "JOIN latest_verdicts v USING (candidate_id) WHERE c.domain = 'cad'",
    )
    assert {s for o, _, s, _ in rows if o in ("reference", "rewrite")} == {"pass"}
    perturbed = [(g, s, code) for o, g, s, code in rows if o == "perturb"]
    assert perturbed and all(s != "pass" for _, s, _ in perturbed), perturbed
    assert not [r for r in rows if r[2] == "infra_error"]
    # the swapped rotation order of the placed bracket is named as such
    euler = [code for g, _, code in perturbed if g == "perturb:wrong_euler_order"]
    assert euler == ["geometry_orientation"]
    # pictures, STEP and STL are artifacts of the verdicts
    kinds = dict(q(lake, "SELECT kind, count(*) FROM artifacts GROUP BY kind"))
    assert kinds.get("picture", 0) >= 4 and kinds.get("step", 0) >= 4 and kinds.get("stl", 0) >= 4

    ref_id = q(
        lake,
        "SELECT candidate_id FROM candidates WHERE origin = 'reference' AND domain = 'cad' LIMIT 1",
    )[0][0]
    out = tmp_path / "pic.png"
    res = CliRunner().invoke(app, ["show", ref_id[:10], "--lake", str(lake), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    res = CliRunner().invoke(
        app, ["show", ref_id, "--lake", str(lake), "--kind", "all", "--out", str(tmp_path / "all")]
    )
    assert res.exit_code == 0, res.output
    assert {p.suffix for p in (tmp_path / "all").iterdir()} == {".png", ".step", ".stl"}
    res = CliRunner().invoke(app, ["show", "abcdef", "--lake", str(lake)])
    assert res.exit_code == 1 and "no candidate" in res.output
    res = CliRunner().invoke(app, ["show", "xyz", "--lake", str(lake)])
    assert res.exit_code == 2 and "hex" in res.output
    con = db.connect(Lake(lake))
    con.close()
