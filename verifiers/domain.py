"""One domain, one descriptor: everything shared code needs to know about a domain.

A domain package declares a frozen `Domain` (stdlib only, so reading it never imports a
toolchain) in its own `domain.py`; this module holds the registry, the only map from a
name to a descriptor. Built-in domains are listed in `BUILTIN`; a domain shipped by another
package joins through the `crucible.domains` entry-point group (the way fsspec finds its
backends), e.g. in that package's pyproject.toml:

    [project.entry-points."crucible.domains"]
    mydomain = "mypkg.domain:DOMAIN"

Flows, the lake, the Ray actors, SQL and shared generator code never name a domain: they
ask its descriptor (`get("rtl").resource`, `.prompt.fence`, `.stage_of("compile")` ...).
"""

from __future__ import annotations

import importlib
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

# What a gate does with the candidate, in pipeline order. SQL and exports key on these,
# never on a gate's name: "compiled" (DPO) means every `build` check passed.
STAGES = ("build", "run", "judge", "perf")
# the base's own gate (`Verifier._format_gate`): no usable code means it never built
FORMAT_GATE = ("format", "build")
DIRECTIONS = ("lower", "higher")
SYNTAXES = ("c", "cpp", "python", "asm")  # comment syntax dedup folds (lake/dedup.py)
ENTRY_POINT_GROUP = "crucible.domains"
NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


@dataclass(frozen=True)
class PromptStyle:
    """How a prompt asks for the answer (generators/prompts.py)."""

    language: str  # what the model writes, e.g. "SystemVerilog"
    fence: str  # the code fence tag the answer must use
    output: str  # one sentence: what the answer must contain


@dataclass(frozen=True)
class ExtractRules:
    """How code is found in a model's answer (generators/extract.py). Regexes are
    multiline; `named_entry` holds `{name}` where the task's entry point's name goes."""

    entry: str  # any entry point of the domain
    named_entry: str  # the task's own entry point
    unfenced: str  # how an unfenced answer that is nothing but code starts (re.S)
    comment: str = "#"  # line comment: a placeholder candidate says why there was no code
    python: bool = False  # an unfenced answer must also parse as Python
    cut_after: str = ""  # an unfenced answer ends at the last of this (prose after it)
    entry_field: str = ""  # the interface field that names the entry point ("top")
    entry_const: str = ""  # or one fixed entry point name ("ModelNew")
    tags: tuple[str, ...] = ()  # more fence tags models use for it (beyond the fence's family)

    def entry_name(self, interface: Mapping[str, Any]) -> str | None:
        """The name the verifier looks for in a task with this interface, if any."""
        if self.entry_field:
            return interface.get(self.entry_field) or None
        return self.entry_const or None

    def named_pattern(self, name: str) -> str:
        return self.named_entry.replace("{name}", re.escape(name))


@dataclass(frozen=True)
class PerfMetric:
    """The metric an optimisation pair compares, which way is better, and its unit."""

    name: str
    direction: str  # "lower" or "higher"
    unit: str
    # a second metric the better of a pair must also win on, (name, direction): a gain one
    # measurement shows is only taken when another, independent one agrees
    confirm: tuple[str, str] | None = None
    goal: str = ""  # what the optimize prompt asks for ("faster"); default from direction
    # the metrics the optimize prompt reports beside `name` (empty: every numeric one)
    report: tuple[str, ...] = ()

    @property
    def ask(self) -> str:
        return self.goal or ("smaller" if self.direction == "lower" else "faster")


@dataclass(frozen=True)
class Domain:
    name: str
    verifier: str  # "module:Class"
    spec_loader: str  # "module:function" (toml_path, spec) -> (interface, harness, reference)
    resource: str  # the Ray resource its verifier's node declares
    install: str  # what to run when its tools or Python stack are missing
    prompt: PromptStyle
    extract: ExtractRules
    syntax: str  # one of SYNTAXES
    gates: tuple[tuple[str, str], ...]  # (gate, stage) in the order they run
    perturb: str | None = None  # "module:Class" of its offline generator
    tools: tuple[str, ...] = ()  # binaries a node needs on PATH to offer `resource`
    modules: tuple[str, ...] = ()  # Python modules it needs importable there
    perf: PerfMetric | None = None
    fast_gates: tuple[str, ...] | None = None  # `--fast`: the quick screen (None: all)
    default_run: bool = False  # `crucible run` without --domain runs it
    settings: str | None = None  # "module:Class" of its verifier settings (JSON-safe)
    summary: str = ""  # one line for `--help` and the guide
    # how its verifier proves a pass equal to the task's reference ("" : it has no formal
    # check; its passes are judged by their tests), for the dataset card
    formal: str = ""
    # benchmark importers: (benchmark, "module:function"), the function writing that
    # benchmark's problems as tasks (`crucible import-<benchmark>` finds it here)
    importers: tuple[tuple[str, str], ...] = ()
    # the node type's container image: infra/images/<image>/Dockerfile builds it, tagged
    # `crucible-<image>:<version>` (`image_tag`); None: no image (e.g. the GPU node brings
    # its own CUDA stack)
    image: str | None = None

    def __post_init__(self) -> None:
        where = f"domain descriptor {self.name!r}"
        if not NAME.match(self.name):
            raise ValueError(f"{where}: name must be lowercase snake_case")
        for attr in ("verifier", "spec_loader") + (("perturb",) if self.perturb else ()):
            if ":" not in getattr(self, attr):
                raise ValueError(f"{where}: {attr} must be a dotted 'module:Name' path")
        if self.syntax not in SYNTAXES:
            raise ValueError(f"{where}: syntax must be one of {', '.join(SYNTAXES)}")
        if self.perf is not None and self.perf.direction not in DIRECTIONS:
            raise ValueError(f"{where}: perf direction must be one of {', '.join(DIRECTIONS)}")
        confirm = self.perf.confirm if self.perf is not None else None
        if confirm is not None and (len(confirm) != 2 or confirm[1] not in DIRECTIONS):
            raise ValueError(f"{where}: perf confirm must be (metric, direction)")
        names = [g for g, _ in self.gates]
        if not names or len(set(names)) != len(names) or FORMAT_GATE[0] in names:
            raise ValueError(f"{where}: gates must be unique, non-empty and not 'format'")
        for gate, stage in self.gates:
            if stage not in STAGES:
                raise ValueError(f"{where}: gate {gate!r} has stage {stage!r}, not in {STAGES}")
        if self.fast_gates is not None and not set(self.fast_gates) <= set(names):
            raise ValueError(f"{where}: fast_gates must name its own gates")
        if any(len(i) != 2 or ":" not in i[1] for i in self.importers):
            raise ValueError(f"{where}: importers must be (benchmark, 'module:function') pairs")

    @property
    def gate_names(self) -> tuple[str, ...]:
        return tuple(g for g, _ in self.gates)

    def stage_of(self, gate: str) -> str:
        """The stage of a gate of this domain (the base's `format` gate is `build`)."""
        if gate == FORMAT_GATE[0]:
            return FORMAT_GATE[1]
        for g, stage in self.gates:
            if g == gate:
                return stage
        raise KeyError(f"the {self.name} domain has no gate {gate!r}")

    def gates_of(self, stage: str) -> tuple[str, ...]:
        return tuple(g for g, s in self.gates if s == stage)


# The built-in domains: the only lines outside its package that a new domain adds here.
BUILTIN = (
    "verifiers.cad.domain:DOMAIN",
    "verifiers.kernels.domain:CUDA",
    "verifiers.embedded.domain:DOMAIN",
    "verifiers.rtl.domain:DOMAIN",
    "verifiers.kernels.domain:TRITON",
    "verifiers.x86asm.domain:DOMAIN",
    "verifiers.ascendc.domain:DOMAIN",
)

_lock = threading.RLock()
_domains: dict[str, Domain] = {}
_loaded = False


def load_dotted(dotted: str) -> Any:
    """The object `package.module:Name` names, imported on first use."""
    module_name, _, name = dotted.partition(":")
    return getattr(importlib.import_module(module_name), name)


def register(domain: Domain, *, overwrite: bool = False) -> None:
    """Add a descriptor. Replacing one under the same name needs `overwrite=True`."""
    if not isinstance(domain, Domain):
        raise TypeError(f"register() takes a Domain, not {type(domain).__name__}")
    with _lock:
        _ensure_loaded()
        _add(domain, overwrite=overwrite)


def unregister(name: str) -> None:
    """Drop a descriptor (tests that register a domain of their own)."""
    with _lock:
        _ensure_loaded()
        _domains.pop(name, None)


def _add(domain: Domain, *, overwrite: bool, origin: str = "") -> None:
    old = _domains.get(domain.name)
    if old is not None and old != domain and not overwrite:
        raise ValueError(
            f"domain {domain.name!r} is already registered (verifier {old.verifier})"
            + (f"; {origin} declares it again" if origin else "")
            + ": pass overwrite=True to replace it"
        )
    _domains[domain.name] = domain


def _ensure_loaded() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for dotted in BUILTIN:
        _add(load_dotted(dotted), overwrite=False, origin=dotted)
    for ep in _entry_points():
        try:
            found = ep.load()
        except Exception as e:  # a broken third-party package must not hide the others
            log.warning("domain entry point %s = %s failed to load: %s", ep.name, ep.value, e)
            continue
        if not isinstance(found, Domain) or found.name != ep.name:
            log.warning(
                "domain entry point %s = %s is not a Domain named %r; ignored",
                ep.name,
                ep.value,
                ep.name,
            )
            continue
        _add(found, overwrite=False, origin=f"entry point {ep.value}")


def reload() -> None:
    """Read the built-ins and the entry points again (after a package was installed, or
    to drop what a test registered)."""
    global _loaded
    with _lock:
        _domains.clear()
        _loaded = False
        _ensure_loaded()


def _entry_points() -> list:
    from importlib.metadata import entry_points

    return list(entry_points(group=ENTRY_POINT_GROUP))


def domains() -> dict[str, Domain]:
    """Every registered domain, sorted by name."""
    with _lock:
        _ensure_loaded()
        return dict(sorted(_domains.items()))


def names() -> tuple[str, ...]:
    return tuple(domains())


def get(name: str) -> Domain:
    """The descriptor of `name`; an unknown name says which ones exist. On every check a
    verifier records (its stage): a plain lookup, no copy of the registry."""
    if not _loaded:
        with _lock:
            _ensure_loaded()
    found = _domains.get(name)
    if found is None:
        raise UnknownDomain(name)
    return found


def default_run() -> tuple[str, ...]:
    """What `crucible run` works on without --domain."""
    return tuple(n for n, d in domains().items() if d.default_run)


def importer(benchmark: str) -> tuple[Any, tuple[str, ...]]:
    """The importer of `benchmark` and the domains whose descriptors name it (sorted)."""
    paths = {
        name: dotted
        for name, d in domains().items()
        for bench, dotted in d.importers
        if bench == benchmark
    }
    if not paths:
        raise LookupError(f"no domain declares an importer for {benchmark!r}")
    if len(set(paths.values())) > 1:
        raise LookupError(f"domains name different importers for {benchmark!r}: {paths}")
    return load_dotted(next(iter(paths.values()))), tuple(paths)


def by_resource() -> dict[str, list[Domain]]:
    out: dict[str, list[Domain]] = {}
    for d in domains().values():
        out.setdefault(d.resource, []).append(d)
    return out


class UnknownDomain(KeyError):
    def __init__(self, name: str):
        self.name = name
        super().__init__(name)

    def __str__(self) -> str:
        return f"no domain named {self.name!r}; known: {', '.join(names())}"


def image_tag(image: str) -> str:
    """The tag `infra/build-images.sh` gives node image `image` (a descriptor's `image`):
    `crucible-<image>:<package version>`; a registry prefix is the user's to add."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("crucible")
    except PackageNotFoundError:  # a source tree that was never installed
        v = "0.1.0"
    return f"crucible-{image}:{v}"


def by_image() -> dict[str, list[Domain]]:
    """Node image -> the domains whose verifier workers it carries."""
    out: dict[str, list[Domain]] = {}
    for d in domains().values():
        if d.image:
            out.setdefault(d.image, []).append(d)
    return out
