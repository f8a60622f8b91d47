"""The generate stage on its own (no Prefect; Ray for the reference checks): what a
later run with other generation settings adds to a lake."""

from __future__ import annotations

from pathlib import Path

from flows import stages
from flows.stages import PipelineSettings
from tests.flows.lakeq import q
from tests.flows.test_pipeline import catalog_subset

NAMES = ("mux4", "updown_counter8")


def _generate(lake: Path, root: Path, n: int | None) -> dict:
    s = PipelineSettings(lake=lake, task_roots=(root,), candidates_per_task=n)
    with stages.stage_context(s, f"run-{n}") as ctx:
        stages.ingest(ctx)
        stages.generate(ctx)
        return ctx.counts


def _perturbs(lake: Path) -> dict[str, int]:
    rows = q(
        lake,
        "SELECT t.name, count(*) FROM candidates AS c JOIN tasks AS t USING (task_id) "
        "WHERE c.origin = 'perturb' GROUP BY t.name",
    )
    return dict(rows)


def _ids(lake: Path) -> set[str]:
    return {r[0] for r in q(lake, "SELECT candidate_id FROM candidates")}


def test_a_larger_candidates_per_task_generates_the_missing_candidates(tmp_path, local_ray):
    root = catalog_subset(tmp_path, NAMES)
    lake = tmp_path / "lake"
    _generate(lake, root, 2)
    assert _perturbs(lake) == dict.fromkeys(NAMES, 2)
    before = _ids(lake)

    more = _generate(lake, root, 5)
    assert more["candidates_written"] == 2 * 3
    assert _perturbs(lake) == dict.fromkeys(NAMES, 5)
    assert before < _ids(lake)
    # the same lake as one run asking for 5 from the start
    fresh = tmp_path / "fresh"
    _generate(fresh, root, 5)
    assert _ids(fresh) == _ids(lake)

    # asking for as many again, or fewer, asks the generator for nothing
    assert _generate(lake, root, 5)["generated"] == 0
    assert _generate(lake, root, 3)["generated"] == 0
    assert _generate(lake, root, None)["generated"] == 0
    assert _ids(fresh) == _ids(lake)
