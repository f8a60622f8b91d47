"""The dataset card: license, provenance, gates, schema per config, counts, chart; the
warnings for what was asked and not got; and the `crucible export` flags that set them."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from lake.export import (
    CHART,
    KINDS,
    READ_TABLES,
    SCHEMAS,
    ExportResult,
    ExportSettings,
    chart_png,
    chart_spec,
)
from tests.lake.export_fixtures import Scenario, build, run_export
from verifiers import domain as domains


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    return build(tmp_path_factory.mktemp("export_card") / "lake")


@pytest.fixture(scope="module")
def default_export(scenario: Scenario, tmp_path_factory: pytest.TempPathFactory) -> ExportResult:
    return run_export(scenario, tmp_path_factory.mktemp("card_out"), name="ex")


def card_of(result: ExportResult) -> tuple[dict[str, Any], str]:
    text = (result.path / "README.md").read_text()
    assert text.startswith("---\n")
    head, _, body = text[4:].partition("\n---\n")
    return yaml.safe_load(head), body


def flat(text: str) -> str:
    return " ".join(text.split())


def jsonl(result: ExportResult, kind: str) -> list[dict[str, Any]]:
    text = (result.path / "jsonl" / f"{kind}.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


# --- license ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"license": "other"}, "license 'other' needs --license-name"),
        ({"license": "other", "license_name": "acme-1.0"}, "--license-link"),
        ({"license": "other", "license_link": "https://x.example/l"}, "--license-name"),
        ({"license": "Apache 2.0"}, "use a Hugging Face license id"),
        ({"license": "mit", "license_name": "mit"}, "--license-name goes with --license other"),
        ({"license_link": "LICENSE"}, "--license-link goes with --license other"),
        (
            {"license": "other", "license_name": "Acme License", "license_link": "LICENSE"},
            "license name 'Acme License'",
        ),
        (
            {"license": "other", "license_name": "acme-1.0", "license_link": "my license.txt"},
            "without spaces",
        ),
    ],
)
def test_bad_license_combinations_are_refused(fields: dict[str, str], message: str):
    with pytest.raises(ValueError, match=re.escape(message)):
        ExportSettings(**fields)


def test_the_license_reaches_the_front_matter(scenario: Scenario, tmp_path: Path):
    meta, body = card_of(run_export(scenario, tmp_path, name="a", license="apache-2.0"))
    assert meta["license"] == "apache-2.0"
    assert "license_name" not in meta and "license_link" not in meta
    assert "`apache-2.0`" in body
    link = "https://example.com/acme-license"
    meta, body = card_of(
        run_export(
            scenario,
            tmp_path,
            name="b",
            license="other",
            license_name="acme-1.0",
            license_link=link,
        )
    )
    assert (meta["license"], meta["license_name"], meta["license_link"]) == (
        "other",
        "acme-1.0",
        link,
    )
    assert f"`acme-1.0`: {link}" in body


def test_no_license_chosen_says_so(default_export: ExportResult):
    meta, body = card_of(default_export)
    assert "license" not in meta  # not the meaningless `other` with no name or link
    assert "No license was chosen" in body and "crucible export --license" in flat(body)


# --- the card's content ------------------------------------------------------------------


def test_pretty_name_is_what_it_holds_not_a_time(scenario: Scenario, tmp_path: Path):
    # default name: export-<UTC time> (a seed of its own: an unnamed export identical to
    # one already written would keep that one)
    result = run_export(scenario, tmp_path, name="", seed=7)
    meta, body = card_of(result)
    assert result.path.name.startswith("export-")
    assert meta["pretty_name"] == "Crucible execution-verified code (rtl): SFT and DPO"
    assert not re.search(r"\d{8}T\d{6}", meta["pretty_name"])
    assert body.lstrip().startswith(f"# {meta['pretty_name']}\n")
    meta, _ = card_of(run_export(scenario, tmp_path, name="named", pretty_name="My set"))
    assert meta["pretty_name"] == "My set"


def test_a_schema_table_per_config(default_export: ExportResult):
    _, body = card_of(default_export)
    for kind in KINDS:
        section = body.split(f"### `{kind}`\n\n", 1)[1].split("\n\n", 1)[0]
        rows = [line for line in section.splitlines() if line.startswith("| `")]
        assert [r.split("`")[1] for r in rows] == SCHEMAS[kind].names, kind
        assert all(r.split("|")[3].strip() for r in rows), kind  # every column explained
    dpo = body.split("### `dpo`\n", 1)[1]
    origin = next(line for line in dpo.splitlines() if line.startswith("| `origin`"))
    assert "**chosen** candidate's origin" in origin


def test_the_card_says_which_form_trains_on_what(default_export: ExportResult):
    _, body = card_of(default_export)
    table = {
        line.split("|")[1].strip(" `"): line
        for line in body.split("## Configs: what each trains on\n\n", 1)[1]
        .split("\n\n", 1)[0]
        .splitlines()
        if line.startswith("| `")
    }
    assert set(table) == set(KINDS)
    assert "the failed attempts included" in table["sft_repair"]
    assert "use `sft_repair_completion`" in table["sft_repair"]
    assert "only the completion, the verified fix" in table["sft_repair_completion"]
    assert "prompt-completion" in table["sft_repair_completion"]
    assert "preference" in table["dpo"]


def test_provenance_gates_and_lake_versions(scenario: Scenario, default_export: ExportResult):
    manifest = default_export.manifest
    _, body = card_of(default_export)
    prov = manifest["provenance"]
    # the fixture's repairs are not the offline channel's (generator `test:repair`)
    assert prov["offline_only"] is False
    assert "Not every code here comes from Crucible's offline channel" in flat(body)
    codes = {(c["origin"], c["generator"], c["status"]) for c in prov["codes"]}
    assert ("reference", "test", "pass") in codes and ("perturb", "test", "fail") in codes
    # the registry's gates, and the ones the passing verdicts ran (the fixture's checks)
    rtl = domains.get("rtl")
    assert [g for g, _ in prov["registry_gates"]["rtl"]] == ["format", *rtl.gate_names]
    assert "- rtl: `format` (build), " + ", ".join(f"`{g}` ({s})" for g, s in rtl.gates) in body
    (ran,) = prov["gates"]["rtl"]
    assert ran["gates"] == ["compile", "simulate", "synthesize"]
    assert "| rtl | compile, simulate, synthesize |" in body
    assert "no: not run: format, static, lint, equivalence" in body
    versions = scenario.lake.versions()
    for table in READ_TABLES:
        assert f"{table} v{versions[table]}" in body


def test_offline_rows_are_said_to_be_offline(tmp_path: Path):
    s = build(tmp_path / "lake", offline_labels=True)
    result = run_export(s, tmp_path / "out", name="offline")
    assert result.manifest["provenance"]["offline_only"] is True
    _, body = card_of(result)
    assert "No code here was written by a model." in flat(body)
    assert "a perturbation of it" in flat(body)
    families = {c["generator"] for c in result.manifest["provenance"]["codes"]}
    assert families == {"catalog", "rewrite", "perturb", "reconstruct"}


def test_counts_per_domain_level_and_origin(default_export: ExportResult):
    manifest = default_export.manifest
    _, body = card_of(default_export)
    for dim in ("domain", "level", "origin"):
        for kind in KINDS:
            expected = Counter(str(r[dim]) for r in jsonl(default_export, kind))
            assert manifest[f"counts_by_{dim}"][kind] == dict(expected), (dim, kind)
    by_level = body.split("By level:\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    levels = by_level[0].strip("|").split("|")[1:]
    assert [v.strip() for v in levels] == ["1", "2", "3"]
    for line in by_level[2:]:
        kind, *cells = (c.strip() for c in line.strip("|").split("|"))
        got = dict(zip(["1", "2", "3"], map(int, cells), strict=True))
        expected = Counter(str(r["level"]) for r in jsonl(default_export, kind))
        assert got == {lv: expected.get(lv, 0) for lv in got}, kind
    assert "By origin:" in body


def test_the_chart_is_a_png_the_card_shows(default_export: ExportResult):
    chart = default_export.path / CHART
    data = chart.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width >= 1000 and height >= 300
    _, body = card_of(default_export)
    assert f"]({CHART})" in body


def test_a_chart_drawn_once_per_spec_is_the_chart_drawn_anew(default_export: ExportResult):
    """The process keeps charts by what they show: the bytes a kept one gives are the
    bytes a fresh drawing gives, and any change to what the chart shows (a count, the
    configs' order, the title) is another picture, never a kept one."""
    manifest = default_export.manifest
    spec = chart_spec(manifest)
    kept = chart_png(spec)
    assert (default_export.path / CHART).read_bytes() == kept
    chart_png.cache_clear()
    assert chart_png(spec) == kept  # drawn anew: the same bytes

    kind = next(k for k in manifest["counts"] if manifest["counts_by_level"][k])
    level = next(iter(manifest["counts_by_level"][kind]))
    one_more = json.loads(json.dumps(manifest))
    one_more["counts_by_level"][kind][level] += 1
    reordered = {**manifest, "counts": dict(reversed(list(manifest["counts"].items())))}
    renamed = {**manifest, "settings": {**manifest["settings"], "pretty_name": "renamed"}}
    specs = {spec, *(chart_spec(m) for m in (one_more, reordered, renamed))}
    assert len(specs) == 4
    assert len({chart_png(s) for s in specs}) == 4


# --- what was asked and not got ------------------------------------------------------------


def test_a_size_above_what_is_eligible_warns(scenario: Scenario, tmp_path: Path):
    result = run_export(scenario, tmp_path, name="big", size=500)
    warnings = result.manifest["warnings"]
    assert len(warnings) == len(KINDS)
    for kind, line in zip(KINDS, warnings, strict=True):
        n = result.counts[kind]
        assert line.startswith(f"{kind}: size 500 asked, only {n} row")
        assert f"exported {n}" in line
    _, body = card_of(result)
    assert all(f"- {w}" in body for w in warnings)
    # a size that every kind reaches says nothing
    assert run_export(scenario, tmp_path, name="small", size=1).manifest["warnings"] == []


# --- the CLI -----------------------------------------------------------------------------------


def test_cli_license_flags_and_the_size_warning(scenario: Scenario, tmp_path: Path):
    from flows.cli import app

    runner = CliRunner()
    lake = str(scenario.lake.root)
    out = tmp_path / "exports"
    bad = runner.invoke(app, ["export", "--lake", lake, "--out", str(out), "--license", "other"])
    assert bad.exit_code == 2, bad.output
    assert "needs --license-name" in flat(bad.output)
    assert not out.exists()  # refused before any work
    res = runner.invoke(
        app,
        [
            "export",
            "--lake",
            lake,
            "--out",
            str(out),
            "--name",
            "cli",
            "--size",
            "500",
            "--license",
            "other",
            "--license-name",
            "acme-1.0",
            "--license-link",
            "https://example.com/acme",
        ],
    )
    assert res.exit_code == 0, res.output
    text = flat(res.output)
    manifest = json.loads((out / "cli" / "manifest.json").read_text())
    n = manifest["counts"]["sft_direct"]
    assert f"warning: sft_direct: size 500 asked, only {n} rows eligible" in text
    assert all(f"warning: {flat(w)}" in text for w in manifest["warnings"])
    meta, _ = card_of(ExportResult(out / "cli", manifest, manifest["counts"]))
    assert (meta["license"], meta["license_name"]) == ("other", "acme-1.0")


def test_the_run_summary_says_the_exports_warnings_too(scenario: Scenario, tmp_path: Path):
    # `crucible run` ends with the export's line: what it asked and did not get is said there
    import io

    from rich.console import Console

    from flows.cli.run import _print_result

    result = run_export(scenario, tmp_path, name="sized", size=500)
    assert result.manifest["warnings"]
    counts = {"export_path": str(result.path)}
    counts.update({f"export_{k}": n for k, n in result.counts.items()})
    buf = io.StringIO()
    con = Console(file=buf, width=200)
    run = {"refused": [], "counts": counts, "run_id": "r" * 12, "seconds": 1.0}
    _print_result(con, {**run, "pass_rates": [], "taxonomy": [], "survivors": []}, tmp_path)
    text = flat(buf.getvalue())
    assert f"export: {result.path}" in text
    assert all(f"warning: {flat(w)}" in text for w in result.manifest["warnings"])
