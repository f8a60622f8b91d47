"""The pipeline on the ascendc domain, on a machine without CANN: real Prefect (its test
harness), real Ray, real pyasc lowering in the sandbox, real lake. Tasks are ingested,
candidates generated (reference, rewrites, the paper's failure classes), the gates that
run here decide what they can (lowering and static failures are the candidates' labels,
with their taxonomy codes), everything else ends `infra_error` / `no_cann`, and the export
holds no ascendc row: nothing here can earn a pass."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from flows.pipeline import pipeline_flow
from flows.stages import PipelineSettings
from ray_actors.verify import PoolSettings
from tests.flows.lakeq import q
from verifiers import domain as domains

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("add", "row_sum")
ASCENDC = domains.get("ascendc")
MISSING = [t for t in ASCENDC.tools if shutil.which(t) is None]

pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"{', '.join(MISSING)} not found; install: {ASCENDC.install}"
)


def test_ascendc_pipeline_here_labels_what_it_can_and_exports_no_pass(tmp_path, harness):
    """About 30 s: a whole pipeline run (Ray start, ~60 lowerings in the sandbox)."""
    root = tmp_path / "catalog"
    for n in NAMES:
        shutil.copytree(ROOT / "tasks" / "ascendc" / n, root / "ascendc" / n)
    lake = tmp_path / "lake"
    settings = PipelineSettings(
        lake=lake, task_roots=(root,), domains=("ascendc",), pool=PoolSettings(batch_size=8)
    )
    c = pipeline_flow(settings)["counts"]
    assert c["tasks"] == 2 and c["generated"] >= 20, c

    rows = q(
        lake,
        "SELECT c.origin, c.generator, v.status, v.code, v.checks FROM candidates c "
        "JOIN latest_verdicts v USING (candidate_id)",
    )
    assert rows and not [r for r in rows if r[2] == "pass"]  # nothing passes here
    # the reference and the rewrites lower, pass the static checks and stop at compile
    for origin, gen, status, code, checks in rows:
        if origin in ("reference", "rewrite"):
            assert (status, code) == ("infra_error", "no_cann"), (gen, status, code)
            assert [ch["name"] for ch in checks if ch["ok"]] == [
                "format",
                "extract",
                "lower",
                "static",
            ]
    labels = {code for _o, _g, status, code, _c in rows if status != "infra_error"}
    assert {"api_signature", "scope_lifetime"} <= labels, labels  # the candidates' own
    # infra_error is never a label, and the export has no ascendc row of any kind
    export = Path(q(lake, "SELECT path FROM exports ORDER BY created_at DESC LIMIT 1")[0][0])
    for f in export.glob("data/*/*.parquet"):
        assert pq.read_table(f).num_rows == 0, f
    # the taxonomy view counts the machine's no_cann as infra, apart from the labels
    tax = dict(
        q(lake, "SELECT code, category FROM latest_verdicts WHERE domain = 'ascendc' GROUP BY ALL")
    )
    assert tax["no_cann"] == "infra" and tax["api_signature"] == "api"
