"""What a run shows in the Prefect UI and on the console: Crucible's own log lines in the
flow run's Logs tab (INFO, no `-v` needed), no HTTP-client chatter on the console, and
artifacts for this run and for the whole lake, labelled, rounded, with charts; and the
progress bars' labels and ETA. One small pipeline run (one catalog task, no export) on
Prefect's test server, read back through Prefect's client API."""

from __future__ import annotations

import base64
import io
import json
import logging
import re
import shutil
from pathlib import Path

import pytest

from flows import logs
from flows.pipeline import dedup_flow, pipeline_flow
from flows.stages import STAGES, PipelineSettings, Reporter, reporting
from ray_actors.verify import PoolSettings
from tests.flows.lakeq import q

ROOT = Path(__file__).resolve().parents[2]
TASK = "mux4"  # a small combinational task: a dozen candidates, some fail, one repair
NO_EXPORT = tuple(s for s in STAGES if s != "export")


class Labels(Reporter):
    def __init__(self) -> None:
        self.names: list[str] = []

    def stage(self, name: str, total: int | None = None) -> None:
        self.names.append(name)


@pytest.fixture(scope="module")
def run(harness, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("logs_ui")
    shutil.copytree(ROOT / "tasks" / "rtl" / TASK, tmp / "catalog" / "rtl" / TASK)
    settings = PipelineSettings(
        lake=tmp / "lake",
        task_roots=(tmp / "catalog",),
        domains=("rtl",),
        stages=NO_EXPORT,
        pool=PoolSettings(batch_size=2),
    )
    console = io.StringIO()
    root = logging.getLogger()
    level = root.level
    logs.setup_cli(verbose=True, stream=console)  # as `crucible -v` sets it up
    labels = Labels()
    try:
        with reporting(labels):
            result = pipeline_flow(settings)
        # a second flow that writes no verdict: its run-scoped reports are empty
        dedup = dedup_flow(settings)
    finally:
        for h in [h for h in root.handlers if getattr(h, "_crucible_console", False)]:
            root.removeHandler(h)
        root.setLevel(level)
    from prefect.logging.handlers import APILogHandler

    APILogHandler().flush()  # the API handler sends in batches, in the background
    return {
        "result": result,
        "dedup": dedup,
        "lake": settings.lake,
        "console": console.getvalue(),
        "labels": labels.names,
    }


def _client():
    from prefect.client.orchestration import get_client

    return get_client(sync_client=True)


def _logs(flow_run_id: str):
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    with _client() as c:
        flt = LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id]))
        return c.read_logs(log_filter=flt, limit=200)


def _artifacts(flow_run_id: str) -> dict:
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with _client() as c:
        flt = ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        return {a.key: a for a in c.read_artifacts(artifact_filter=flt)}


def _table(artifact) -> list[dict]:
    data = artifact.data
    return json.loads(data) if isinstance(data, str) else data


CRUCIBLE = re.compile(r"^(flows|lake|ray_actors|generators|verifiers)(\.|$)")


def test_crucible_info_lines_reach_the_flow_runs_logs_tab(run):
    """Over 30 s with its set-up (the module's): a whole pipeline run on Prefect and Ray,
    whose logs and artifacts every test of the module reads."""
    found = _logs(run["result"]["run_id"])
    ours = [g for g in found if CRUCIBLE.match(g.name)]
    assert any(g.level == logging.INFO for g in ours), sorted({g.name for g in found})
    assert any(g.name == "ray_actors.verify" and "candidates on" in g.message for g in ours), [
        g.message for g in ours
    ]


def test_the_console_shows_crucibles_lines_but_no_http_client_chatter(run):
    out = run["console"]
    assert re.search(r"^INFO (lake|ray_actors)\.", out, re.M), out[:2000]
    for noise in ("httpx", "httpcore", "HTTP Request", "prefect.client"):
        assert noise not in out, [line for line in out.splitlines() if noise in line][:3]


def _floats(rows: list[dict]) -> list[float]:
    return [v for r in rows for v in r.values() if isinstance(v, float)]


def test_artifacts_are_this_runs_and_the_lakes_labelled_rounded_and_flat(run):
    result, lake = run["result"], run["lake"]
    arts = _artifacts(result["run_id"])
    assert {
        "run-counts",
        "run-pass-rates",
        "run-taxonomy",
        "run-charts",
        "lake-pass-rates",
        "lake-taxonomy",
    } <= set(arts)
    for key, a in arts.items():
        label = "This pipeline run" if key.startswith("run-") else "Lake-wide"
        assert a.description.startswith(label), (key, a.description)

    run_rates = _table(arts["run-pass-rates"])
    (written,) = q(lake, f"SELECT count(*) FROM verdicts WHERE run_id = '{result['run_id']}'")[0]
    assert sum(r["judged"] + r["infra_errors"] for r in run_rates) == written > 0
    failing = q(
        lake,
        f"SELECT count(*) FROM verdicts WHERE run_id = '{result['run_id']}' AND status <> 'pass'",
    )[0][0]
    run_tax = _table(arts["run-taxonomy"])
    assert sum(r["count"] for r in run_tax) == failing > 0
    for key in ("run-pass-rates", "run-taxonomy", "lake-pass-rates", "lake-taxonomy"):
        rows = _table(arts[key])
        assert rows, key
        assert all(round(v, 3) == v for v in _floats(rows)), key
        cells = [v for r in rows for v in r.values() if isinstance(v, str)]
        assert all(len(v) <= 40 and "{" not in v for v in cells), (key, cells)

    counts = arts["run-counts"].data
    assert "This pipeline run" in counts and "{" not in counts.replace("`", "")
    assert re.search(r"\| generator_stats\.\S+ \| \d+ \|", counts), counts[:1000]
    numbers = re.findall(r"\| (-?\d+\.\d+) \|", counts)
    assert numbers and all(len(n.split(".")[1]) <= 3 for n in numbers), numbers


def test_a_run_that_writes_no_verdict_has_empty_run_reports_and_the_lakes_in_full(run):
    dedup = run["dedup"]
    assert dedup["run_pass_rates"] == [] and dedup["run_taxonomy"] == []
    arts = _artifacts(dedup["run_id"])
    assert _table(arts["run-pass-rates"]) == []
    assert "run-charts" not in arts  # nothing of its own to draw
    assert _table(arts["lake-pass-rates"]) and _table(arts["lake-taxonomy"])
    assert arts["lake-pass-rates"].description.startswith("Lake-wide")


def test_the_charts_are_pictures_of_this_runs_pass_rates_and_taxonomy(run):
    from PIL import Image

    md = _artifacts(run["result"]["run_id"])["run-charts"].data
    images = re.findall(r"!\[([^\]]+)\]\(data:image/png;base64,([A-Za-z0-9+/=]+)\)", md)
    assert [alt for alt, _ in images] == ["pass rates of this run", "failure taxonomy of this run"]
    for _, b64 in images:
        png = base64.b64decode(b64)
        img = Image.open(io.BytesIO(png)).convert("RGB")
        assert img.width >= 500 and img.height >= 150
        colours = img.getcolors(maxcolors=1 << 16) or ()
        assert len(colours) > 50  # text, bars, axes: not a blank image


def test_each_progress_bar_names_its_stage_and_round(run):
    names = run["labels"]
    repairs = [n for n in names if n.startswith(("repair", "verify "))]
    assert repairs and all("rtl" in n for n in repairs), names
    assert len(set(repairs)) == len(repairs), names
    assert names[:3] == ["references", "generate", "verify"], names


def test_progress_bars_show_the_time_remaining():
    from rich.console import Console
    from rich.progress import TimeRemainingColumn

    from flows.cli.run import _progress

    p = _progress(Console(file=io.StringIO()))
    assert any(isinstance(c, TimeRemainingColumn) for c in p.columns)
