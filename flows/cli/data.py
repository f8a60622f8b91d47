"""Commands over an existing lake: dedup, export, repair (FSCK), and the pending /
ingest exchange with verifier nodes that Ray does not reach."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from flows import render
from flows.cli.base import (
    DEFAULT_DOMAINS,
    PendingDomainOpt,
    app,
    parse_gates,
    print_export,
    say_error,
)
from flows.options import (
    DEFAULT_LAKE,
    DomainOpt,
    GatesOpt,
    LakeOpt,
    MixOpt,
    NoReferenceFixesOpt,
    TaskNamesOpt,
    check_export_target,
    check_lake_exists,
    check_prefect_api,
    check_roots,
    lake_text,
    parse_mix,
    require_lake,
)
from verifiers.catalog import load_catalog
from verifiers.contract import Limits

if TYPE_CHECKING:
    pass


@app.command(
    short_help="Flag exact and near duplicates, and holdout overlap.",
    rich_help_panel="Lake",
    needs=("lake", "pipeline"),
)
def dedup(
    lake: LakeOpt = DEFAULT_LAKE,
    domain: DomainOpt = None,
    threshold: Annotated[
        float, typer.Option(help="Jaccard similarity (MinHash estimate) for near duplicates.")
    ] = 0.7,
) -> None:
    """Find exact and near-duplicate candidates (MinHash + LSH over code-token shingles,
    run with Dask), pick one keeper per cluster (passing first, then shortest), and flag
    candidates whose long n-grams overlap a holdout task. Appends to the `dedup` table;
    exports take only keepers that are not contaminated."""
    from flows.pipeline import dedup_flow
    from flows.stages import PipelineSettings

    settings = PipelineSettings(
        lake=lake, domains=tuple(domain or DEFAULT_DOMAINS), dedup={"threshold": threshold}
    )
    result = run_flow(dedup_flow, settings)
    c = result["counts"]
    render.console().print(
        "dedup: "
        + ", ".join(f"{k[6:]} {v}" for k, v in sorted(c.items()) if k.startswith("dedup_"))
    )


@app.command(
    short_help="Write SFT and DPO data (Parquet, JSONL, a card).",
    rich_help_panel="Lake",
    needs=("lake", "pipeline"),
)
def export(
    lake: LakeOpt = DEFAULT_LAKE,
    out: Annotated[
        Path | None,
        typer.Option(help="Directory that receives the export (default: <lake>/exports)."),
    ] = None,
    name: Annotated[
        str, typer.Option(help="Export directory name (default: export-<UTC time>).")
    ] = "",
    kinds: Annotated[
        str,
        typer.Option(
            help="Comma-separated, of: sft_direct, sft_repair, sft_repair_completion, "
            "sft_optimize, dpo (sft_repair_completion: the repair rows as prompt-completion, "
            "trained on the fix only)."
        ),
    ] = "sft_direct,sft_repair,sft_repair_completion,sft_optimize,dpo",
    mix: MixOpt = None,
    size: Annotated[
        int | None,
        typer.Option(
            help="Rows per kind, split by the mix's shares (default: all, or with a mix the "
            "most that meets every share); a share or kind short of rows is not filled "
            "with others, with a warning."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    shard_rows: Annotated[int, typer.Option(help="Rows per Parquet shard.")] = 5000,
    dpo_other_failures: Annotated[
        bool,
        typer.Option(
            "--dpo-other-failures",
            help="DPO: when a task has no failure that compiled, reject other failures too.",
        ),
    ] = False,
    no_reference_fixes: NoReferenceFixesOpt = False,
    license: Annotated[
        str,
        typer.Option(
            "--license",
            help="The dataset card's license: a Hugging Face license id (apache-2.0, mit, "
            "cc-by-4.0, ...), or `other` with --license-name and --license-link (default: none "
            "chosen, and the card says so).",
        ),
    ] = "",
    license_name: Annotated[
        str, typer.Option(help="With --license other: the license's short id.")
    ] = "",
    license_link: Annotated[
        str, typer.Option(help="With --license other: the URL or path of the license text.")
    ] = "",
    pretty_name: Annotated[
        str, typer.Option(help="The card's title (default: from the domains it holds).")
    ] = "",
) -> None:
    """Write SFT (direct, repair, optimization) and DPO data from the lake: Parquet shards
    in the Hugging Face layout (data/<kind>/train-00000-of-0000N.parquet) plus JSONL, a
    dataset card (its `configs` block, license, provenance, schema per config, counts and
    a chart) and manifest.json (mix, counts, shard sha256, lake versions, warnings). Every
    config is in a TRL dataset format; repairs come both as `messages` and as
    prompt-completion (the fix only is trained on). Only dedup keepers of training tasks;
    never holdout, contaminated or infra_error."""
    from flows.pipeline import export_flow
    from flows.stages import PipelineSettings

    fields = {
        "kinds": tuple(k.strip() for k in kinds.split(",") if k.strip()),
        "size": size,
        "seed": seed,
        "shard_rows": shard_rows,
        "dpo_other_failures": dpo_other_failures,
        "reference_fixes": not no_reference_fixes,
        "name": name,
        "license": license,
        "license_name": license_name,
        "license_link": license_link,
        "pretty_name": pretty_name,
    }
    if mix:
        fields["mix"] = parse_mix(mix)
    try:
        from lake.export import ExportSettings

        ExportSettings(**fields)  # bad kinds / shares / names stop here, before any work
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None
    settings = PipelineSettings(lake=lake, export=fields, export_dir=out)
    result = run_flow(export_flow, settings)
    print_export(render.console(), result["counts"])


def run_flow(flow_fn, settings) -> dict:
    """A flow run over an existing lake (a typo in --lake is refused, never made into an
    empty lake) that no other command is writing, its export name free, the Prefect API
    answering: all checked before the flow starts. Lake and export errors print as one
    line (exit 2), not as tracebacks."""
    from lake.export import ExportError
    from lake.lock import hold
    from lake.store import LakeError

    require_lake(settings.lake, writable=True)
    name = (settings.export or {}).get("name")
    if name:
        check_export_target(settings.export_dir or Path(settings.lake) / "exports", name)
    check_prefect_api()
    with hold(settings.lake, f"crucible {getattr(flow_fn, 'name', 'flow')}"):
        try:
            return flow_fn(settings)
        except (LakeError, ExportError) as e:
            say_error(str(e), f"{type(e).__name__}:")
            raise typer.Exit(2) from None


@app.command(
    short_help="Drop data files the lake lists but that are gone.",
    rich_help_panel="Lake",
    needs=("lake",),
)
def repair(
    lake: LakeOpt = DEFAULT_LAKE,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only list the missing files.")
    ] = False,
) -> None:
    """Drop data files that a table's log lists but that are gone from disk (Delta's
    FSCK), so a lake that `crucible run` refuses for a missing file opens again. The rows
    of those files are lost; the next `crucible run` redoes the work they recorded
    (verdicts are verified again, candidates regenerated). Restore the files from a
    backup instead if you have one."""
    from lake.maintenance import repair as fsck
    from lake.store import Lake, LakeError

    con = render.console()
    check_lake_exists(lake)
    try:
        store = Lake(lake, check_files=False)
        removed = fsck(store, dry_run=dry_run)
        if not dry_run:
            Lake(lake)  # opens as any command will: every listed file is there now
    except LakeError as e:
        say_error(str(e), "lake error:")
        raise typer.Exit(2) from None
    total = sum(map(len, removed.values()))
    for table, files in removed.items():
        for f in files:
            con.print(f"{table}: {f} {'missing' if dry_run else 'dropped (missing)'}")
    verb = "missing" if dry_run else "dropped"
    con.print(f"repair: {total} data file(s) {verb}; lake {lake_text(lake)}")


@app.command(
    short_help="Write unverified candidates as worker JSONL.",
    rich_help_panel="Lake",
    needs=("lake",),
)
def pending(
    domain: PendingDomainOpt,
    lake: LakeOpt = DEFAULT_LAKE,
    tasks: Annotated[
        list[Path] | None,
        typer.Option(
            "--tasks",
            help="Only the tasks of these catalog root(s), matched by task_id (the lake "
            "holds the same spec); default: every task of the domain in the lake.",
        ),
    ] = None,
    task: TaskNamesOpt = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the JSONL here (default: stdout).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="At most this many candidates.")
    ] = None,
    gates: GatesOpt = None,
) -> None:
    """Write the candidates that have no verdict from the current verifier version
    (sql/pending_verification.sql, as the verify stage selects them) as worker input
    JSONL: one {"task", "candidate"[, "limits"]} line per candidate. Verify them where
    the tools are, `python -m verifiers.<domain> IN --out OUT`, and bring the verdicts
    back with `crucible ingest OUT`. The count goes to stderr.

    With --gates, pending means "no verdict from those gates"; such a verdict carries its
    own version (e.g. `1+gates:parse,...`), so the candidate stays pending for the full
    verification on a GPU node."""
    from flows.stages import load_tasks, pending_candidates
    from lake import db
    from lake.store import Lake, LakeError
    from verifiers.registry import VerifierUnavailable, get_verifier

    try:
        v = get_verifier(domain)
    except VerifierUnavailable as e:
        raise typer.BadParameter(str(e), param_hint="--domain") from None
    limits = Limits(gates=parse_gates(gates, domain)) if gates is not None else None
    check_roots(tasks or [])
    try:
        con = db.connect(Lake(lake, readonly=True))
    except LakeError as e:
        say_error(str(e), "lake error:")
        raise typer.Exit(2) from None
    try:
        names = list(task) if task else None
        rows = db.rows(con, "select_tasks", domains=[domain], names=names)
        unknown = sorted(set(names or ()) - {r["name"] for r in rows})
        if unknown:
            raise typer.BadParameter(
                f"no {domain} task named {', '.join(map(repr, unknown))} in lake "
                f"{lake_text(lake)} (or its reference fails); "
                "`crucible sql 'SELECT name FROM tasks'` lists them",
                param_hint="--task",
            )
        ids = [r["task_id"] for r in rows]
        if tasks:
            in_catalog: set[str] = set()
            for root in tasks:
                loaded, errors = load_catalog(root, [domain], names)
                in_catalog |= {t.task_id for t in loaded}
                for e in errors:
                    typer.echo(f"refused task {e}", err=True)
            ids = [i for i in ids if i in in_catalog]
        found = pending_candidates(con, domain, ids, limits or Limits())
        total = len(found)
        cands = found[:limit]
        specs = load_tasks(con, sorted({c.task_id for c in cands}))
    finally:
        con.close()
    lines = []
    for c in cands:
        item = {"task": specs[c.task_id].to_dict(), "candidate": c.to_dict()}
        if limits is not None:
            item["limits"] = limits.to_dict()
        lines.append(json.dumps(item, ensure_ascii=False) + "\n")
    if out is None:
        sys.stdout.writelines(lines)
        sys.stdout.flush()
    else:
        try:
            out.write_text("".join(lines), encoding="utf-8")
        except OSError as e:
            raise typer.BadParameter(
                f"cannot write {out}: {e.strerror}", param_hint="--out"
            ) from None
    shown = f"{len(cands)} of {total}" if len(cands) < total else str(total)
    typer.echo(
        f"{shown} {domain} candidate(s) pending for verifier {v.name} version "
        f"{v.version_for(limits)}" + (f" -> {out}" if out else ""),
        err=True,
    )


@app.command(
    short_help="Append verdicts verified elsewhere to the lake.",
    rich_help_panel="Lake",
    needs=("lake",),
)
def ingest(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Verdict JSONL files ('-' for stdin), as `python -m verifiers.<domain>` "
            "writes them."
        ),
    ],
    lake: LakeOpt = DEFAULT_LAKE,
    commit_every: Annotated[
        int, typer.Option(min=1, help="Verdicts per lake commit (what a crash costs to redo).")
    ] = 256,
) -> None:
    """Append verdicts verified elsewhere (e.g. on a GPU node, from `crucible pending`'s
    file) to the lake, through the stages' batching writer: ingesting a file twice adds
    nothing. A line that is not a verdict, whose verdict_id is not its content hash, or
    whose candidate is not in the lake is refused with its FILE:LINE and not written; the
    rest still go in. Records a `runs` row (flow `ingest`, a generated run id).
    Exit code: 0, 1 if any line was refused, 2 if the lake cannot be used."""
    from lake.ingest import ingest_verdicts
    from lake.store import Lake, LakeError

    if sum(str(f) == "-" for f in files) > 1:
        raise typer.BadParameter("stdin ('-') can be read once", param_hint="FILES")
    for f in files:
        if str(f) != "-" and not f.is_file():
            raise typer.BadParameter(f"no such file: {f}", param_hint="FILES")
    try:
        Lake(lake, readonly=True)  # an existing lake only: never make an empty one here
        result = ingest_verdicts(Lake(lake), files, batch_size=commit_every)
    except LakeError as e:
        typer.echo(f"lake error: {e}", err=True)
        raise typer.Exit(2) from None
    for r in result.refused:
        typer.echo(f"refused {r}", err=True)
    typer.echo(
        f"ingest {result.run_id[:12]}: {result.added} added, {result.present} already "
        f"present, {len(result.refused)} refused ({result.read} lines, "
        f"{result.seconds:.1f}s); lake {lake_text(lake)}"
    )
    if result.refused:
        raise typer.Exit(1)
