"""The JSONL exchange with a node that has no Ray, Prefect or lake (a GPU box):
`crucible pending` writes worker input, `python -m verifiers.triton` verifies it,
`crucible ingest` brings the verdicts back. On CPU, with the CPU gates only."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows import stages
from flows.cli import app
from flows.stages import PipelineSettings
from tests.flows.lakeq import q
from verifiers.catalog import load_task
from verifiers.contract import Status, Verdict, content_id
from verifiers.kernels.verifier import TritonVerifier
from verifiers.registry import get_verifier

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("relu", "softmax_rows")
CPU_GATES = "parse,anticheat,compile,launch,correct"
runner = CliRunner()


def triton_catalog(tmp: Path) -> Path:
    """A catalog copy with two triton tasks only (task names repeat across cuda/triton)."""
    root = tmp / "catalog"
    for n in NAMES:
        shutil.copytree(ROOT / "tasks" / "triton" / n, root / "triton" / n)
    return root


def pending(lake: Path, *args: str) -> tuple[list[dict], str]:
    res = runner.invoke(app, ["pending", "--domain", "triton", "--lake", str(lake), *args])
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in res.stdout.splitlines() if x.strip()]
    return lines, res.stderr


@pytest.fixture(scope="module")
def exchanged(tmp_path_factory):
    """A lake with the generate stage's candidates for 2 triton tasks, the worker input
    `crucible pending` wrote for them, and the verdicts the worker wrote back."""
    tmp = tmp_path_factory.mktemp("exchange")
    root = triton_catalog(tmp)
    lake = tmp / "lake"
    settings = PipelineSettings(lake=lake, task_roots=(root,), domains=("triton",))
    with stages.stage_context(settings, "test-exchange") as ctx:
        stages.ingest(ctx)
        stages.generate(ctx)
    n_cand = q(lake, "SELECT count(*) FROM candidates")[0][0]
    assert n_cand >= 2 * len(NAMES)

    work = tmp / "work.jsonl"
    args = ["--lake", str(lake), "--gates", CPU_GATES, "--out", str(work)]
    res = runner.invoke(app, ["pending", "--domain", "triton", *args])
    assert res.exit_code == 0, res.output
    assert f"{n_cand} triton candidate(s) pending" in res.stderr and res.stdout == ""

    verdicts = tmp / "verdicts.jsonl"
    worker = [sys.executable, "-m", "verifiers.triton", str(work), "--out", str(verdicts)]
    proc = subprocess.run(
        # One candidate at a time on one runner. A batch (verify_many) starts its runners
        # from WorkerPool.warm_up's short-lived threads, and bwrap --die-with-parent is
        # SIGKILLed when the thread that started it exits: the first candidate then fails
        # as runtime_error "runner process exited (status -9)" (verifiers/warm.py).
        [*worker, "--batch", "1", "--workers", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return lake, root, work, verdicts, n_cand


def test_pending_writes_one_worker_line_per_candidate(exchanged):
    """Over 30 s with its set-up: the module's lake (ingest and generate of two Triton
    tasks) and a real `python -m verifiers.triton` worker over every candidate."""
    lake, root, work, _, n_cand = exchanged
    lines = [json.loads(x) for x in work.read_text().splitlines()]
    assert len(lines) == n_cand
    ids = {r[0] for r in q(lake, "SELECT candidate_id FROM candidates")}
    assert {x["candidate"]["candidate_id"] for x in lines} == ids
    for x in lines:
        assert x["candidate"]["task_id"] == x["task"]["task_id"]
        assert x["limits"]["gates"] == CPU_GATES.split(",")
    # the same selection to stdout; --limit, --task and --tasks narrow it
    out, err = pending(lake, "--limit", "3")
    assert len(out) == 3 and "limits" not in out[0] and f"3 of {n_cand}" in err
    out, _ = pending(lake, "--task", "relu")
    assert out and {x["task"]["name"] for x in out} == {"relu"}
    only_relu = root.parent / "only_relu"
    shutil.copytree(root / "triton" / "relu", only_relu / "triton" / "relu")
    assert pending(lake, "--tasks", str(only_relu))[0] == out
    res = runner.invoke(app, ["pending", "--domain", "triton", "--lake", str(lake), "--gates", "x"])
    assert res.exit_code == 2 and "parse,anticheat" in res.output


def _unknown_candidate_line(task_id: str) -> str:
    v = get_verifier("triton")
    verdict = Verdict(
        candidate_id=content_id(task_id, "# never generated\n"),
        task_id=task_id,
        domain="triton",
        verifier=v.name,
        verifier_version=v.version,
        status=Status.WRONG_ANSWER,
    )
    return json.dumps(verdict.to_dict())


def test_ingest_refuses_bad_lines_keeps_the_rest_and_is_idempotent(exchanged, tmp_path):
    lake, _, _, verdicts, n_cand = exchanged
    good = verdicts.read_text().splitlines()
    assert len(good) == n_cand
    by_id = {json.loads(x)["candidate_id"]: json.loads(x) for x in good}
    tids = sorted({d["task_id"] for d in by_id.values()})
    # a real verdict moved to the other task: right id, wrong task for its candidate
    moved = dict(json.loads(good[0]))
    moved["task_id"] = next(t for t in tids if t != moved["task_id"])
    partial = tmp_path / "partial.jsonl"
    partial.write_text(
        "\n".join(
            [good[0], "{not json", *good[1:-2], _unknown_candidate_line(tids[0]), json.dumps(moved)]
        )
        + "\n"
    )
    res = runner.invoke(app, ["ingest", str(partial), "--lake", str(lake)])
    assert res.exit_code == 1, res.output
    refused = [x for x in res.stderr.splitlines() if x.startswith("refused ")]
    assert len(refused) == 3
    assert refused[0].startswith(f"refused {partial}:2: malformed")
    assert f"{partial}:{n_cand}: " in refused[1] and "not in the lake" in refused[1]
    assert f"{partial}:{n_cand + 1}: " in refused[2] and "belongs to task" in refused[2]
    assert f"{n_cand - 2} added, 0 already present, 3 refused" in res.stdout
    assert q(lake, "SELECT count(*) FROM verdicts")[0][0] == n_cand - 2

    # the whole file: the two left out go in, the rest are already there
    res = runner.invoke(app, ["ingest", str(verdicts), "--lake", str(lake)])
    assert res.exit_code == 0, res.output
    assert f"2 added, {n_cand - 2} already present, 0 refused" in res.stdout
    # once more: nothing new
    res = runner.invoke(app, ["ingest", str(verdicts), "--lake", str(lake)])
    assert res.exit_code == 0 and f"0 added, {n_cand} already present" in res.stdout
    assert q(lake, "SELECT count(*) FROM raw_verdicts")[0][0] == n_cand

    # the lake holds exactly what the worker said
    rows = q(lake, "SELECT candidate_id, status, code, verifier_version FROM verdicts")
    assert {r[0]: (r[1], r[2]) for r in rows} == {
        cid: (d["status"], d["code"]) for cid, d in by_id.items()
    }
    runs = q(lake, "SELECT flow, status, counts FROM runs ORDER BY started_at")
    assert [(f, s) for f, s, _ in runs] == [("ingest", "completed")] * 3
    assert [json.loads(c)["verdicts_written"] for _, _, c in runs] == [n_cand - 2, 2, 0]

    # CPU gates only: the reference passes, a perturbation fails as the candidate's fault
    judged = q(
        lake,
        "SELECT c.origin, v.status FROM candidates c JOIN verdicts v USING (candidate_id)",
    )
    assert {s for o, s in judged if o == "reference"} == {"pass"}
    assert any(o == "perturb" and s not in ("pass", "infra_error") for o, s in judged)

    # for those gates nothing is left pending but what the infrastructure failed (retried
    # by design); for the full verifier (the GPU gates too) every candidate still is
    infra = {cid for cid, d in by_id.items() if d["status"] == "infra_error"}
    out, err = pending(lake, "--gates", CPU_GATES)
    assert {x["candidate"]["candidate_id"] for x in out} == infra
    assert f"{len(infra)} triton candidate(s) pending" in err
    assert "+gates:" in err
    full, err = pending(lake)
    assert {x["candidate"]["candidate_id"] for x in full} == set(by_id)
    v = TritonVerifier.version
    assert {r[3] for r in rows} == {f"{v}+gates:parse,anticheat,compile,launch,correct"}


def test_ingest_needs_an_existing_lake_and_files(tmp_path):
    f = tmp_path / "v.jsonl"
    f.write_text("")
    res = runner.invoke(app, ["ingest", str(f), "--lake", str(tmp_path / "nolake")])
    assert res.exit_code == 2 and "no lake" in res.stderr
    assert not (tmp_path / "nolake").exists()
    res = runner.invoke(app, ["ingest", str(tmp_path / "missing.jsonl")])
    assert res.exit_code == 2 and "no such file" in res.output


def test_verify_gates_turns_no_gpu_into_a_cpu_verdict(tmp_path):
    root = triton_catalog(tmp_path)
    ref = root / "triton" / "relu" / "ref.py"
    tid = load_task(root / "triton" / "relu").task_id[:12]
    base = ["verify", "--tasks", str(root), "--task", tid, str(ref), "--json"]
    try:
        res = runner.invoke(app, [*base, "--gates", CPU_GATES])
        assert res.exit_code == 0, res.output
        v = json.loads(res.stdout)
        assert v["status"] == "pass"
        assert [c["name"] for c in v["checks"]][-1] == "correct"
        res = runner.invoke(app, base)
        assert res.exit_code == 3, res.output
        v = json.loads(res.stdout)
        assert (v["status"], v["code"]) == ("infra_error", "no_gpu")
        res = runner.invoke(app, [*base, "--gates", "compile", "--sim-only"])
        assert res.exit_code == 2
    finally:
        get_verifier("triton").close()
