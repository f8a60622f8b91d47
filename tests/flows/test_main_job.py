"""The main job end to end on a handful of catalog tasks: real tools, real Ray, real lake."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flows.main_job import JobSettings, run_main_job
from lake import db
from lake.store import Lake, LakeError
from ray_actors import cluster
from ray_actors.verify import PoolSettings

CATALOG = Path(__file__).resolve().parents[2] / "tasks"
NAMES = ("mux4", "updown_counter8", "seq_det_1011_mealy")


@pytest.fixture(scope="module")
def ray_local(tmp_path_factory):
    cluster.start(cluster.ClusterSettings(num_cpus=2))
    yield
    cluster.shutdown()


def _catalog_subset(tmp_path: Path, names=NAMES) -> Path:
    root = tmp_path / "catalog"
    for n in names:
        shutil.copytree(CATALOG / "rtl" / n, root / "rtl" / n)
    return root


def _q(lake: Path, sql: str) -> list[tuple]:
    con = db.connect(Lake(lake))
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_main_job_fills_the_lake_and_rerun_adds_nothing(tmp_path, ray_local):
    root = _catalog_subset(tmp_path)
    # a malformed task beside the good ones: refused, and nothing of it reaches the lake
    bad = root / "rtl" / "broken_task"
    shutil.copytree(root / "rtl" / NAMES[0], bad)
    text = (bad / "task.toml").read_text().replace(f'name = "{NAMES[0]}"', 'name = "broken_task"')
    (bad / "task.toml").write_text(text.replace("level = ", "level = 9 #"))
    lake = tmp_path / "lake"
    settings = JobSettings(lake=lake, task_roots=(root,), pool=PoolSettings(batch_size=4))
    result = run_main_job(settings)

    assert result.tasks == len(NAMES)
    assert [e.field for e in result.refused] == ["level"]
    assert _q(lake, "SELECT count(*) FROM tasks WHERE name = 'broken_task'") == [(0,)]
    n_cand = _q(lake, "SELECT count(*) FROM candidates")[0][0]
    assert n_cand == result.candidates > 3 * len(NAMES)
    # every candidate got exactly one verdict, and no infrastructure failed
    assert _q(lake, "SELECT count(*), count(DISTINCT candidate_id) FROM verdicts") == [
        (n_cand, n_cand)
    ]
    assert _q(lake, "SELECT count(*) FROM verdicts WHERE status = 'infra_error'") == [(0,)]
    # references and rewrites pass; every reference ran all six gates
    rows = _q(
        lake,
        """SELECT c.origin, v.status, len(v.checks) FROM candidates c
           JOIN verdicts v USING (candidate_id) WHERE c.origin IN ('reference', 'rewrite')""",
    )
    assert rows and all(status == "pass" for _, status, _ in rows)
    assert all(n == 7 for origin, _, n in rows if origin == "reference")
    # perturbations fail with real taxonomy codes, and most of them fail
    codes = dict(
        _q(
            lake,
            """SELECT v.code, count(*) FROM candidates c JOIN verdicts v
                             USING (candidate_id) WHERE c.origin = 'perturb' GROUP BY 1""",
        )
    )
    failed = sum(n for code, n in codes.items() if code)
    assert failed >= 0.8 * sum(codes.values())
    assert {"sim_mismatch", "syntax_error"} & set(codes)
    # failures carry artifacts (compile logs / VCDs) stored content-addressed
    arts = _q(lake, "SELECT sha256, path FROM artifacts")
    assert arts
    for sha, path in arts:
        assert (lake / path).is_file() and path.endswith(sha)
    # the run is recorded, and the SQL files answer
    assert _q(lake, "SELECT flow, status FROM runs") == [("main", "completed")]
    assert result.pass_rates and result.taxonomy

    again = run_main_job(settings)
    assert again.verified == 0
    assert again.counts["candidates_written"] == 0 and again.counts["tasks_written"] == 0
    assert _q(lake, "SELECT count(*) FROM raw_verdicts")[0][0] == n_cand
    assert _q(lake, "SELECT count(*) FROM runs") == [(2,)]


def test_unusable_lake_path_stops_before_any_work(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("not a lake")
    settings = JobSettings(lake=blocker / "lake", task_roots=(_catalog_subset(tmp_path),))
    with pytest.raises(LakeError, match="not a directory"):
        run_main_job(settings)
    settings = JobSettings(lake=blocker, task_roots=(tmp_path / "catalog",))
    with pytest.raises(LakeError, match="is a file"):
        run_main_job(settings)


def test_corrupt_lake_stops_before_any_work(tmp_path):
    lake = tmp_path / "lake"
    Lake(lake)
    log = sorted((lake / "tables" / "verdicts" / "_delta_log").glob("*.json"))[-1]
    log.write_text("{ this is not json")
    with pytest.raises(LakeError):
        run_main_job(JobSettings(lake=lake, task_roots=(_catalog_subset(tmp_path),)))
