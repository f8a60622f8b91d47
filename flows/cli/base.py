"""The `crucible` app: its error rule (one line, exit 2 for what the user can fix), the
process entry (the reaper first), the global options, and what several command groups share."""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from typer.core import TyperCommand, TyperGroup

from flows.options import (
    UserError,
    click_errors,
    domain_option,
    is_user_error,
    known_domains,
)
from verifiers import domain as domain_registry

if TYPE_CHECKING:
    pass


# The distribution's name on the package index (`crucible` there is someone else's).
DIST = "crucible-data"
# pyproject's optional dependency groups, each with the modules that show it is installed
EXTRAS: dict[str, tuple[str, ...]] = {
    "lake": ("deltalake", "duckdb", "pyarrow"),
    "ray": ("ray",),
    "pipeline": ("prefect", "dask", "pandas"),
}  # a domain's own extra is its verifier's to name (an infra verdict, never a CLI error)
_MODULE_EXTRA = {m: extra for extra, mods in EXTRAS.items() for m in mods}


def missing_extras(needs: tuple[str, ...]) -> list[str]:
    """The extras among `needs` with a module that cannot be imported."""
    import importlib.util

    def absent(module: str) -> bool:
        try:
            return importlib.util.find_spec(module) is None
        except (ImportError, ValueError):  # a finder that refuses it, a broken install
            return True

    return [x for x in needs if any(map(absent, EXTRAS[x]))]


def extras_line(command: str, extras: list[str]) -> str:
    names = ",".join(extras)
    what = f"the {names} extra" if len(extras) == 1 else f"the extras {', '.join(extras)}"
    return f"`{command}` needs {what}: pip install '{DIST}[{names}]' (or '{DIST}[all]')"


class _PlainFlags:
    """Help shows a flag as a flag: typer's help prints a value placeholder (`<bool>`) for
    every option, which invites `--fast true` (refused: a flag takes no value)."""

    def get_params(self, ctx: typer.Context) -> list:
        params = super().get_params(ctx)  # type: ignore[misc]
        for p in params:
            if getattr(p, "is_flag", False) and p.metavar is None:
                p.metavar = ""
            # a comma list as its default: spaced, so an 80-column help wraps it, not cuts it
            d = p.default
            if p.show_default is not False and isinstance(d, str) and "," in d and " " not in d:
                p.show_default = d.replace(",", ", ")
        return params


class _Command(_PlainFlags, TyperCommand):
    """Every command's body runs under the CLI's one rule for errors: a mistake the user
    can fix (UserError, a click usage error, our modules' errors whose message says what
    to do: `options.USER_ERRORS`) is one line and exit 2; anything else is one line
    `internal error: ...` and exit 1. `crucible --debug` prints the traceback first."""

    needs: tuple[str, ...] = ()  # the extras the command imports (`app.command(needs=...)`)

    def invoke(self, ctx: typer.Context):
        missing = missing_extras(self.needs)
        if missing:  # before the body: nothing is made, not even the lake
            say_error(extras_line(ctx.command_path, missing))
            raise typer.Exit(2)
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort):
            raise
        except click_errors.ClickException:
            if _debug(ctx):
                typer.echo(traceback.format_exc(), err=True, nl=False)
            raise  # one line, from the group's main
        except Exception as e:
            debug = _debug(ctx)
            if debug:
                typer.echo(traceback.format_exc(), err=True, nl=False)
            if is_user_error(e):
                say_error(f"{e}")
                raise typer.Exit(2) from None
            extra = _MODULE_EXTRA.get((getattr(e, "name", None) or "").partition(".")[0])
            if isinstance(e, ModuleNotFoundError) and extra:
                say_error(extras_line(ctx.command_path, [extra]))
                raise typer.Exit(2) from None
            tail = "" if debug else " (run with --debug for the traceback)"
            say_error(f"{type(e).__name__}: {e}{tail}", "internal error:")
            raise typer.Exit(1) from None


class _Group(_PlainFlags, TyperGroup):
    """Usage errors (an unknown option, a bad value, a UserError) print as one line,
    `error: ...`, with exit 2: not typer's boxed panel."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        kw = dict(args=args, prog_name=prog_name, complete_var=complete_var, **extra)
        if not standalone_mode:
            return super().main(standalone_mode=False, **kw)
        try:
            rv = super().main(standalone_mode=False, **kw)
        except click_errors.NoArgsIsHelpError as e:
            from typer import rich_utils

            rich_utils.rich_format_error(e)  # the help itself
            sys.exit(e.exit_code)
        except click_errors.ClickException as e:
            say_error(_usage_line(e))
            sys.exit(e.exit_code)
        except typer.Abort:
            typer.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


def _debug(ctx: typer.Context) -> bool:
    return bool(ctx.find_root().params.get("debug"))


def _usage_line(e: click_errors.ClickException) -> str:
    line = " ".join(e.format_message().split())
    ctx = getattr(e, "ctx", None)
    parse_error = isinstance(e, click_errors.UsageError) and (
        isinstance(e, click_errors.MissingParameter)
        or not isinstance(e, click_errors.BadParameter | UserError)
    )
    if parse_error and ctx is not None:  # an unknown option, a missing one: where they are
        line += f" (see `{ctx.command_path} --help`)"
    return line


def say_error(line: str, label: str = "error:") -> None:
    """The one line an error gets, on stderr."""
    typer.echo(f"{typer.style(label, fg='red', bold=True)} {' '.join(line.split())}", err=True)


class _Crucible(typer.Typer):
    """The command as a process's entry point (the `crucible` script, `python -m
    flows.cli`) first starts the reaper: whatever the command starts (Prefect's server,
    Ray's cluster, verifier workers, scratch files) is gone when it ends, also after a
    SIGKILL. In-process invocations (typer's CliRunner in tests) do not come through here;
    the error rule (`_Group`, `_Command`) holds for both."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("cls", _Group)
        super().__init__(*args, **kwargs)

    def command(self, *args, cls=None, needs: tuple[str, ...] = (), **kwargs):
        """`needs`: the extras (pyproject's optional dependencies) the command imports; a
        missing one is one line naming the pip command, before the command starts."""
        unknown = set(needs) - set(EXTRAS)
        if unknown:
            raise ValueError(f"unknown extras {sorted(unknown)}: {sorted(EXTRAS)}")
        if cls is None:
            cls = type("_Command", (_Command,), {"needs": tuple(needs)}) if needs else _Command
        return super().command(*args, cls=cls, **kwargs)

    def __call__(self, *args, **kwargs):
        from flows import reaper

        reaper.guard()
        return super().__call__(*args, **kwargs)


app = _Crucible(
    help="Crucible: execution-verified training data for industrial code.\n\n"
    "`crucible run` ingests the task catalog, generates candidates, verifies them on Ray "
    "actors and writes everything to the Delta lake; `crucible sql` queries it.",
    no_args_is_help=True,
    add_completion=False,
)

# what `crucible run` works on without --domain: the domains that declare `default_run`
# (every domain this machine verifies fully; the GPU kernels need a GPU node)
DEFAULT_DOMAINS = domain_registry.default_run()
PendingDomainOpt = Annotated[
    str,
    typer.Option(
        "--domain", help=f"The domain (one of {known_domains()}).", callback=domain_option
    ),
]
ListDomainOpt = Annotated[
    str | None,
    typer.Option("--domain", help=f"Only this domain ({known_domains()}).", callback=domain_option),
]
SettingsOpt = Annotated[
    str | None,
    typer.Option(
        "--settings",
        help="The verifier's settings as a JSON object or a .json file (the keys of the "
        "task's domain: `python -m verifiers.<domain> --help` lists them).",
    ),
]


def parse_gates(text: str | None, domain: str) -> tuple[str, ...] | None:
    """--gates as a Limits.gates tuple, checked against the domain verifier's gates."""
    if text is None:
        return None
    wanted = tuple(dict.fromkeys(g.strip() for g in text.split(",") if g.strip()))
    known = ("format", *domain_registry.get(domain).gate_names)
    bad = [g for g in wanted if g not in known]
    if bad or not wanted:
        raise typer.BadParameter(
            f"unknown gate(s) {', '.join(bad) or '(none given)'} for the {domain} verifier; "
            f"its gates: {','.join(known[1:])}",
            param_hint="--gates",
        )
    return wanted


def _quiet_env(verbose: bool) -> None:
    # Entry point only (library code never sets env), before Prefect or Ray is imported:
    # keep both quiet and self-contained, and Prefect's console lines out of the progress
    # bar. Crucible's own records reach the Prefect UI without an env (`flows.logs`).
    env = {
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_DEDUP_LOGS": "0",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        # Prefect's client telemetry and its 3-line notice on a fresh PREFECT_HOME's first run
        "DO_NOT_TRACK": "1",
        "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "INFO" if verbose else "WARNING",
        # the ephemeral API server's 20 s default is too short on a busy 2-core machine
        # (seen: "Timed out while attempting to connect to ephemeral Prefect API server")
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    }
    for k, v in env.items():
        os.environ.setdefault(k, v)


@app.callback()
def _main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log more.")] = False,
    debug: Annotated[  # read where errors are caught (`_Command.invoke`), off the root context
        bool, typer.Option("--debug", help="Print the traceback of an error (before its line).")
    ] = False,
):
    from flows import logs

    logs.setup_cli(verbose)
    _quiet_env(verbose)


def print_export(con, c: dict) -> None:
    """The export's path and rows per kind; read back from its manifest: the mix's shares
    asked vs got, the repair fixes that are the reference, then what was asked and not got
    (--size above what is eligible, a share short, an empty kind)."""
    from rich.markup import escape

    kinds = {k[7:]: v for k, v in c.items() if k.startswith("export_") and k != "export_path"}
    shown = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    con.print(f"export: {c.get('export_path')} ({shown})")
    path = Path(str(c.get("export_path", ""))) / "manifest.json"
    if not path.is_file():
        return
    manifest = json.loads(path.read_text())
    lines = [*mix_lines(manifest), *reference_fix_lines(manifest)]
    for line in lines:
        con.print(escape(line), highlight=False)
    for line in manifest.get("warnings", []):
        con.print(f"[yellow]warning:[/] {escape(line)}", highlight=False)


def mix_lines(manifest: dict) -> list[str]:
    """Per kind and mix dimension: each share asked -> got (rows exported / its target)."""
    mix = manifest.get("mix") or {}
    out = list(mix.get("notes", []))
    for kind, report in (mix.get("kinds") or {}).items():
        if not report.get("eligible"):
            continue  # nothing to mix: the warnings say so
        for dim, entries in report.get("dimensions", {}).items():
            named = [_share_text(e) for e in entries if e["named"]]
            left = [f"{e['value']} ({e['eligible']})" for e in entries if not e["named"]]
            line = f"mix {kind} by {dim}, share asked -> got (rows/target): {', '.join(named)}"
            if left:
                line += f"; not named, left out: {', '.join(left)}"
            out.append(line)
    return out


def _share_text(e: dict) -> str:
    value = "the rest (*)" if e["value"] == "*" else e["value"]
    return f"{value} {e['asked']:.3g} -> {e['share']:.3g} ({e['exported']}/{e['target']})"


def reference_fix_lines(manifest: dict) -> list[str]:
    fixes = (manifest.get("reference_fixes") or {}).get("sft_repair")
    if fixes is None:
        return []
    rows = sum(d["rows"] for d in fixes.values())
    ref = sum(d["reference"] for d in fixes.values())
    dropped = manifest.get("stats", {}).get("sft_repair", {}).get("reference_fixes_dropped", 0)
    if manifest["settings"].get("reference_fixes", True):
        tail = "--no-reference-fixes leaves them out"
    else:
        tail = f"{dropped} such rows left out (--no-reference-fixes)"
    return [f"repair fixes that are the task's reference: {ref} of {rows} sft_repair rows; {tail}"]
