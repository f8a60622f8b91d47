"""Benchmarks imported as catalog tasks (VerilogEval, KernelBench, SuperCoder,
NPUKernelBench), each through the importer its domain's descriptor names."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from flows import render
from flows.cli.base import (
    app,
)
from verifiers import domain as domain_registry
from verifiers.specfields import ImportProblems

if TYPE_CHECKING:
    pass


def _summary(what: str, benchmark: str) -> str:
    """A one-line help: what is imported, as tasks of the domains its importer writes."""
    return f"Import {what} as {'/'.join(domain_registry.importer(benchmark)[1])} tasks."


@app.command(
    "import-verilogeval",
    short_help=_summary("VerilogEval problems", "verilogeval"),
    rich_help_panel="Import",
)
def import_verilogeval(
    src: Annotated[
        Path,
        typer.Argument(
            help="Directory of VerilogEval problems: "
            "<name>_prompt.txt, <name>_ref.sv, <name>_test.sv"
        ),
    ],
    dest: Annotated[
        Path,
        typer.Option(
            help="Catalog root to write into; tasks land in DEST/<domain>/<name>/ (the "
            "importer's domain)"
        ),
    ] = Path("imported"),
    split: Annotated[str, typer.Option(help="train or holdout")] = "holdout",
    source: Annotated[
        str, typer.Option(help="Benchmark name recorded on each task")
    ] = "verilogeval",
    check: Annotated[
        bool,
        typer.Option(
            "--check/--no-check",
            help="Run each problem's reference through its own testbench and the catalog's "
            "checks, with every gate, and skip (with the reason) the ones that fail; "
            "--no-check writes them all unchecked",
        ),
    ] = True,
) -> None:
    """Import a VerilogEval-layout benchmark directory as tasks of the hardware-design
    domain (then run them with `crucible run --tasks DEST`). Each reference's cost per
    gate is measured and stored with its task, and sets that task's budgets."""
    if not src.is_dir():
        raise typer.BadParameter(f"{src} is not a directory", param_hint="SRC")
    _import_one_domain("verilogeval", src, dest, split, source=source, check=check)


def _default_of(benchmark: str, option: str) -> tuple[str, ...]:
    """An importer's own default for one of its options (the values it accepts)."""
    return tuple(
        inspect.signature(domain_registry.importer(benchmark)[0]).parameters[option].default
    )


def _import_one_domain(benchmark: str, src: Path, dest: Path, split: str, **options) -> None:
    """Run the importer of a benchmark that one domain declares into DEST/<domain>/."""
    do_import, (domain,) = domain_registry.importer(benchmark)
    if split not in ("train", "holdout"):
        raise typer.BadParameter("must be train or holdout", param_hint="--split")
    try:
        imported, errors = do_import(src, dest / domain, split=split, **options), []
    except ImportProblems as e:
        imported, errors = e.imported, e.errors
    _report_import(
        imported,
        errors,
        f"{len(imported)} imported into {dest / domain} ({split}), {len(errors)} skipped; "
        f"run them with: crucible run --tasks {dest} --domain {domain}",
    )


def _report_import(imported: list[Path], errors: list[str], summary: str) -> None:
    con = render.console()
    for path in imported:
        con.print(f"imported {path}")
    for err in errors:
        con.print(f"[bold red]skipped[/] {err}")
    con.print(summary)
    if errors:
        raise typer.Exit(1)


@app.command(
    "import-kernelbench",
    short_help=_summary("KernelBench problems", "kernelbench"),
    rich_help_panel="Import",
)
def import_kernelbench(
    src: Annotated[
        Path,
        typer.Argument(
            help="Directory of KernelBench-style problem files (Model, get_inputs, "
            "get_init_inputs); level<N>/ subdirectories set the level"
        ),
    ],
    dest: Annotated[
        Path,
        typer.Option(help="Catalog root to write into; tasks land in DEST/<domain>/<name>/"),
    ] = Path("imported"),
    domains: Annotated[
        list[str] | None,
        typer.Option(
            "--domain",
            help="Domain to write each problem for, repeatable (default: every domain the "
            "importer writes)",
        ),
    ] = None,
    split: Annotated[str, typer.Option(help="train or holdout")] = "holdout",
    source: Annotated[str, typer.Option(help="Benchmark name recorded on each task")] = (
        "kernelbench"
    ),
) -> None:
    """Import KernelBench problem files as tasks of the GPU kernel domains (verify
    candidates with `crucible run --tasks DEST --domain <domain>`, on a GPU node)."""
    do_import, known = domain_registry.importer("kernelbench")

    if not src.is_dir():
        raise typer.BadParameter(f"{src} is not a directory", param_hint="SRC")
    if split not in ("train", "holdout"):
        raise typer.BadParameter("must be train or holdout", param_hint="--split")
    wanted = tuple(dict.fromkeys(d.strip() for d in ",".join(domains or known).split(",")))
    bad = [d for d in wanted if d not in known]
    if bad:
        raise typer.BadParameter(
            f"the importer writes {', '.join(known)}, not {', '.join(map(repr, bad))}",
            param_hint="--domain",
        )
    try:
        imported, errors = do_import(src, dest, domains=wanted, split=split, source=source), []
    except ImportProblems as e:
        imported, errors = e.imported, e.errors
    _report_import(
        imported,
        errors,
        f"{len(imported)} task dirs written under {dest} ({split}), {len(errors)} skipped; "
        f"run them with: crucible run --tasks {dest} " + " ".join(f"--domain {d}" for d in wanted),
    )


@app.command(
    "import-supercoder",
    short_help=_summary("SuperCoder programs", "supercoder"),
    rich_help_panel="Import",
)
def import_supercoder(
    src: Annotated[
        Path,
        typer.Argument(
            help="A SuperCoder-layout dataset: a .parquet/.jsonl/.json file of rows with "
            "extra_info {c_code, inputs, outputs, unoptimized_assembly}, a directory of such "
            "files, or a TopCode/ + TopIO/ directory"
        ),
    ],
    dest: Annotated[
        Path,
        typer.Option(help="Catalog root to write into; tasks land in DEST/<domain>/<name>/"),
    ] = Path("imported"),
    split: Annotated[str, typer.Option(help="train or holdout")] = "holdout",
    source: Annotated[str, typer.Option(help="Benchmark name recorded on each task")] = (
        "supercoder"
    ),
    limit: Annotated[
        int | None, typer.Option(min=1, help="Import at most this many problems")
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check/--no-check",
            help="Build each problem's -O3 baseline and run it on the problem's own tests, "
            "skipping (with the reason) the ones it fails; --no-check writes them all",
        ),
    ] = True,
) -> None:
    """Import SuperCoder-layout problems (a C program, its assembly, tests as stdin and
    expected stdout) as whole-program tasks of the assembly-optimization domain: the
    candidate is the program's assembly, judged on its exact output and its speed."""
    if not src.exists():
        raise typer.BadParameter(f"{src} does not exist", param_hint="SRC")
    _import_one_domain("supercoder", src, dest, split, source=source, check=check, limit=limit)


@app.command(
    "import-npukernelbench",
    short_help=_summary("NPUKernelBench operators", "npukernelbench"),
    rich_help_panel="Import",
)
def import_npukernelbench(
    src: Annotated[
        Path,
        typer.Argument(
            help="An NPUKernelBench checkout (or its tasks/): level<N>/<Category>/<Op>/ with "
            "question/, answer/0/, validation/ and api_desc.md"
        ),
    ],
    dest: Annotated[
        Path,
        typer.Option(help="Catalog root to write into; tasks land in DEST/<domain>/<name>/"),
    ] = Path("imported"),
    split: Annotated[str, typer.Option(help="train or holdout")] = "holdout",
    source: Annotated[str, typer.Option(help="Benchmark name recorded on each task")] = (
        "npukernelbench"
    ),
    limit: Annotated[
        int | None, typer.Option(min=1, help="Import at most this many operators")
    ] = None,
    paths: Annotated[
        list[str] | None,
        typer.Option(
            "--path",
            help="Which tasks to write per operator, repeatable: "
            + " or ".join(_default_of("npukernelbench", "paths"))
            + " (the kernel alone, the expert's host side the fixed driver; or host side, "
            "tiling header and kernel); default all",
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check/--no-check",
            help="Load each task as the catalog does and check that the expert's files make "
            "a candidate with the kernel's entry, skipping (with the reason) those that "
            "don't; --no-check writes them all",
        ),
    ] = True,
) -> None:
    """Import NPUKernelBench operators (C++: skeletons, the expert answer, the PyTorch
    reference and the cases) as tasks of the domain that declares its importer, one per
    operator and path. The gates that need the NPU's toolchain end as infra_error (no_cann)
    off such a node, and the goldens are computed there."""
    if not src.is_dir():
        raise typer.BadParameter(f"{src} is not a directory", param_hint="SRC")
    wanted = tuple(dict.fromkeys(paths or _default_of("npukernelbench", "paths")))
    try:
        _import_one_domain(
            "npukernelbench",
            src,
            dest,
            split,
            source=source,
            check=check,
            limit=limit,
            paths=wanted,
        )
    except ValueError as e:  # the importer's own refusal of a path it does not write
        raise typer.BadParameter(str(e), param_hint="--path") from None
