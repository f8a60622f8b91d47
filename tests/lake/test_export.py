"""Exports from a real lake: layout, TRL row shapes, eligibility, mix, manifest, atomicity."""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import itertools
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from generators.prompts import answer, instruction_messages
from lake import db
from lake.export import (
    KINDS,
    READ_TABLES,
    SQL_FILES,
    ExportError,
    ExportResult,
    ExportRow,
    ExportSettings,
    build_sft_optimize,
    export,
    optimize_message,
    perf_metric,
    sample,
)
from lake.schema import to_timestamp
from lake.store import Lake
from lake.writer import BatchWriter
from tests.lake.export_fixtures import Scenario, build, catalog_tasks
from verifiers import domain as domains
from verifiers.contract import Candidate, Check, Task, Verdict, content_id, utc_now
from verifiers.domain import PerfMetric

SHARD = re.compile(r"train-(\d{5})-of-(\d{5})\.parquet")
THRESHOLD = 0.7


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    return build(tmp_path_factory.mktemp("export") / "lake")


def run_export(s: Scenario, out: Path, **kw: Any) -> ExportResult:
    settings = ExportSettings(out=out, name=kw.pop("name", "ex"), **kw)
    con = db.connect(s.lake)
    try:
        return export(s.lake, con, settings, run_id="test-run")
    finally:
        con.close()


def shards(path: Path, kind: str) -> list[Path]:
    return sorted((path / "data" / kind).iterdir())


def read_kind(path: Path, kind: str) -> list[dict[str, Any]]:
    return [row for f in shards(path, kind) for row in pq.read_table(f).to_pylist()]


def read_jsonl(path: Path, kind: str) -> list[dict[str, Any]]:
    lines = (path / "jsonl" / f"{kind}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def all_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for kind in KINDS:
        for row in read_kind(path, kind):
            yield kind, row


def texts(row: dict[str, Any]) -> list[str]:
    msgs = [*row.get("messages", []), *row.get("prompt", []), *row.get("completion", [])]
    msgs += [*row.get("chosen", []), *row.get("rejected", [])]
    return [m["content"] for m in msgs]


def jaccard(a: str, b: str) -> float:
    from lake.dedup import DedupSettings, shingle_set

    settings = DedupSettings(threshold=THRESHOLD)
    sa, sb = shingle_set(a, "rtl", settings), shingle_set(b, "rtl", settings)
    return len(sa & sb) / len(sa | sb)


def assert_conversation(messages: list[dict[str, str]], *, ends_with: str) -> None:
    """System first if at all, then user/assistant strictly alternating from user."""
    assert all(set(m) == {"role", "content"} and m["content"].strip() for m in messages)
    roles = [m["role"] for m in messages]
    if roles and roles[0] == "system":
        roles = roles[1:]
    assert roles, "no turns after the system message"
    expected = ["user" if i % 2 == 0 else "assistant" for i in range(len(roles))]
    assert roles == expected, roles
    assert roles[-1] == ends_with


# --- layout ------------------------------------------------------------------------------


def test_layout_is_hugging_face_parquet_shards_and_jsonl(scenario: Scenario, tmp_path: Path):
    result = run_export(scenario, tmp_path, shard_rows=1)
    assert result.path == tmp_path / "ex"
    assert sorted(p.name for p in result.path.iterdir()) == [
        "README.md",
        "counts.png",
        "data",
        "jsonl",
        "manifest.json",
    ]
    assert sorted(p.name for p in (result.path / "data").iterdir()) == sorted(KINDS)
    for kind in KINDS:
        files = shards(result.path, kind)
        matches = [SHARD.fullmatch(f.name) for f in files]
        assert all(matches), [f.name for f in files]
        count = result.counts[kind]
        assert count > 0, kind
        assert [int(m.group(1)) for m in matches] == list(range(count))  # one row per shard
        assert {int(m.group(2)) for m in matches} == {count}
        rows = read_kind(result.path, kind)
        assert len(rows) == count
        assert rows == read_jsonl(result.path, kind)


def test_shards_split_by_shard_rows(scenario: Scenario, tmp_path: Path):
    result = run_export(scenario, tmp_path, kinds=("sft_direct",), shard_rows=3)
    assert result.counts == {"sft_direct": 4}
    files = shards(result.path, "sft_direct")
    assert [f.name for f in files] == [
        "train-00000-of-00002.parquet",
        "train-00001-of-00002.parquet",
    ]
    assert [pq.read_metadata(f).num_rows for f in files] == [3, 1]


# --- row shapes --------------------------------------------------------------------------


def test_sft_rows_are_trl_conversations(scenario: Scenario, tmp_path: Path):
    result = run_export(scenario, tmp_path)
    tasks = {t.task_id: t for t in scenario.tasks.values()}
    for kind in ("sft_direct", "sft_repair", "sft_optimize"):
        rows = read_kind(result.path, kind)
        assert rows, kind
        for row in rows:
            msgs = row["messages"]
            assert_conversation(msgs, ends_with="assistant")
            task = tasks[row["task_id"]]
            assert msgs[:2] == instruction_messages(task)  # the generator's own prompt
            assert msgs[-1] == answer(task, scenario.code[row["candidate_id"]])
    direct = read_kind(result.path, "sft_direct")
    assert all(len(r["messages"]) == 3 for r in direct)
    optimize = read_kind(result.path, "sft_optimize")
    assert all(len(r["messages"]) == 5 for r in optimize)


def test_dpo_rows_are_trl_preference_pairs(scenario: Scenario, tmp_path: Path):
    rows = read_kind(run_export(scenario, tmp_path).path, "dpo")
    tasks = {t.task_id: t for t in scenario.tasks.values()}
    assert rows
    for row in rows:
        assert_conversation(row["prompt"], ends_with="user")
        assert row["prompt"] == instruction_messages(tasks[row["task_id"]])
        assert [m["role"] for m in row["chosen"]] == ["assistant"]
        assert [m["role"] for m in row["rejected"]] == ["assistant"]
        assert row["chosen"] != row["rejected"]
        assert row["candidate_id"] == row["chosen_id"]
        assert (
            row["chosen"][0]["content"]
            == answer(tasks[row["task_id"]], scenario.code[row["chosen_id"]])["content"]
        )


# --- eligibility -------------------------------------------------------------------------


def test_only_train_keepers_are_subjects_and_nothing_ineligible_appears(
    scenario: Scenario, tmp_path: Path
):
    holdout = {t.task_id for t in scenario.tasks.values() if t.split == "holdout"}
    never = [
        "adder_neardup",  # passing non-keeper
        "adder_wa_contam",  # contaminated failure
        "adder_infra",  # judged only by an infra error (its dedup row says keeper)
        "adder_infra_fail",  # an infra error inside a trajectory
        "adder_contam",  # contaminated keeper
        "adder_nodedup",  # passes, dedup never saw it
        "alu_demoted",  # was a keeper in an older dedup pass
        "cmp_ref",  # holdout
        "cmp_wa",  # holdout
    ]
    never_code = [scenario.code[scenario.ids[label]].strip() for label in never]
    for seed in range(4):
        out = tmp_path / f"seed{seed}"
        result = run_export(scenario, out, seed=seed, dpo_other_failures=True)
        seen = list(all_rows(result.path))
        assert {kind for kind, _ in seen} == set(KINDS)
        for kind, row in seen:
            assert row["task_id"] not in holdout
            if kind in ("sft_repair", "sft_repair_completion"):
                # a repair's fix may be a non-keeper (chains converge on one verified
                # variant); it must pass and not be contaminated
                assert scenario.label(row["candidate_id"]) in ("alu_fix", "adder_ref",
                    "adder_rewrite", "alu_ref", "fifo_ref"), row["candidate_id"]  # fmt: skip
            else:
                assert row["candidate_id"] in scenario.keepers, (kind, row["candidate_id"])
            ids = {row.get(k) for k in ("candidate_id", "chosen_id", "rejected_id", "baseline_id")}
            assert not ids & scenario.contaminated
            assert not set(row["source_verdict_ids"]) & scenario.infra_verdicts
            for text in texts(row):
                assert not [c for c in never_code if c in text], (kind, row["candidate_id"])


def test_alu_reference_reverified_with_an_infra_error_still_exports(
    scenario: Scenario, tmp_path: Path
):
    rows = read_kind(run_export(scenario, tmp_path, kinds=("sft_direct",)).path, "sft_direct")
    subjects = {scenario.label(r["candidate_id"]) for r in rows}
    assert subjects == {"adder_ref", "adder_rewrite", "alu_ref", "fifo_ref"}


def test_dpo_rejected_compiled_and_functional_first(scenario: Scenario, tmp_path: Path):
    for seed in range(4):
        rows = read_kind(run_export(scenario, tmp_path / str(seed), seed=seed).path, "dpo")
        pairs = {(scenario.label(r["chosen_id"]), scenario.label(r["rejected_id"])) for r in rows}
        assert all(r["rejected_id"] in scenario.compiled_failures for r in rows)
        # Each candidate used once; adder8's two functional failures beat its timeout.
        assert {c for c, _ in pairs} == {"adder_ref", "adder_rewrite", "alu_ref"}
        assert {r for _, r in pairs} == {"adder_wa1", "adder_wa2", "alu_wa"}
        assert len(rows) == 3
        assert {r["rejected_status"] for r in rows} == {"wrong_answer"}


def test_dpo_other_failures_only_when_asked(scenario: Scenario, tmp_path: Path):
    rows = read_kind(run_export(scenario, tmp_path, dpo_other_failures=True).path, "dpo")
    pairs = {scenario.label(r["chosen_id"]): scenario.label(r["rejected_id"]) for r in rows}
    # sync_fifo8 has only compile errors: a pair only now; adder8 still takes compiled ones.
    assert pairs["fifo_ref"] in {"fifo_ce1", "fifo_ce2"}
    assert {pairs["adder_ref"], pairs["adder_rewrite"]} == {"adder_wa1", "adder_wa2"}
    uncompiled = [r for r in rows if r["rejected_id"] not in scenario.compiled_failures]
    assert [scenario.label(r["chosen_id"]) for r in uncompiled] == ["fifo_ref"]


def test_repair_rows_are_multi_turn_and_near_duplicate_openings_collapse(
    scenario: Scenario, tmp_path: Path
):
    # The fixture's premise: the two adder8 trajectories open with near copies.
    wa1, wa2 = (scenario.code[scenario.ids[k]] for k in ("adder_wa1", "adder_wa2"))
    assert jaccard(wa1, wa2) >= THRESHOLD
    result = run_export(scenario, tmp_path)
    rows = read_kind(result.path, "sft_repair")
    got = {r["trajectory_id"]: r for r in rows}
    # adder_long loses to adder_short (fewer rounds); adder_infra has an infra turn;
    # cmp_holdout is holdout. alu_nonkeeper_fix ends in a passing non-keeper, which a
    # repair row may do: many chains converge on one verified variant.
    expect = {scenario.trajectories[k] for k in ("adder_short", "fifo", "alu_nonkeeper_fix")}
    assert set(got) == expect
    assert result.manifest["stats"]["sft_repair"]["near_duplicates_dropped"] == 1
    fifo = got[scenario.trajectories["fifo"]]
    assert fifo["rounds"] == 3
    roles = [m["role"] for m in fifo["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    feedback = fifo["messages"][3]["content"]
    assert "compile_error" in feedback and "fifo_ce1: compile_error" in feedback
    assert fifo["messages"][2]["content"].count("reg [2:0] wp, rp\n") == 1  # the broken code
    assert len(fifo["source_verdict_ids"]) == 3


def test_subjects_of_a_kind_are_not_near_duplicates(scenario: Scenario, tmp_path: Path):
    # Premise: the non-keeper near copy would fail this check were it exported.
    ref, near = (scenario.code[scenario.ids[k]] for k in ("adder_ref", "adder_neardup"))
    assert jaccard(ref, near) >= THRESHOLD
    result = run_export(scenario, tmp_path, dpo_other_failures=True)
    for kind in KINDS:
        subjects = sorted({r["candidate_id"] for r in read_kind(result.path, kind)})
        for a, b in itertools.combinations(subjects, 2):
            assert jaccard(scenario.code[a], scenario.code[b]) < THRESHOLD, (kind, a, b)
    firsts = [r["messages"][2]["content"] for r in read_kind(result.path, "sft_repair")]
    for a, b in itertools.combinations(firsts, 2):
        assert jaccard(a, b) < THRESHOLD


def test_optimize_pairs_worse_to_better_by_the_margin(scenario: Scenario, tmp_path: Path):
    rows = read_kind(run_export(scenario, tmp_path).path, "sft_optimize")
    assert [
        (scenario.label(r["baseline_id"]), scenario.label(r["candidate_id"])) for r in rows
    ] == [("adder_ref", "adder_rewrite")]
    (row,) = rows
    assert (row["metric"], row["baseline_value"], row["value"]) == ("area", 100.0, 60.0)
    ask = row["messages"][3]
    assert ask["role"] == "user" and "area 100 um^2" in ask["content"]
    assert "smaller" in ask["content"] and "cells 20" in ask["content"]
    assert row["messages"][2] == answer(scenario.tasks["adder8"], scenario.code[row["baseline_id"]])
    wide = run_export(scenario, tmp_path / "wide", kinds=("sft_optimize",), optimize_margin=0.5)
    assert wide.counts == {"sft_optimize": 0}  # 100 -> 60 is 40%, below a 50% margin
    assert [f.name for f in shards(wide.path, "sft_optimize")] == ["train-00000-of-00001.parquet"]


def _mini_lake(root: Path, task: Task, outcomes: dict[str, tuple]) -> tuple[Lake, dict[str, str]]:
    """A lake with `task` and, per label, a candidate with its verdict (status, checks,
    metrics); passes are current dedup keepers. Returns the lake and label -> id."""
    lake = Lake(root)
    ids = {}
    with BatchWriter(lake, run_id="mini") as w:
        w.add_task(task)
        for label, (status, checks, metrics) in outcomes.items():
            c = Candidate(task_id=task.task_id, code=f"// {label}\n", origin="llm", generator="t")
            ids[label] = c.candidate_id
            w.add_candidate(c, task.domain)
            w.add_verdict(
                Verdict(
                    candidate_id=c.candidate_id,
                    task_id=task.task_id,
                    domain=task.domain,
                    verifier=task.domain,
                    verifier_version="1",
                    status=status,
                    checks=checks,
                    metrics=metrics,
                )
            )
            if status == "pass":
                w.add("dedup", [_keeper_row(c, task)])
    return lake, ids


def _keeper_row(c: Candidate, task: Task) -> dict[str, Any]:
    return {
        "dedup_id": content_id("dedup", c.candidate_id),
        "candidate_id": c.candidate_id,
        "task_id": task.task_id,
        "domain": task.domain,
        "exact_key": content_id(c.code),
        "cluster_id": c.candidate_id,
        "cluster_size": 1,
        "keeper": True,
        "contaminated": False,
        "contamination": None,
        "params": "{}",
        "run_id": "mini",
        "created_at": to_timestamp(utc_now()),
    }


def test_dpo_compiled_means_every_build_stage_check_passed(tmp_path: Path):
    # stages, not gate names: a build-stage gate that failed after the compiler (lint,
    # synthesis) means it did not compile; a run-stage failure after them does not
    rtl = domains.get("rtl")

    def ran(*gates: tuple[str, bool]) -> tuple[Check, ...]:
        return tuple(Check(g, ok, 0.1, stage=rtl.stage_of(g)) for g, ok in gates)

    ok = [("format", True), ("static", True), ("compile", True), ("lint", True)]
    lake, ids = _mini_lake(
        tmp_path / "lake",
        catalog_tasks()["adder8"],
        {
            "chosen": ("pass", ran(*ok, ("simulate", True), ("synthesize", True)), {}),
            "sim_fails": ("wrong_answer", ran(*ok, ("simulate", False)), {}),
            "lint_fails": ("compile_error", ran(*ok[:3], ("lint", False)), {}),
            "synth_fails": (
                "compile_error",
                ran(*ok, ("simulate", True), ("synthesize", False)),
                {},
            ),
            "equiv_fails": (
                "wrong_answer",
                ran(*ok, ("simulate", True), ("synthesize", True), ("equivalence", False)),
                {},
            ),
            "no_build_check": ("wrong_answer", (Check("simulate", False, 0.1, stage="run"),), {}),
            "no_stage": ("wrong_answer", (Check("compile", True, 0.1),), {}),
        },
    )
    con = db.connect(lake)
    try:
        got = {
            r["candidate_id"]: r["compiled"]
            for r in db.rows(con, "export_dpo", other_failures=True)
        }
    finally:
        con.close()
    label = {v: k for k, v in ids.items()}
    assert {label[c] for c, compiled in got.items() if compiled} == {
        "chosen",
        "sim_fails",
        "equiv_fails",
    }
    assert set(map(label.get, got)) == set(ids)


def test_a_registered_descriptor_gives_the_optimize_metric(tmp_path: Path):
    # a new domain declares its metric: an optimize pair needs no line in lake/export.py
    dsp = dataclasses.replace(
        domains.get("rtl"),
        name="test_dsp",
        perf=PerfMetric("cycles", "lower", "cycles"),
        settings=None,
        default_run=False,
        perturb=None,
    )
    domains.register(dsp)
    try:
        task = Task("fir", "test_dsp", "dsp", 1, "Write fir.", {"entry": "fir"}, {}, None, {})
        passed = (Check("compile", True, 0.1, stage="build"),)
        lake, ids = _mini_lake(
            tmp_path / "lake",
            task,
            {
                "slow": ("pass", passed, {"cycles": 100, "area": 5.0}),
                "fast": ("pass", passed, {"cycles": 50, "area": 9.0}),
            },
        )
        con = db.connect(lake)
        try:
            rows, _ = build_sft_optimize(con, {task.task_id: task}, ExportSettings())
        finally:
            con.close()
        (row,) = rows
        assert (row.data["baseline_id"], row.data["candidate_id"]) == (ids["slow"], ids["fast"])
        assert (row.data["metric"], row.data["baseline_value"], row.data["value"]) == (
            "cycles",
            100.0,
            50.0,
        )
        ask = row.data["messages"][3]["content"]
        assert "cycles 100 cycles; area 5" in ask and "Make it smaller (lower cycles)" in ask
        faster = dataclasses.replace(dsp, perf=PerfMetric("ipc", "higher", "instr/cycle"))
        domains.register(faster, overwrite=True)
        msg = optimize_message("test_dsp", {"ipc": 1.5})["content"]
        assert "ipc 1.5 instr/cycle" in msg and "Make it faster (higher ipc)" in msg
    finally:
        domains.unregister("test_dsp")
    assert perf_metric("cad") is None and perf_metric("no_such") is None
    with pytest.raises(ValueError, match="declares no perf metric"):
        optimize_message("cad", {})


# --- mix ---------------------------------------------------------------------------------


def test_share_zero_drops_a_level(scenario: Scenario, tmp_path: Path):
    full = run_export(scenario, tmp_path / "full")
    dropped = run_export(scenario, tmp_path / "drop", mix={"level": {1: 0, "*": 1}})
    assert any(r["level"] == 1 for _, r in all_rows(full.path))
    rows = list(all_rows(dropped.path))
    assert rows and all(r["level"] != 1 for _, r in rows)
    assert dropped.counts["sft_direct"] == 2  # alu8 (level 2) and sync_fifo8 (level 3)
    assert dropped.manifest["stats"]["sft_direct"]["eligible"] == 4


def test_size_caps_each_kind_deterministically(scenario: Scenario, tmp_path: Path):
    a = run_export(scenario, tmp_path / "a", size=1, seed=7)
    b = run_export(scenario, tmp_path / "b", size=1, seed=7)
    assert all(n <= 1 for n in a.counts.values()) and a.counts["sft_direct"] == 1
    assert read_kind(a.path, "sft_direct") == read_kind(b.path, "sft_direct")
    picks = {
        read_kind(
            run_export(
                scenario, tmp_path / f"s{seed}", kinds=("sft_direct",), size=1, seed=seed
            ).path,
            "sft_direct",
        )[0]["candidate_id"]
        for seed in range(8)
    }
    assert len(picks) > 1  # the seed decides


def synthetic(n: int, level: int) -> list[ExportRow]:
    return [
        ExportRow(
            f"L{level}-{i}",
            {"domain": "rtl", "level": level, "origin": "perturb"},
            ("", "", "", ""),
        )
        for i in range(n)
    ]


def test_shares_are_quotas_of_the_size_drawn_by_the_seed():
    rows = synthetic(1000, 1) + synthetic(1000, 3)
    for share, n3 in ((0.5, 100), (0.75, 150), (0.333, 67)):
        settings = ExportSettings(mix={"level": {"3": share, "1": 1 - share}}, size=200, seed=3)
        picked = sample(rows, "sft_direct", settings)
        assert len(picked) == 200 and len({r.key for r in picked}) == 200  # no replacement
        assert sum(r.data["level"] == 3 for r in picked) == n3
        assert [r.key for r in sample(rows, "sft_direct", settings)] == [r.key for r in picked]
        other = sample(rows, "sft_direct", dataclasses.replace(settings, seed=4))
        assert {r.key for r in other} != {r.key for r in picked}


def test_sampling_without_size_keeps_all_the_shares_allow():
    rows = synthetic(10, 1) + synthetic(10, 2) + synthetic(10, 3)
    settings = ExportSettings(mix={"level": {"2": 0, "*": 5}})
    picked = sample(rows, "dpo", settings)
    assert sorted(r.key for r in picked) == sorted(r.key for r in rows if r.data["level"] != 2)
    only3 = ExportSettings(mix={"level": {"3": 1}})  # the values not named get none
    assert {r.data["level"] for r in sample(rows, "dpo", only3)} == {3}


def test_settings_are_checked():
    with pytest.raises(ValueError, match="kinds"):
        ExportSettings(kinds=("sft_direct", "rlhf"))
    with pytest.raises(ValueError, match="mix dimension"):
        ExportSettings(mix={"family": {"fifo": 1}})
    with pytest.raises(ValueError, match=">= 0"):
        ExportSettings(mix={"level": {"1": -1}})
    with pytest.raises(ValueError, match="every share is 0"):
        ExportSettings(mix={"level": {"1": 0}})
    with pytest.raises(ValueError, match="export name"):
        ExportSettings(name="../up")


# --- manifest, card, record ----------------------------------------------------------------


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_manifest_hashes_versions_and_sql(scenario: Scenario, tmp_path: Path):
    result = run_export(scenario, tmp_path, shard_rows=2)
    manifest = json.loads((result.path / "manifest.json").read_text())
    assert manifest == result.manifest
    listed = {f["path"]: f for f in manifest["files"]}
    on_disk = {
        str(p.relative_to(result.path))
        for p in result.path.rglob("*")
        if p.is_file() and p.parent != result.path
    }
    assert set(listed) == on_disk
    for rel, entry in listed.items():
        assert entry["sha256"] == sha256(result.path / rel), rel
        if rel.endswith(".parquet"):
            assert entry["rows"] == pq.read_metadata(result.path / rel).num_rows
    versions = scenario.lake.versions()
    assert manifest["lake_versions"] == {t: versions[t] for t in READ_TABLES}
    for name, digest in manifest["sql"].items():
        assert digest == sha256(db.SQL_DIR / name)
    assert set(manifest["sql"]) >= {f"{SQL_FILES[k]}.sql" for k in KINDS}
    assert manifest["counts"] == result.counts
    assert sum(manifest["counts_by_domain"]["sft_direct"].values()) == result.counts["sft_direct"]
    (v,) = manifest["verifiers"]
    assert (v["domain"], v["verifier"], v["version"]) == ("rtl", "rtl", "1")
    assert v["toolchain"] == {"iverilog": "12.0", "yosys": "0.38"}
    assert manifest["settings"]["seed"] == 0 and manifest["settings"]["kinds"] == list(KINDS)


def front_matter(text: str) -> dict[str, Any]:
    assert text.startswith("---\n")
    head, _, _ = text[4:].partition("\n---\n")
    return yaml.safe_load(head)


def test_dataset_card_declares_one_config_per_kind(scenario: Scenario, tmp_path: Path):
    result = run_export(scenario, tmp_path, shard_rows=2)
    card = (result.path / "README.md").read_text()
    meta = front_matter(card)
    assert "license" not in meta  # none chosen: the card says so (test_export_card.py)
    assert meta["task_categories"] == ["text-generation"]
    assert [c["config_name"] for c in meta["configs"]] == list(KINDS)
    for config in meta["configs"]:
        (files,) = config["data_files"]
        assert files["split"] == "train"
        parquet = [str(p.relative_to(result.path)) for p in result.path.rglob("*.parquet")]
        matched = {p for p in parquet if fnmatch.fnmatch(p, files["path"])}
        assert matched == {
            str(p.relative_to(result.path)) for p in shards(result.path, config["config_name"])
        }
    assert 'load_dataset("path/to/ex", "sft_direct"' in card
    assert f"| sft_direct | {result.counts['sft_direct']} | {result.counts['sft_direct']} |" in card
    assert "| rtl | rtl | 1 | iverilog 12.0, yosys 0.38 |" in card


def test_same_lake_and_settings_give_the_same_export(scenario: Scenario, tmp_path: Path):
    a = run_export(scenario, tmp_path, name="a", shard_rows=3, seed=11)
    b = run_export(scenario, tmp_path, name="b", shard_rows=3, seed=11)
    assert a.manifest["export_id"] == b.manifest["export_id"]
    assert a.manifest["files"] == b.manifest["files"]
    c = run_export(scenario, tmp_path, name="c", shard_rows=3, seed=12)
    assert c.manifest["export_id"] != a.manifest["export_id"]
    con = db.connect(scenario.lake)
    try:
        got = con.execute(
            "SELECT name, path, kinds, rows, manifest, run_id FROM exports WHERE export_id = ?",
            [a.manifest["export_id"]],
        ).fetchall()
    finally:
        con.close()
    assert len(got) == 1  # the second export of the same content adds no row
    name, path, kinds, rows, manifest, run_id = got[0]
    assert (name, path, kinds, run_id) == ("a", str(a.path), list(KINDS), "test-run")
    assert rows == sum(a.counts.values())
    assert json.loads(manifest) == a.manifest


def test_an_unnamed_export_of_an_unchanged_lake_keeps_the_first_copy(
    scenario: Scenario, tmp_path: Path
):
    first = run_export(scenario, tmp_path, name="", seed=5)
    time.sleep(0.01)  # default names carry the time in milliseconds
    again = run_export(scenario, tmp_path, name="", seed=5)
    assert again.path == first.path
    assert [p.name for p in tmp_path.iterdir()] == [first.path.name]
    other = run_export(scenario, tmp_path, name="", seed=6)
    assert other.path != first.path and other.path.is_dir()


def test_a_crash_mid_write_leaves_no_export(
    scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    real = pq.write_table
    calls = []

    def write_then_fail(*args: Any, **kw: Any) -> None:
        if calls:
            raise OSError("disk full (simulated)")
        calls.append(args)
        real(*args, **kw)

    monkeypatch.setattr(pq, "write_table", write_then_fail)
    with pytest.raises(OSError, match="disk full"):
        run_export(scenario, tmp_path, name="crashed", shard_rows=1)
    assert calls  # the first shard was written before the crash
    assert list(tmp_path.iterdir()) == []  # neither the export nor its temp dir
    con = db.connect(scenario.lake)
    try:
        assert con.execute("SELECT count(*) FROM exports WHERE name = 'crashed'").fetchone() == (0,)
    finally:
        con.close()


def test_refuses_to_overwrite_an_export(scenario: Scenario, tmp_path: Path):
    first = run_export(scenario, tmp_path, name="x", kinds=("sft_direct",))
    before = sha256(first.path / "manifest.json")
    with pytest.raises(ExportError, match="already exists"):
        run_export(scenario, tmp_path, name="x", kinds=("dpo",))
    assert sha256(first.path / "manifest.json") == before
    assert sorted(p.name for p in (first.path / "data").iterdir()) == ["sft_direct"]


def test_export_without_dedup_says_to_run_it(tmp_path: Path):
    lake = Lake(tmp_path / "lake")
    task = catalog_tasks()["adder8"]
    assert task.reference
    cand = Candidate(task_id=task.task_id, code=task.reference, origin="reference", generator="t")
    verdict = Verdict(
        candidate_id=cand.candidate_id,
        task_id=task.task_id,
        domain="rtl",
        verifier="rtl",
        verifier_version="1",
        status="pass",
        checks=(Check("compile", True, 0.1, stage="build"),),
    )
    with BatchWriter(lake) as w:
        w.add_task(task)
        w.add_candidate(cand, "rtl")
        w.add_verdict(verdict)
    con = db.connect(lake)
    try:
        with pytest.raises(ExportError, match="run `crucible dedup` first"):
            export(lake, con, ExportSettings(out=tmp_path / "out", name="n"))
        # A mix that leaves rtl out needs no rtl dedup.
        mix = {"domain": {"rtl": 0, "*": 1}}
        result = export(lake, con, ExportSettings(out=tmp_path / "out", name="m", mix=mix))
    finally:
        con.close()
    assert sum(result.counts.values()) == 0
    assert not (tmp_path / "out" / "n").exists()


def test_export_after_the_real_dedup_pass(tmp_path: Path):
    from lake.dedup import DedupSettings, run_dedup

    s = build(tmp_path / "lake", hand_dedup=False)
    con = db.connect(s.lake)
    try:
        with pytest.raises(ExportError, match="crucible dedup"):
            export(s.lake, con, ExportSettings(out=tmp_path / "out", name="early"))
        run_dedup(s.lake, con, run_id="dedup", settings=DedupSettings(scheduler="synchronous"))
        result = export(s.lake, con, ExportSettings(out=tmp_path / "out", name="after"))
        judged = con.execute(
            "SELECT candidate_id FROM latest_dedup WHERE keeper AND NOT contaminated"
        ).fetchall()
    finally:
        con.close()
    keepers = {cid for (cid,) in judged}
    holdout = {t.task_id for t in s.tasks.values() if t.split == "holdout"}
    assert result.counts["sft_direct"] > 0 and result.counts["dpo"] > 0
    for kind in KINDS:
        rows = read_kind(result.path, kind)
        assert all(r["candidate_id"] in keepers and r["task_id"] not in holdout for r in rows)
        assert not {v for r in rows for v in r["source_verdict_ids"]} & s.infra_verdicts
        subjects = sorted({r["candidate_id"] for r in rows})
        for a, b in itertools.combinations(subjects, 2):
            assert jaccard(s.code[a], s.code[b]) < THRESHOLD, (kind, s.label(a), s.label(b))
    assert all(r["rejected_id"] in s.compiled_failures for r in read_kind(result.path, "dpo"))


def test_a_pass_whose_equivalence_stayed_unknown_is_left_out_unless_asked(tmp_path: Path):
    # a design that passed its testbench but that formal checking could not prove equal to
    # the reference (e.g. a trojan far past the bound) is never taught as verified code
    from tests.lake.export_fixtures import T0, TOOLCHAIN, checks

    s = build(tmp_path / "lake")
    task = s.tasks["adder8"]
    cid = s.ids["adder_rewrite"]
    later = T0.replace("2025", "2027")
    with BatchWriter(s.lake, run_id="unproven") as w:
        w.add_verdict(
            Verdict(
                candidate_id=cid,
                task_id=task.task_id,
                domain=task.domain,
                verifier="rtl",
                verifier_version="2",
                status="pass",
                checks=checks("pass"),
                metrics={"area": 60.0, "cells": 12, "equivalence": "unknown"},
                toolchain=TOOLCHAIN,
                created_at=later,
            )
        )
    strict = run_export(s, tmp_path / "out", name="strict")
    loose = run_export(s, tmp_path / "out", name="loose", require_proven=False)
    subjects = {r["candidate_id"] for r in read_kind(strict.path, "sft_direct")}
    assert cid not in subjects
    assert cid in {r["candidate_id"] for r in read_kind(loose.path, "sft_direct")}
    for kind in ("dpo", "sft_optimize"):
        for row in read_kind(strict.path, kind):
            assert cid not in (row.get("chosen_id"), row.get("candidate_id"))
    assert strict.manifest["stats"]["sft_direct"]["unproven_dropped"] >= 1
    card = (strict.path / "README.md").read_text()
    assert "require_proven" in card and "testbench" in card


def test_a_flagged_time_is_never_the_better_side_of_an_optimize_pair(tmp_path: Path):
    # a verifier that flagged a timing (an implausible speedup) recorded it: no pair
    # teaches that "gain"; the honest pair remains
    dsp = dataclasses.replace(
        domains.get("rtl"),
        name="test_dsp2",
        perf=PerfMetric("time_ms", "lower", "ms"),
        settings=None,
        default_run=False,
        perturb=None,
    )
    domains.register(dsp)
    try:
        task = Task("fir2", "test_dsp2", "dsp", 1, "Write fir.", {"entry": "fir"}, {}, None, {})
        passed = (Check("compile", True, 0.1, stage="build"),)
        lake, ids = _mini_lake(
            tmp_path / "lake",
            task,
            {
                "slow": ("pass", passed, {"time_ms": 10.0}),
                "fast": ("pass", passed, {"time_ms": 5.0}),
                "cheat": ("pass", passed, {"time_ms": 0.01, "implausible_speedup": True}),
            },
        )
        con = db.connect(lake)
        try:
            rows, _ = build_sft_optimize(con, {task.task_id: task}, ExportSettings())
        finally:
            con.close()
        assert [(r.data["baseline_id"], r.data["candidate_id"]) for r in rows] == [
            (ids["slow"], ids["fast"])
        ]
    finally:
        domains.unregister("test_dsp2")
