"""The `crucible` command's options model: the pipeline options `run` and `serve` share
are one dataclass (`RunOptions`), whose fields are their declarations and whose defaults
are the only ones; `pipeline_options` adds them to a command, which receives the model.

Domain names and domain help texts come from the registry (`verifiers.domain`), never
from a list here.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import os
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from verifiers import domain as domain_registry
from verifiers.contract import Limits
from verifiers.datadirs import data_dir
from verifiers.settings import SettingsError, settings_class, settings_for

try:  # typer (0.29) vendors click: the classes it raises are its copy's
    from typer._click import exceptions as click_errors
except ImportError:  # a typer that uses click itself again
    from click import exceptions as click_errors

if TYPE_CHECKING:
    from flows.stages import PipelineSettings

DEFAULT_LAKE = Path(os.environ.get("CRUCIBLE_LAKE", "crucible-lake"))
DEFAULT_TASKS = data_dir("tasks")  # the checkout's tasks/, or the wheel's copy
DEFAULT_STAGES = "generate,verify,repair,dedup,export"  # flows.stages.STAGES, in order


# --- the CLI's one rule for mistakes ----------------------------------------------------


class UserError(click_errors.UsageError):
    """A mistake the user can fix, found before any work: the message says what to do. The
    command prints it as one line (`error: ...`) and exits 2; `--debug` adds the traceback."""


# Errors of our own modules whose message already says what to do: one line, exit 2, like
# a UserError. Named, not imported: a command that never opened a lake never imports it.
USER_ERRORS = frozenset(
    {
        "lake.store.LakeError",
        "lake.export.ExportError",
        "generators.openai.GeneratorError",
        "verifiers.specfields.TaskSpecError",
        "verifiers.domain.UnknownDomain",
    }
)


def is_user_error(exc: BaseException) -> bool:
    return any(f"{c.__module__}.{c.__qualname__}" in USER_ERRORS for c in type(exc).__mro__)


# --- domains: checked against the registry --------------------------------------------


def known_domains() -> str:
    return ", ".join(domain_registry.names())


def check_domain(name: str | None, hint: str = "--domain") -> str | None:
    """`name` if a domain is registered under it; a clear error listing the known ones."""
    if name is not None and name not in domain_registry.names():
        raise typer.BadParameter(
            f"unknown domain {name!r}; known domains: {known_domains()}", param_hint=hint
        )
    return name


def domain_option(name: str | None) -> str | None:
    """typer callback of a single `--domain`."""
    return check_domain(name)


def domains_option(names: list[str] | None) -> list[str] | None:
    """typer callback of a repeatable `--domain`."""
    for n in names or ():
        check_domain(n)
    return names


def _default_domains() -> str:
    return ", ".join(domain_registry.default_run())


def _settings_keys() -> str:
    parts = []
    for name in domain_registry.names():
        keys = settings_class(name).field_names()
        parts.append(f"{name}: {', '.join(keys) if keys else 'none'}")
    return "; ".join(parts)


# --- shared declarations ---------------------------------------------------------------

# A command that writes a new lake says so; every other one opens an existing lake only.
NewLakeOpt = Annotated[
    Path,
    typer.Option(
        "--lake",
        help="Lake root: a directory (created if absent) or s3://BUCKET/PREFIX (reached "
        "through the AWS_* environment variables). Env: CRUCIBLE_LAKE.",
    ),
]
LakeOpt = Annotated[
    Path,
    typer.Option(
        "--lake",
        help="Root of an existing lake, a directory or s3://BUCKET/PREFIX (`crucible run` "
        "makes one). Env: CRUCIBLE_LAKE.",
    ),
]
TasksOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--tasks",
        help="Task catalog root(s) holding <domain>/<name>/task.toml "
        "(default: the built-in catalog)",
    ),
]
DomainOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--domain",
        help=f"Domain(s) to run, repeatable (default: {_default_domains()}; known: "
        f"{known_domains()}).",
        callback=domains_option,
    ),
]
TaskNamesOpt = Annotated[
    list[str] | None, typer.Option("--task", help="Only these task names (repeatable).")
]
UnconfinedOpt = Annotated[
    bool,
    typer.Option(
        "--unconfined",
        help="UNSAFE: run candidate code without the bubblewrap sandbox "
        "(rlimits and timeouts still apply). Only for machines where bubblewrap cannot run.",
    ),
]
FastOpt = Annotated[
    bool,
    typer.Option(
        "--fast",
        help="Run only each domain's declared fast gates, its quick screen (e.g. compile "
        "and simulate, no synthesis or formal); a domain that declares none runs all.",
    ),
]
SimOnlyOpt = Annotated[
    bool, typer.Option("--sim-only", hidden=True, help="Deprecated: the old name of --fast.")
]
GatesOpt = Annotated[
    str | None,
    typer.Option(
        "--gates",
        help="Comma-separated gates to run (Limits.gates); the gates they need run too. "
        "E.g. 'parse, anticheat, compile, launch, correct' checks a kernel on a machine with no "
        "GPU (pass/fail instead of infra_error no_gpu).",
    ),
]
MixOpt = Annotated[
    str | None,
    typer.Option(
        help="Export mix: target shares of the exported rows per dimension, as JSON or a "
        '.json file: {"domain": {"<domain>": 0.6, "<other>": 0.4}, "level": {"3": 0.5, "*": 0.5}, '
        '"origin": {...}}. Normalised to sum to 1; a dimension that names shares gives '
        'the values it does not name none, unless "*" gives them a share together. A '
        "share short of rows is not filled with others; the export says asked vs got.",
    ),
]
NoReferenceFixesOpt = Annotated[
    bool,
    typer.Option(
        "--no-reference-fixes",
        help="Export: leave out the repair rows whose fix is the task's reference solution "
        "itself (offline repair mostly rebuilds the reference); the card counts them.",
    ),
]


@dataclass(frozen=True)
class RunOptions:
    """What `crucible run` and `crucible serve` are parameterised by: each field is its
    option's declaration and its default, once. `pipeline_settings()` turns them into the
    `PipelineSettings` a run gets (a served deployment's runs get the same)."""

    lake: NewLakeOpt = DEFAULT_LAKE
    tasks: TasksOpt = None
    domain: DomainOpt = None
    task: TaskNamesOpt = None
    stages: Annotated[
        str,
        typer.Option(
            "--stages",
            help="Comma-separated stages to run, in pipeline order: "
            "generate, verify, repair, dedup, export.",
        ),
    ] = DEFAULT_STAGES
    generator: Annotated[
        str,
        typer.Option(
            help="perturb (offline: reference, rewrites, realistic bugs), openai (any "
            "OpenAI-compatible endpoint, e.g. `vllm serve`) or vllm (in-process, GPU node)."
        ),
    ] = "perturb"
    model: Annotated[str | None, typer.Option(help="Model name for openai / vllm.")] = None
    base_url: Annotated[
        str, typer.Option(help="OpenAI-compatible endpoint (vllm serve's default).")
    ] = "http://localhost:8000/v1"
    samples: Annotated[int, typer.Option(help="openai/vllm: samples per task.")] = 4
    temperature: Annotated[float, typer.Option(help="openai/vllm: sampling temperature.")] = 0.8
    max_tokens: Annotated[int, typer.Option(help="openai/vllm: max tokens per answer.")] = 2048
    concurrency: Annotated[int, typer.Option(help="openai: requests in flight.")] = 8
    candidates_per_task: Annotated[
        int | None, typer.Option(help="perturb: mutations per task (default: one per operator).")
    ] = None
    repair_rounds: Annotated[int, typer.Option(help="Repair rounds per failed candidate.")] = 2
    workers: Annotated[
        int | None,
        typer.Option(help="Verifier actors (default: one per slot of the node resource)."),
    ] = None
    batch_size: Annotated[int, typer.Option(help="Candidates per actor call.")] = 8
    commit_every: Annotated[
        int, typer.Option(help="Verdicts per lake commit: at most what a crash costs to redo.")
    ] = 256
    seed: Annotated[int, typer.Option(help="Generator seed.")] = 0
    export_dir: Annotated[
        Path | None, typer.Option(help="Where exports go (default: <lake>/exports).")
    ] = None
    mix: MixOpt = None
    no_reference_fixes: NoReferenceFixesOpt = False
    verifier_settings: Annotated[
        str | None,
        typer.Option(
            "--verifier-settings",
            help='Verifier settings per domain, as JSON or a .json file: {"<domain>": '
            '{"<key>": value}}; recorded with each verdict and in the run. Keys per domain: '
            f"{_settings_keys()}.",
        ),
    ] = None
    fast: FastOpt = False
    sim_only: SimOnlyOpt = False  # the deprecated name of `fast`
    unconfined: UnconfinedOpt = False
    backend: Annotated[
        str,
        typer.Option(
            "--backend",
            help="Where the verifier workers run: host (on the Ray node itself) or container "
            "(in the node's image through the Docker API at DOCKER_HOST, a Docker engine or "
            "Podman's socket; build the images with infra/build-images.sh).",
        ),
    ] = "host"
    node_wait: Annotated[
        float,
        typer.Option(
            "--node-wait",
            min=0,
            metavar="SECONDS",
            help="When the last Ray node offering a domain's resource is lost mid-run, how "
            "long its unfinished candidates wait for one to come back; then they get "
            "infra_error (node_lost) verdicts, which the next run verifies again.",
        ),
    ] = 600.0

    def pipeline_settings(self) -> PipelineSettings:
        """The run's settings; a bad option raises typer.BadParameter before any work
        (and before anything is created): an unknown task name or catalog root included."""
        domains = tuple(self.domain or domain_registry.default_run())
        roots = tuple(self.tasks or [DEFAULT_TASKS])
        check_catalog(roots, domains, self.task, lake=self.lake)
        from flows.stages import PipelineSettings
        from generators import GENERATORS
        from ray_actors.verify import BACKENDS, PoolSettings

        if self.backend not in BACKENDS:
            raise typer.BadParameter(f"choose {' or '.join(BACKENDS)}", param_hint="--backend")
        if self.generator not in GENERATORS:
            raise typer.BadParameter(
                f"choose one of {', '.join(GENERATORS)}", param_hint="--generator"
            )
        llm = None
        if self.generator != "perturb":
            if not self.model:
                raise typer.BadParameter(
                    f"the {self.generator} generator needs --model", param_hint="--model"
                )
            llm = {
                "model": self.model,
                "base_url": self.base_url,
                "n": self.samples,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
                "concurrency": self.concurrency,
            }
        if _is_url(self.lake) and self.export_dir is None and "export" in parse_stages(self.stages):
            raise typer.BadParameter(
                f"{lake_text(self.lake)} is on an object store: exports are written to a local "
                "directory; pass one with --export-dir",
                param_hint="--export-dir",
            )
        return PipelineSettings(
            # a scheduled run may start in another directory; an s3:// URL stays as it is
            lake=self.lake if _is_url(self.lake) else self.lake.absolute(),
            task_roots=roots,
            domains=domains,
            task_names=tuple(self.task) if self.task else None,
            stages=parse_stages(self.stages),
            generator=self.generator,
            llm=llm,
            candidates_per_task=self.candidates_per_task,
            repair_rounds=self.repair_rounds,
            limits=Limits(unconfined=self.unconfined),
            fast=self.fast or self.sim_only,
            verifier_settings=parse_verifier_settings(self.verifier_settings),
            seed=self.seed,
            pool=PoolSettings(
                workers=self.workers,
                batch_size=self.batch_size,
                backend=self.backend,
                node_wait_s=self.node_wait,
            ),
            verdict_batch=self.commit_every,
            export=self.export_fields(),
            export_dir=self.export_dir,
        )

    def export_fields(self) -> dict[str, Any]:
        """The export stage's settings given on the command line (`ExportSettings` fields)."""
        fields: dict[str, Any] = {}
        if self.mix:
            fields["mix"] = parse_mix(self.mix)
        if self.no_reference_fixes:
            fields["reference_fixes"] = False
        return fields


def pipeline_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Give a command every `RunOptions` field as an option, after its own; the command
    is called with `opts: RunOptions` instead of them."""
    own = [p for p in inspect.signature(fn, eval_str=True).parameters.values()]
    own = [p for p in own if p.name != "opts"]
    hints = typing.get_type_hints(RunOptions, include_extras=True)
    fields = dataclasses.fields(RunOptions)
    shared = [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default,
                          annotation=hints[f.name])
        for f in fields
    ]  # fmt: skip

    @functools.wraps(fn)
    def command(**kwargs: Any) -> Any:
        opts = RunOptions(**{f.name: kwargs.pop(f.name) for f in fields})
        if opts.sim_only:
            typer.echo("--sim-only is deprecated: use --fast", err=True)
        return fn(**kwargs, opts=opts)

    params = own + shared
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command


# --- option values ---------------------------------------------------------------------


def parse_stages(text: str) -> tuple[str, ...]:
    from flows.stages import STAGES

    wanted = tuple(s.strip() for s in text.split(",") if s.strip())
    bad = [s for s in wanted if s not in STAGES]
    if bad or not wanted:
        raise typer.BadParameter(
            f"unknown stage(s) {', '.join(bad) or '(none given)'}; choose from {','.join(STAGES)}",
            param_hint="--stages",
        )
    return wanted


def _json_arg(text: str, hint: str) -> Any:
    try:
        raw = Path(text).read_text() if text.endswith(".json") else text
        return json.loads(raw)
    except (OSError, ValueError) as e:
        raise typer.BadParameter(
            f"not JSON or a readable .json file: {e}", param_hint=hint
        ) from None


def parse_mix(text: str) -> dict:
    """`--mix`: target shares per dimension (lake.export.ExportSettings says how they are
    met), checked as the export will check them, domain names against the registry."""
    from lake.export import ExportSettings

    mix = _json_arg(text, "--mix")
    if (
        not isinstance(mix, dict)
        or not set(mix) <= {"domain", "level", "origin"}
        or not all(isinstance(v, dict) for v in mix.values())
    ):
        raise typer.BadParameter(
            'expected target shares {"domain": {...}, "level": {...}, "origin": {...}}, '
            'e.g. {"domain": {"<domain>": 0.6, "*": 0.4}}; "*" names the rest',
            param_hint="--mix",
        )
    check_mix_domains(mix)
    try:
        ExportSettings(mix=mix)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--mix") from None
    return mix


def parse_verifier_settings(text: str | None) -> dict[str, dict[str, Any]]:
    """`--verifier-settings`: domain -> that domain's settings, each checked."""
    if not text:
        return {}
    given = _json_arg(text, "--verifier-settings")
    if not isinstance(given, dict):
        raise typer.BadParameter(
            'expected {"<domain>": {"<key>": value}}', param_hint="--verifier-settings"
        )
    out = {}
    for domain, value in given.items():
        check_domain(domain, "--verifier-settings")
        out[domain] = parse_settings(domain, value, "--verifier-settings")
    return out


def parse_settings(domain: str, value: Any, hint: str = "--settings") -> dict[str, Any]:
    """One domain's settings (a JSON object, or its text), checked; as a dict."""
    if isinstance(value, str):
        value = _json_arg(value, hint)
    try:
        chosen = settings_for(domain, value).to_dict()
        return {k: chosen[k] for k in value or {}}  # the keys given, checked
    except SettingsError as e:
        raise typer.BadParameter(str(e), param_hint=hint) from None


def limits_for(
    domain: str, *, fast: bool, unconfined: bool, gates: tuple[str, ...] | None = None
) -> Limits:
    """One domain's Limits: its fast gates (`Domain.fast_gates`), or `gates`, or all."""
    if fast and gates is not None:
        raise typer.BadParameter("give --fast or --gates, not both", param_hint="--gates")
    chosen = domain_registry.get(domain).fast_gates if fast else gates
    return Limits(gates=chosen, unconfined=unconfined)


# --- names and places: checked before any work, before anything is created -------------


def check_roots(roots: list[Path] | tuple[Path, ...]) -> None:
    """Every --tasks root is a directory."""
    for root in roots:
        if not Path(root).is_dir():
            raise typer.BadParameter(
                f"task catalog {root} is not a directory (a catalog holds "
                "<domain>/<name>/task.toml; `crucible tasks` lists the built-in one)",
                param_hint="--tasks",
            )


def check_catalog(
    roots: list[Path] | tuple[Path, ...],
    domains: tuple[str, ...],
    names: list[str] | tuple[str, ...] | None = None,
    lake: Path | None = None,
) -> None:
    """Every catalog root is a directory holding tasks of `domains`, and every task name
    is one of them (or of the tasks `lake` already holds): a typo is refused here, naming
    what exists, instead of a run over no task."""
    check_roots(roots)
    in_catalog = {
        p.name
        for root in roots
        for d in domains
        if (Path(root) / d).is_dir()
        for p in sorted((Path(root) / d).iterdir())
        if p.is_dir()
    }
    if not in_catalog:
        where = ", ".join(str(r) for r in roots)
        raise typer.BadParameter(
            f"no task of domain(s) {', '.join(domains)} in {where} (a catalog holds "
            "<domain>/<name>/task.toml): pass another --tasks or --domain",
            param_hint="--tasks",
        )
    unknown = [n for n in dict.fromkeys(names or ()) if n not in in_catalog]
    if unknown and lake is not None:
        unknown = [n for n in unknown if n not in _lake_task_names(lake, domains)]
    if unknown:
        shown = sorted(in_catalog)
        listed = ", ".join(shown[:8]) + (f", ... ({len(shown)} in all)" if len(shown) > 8 else "")
        raise typer.BadParameter(
            f"no task named {', '.join(map(repr, unknown))} of domain(s) {', '.join(domains)} "
            f"(known: {listed}); `crucible tasks` lists them",
            param_hint="--task",
        )
    check_some_task_loads(roots, domains, names, lake)


def check_some_task_loads(
    roots: list[Path] | tuple[Path, ...],
    domains: tuple[str, ...],
    names: list[str] | tuple[str, ...] | None,
    lake: Path | None,
) -> None:
    """At least one task the run selects is well-formed (or already in `lake`): a catalog
    whose every task would be refused is refused here, before any work. Tasks load one
    at a time and the first good one ends the check, so a sound catalog costs one task."""
    from verifiers.catalog import load_catalog

    errors: list[Exception] = []
    for root in roots:
        for d in domains:
            if not (Path(root) / d).is_dir():
                continue
            for p in sorted((Path(root) / d).iterdir()):
                if not p.is_dir() or (names and p.name not in names):
                    continue
                loaded, bad = load_catalog(root, [d], [p.name])
                if loaded:
                    return
                errors += bad
    if not errors:
        return  # no task dir at all was already said by check_catalog
    held = _lake_task_names(lake, domains) if lake is not None else set()
    if held and (not names or held & set(names)):
        return  # the lake's own tasks are the run's work
    raise UserError(
        f"every task this run selects is refused ({len(errors)} of them; nothing would be "
        f"generated, verified or exported): {errors[0]}"
        + (f"; `crucible tasks --tasks {roots[0]}` lists the others" if len(errors) > 1 else "")
    )


def _lake_task_names(lake: Path, domains: tuple[str, ...]) -> set[str]:
    """The task names of `domains` an existing lake holds (a run selects those too); none
    when there is no lake yet."""
    from lake.store import MARKER

    if not _is_url(lake) and not (Path(lake) / MARKER).is_file():
        return set()
    from lake import db
    from lake.store import Lake, LakeError

    try:
        con = db.connect(Lake(lake, readonly=True))
    except LakeError:
        return set()  # the run's own open says what is wrong with it
    try:
        sql = "SELECT DISTINCT name FROM tasks WHERE list_contains($domains, domain)"
        return {r[0] for r in con.execute(sql, {"domains": list(domains)}).fetchall()}
    finally:
        con.close()


def check_mix_domains(mix: dict | None) -> None:
    """A mix that gives a share to a domain no registry entry has would get nothing of it
    (`"*"`, the share of the domains not named, is no domain)."""
    for name in (mix or {}).get("domain") or {}:
        if str(name) != "*":
            check_domain(str(name), "--mix")


def _is_url(lake: Path | str) -> bool:
    """An `s3://` lake (typer's Path makes it `s3:/...`; the lake reads both)."""
    from lake.objectstore import is_url

    return is_url(lake)


def lake_text(lake: Path | str) -> str:
    """A lake root as the user wrote it: `s3://b/p`, also from the `s3:/b/p` typer's Path
    makes of it; a local path as it is."""
    from lake.objectstore import display

    return display(lake)


def check_lake_exists(lake: Path) -> None:
    """A command that works on an existing lake refuses a path that holds none (a typo in
    --lake), instead of making a new empty lake there."""
    from lake.store import MARKER

    if _is_url(lake):
        return  # an object-store lake's open says itself when there is none
    path = Path(lake)
    if not path.exists():
        raise UserError(
            f"no lake at {path}: pass the --lake of an existing lake "
            f"(`crucible run --lake {path}` makes one)"
        )
    if path.is_dir() and not (path / MARKER).exists():
        raise UserError(f"{path} is not a Crucible lake (no {MARKER}): pass an existing lake")


def require_lake(lake: Path, *, writable: bool = False):
    """The existing lake at `lake` (a `Lake`), opened as the command will use it; never a
    new empty one."""
    from lake.store import Lake, LakeError

    check_lake_exists(lake)
    path = Path(lake)
    try:
        return Lake(path, readonly=not writable)
    except LakeError as e:
        raise UserError(str(e)) from None


def open_lake(lake: Path):
    """The lake a run writes, opened (created if absent) before the run starts: an
    unwritable or foreign directory is refused in one line, not from inside the flow."""
    from lake.store import Lake, LakeError

    try:
        return Lake(lake)
    except LakeError as e:
        raise UserError(str(e)) from None


def check_export_target(out: Path, name: str) -> None:
    """An export name that is taken is refused before the export is built; so is an
    export under an object-store lake (the default `<lake>/exports` of an s3:// lake)."""
    if _is_url(out):
        raise typer.BadParameter(
            f"{lake_text(out)} is on an object store: exports are written to a local "
            "directory; pass one with --out",
            param_hint="--out",
        )
    if name and (Path(out) / name).exists():
        raise typer.BadParameter(
            f"export {Path(out) / name} already exists: pick another --name or remove it",
            param_hint="--name",
        )


# --- services a run talks to: probed in seconds before the run --------------------------

PROBE_TIMEOUT_S = 5.0


def prefect_api() -> tuple[str, str | None]:
    """The Prefect API a flow of this process reports to, (URL, API key), as Prefect's
    own settings resolve it: the environment, a .env / prefect.toml / pyproject.toml in
    the working directory, the active profile. The URL is empty for Prefect's temporary
    in-process API."""
    from prefect.settings import get_current_settings

    api = get_current_settings().api
    key = api.key.get_secret_value() if api.key is not None else None
    return (api.url or "").strip(), key


def _prefect_api_source(url: str) -> tuple[str, str]:
    """Where the Prefect API URL `url` is set (empty: the environment), and how to
    unset it there."""
    if os.environ.get("PREFECT_API_URL", "").strip() == url:
        return "", "unset PREFECT_API_URL"
    from prefect.settings import PREFECT_API_URL, get_current_settings, load_current_profile

    try:
        profile = load_current_profile()
    except Exception:  # a hint only: an unreadable profile file is Prefect's to report
        profile = None
    if profile is not None and str(profile.settings.get(PREFECT_API_URL) or "").strip() == url:
        return (
            f" (set in Prefect profile {profile.name!r}, {get_current_settings().profiles_path})",
            "remove it from the profile: `prefect config unset PREFECT_API_URL`",
        )
    return (
        " (set in Prefect's settings: `prefect config view --show-sources` says where)",
        "remove PREFECT_API_URL there",
    )


def check_prefect_api() -> None:
    """A flow reports to the Prefect API that Prefect's settings name (`prefect_api`),
    wherever it is set: one that does not answer is refused now, in one line and before
    anything is made, not after Prefect's client retried for a minute mid-run."""
    import httpx

    url, key = prefect_api()
    if not url:
        return  # Prefect's temporary in-process API: started with the flow
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        resp = httpx.get(url.rstrip("/") + "/health", headers=headers, timeout=PROBE_TIMEOUT_S)
        # it answers: credentials are Prefect's to judge, a wrong path is not an API
        ok = resp.status_code < 400 or resp.status_code in (401, 403)
        why = "" if ok else f" (GET /health: HTTP {resp.status_code})"
    except (httpx.HTTPError, httpx.InvalidURL) as e:
        ok, why = False, f" ({type(e).__name__})"
    if not ok:
        where, fix = _prefect_api_source(url)
        raise UserError(
            f"Prefect API at {url} is not answering{why}{where}: start `crucible server` or {fix}"
        )


def check_endpoint(settings: PipelineSettings, environ: typing.Mapping[str, str]) -> str:
    """The `openai` generator's endpoint, asked for its models once; refused in one line
    when it does not answer. Returns a warning (empty: none) when the model is not
    among the ones it lists."""
    if settings.generator != "openai" or not settings.llm:
        return ""
    from generators.openai import GeneratorError, probe
    from generators.settings import LLMSettings

    llm = LLMSettings.from_dict(settings.llm).with_api_key_from(environ)
    try:
        served = probe(llm, timeout_s=PROBE_TIMEOUT_S)
    except GeneratorError as e:
        raise UserError(str(e)) from None
    if served and llm.model not in served:
        shown = ", ".join(served[:5]) + (" ..." if len(served) > 5 else "")
        return f"{llm.base_url} does not list model {llm.model!r} (it lists: {shown})"
    return ""
