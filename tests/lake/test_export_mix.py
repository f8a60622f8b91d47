"""The export mix as target shares (asked vs exported, warnings when short) and repair fixes
that are the task's reference itself (counted on the card, left out on request)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import typer

from lake import db
from lake.export import (
    ExportResult,
    ExportRow,
    ExportSettings,
    draw,
    export,
    export_warnings,
    is_reference_fix,
)
from lake.store import Lake
from tests.lake.export_fixtures import Scenario, build, build_domains, catalog_tasks, run_export

PASSING = {"rtl": 80, "cad": 40, "embedded": 20}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Lake:
    return build_domains(tmp_path_factory.mktemp("mix") / "lake", PASSING)


def export_mixed(lake: Lake, out: Path, **kw: Any) -> ExportResult:
    settings = ExportSettings(out=out, name=kw.pop("name", "ex"), kinds=("sft_direct",), **kw)
    con = db.connect(lake)
    try:
        return export(lake, con, settings, run_id="test-mix")
    finally:
        con.close()


def rows_of(result: ExportResult, kind: str = "sft_direct") -> list[dict[str, Any]]:
    text = (result.path / "jsonl" / f"{kind}.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def by_domain(result: ExportResult) -> dict[str, int]:
    return dict(Counter(r["domain"] for r in rows_of(result)))


def report(result: ExportResult, dim: str = "domain") -> dict[str, dict[str, Any]]:
    entries = result.manifest["mix"]["kinds"]["sft_direct"]["dimensions"][dim]
    return {e["value"]: e for e in entries}


def card(result: ExportResult) -> str:
    return (result.path / "README.md").read_text()


# --- shares ---------------------------------------------------------------------------------


def test_shares_are_shares_of_the_size_and_unnamed_domains_get_none(mixed: Lake, tmp_path: Path):
    # the command: rtl 0.6, embedded 0.4 at size 100 gave rtl 56 / cad 24 / embedded 20
    mix = {"domain": {"rtl": 0.6, "embedded": 0.4}}
    result = export_mixed(mixed, tmp_path, mix=mix, size=100)
    # rtl gets its 60; embedded has 20 rows for its 40, and nobody fills its place
    assert by_domain(result) == {"rtl": 60, "embedded": 20}
    got = report(result)
    assert got["rtl"] == {
        "value": "rtl",
        "named": True,
        "asked": 0.6,
        "target": 60,
        "eligible": 80,
        "exported": 60,
        "share": 0.75,
    }
    assert (got["embedded"]["asked"], got["embedded"]["target"]) == (0.4, 40)
    assert (got["embedded"]["exported"], got["embedded"]["share"]) == (20, 0.25)
    assert got["cad"] == {
        "value": "cad",
        "named": False,
        "asked": 0.0,
        "target": 0,
        "eligible": 40,
        "exported": 0,
        "share": 0.0,
    }
    short = [w for w in result.manifest["warnings"] if "domain embedded" in w]
    assert short == [
        "sft_direct: domain embedded: asked share 0.4 (40 of size 100), exported 20 "
        "(0.25 of 80): only 20 eligible embedded rows"
    ]
    assert any("size 100 asked, exported 80" in w for w in result.manifest["warnings"])
    # the exports row holds the same manifest, the card the same table and warnings
    con = db.connect(mixed)
    try:
        (text,) = con.execute(
            "SELECT manifest FROM exports WHERE export_id = $id",
            {"id": result.manifest["export_id"]},
        ).fetchone()
    finally:
        con.close()
    assert json.loads(text)["mix"] == result.manifest["mix"]
    body = card(result)
    assert "| sft_direct | domain | embedded | 0.4 | 40 | 20 | 20 | 0.25 |" in body
    assert "| sft_direct | domain | cad (not named) | 0 | 0 | 40 | 0 | 0 |" in body
    assert f"- {short[0]}" in body
    # the same lake and settings draw the same rows; another seed others
    again = export_mixed(mixed, tmp_path, name="again", mix=mix, size=100)
    assert rows_of(again) == rows_of(result)
    other = export_mixed(mixed, tmp_path, name="other", mix=mix, size=100, seed=1)
    assert by_domain(other) == by_domain(result) and rows_of(other) != rows_of(result)


def test_shares_not_summing_to_one_are_normalised_and_said_so(mixed: Lake, tmp_path: Path):
    result = export_mixed(mixed, tmp_path, mix={"domain": {"rtl": 3, "cad": 1}}, size=40)
    assert by_domain(result) == {"rtl": 30, "cad": 10}
    assert result.manifest["mix"]["shares"] == {"domain": {"cad": 0.25, "rtl": 0.75}}
    (note,) = result.manifest["mix"]["notes"]
    assert note == "mix domain: the shares sum to 4, not 1: normalised to cad 0.25, rtl 0.75"
    assert note in card(result)
    assert result.manifest["warnings"] == []  # every share met


def test_star_is_the_share_of_the_values_not_named(mixed: Lake, tmp_path: Path):
    from flows.options import parse_mix

    mix = parse_mix('{"domain": {"rtl": 0.5, "*": 0.5}}')
    result = export_mixed(mixed, tmp_path, mix=mix, size=60)
    got = by_domain(result)
    assert got["rtl"] == 30 and got.get("cad", 0) + got.get("embedded", 0) == 30
    assert set(got) == {"rtl", "cad", "embedded"}  # the rest is drawn from both
    assert (report(result)["*"]["target"], report(result)["*"]["exported"]) == (30, 30)


def test_without_a_size_the_largest_export_that_meets_every_share(mixed: Lake, tmp_path: Path):
    mix = {"domain": {"rtl": 0.6, "embedded": 0.4}}
    result = export_mixed(mixed, tmp_path, mix=mix)
    assert by_domain(result) == {"rtl": 30, "embedded": 20}  # embedded's 20 rows are 0.4
    assert result.manifest["mix"]["kinds"]["sft_direct"]["sized_by"] == "shares"
    assert result.manifest["warnings"] == []


def synthetic(cells: dict[tuple[str, int], int]) -> list[ExportRow]:
    return [
        ExportRow(f"{d}-{lv}-{i}", {"domain": d, "level": lv, "origin": "perturb"}, ("",) * 4)
        for (d, lv), n in cells.items()
        for i in range(n)
    ]


def test_several_dimensions_meet_every_dimensions_shares():
    # embedded has only level 1: drawn in plain seeded order, rtl's level-1 rows would take
    # most of level 1's quota first and leave embedded short of its share
    rows = synthetic({("rtl", 1): 100, ("rtl", 2): 100, ("embedded", 1): 40})
    mix = {"domain": {"rtl": 0.6, "embedded": 0.4}, "level": {"1": 0.5, "2": 0.5}}
    for seed in range(3):
        picked = draw(rows, "sft_direct", ExportSettings(mix=mix, size=100, seed=seed)).rows
        assert Counter(r.data["domain"] for r in picked) == {"rtl": 60, "embedded": 40}
        assert Counter(r.data["level"] for r in picked) == {1: 50, 2: 50}


def test_a_quota_that_other_dimensions_keep_from_being_met_says_so():
    rows = synthetic({("rtl", 2): 100, ("embedded", 1): 60})
    mix = {"domain": {"rtl": 0.5, "embedded": 0.5}, "level": {"1": 0.2, "2": 0.8}}
    settings = ExportSettings(mix=mix, size=100)
    drawn = draw(rows, "dpo", settings)
    assert Counter(r.data["domain"] for r in drawn.rows) == {"rtl": 50, "embedded": 20}
    warnings = export_warnings(settings, {"dpo": drawn.rows}, {"dpo": drawn.report})
    assert (
        "dpo: domain embedded: asked share 0.5 (50 of size 100), exported 20 (0.2857 of 70): "
        "60 eligible, but the rest of them fall under quotas of level that were full"
    ) in warnings
    assert any(w.startswith("dpo: level 2: asked share 0.8 (80 of size 100)") for w in warnings)


def test_parse_mix_takes_star_and_refuses_a_mix_that_exports_nothing():
    from flows.options import parse_mix

    assert parse_mix('{"domain": {"rtl": 0.6, "*": 0.4}}') == {"domain": {"rtl": 0.6, "*": 0.4}}
    with pytest.raises(typer.BadParameter, match=r'give the rest a share: \{"level"'):
        parse_mix('{"level": {"1": 0}}')
    with pytest.raises(typer.BadParameter, match="numbers"):
        parse_mix('{"level": {"1": "most"}}')
    with pytest.raises(typer.BadParameter, match="unknown domain 'rtl_typo'"):
        parse_mix('{"domain": {"rtl_typo": 1}}')


def flat(text: str) -> str:
    return " ".join(text.split())


def test_cli_export_prints_shares_asked_and_got_and_warns_when_short(mixed: Lake, tmp_path: Path):
    from typer.testing import CliRunner

    from flows.cli import app

    mix = '{"domain": {"rtl": 0.6, "embedded": 0.4}}'
    args = ["export", "--lake", str(mixed.root), "--out", str(tmp_path), "--kinds", "sft_direct"]
    res = CliRunner().invoke(app, [*args, "--name", "cli", "--mix", mix, "--size", "100"])
    assert res.exit_code == 0, res.output
    text = flat(res.output)
    assert "export: " in text and "(sft_direct 80)" in text
    assert (
        "mix sft_direct by domain, share asked -> got (rows/target): embedded 0.4 -> 0.25 "
        "(20/40), rtl 0.6 -> 0.75 (60/60); not named, left out: cad (40)"
    ) in text
    assert "warning: sft_direct: domain embedded: asked share 0.4 (40 of size 100)" in text
    star = CliRunner().invoke(
        app, [*args, "--name", "star", "--mix", '{"domain": {"rtl": 0.6, "*": 0.4}}']
    )
    assert star.exit_code == 0, star.output
    # no size: the largest export that meets both shares, rtl's 80 rows being 0.6 of it
    assert "rtl 0.6 -> 0.602 (80/80), the rest (*) 0.4 -> 0.399 (53/53)" in flat(star.output)


# --- repair fixes that are the reference ---------------------------------------------------


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    return build(tmp_path_factory.mktemp("export_fixes") / "lake")


def test_the_card_counts_repair_fixes_that_are_the_reference(scenario: Scenario, tmp_path: Path):
    kinds = ("sft_repair", "sft_repair_completion")
    result = run_export(scenario, tmp_path, name="all", kinds=kinds)
    # the adder8 and sync_fifo8 chains end with the reference; alu8's fix is its own code
    fixes = {scenario.label(r["candidate_id"]) for r in rows_of(result, "sft_repair")}
    assert fixes == {"adder_ref", "fifo_ref", "alu_fix"}
    counted = {"rtl": {"rows": 3, "reference": 2}}
    assert result.manifest["reference_fixes"] == {
        "sft_repair": counted,
        "sft_repair_completion": counted,
    }
    body = " ".join(card(result).split())
    assert "## Repair fixes equal to the reference" in body
    assert (
        "Of the 3 repair rows (`sft_repair`, the same rows in `sft_repair_completion`), 2 end "
        "with a fix that is the task's reference solution itself"
    ) in body
    assert "| rtl | 3 | 2 | 0.67 |" in body
    assert "`crucible export --no-reference-fixes` leaves them out" in body


def test_no_reference_fixes_leaves_them_out(scenario: Scenario, tmp_path: Path):
    result = run_export(
        scenario,
        tmp_path,
        name="own",
        kinds=("sft_repair", "sft_repair_completion"),
        reference_fixes=False,
    )
    for kind in ("sft_repair", "sft_repair_completion"):
        assert [scenario.label(r["candidate_id"]) for r in rows_of(result, kind)] == ["alu_fix"]
        # adder_short, adder_long (before the near-duplicate filter) and fifo
        assert result.manifest["stats"][kind]["reference_fixes_dropped"] == 3
        assert result.manifest["reference_fixes"][kind] == {"rtl": {"rows": 1, "reference": 0}}
    assert result.manifest["settings"]["reference_fixes"] is False
    body = " ".join(card(result).split())
    assert "were left out (`reference_fixes` off, `--no-reference-fixes`): 3" in body


def test_a_fix_is_the_reference_up_to_comments_and_whitespace():
    adder = catalog_tasks()["adder8"]
    ref = adder.reference
    assert ref
    reindented = "// fixed\n" + "\n".join("  " + line for line in ref.splitlines()) + "\n\n"
    assert is_reference_fix(adder, ref) and is_reference_fix(adder, reindented)
    assert not is_reference_fix(adder, ref.replace("+ {8'd0, cin}", "- {8'd0, cin}", 1))


def test_no_reference_fixes_on_the_command_line(scenario: Scenario, tmp_path: Path):
    from typer.testing import CliRunner

    from flows.cli import app
    from flows.options import RunOptions

    args = ["export", "--lake", str(scenario.lake.root), "--out", str(tmp_path)]
    args += ["--kinds", "sft_repair", "--name", "own", "--no-reference-fixes"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    manifest = json.loads((tmp_path / "own" / "manifest.json").read_text())
    assert manifest["settings"]["reference_fixes"] is False
    assert manifest["counts"] == {"sft_repair": 1}
    assert (
        "repair fixes that are the task's reference: 0 of 1 sft_repair rows; 3 such rows "
        "left out (--no-reference-fixes)"
    ) in flat(res.output)
    # `crucible run` passes it to its export stage
    opts = RunOptions(no_reference_fixes=True, mix='{"domain": {"rtl": 1}}')
    assert opts.export_fields() == {"mix": {"domain": {"rtl": 1}}, "reference_fixes": False}
