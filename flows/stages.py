"""The pipeline's stages as plain functions: ingest, generate, verify, repair, dedup, export.

Every stage follows the one rule of state: it selects its work from the lake with SQL,
does it and appends the results. Killing a run at any point and starting it again finishes
the work: ids are content hashes, the writer skips ids already present, and each stage's
selection only returns what is left (candidates without a verdict of the current verifier
version, failed candidates without a repair, tasks without candidates).

`flows.pipeline` wraps these in Prefect flows; they know nothing of Prefect themselves, so
a test or a bench can call them directly.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb

from flows import interrupt
from generators import make_generator
from generators.base import Generator, RepairRequest
from lake import db
from lake.lock import hold
from lake.objectstore import display
from lake.schema import Trajectory, Turn, candidate_from_row, task_from_row, verdict_from_row
from lake.store import Lake
from lake.writer import BatchWriter
from ray_actors import cluster
from ray_actors.verify import PoolSettings, VerifierWorker, verify_candidates
from verifiers import domain as domain_registry
from verifiers.base import Verifier
from verifiers.catalog import TaskSpecError, load_catalog
from verifiers.contract import Candidate, Limits, Task, Verdict, content_id
from verifiers.datadirs import data_dir
from verifiers.registry import get_verifier
from verifiers.settings import settings_for

log = logging.getLogger(__name__)

DEFAULT_TASKS = data_dir("tasks")  # the checkout's tasks/, or the wheel's copy
STAGES = ("generate", "verify", "repair", "dedup", "export")


@dataclass(frozen=True)
class PipelineSettings:
    """Everything a pipeline run is parameterised by (loaded once, at the entry point)."""

    lake: Path = Path("crucible-lake")
    task_roots: tuple[Path, ...] = (DEFAULT_TASKS,)
    # what `crucible run` works on without --domain (`Domain.default_run`)
    domains: tuple[str, ...] = field(default_factory=lambda: domain_registry.default_run())
    task_names: tuple[str, ...] | None = None  # the tasks filter: None = every task
    stages: tuple[str, ...] = STAGES
    generator: str = "perturb"  # perturb | openai | vllm
    llm: dict[str, Any] | None = None  # LLMSettings fields for openai / vllm
    candidates_per_task: int | None = None  # perturb: mutations per task (None: one round)
    repair_rounds: int = 2
    limits: Limits = field(default_factory=Limits)
    # run only each domain's quick screen (`Domain.fast_gates`) instead of `limits.gates`
    fast: bool = False
    # domain -> its verifier's settings dict (`verifiers.settings`; absent: the defaults)
    verifier_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    seed: int = 0
    pool: PoolSettings = field(default_factory=PoolSettings)
    ray: cluster.ClusterSettings = field(default_factory=cluster.ClusterSettings)
    verdict_batch: int = 256  # verdicts per lake commit: what a crash can cost to redo
    tasks_per_commit: int = 16  # generate: whole tasks per commit (see `generate`)
    dedup: dict[str, Any] = field(default_factory=dict)  # DedupSettings fields
    export: dict[str, Any] | None = field(default_factory=dict)  # ExportSettings; None: skip
    export_dir: Path | None = None  # default: <lake>/exports

    def __post_init__(self) -> None:
        if self.fast and self.limits.gates is not None:
            raise ValueError("give fast or limits.gates, not both")
        for domain, given in self.verifier_settings.items():
            domain_registry.get(domain)  # an unknown domain, or settings not its own,
            settings_for(domain, given)  # are refused here

    def limits_for(self, domain: str) -> Limits:
        """The limits `domain`'s candidates are verified under: the run's, with the
        domain's own fast gates when the run is `fast`."""
        if not self.fast:
            return self.limits
        return replace(self.limits, gates=domain_registry.get(domain).fast_gates)

    def settings_of(self, domain: str) -> dict[str, Any]:
        """The settings dict of `domain`'s verifier for this run (empty: the defaults)."""
        return dict(self.verifier_settings.get(domain) or {})

    def to_params(self) -> dict[str, Any]:
        return {
            "lake": display(self.lake),
            "task_roots": [str(p) for p in self.task_roots],
            "domains": list(self.domains),
            "task_names": list(self.task_names) if self.task_names else None,
            "stages": list(self.stages),
            "generator": self.generator,
            "llm": {k: v for k, v in (self.llm or {}).items() if k != "api_key"} or None,
            "candidates_per_task": self.candidates_per_task,
            "repair_rounds": self.repair_rounds,
            "limits": self.limits.to_dict(),
            "fast": self.fast,
            # the values that differ from each verifier's defaults, as verdicts record them
            "verifier_settings": {
                d: rec
                for d, given in sorted(self.verifier_settings.items())
                if (rec := settings_for(d, given).recorded())
            },
            "seed": self.seed,
            "workers": self.pool.workers,
            "batch_size": self.pool.batch_size,
            "node_wait_s": self.pool.node_wait_s,
            "dedup": self.dedup,
            "export": self.export,
        }


# --- progress: the CLI plugs rich in; flows and tests leave it silent --------------------


class Reporter:
    def run_started(self, run_id: str, ui_url: str | None) -> None:
        """The flow run began: its id, and its page in the Prefect UI (None when the
        API is Prefect's temporary in-process one, which serves no UI)."""

    def stage(self, name: str, total: int | None = None) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def done(self) -> None: ...


_REPORTER: contextvars.ContextVar[Reporter | None] = contextvars.ContextVar(
    "crucible_reporter", default=None
)
_SILENT = Reporter()


@contextlib.contextmanager
def reporting(reporter: Reporter) -> Iterator[None]:
    """Show stage progress on `reporter` for the calls made inside the block.

    A context variable rather than a parameter: flow parameters are recorded by Prefect
    and must be data; Prefect copies the context into the threads that run its tasks.
    """
    token = _REPORTER.set(reporter)
    try:
        yield
    finally:
        _REPORTER.reset(token)


def reporter() -> Reporter:
    return _REPORTER.get() or _SILENT


# --- the context a stage runs in --------------------------------------------------------


@dataclass
class StageContext:
    settings: PipelineSettings
    lake: Lake
    con: duckdb.DuckDBPyConnection
    run_id: str
    counts: dict[str, Any] = field(default_factory=dict)
    refused: list[TaskSpecError | ReferenceFails] = field(default_factory=list)
    # verifier actors per domain, started once per run (released with the context)
    pools: dict[str, Any] = field(default_factory=dict)
    export_manifest: dict[str, Any] | None = None  # what the export stage wrote, if it ran

    def count(self, key: str, n: int | float) -> None:
        self.counts[key] = self.counts.get(key, 0) + n


@contextlib.contextmanager
def stage_context(
    settings: PipelineSettings, run_id: str, command: str = "a pipeline run"
) -> Iterator[StageContext]:
    """One lake handle and one DuckDB connection for a whole run: each connect loads the
    delta extension and creates every view, and a view reads the latest version anyway.
    The run holds the lake's run lock throughout (`lake.lock`; `command` is what a second
    run is told holds it): a lake another run is writing stops this one here, before
    any work."""
    lake = Lake(settings.lake)  # a bad lake path stops the run here, before any work
    with hold(lake.root, command, run_id):
        con = db.connect(lake)
        ctx = StageContext(settings, lake, con, run_id)
        try:
            yield ctx
        finally:
            ctx.pools.clear()  # the last handle gone, Ray stops the actors
            con.close()


def _start_ray(s: PipelineSettings) -> None:
    """Ray started or joined. `ray.init` sets its own SIGTERM handler (SystemExit): the
    command's, which cancels the run, is put back (`flows.interrupt`)."""
    cluster.start(s.ray)
    interrupt.reclaim()


def task_ids(ctx: StageContext) -> list[str]:
    """The tasks this run works on: the tasks filter applied to the lake's tasks."""
    s = ctx.settings
    rows = db.rows(
        ctx.con,
        "select_tasks",
        domains=list(s.domains),
        names=list(s.task_names) if s.task_names else None,
    )
    return [r["task_id"] for r in rows]


def load_tasks(con: duckdb.DuckDBPyConnection, ids: list[str]) -> dict[str, Task]:
    if not ids:
        return {}
    sql = "SELECT * FROM tasks WHERE task_id IN (SELECT unnest($ids))"
    rows = con.execute(sql, {"ids": ids}).to_arrow_table().to_pylist()
    return {r["task_id"]: task_from_row(r) for r in rows}


# --- ingest -----------------------------------------------------------------------------


def ingest(ctx: StageContext) -> None:
    """The task catalog into the `tasks` table; malformed tasks are refused, not written.
    Then every task's reference is checked (`check_references`): a task whose reference
    fails is refused too, and no stage selects it."""
    s = ctx.settings
    tasks: list[Task] = []
    errors: list[TaskSpecError] = []
    for root in s.task_roots:
        loaded, bad = load_catalog(root, s.domains, s.task_names)
        tasks += loaded
        errors += bad
    for e in errors:
        log.warning("refused task: %s", e)
    ctx.refused += errors
    with BatchWriter(ctx.lake, run_id=ctx.run_id) as w:
        for t in tasks:
            w.add_task(t)
    ctx.count("tasks", len(tasks))
    ctx.count("tasks_written", w.stats["tasks"].written)
    failing = check_references(ctx, tasks)
    ctx.refused += failing
    ctx.count("tasks_refused", len(errors) + len(failing))


class ReferenceFails(ValueError):
    """A task whose reference does not pass its own verifier: every candidate of it would
    be judged against a broken reference (seen: a CAD reference that raises made each
    candidate an infra_error, retried forever)."""

    def __init__(self, row: dict[str, Any]) -> None:
        self.task_id, self.name, self.domain = row["task_id"], row["name"], row["domain"]
        first = (row["feedback"] or "").strip().splitlines()
        why = f"{row['status']} {row['code'] or ''}".strip()
        until = (
            "its reference passes (a `slow` reference is measured again on every run: a "
            "busy machine can hide its gain), or its reference (or the verifier) is fixed"
            if row["status"] == "slow"
            else "its reference (or the verifier) is fixed"
        )
        super().__init__(
            f"{row['domain']}/{row['name']}: its reference fails its own verifier "
            f"({row['verifier']} {row['verifier_version']}: {why}"
            f"{': ' + first[0][:200] if first else ''}); the task is refused: no "
            f"candidates are generated, verified or exported for it until {until}"
        )


def read_again(v: Verdict) -> Verdict:
    """A reference's reading after a `slow` one, with an id of its own: the canonical id
    is the first reading's, and the writer drops an id the table holds; so stored, the
    newest reading is the reference's latest verdict (`latest_verdicts`)."""
    salt = content_id(v.candidate_id, v.verifier, v.verifier_version, "again", v.created_at)
    return replace(v, verdict_id=salt)


REFERENCE_GENERATOR = "catalog:reference"  # the offline channel's label for it
HARNESS_BROKEN = "harness_error"  # the one infra code that is the task's own fault


def reference_candidate(task: Task) -> Candidate:
    """The task's reference as a candidate: the id the offline channel's reference
    candidate (or a model's answer equal to it) has, so its verdict serves them too."""
    return Candidate(
        task_id=task.task_id, code=task.reference, origin="reference", generator=REFERENCE_GENERATOR
    )


def check_references(ctx: StageContext, tasks: list[Task]) -> list[ReferenceFails]:
    """Verify each task's reference with its domain's verifier (the run's limits), once
    per verifier version (`sql/reference_todo.sql`; a `slow` one on every run until it
    passes: a speed is a measurement of the machine too). Only the verdict is stored: no
    candidate row, so a channel that does not generate references (a model) gets none in
    its data; the offline channel's reference candidate, generated next, is found judged.
    Returns the tasks refused for their reference (`reference_checks`), with the reason."""
    s = ctx.settings
    by_task = {t.task_id: t for t in tasks if t.reference}
    by_domain: dict[str, list[Candidate]] = {}
    again: set[str] = set()  # references read `slow` before, measured again
    for domain in sorted({t.domain for t in by_task.values()}):
        v = verifier_of(s, domain)
        rows = db.rows(
            ctx.con,
            "reference_todo",
            domain=domain,
            verifier=v.name,
            verifier_version=v.version_for(s.limits_for(domain)),
            task_ids=[i for i, t in by_task.items() if t.domain == domain],
        )
        if rows:
            by_domain[domain] = [reference_candidate(by_task[r["task_id"]]) for r in rows]
            pairs = zip(by_domain[domain], rows, strict=True)
            again.update(c.candidate_id for c, r in pairs if r["again"])
    unchecked: list[Verdict] = []

    def measured_again(v: Verdict) -> Verdict:
        return read_again(v) if v.candidate_id in again else v

    def judged(v: Verdict) -> bool:
        # An infra_error says nothing of the reference (the machine failed, e.g. no GPU
        # here): not stored, so the next run checks again; the task is not refused.
        if v.status.is_infra and v.code != HARNESS_BROKEN:
            unchecked.append(v)
            return False
        return True

    ctx.count(
        "references_verified",
        _verify_into_lake(ctx, by_domain, by_task, "references", judged, into=measured_again),
    )
    ctx.count("references_measured_again", len(again))
    # one line per reason, not per task: a node without a domain's hardware (no GPU, no
    # CANN) would otherwise print the same sentence for every task of the catalog
    why: dict[tuple[str, str, str], list[str]] = {}
    for v in unchecked:
        reason = (v.feedback or "").strip().split("\n")[0][:300]
        why.setdefault((v.domain, v.code, reason), []).append(by_task[v.task_id].name)
    for (domain, code, reason), names in why.items():
        shown = ", ".join(sorted(names)[:8]) + (
            f" and {len(names) - 8} more" if len(names) > 8 else ""
        )
        log.warning(
            "the reference of %d %s task(s) could not be checked (%s: %s); checked again next "
            "run: %s",
            len(names),
            domain,
            code,
            reason,
            shown,
        )
    ctx.count("references_unchecked", len(unchecked))
    failing = db.rows(ctx.con, "refused_tasks", task_ids=list(by_task))
    out = [ReferenceFails(r) for r in failing]
    for e in out:
        log.warning("refused task: %s", e)
    return out


# --- generate ---------------------------------------------------------------------------


def generator(ctx: StageContext) -> Generator:
    llm = ctx.settings.llm
    if llm is not None and not llm.get("api_key"):
        # The key is read where the generator is made (a scheduled run's own process),
        # never stored in the run's parameters.
        env = llm.get("api_key_env") or "OPENAI_API_KEY"
        llm = {**llm, "api_key": os.environ.get(env, "")}
    if ctx.settings.generator == "vllm":
        # the engine lives on a GPU actor of the cluster (checked before it is created)
        from generators.settings import LLMSettings
        from ray_actors.generate import vllm_generator

        _start_ray(ctx.settings)
        return vllm_generator(LLMSettings.from_dict(dict(llm or {})))
    return make_generator(ctx.settings.generator, llm)


@contextlib.contextmanager
def _generator(ctx: StageContext, gen: Generator | None) -> Iterator[Generator]:
    """The given generator, or one made for this stage and closed after it."""
    if gen is not None:
        yield gen
        return
    made = generator(ctx)
    try:
        yield made
    finally:
        close = getattr(made, "close", None)
        if close is not None:
            close()


def generate(ctx: StageContext, gen: Generator | None = None) -> None:
    """Candidates for the tasks that still lack them (`sql/generation_todo.sql`).

    A task's candidates are committed together (whole tasks per commit), so a task with
    any candidate of this generator's channel is complete for the run that made them and
    a rerun skips it. A deterministic channel given `candidates_per_task` is asked again
    for a task that has fewer perturbations than that (it returns the same candidates
    plus the missing ones, and the writer appends only those), so raising it tops tasks
    up; a task that cannot reach the number is asked on every such run, adding nothing.
    """
    with _generator(ctx, gen) as g:
        _generate(ctx, g)


def _generate(ctx: StageContext, gen: Generator) -> None:
    s = ctx.settings
    want = _wanted_per_task(s, gen)
    todo = db.rows(
        ctx.con,
        "generation_todo",
        task_ids=task_ids(ctx),
        origins=list(gen.origins),
        generator=gen.candidates_like,
        capped_origin=CAPPED_ORIGIN,
    )
    todo = [r for r in todo if _short(s, gen, r, want)]
    tasks = load_tasks(ctx.con, [r["task_id"] for r in todo])
    have = {r["task_id"]: r["have"] for r in todo}
    rep = reporter()
    rep.stage("generate", len(tasks))
    made = 0
    # The writer never flushes on its own here: commits hold whole tasks.
    with BatchWriter(ctx.lake, run_id=ctx.run_id, batch_size=10**9) as w:
        done = 0
        for n, group in _by_shortfall(s, gen, tasks, have):
            for task, cands in gen.generate_many(group, n=n, seed=s.seed):
                for c in cands:
                    w.add_candidate(replace(c, run_id=ctx.run_id), task.domain)
                made += len(cands)
                done += 1
                rep.advance()
                if done % s.tasks_per_commit == 0:
                    w.flush()
    ctx.count("generated", made)
    ctx.count("candidates_written", w.stats["candidates"].written)
    ctx.counts["generator_stats"] = dict(gen.stats)
    rep.done()


# what `candidates_per_task` counts for a deterministic channel: its perturbations (the
# reference and its rewrites come on top, as many as the task allows)
CAPPED_ORIGIN = "perturb"


def _short(s: PipelineSettings, gen: Generator, row: dict[str, Any], want: int) -> bool:
    if gen.deterministic and row["have"] and s.candidates_per_task is not None:
        return row["have_capped"] < s.candidates_per_task
    return row["have"] < want


def _wanted_per_task(s: PipelineSettings, gen: Generator) -> int:
    if gen.deterministic:
        return 1  # committed per task: any candidate of its channel means done
    return int(s.candidates_per_task or (s.llm or {}).get("n") or 4)


def _by_shortfall(
    s: PipelineSettings, gen: Generator, tasks: dict[str, Task], have: dict[str, int]
) -> list[tuple[int | None, list[Task]]]:
    """Tasks grouped by how many candidates each still needs (the `n` to ask for)."""
    if gen.deterministic:
        return [(s.candidates_per_task, list(tasks.values()))]
    # sampling generators top up what an earlier (killed) run left short
    want = _wanted_per_task(s, gen)
    groups: dict[int, list[Task]] = {}
    for tid, task in tasks.items():
        groups.setdefault(want - have[tid], []).append(task)
    return sorted(groups.items(), key=lambda kv: kv[0])


# --- verify -----------------------------------------------------------------------------


def verifier_of(s: PipelineSettings, domain: str) -> Verifier:
    """The domain's verifier with the run's settings for it (its name and version select
    the work; the actors build their own)."""
    return get_verifier(domain, s.settings_of(domain))


def pending_candidates(
    con: duckdb.DuckDBPyConnection, domain: str, ids: list[str], limits: Limits
) -> list[Candidate]:
    """Candidates of these tasks with no verdict from the domain's verifier version under
    `limits` (`sql/pending_verification.sql`): the verify stage's work, and `crucible
    pending`'s."""
    v = get_verifier(domain)
    rows = db.rows(
        con,
        "pending_verification",
        domain=domain,
        verifier=v.name,
        verifier_version=v.version_for(limits),
        task_ids=ids,
    )
    return [candidate_from_row(r) for r in rows]


def verify(
    ctx: StageContext, domains: tuple[str, ...] | None = None, label: str = "verify"
) -> None:
    """Verify every candidate of the run's tasks that has no verdict from the current
    verifier version (`sql/pending_verification.sql`), on Ray actors. `label` names the
    progress bar (a repair round's verification says which round it is)."""
    s = ctx.settings
    t0 = time.perf_counter()
    ids = task_ids(ctx)
    by_domain: dict[str, list[Candidate]] = {}
    for domain in domains or s.domains:
        by_domain[domain] = pending_candidates(ctx.con, domain, ids, s.limits_for(domain))
    tasks = load_tasks(ctx.con, sorted({c.task_id for cs in by_domain.values() for c in cs}))
    total = _verify_into_lake(ctx, by_domain, tasks, "verify", label=label)
    ctx.count("verified", total)
    ctx.count("verify_seconds", round(time.perf_counter() - t0, 3))


def _verify_into_lake(
    ctx: StageContext,
    by_domain: dict[str, list[Candidate]],
    tasks: dict[str, Task],
    stage: str,
    keep: Callable[[Verdict], bool] | None = None,
    label: str | None = None,
    into: Callable[[Verdict], Verdict] | None = None,
) -> int:
    """Verify candidates on the cluster's actors and append their verdicts (those `keep`
    accepts, as `into` makes them); the count verified. Workers that died and were
    restarted by Ray meanwhile (their batches retried) are counted: `worker_restarts`, and
    per resource; each death seen is kept in `worker_deaths` (pid, node, exit status or
    signal, last stderr lines: `ray_actors.lastwords.WorkerDeath`)."""
    s = ctx.settings
    total = sum(map(len, by_domain.values()))
    rep = reporter()
    rep.stage(label or stage, total)
    if total:
        _start_ray(s)
    statuses: dict[str, int] = {}
    verifier_ms = 0.0
    with BatchWriter(ctx.lake, run_id=ctx.run_id, batch_size=s.verdict_batch) as w:

        def on_batch(verdicts: list[Verdict]) -> None:
            nonlocal verifier_ms
            for v in verdicts:
                if keep is None or keep(v):
                    w.add_verdict(into(v) if into else v)
                statuses[v.status.value] = statuses.get(v.status.value, 0) + 1
                verifier_ms += v.duration_ms
            rep.advance(len(verdicts))

        for domain, cands in by_domain.items():
            before = cluster.actor_restarts(VerifierWorker.__name__) if cands else {}
            for _ in verify_candidates(
                domain,
                cands,
                tasks,
                s.limits_for(domain),
                s.pool,
                on_batch,
                pools=ctx.pools,
                verifier_settings=s.settings_of(domain),
                on_death=lambda death: ctx.counts.setdefault("worker_deaths", []).append(death),
            ):
                pass
            if cands:
                _count_restarts(ctx, domain, before, stage)
    # the verify stage's counts are the run's; another stage's go under its own name
    pre = "" if stage == "verify" else f"{stage}_"
    ctx.count(f"{pre}verdicts_written", w.stats["verdicts"].written)
    ctx.count(f"{pre}verifier_seconds", round(verifier_ms / 1000, 3))
    for k, n in statuses.items():
        ctx.count(f"{pre}status_{k}", n)
    rep.done()
    return total


def _count_restarts(ctx: StageContext, domain: str, before: dict[str, int], stage: str) -> None:
    """Count the verifier workers Ray restarted while `domain`'s candidates were verified
    (a worker killed, e.g. for memory: Ray restarts the actor and retries its batch)."""
    after = cluster.actor_restarts(VerifierWorker.__name__)
    n = sum(max(0, k - before.get(a, 0)) for a, k in after.items())
    if not n:
        return
    resource = verifier_of(ctx.settings, domain).resource
    ctx.count("worker_restarts", n)
    by = ctx.counts.setdefault("worker_restarts_by_resource", {})
    by[resource] = by.get(resource, 0) + n
    log.warning(
        "%d %s verifier worker(s) (resource `%s`) died during %s and were restarted by Ray; "
        "their batches were retried",
        n,
        domain,
        resource,
        stage,
    )


# --- repair -----------------------------------------------------------------------------


def repair(ctx: StageContext, gen: Generator | None = None) -> None:
    """Up to `repair_rounds` rounds of: select failed candidates that have no repair yet
    (`sql/repair_heads.sql`), generate a fix from the code and the verdict's feedback,
    verify the fixes, and close the chains that ended (pass, or out of rounds) as
    trajectories. Each round reads its work from the lake, so a killed run resumes."""
    if ctx.settings.repair_rounds <= 0:
        return
    with _generator(ctx, gen) as g:
        _repair(ctx, g)


def _repair(ctx: StageContext, gen: Generator) -> None:
    s = ctx.settings
    rep = reporter()
    for domain in s.domains:
        # Chains a killed run left verified but not yet recorded are closed first.
        ctx.count("trajectories_written", close_chains(ctx, domain))
        for round_no in range(1, s.repair_rounds + 1):
            requests = _repair_requests(ctx, domain)
            if not requests:
                break
            rep.stage(f"repair {domain} {round_no}", len(requests))
            fixes, closed = _write_fixes(ctx, gen, requests)
            rep.done()
            ctx.count("repair_requests", len(requests))
            ctx.count("repair_candidates", fixes)
            ctx.count("trajectories_written", closed)
            if not fixes:
                break
            verify(ctx, (domain,), label=f"verify {domain} fixes {round_no}")
            ctx.count("trajectories_written", close_chains(ctx, domain))
    ctx.counts["repair_stats"] = {k: v for k, v in gen.stats.items() if k.startswith("repair")}


def _repair_requests(ctx: StageContext, domain: str) -> list[RepairRequest]:
    v = verifier_of(ctx.settings, domain)
    params = {"domain": domain, "task_ids": task_ids(ctx)}
    heads = db.rows(
        ctx.con,
        "repair_heads",
        **params,
        verifier=v.name,
        verifier_version=v.version_for(ctx.settings.limits_for(domain)),
        max_attempt=ctx.settings.repair_rounds,
    )
    if not heads:
        return []
    verified: dict[str, list[Candidate]] = {}
    for r in db.rows(ctx.con, "verified_candidates", **params):
        verified.setdefault(r["task_id"], []).append(candidate_from_row(r))
    tasks = load_tasks(ctx.con, sorted({h["task_id"] for h in heads}))
    return [
        RepairRequest(
            task=tasks[h["task_id"]],
            failed=candidate_from_row(h["candidate"]),
            verdict=verdict_from_row(h["verdict"]),
            verified=tuple(verified.get(h["task_id"], ())),
        )
        for h in heads
    ]


def _write_fixes(
    ctx: StageContext, gen: Generator, requests: list[RepairRequest]
) -> tuple[int, int]:
    """Append the fixes; returns (fixes written, trajectories closed at once).

    A fix whose code some candidate of the task already has (often the verified variant
    itself) keeps that candidate's id, so the lake cannot record a new parent link for
    it: the chain is closed right here with that candidate's verdict as its last turn.
    """
    rep = reporter()
    fixes = closed = 0
    with BatchWriter(ctx.lake, run_id=ctx.run_id) as w:
        results = list(gen.repair_many(requests, seed=ctx.settings.seed))
        children = [c for _, cs in results for c in cs]
        known = _latest_verdicts(ctx, [c.candidate_id for c in children])
        chains = _chains(ctx, [r.failed.candidate_id for r, cs in results if cs])
        for req, cands in results:
            for c in cands:
                if c.candidate_id in known:
                    turns = chains.get(req.failed.candidate_id, [])
                    v = known[c.candidate_id]
                    w.add_trajectory(_coincident_chain(req, c, v, turns, ctx.run_id))
                    closed += 1
                else:
                    w.add_candidate(replace(c, run_id=ctx.run_id), req.task.domain)
                    fixes += 1
            rep.advance()
    return fixes, closed


def _coincident_chain(
    req: RepairRequest,
    fix: Candidate,
    verdict: dict[str, Any] | None,
    turns: list[Turn],
    run_id: str,
) -> Trajectory:
    if verdict is not None:
        turns = [*turns, Turn(fix.candidate_id, verdict["verdict_id"], verdict["status"])]
    outcome = "pass" if verdict is not None and verdict["status"] == "pass" else "gave_up"
    return Trajectory(req.task.task_id, req.task.domain, tuple(turns), outcome, run_id)


def close_chains(ctx: StageContext, domain: str) -> int:
    """Trajectories for repair chains that ended: the last fix passed, or it failed with
    no rounds left. A trajectory's id hashes its turns, so closing twice adds nothing."""
    ends = db.rows(
        ctx.con,
        "repair_chain_ends",
        domain=domain,
        task_ids=task_ids(ctx),
        max_attempt=ctx.settings.repair_rounds,
    )
    chains = _chains(ctx, [e["candidate_id"] for e in ends])
    with BatchWriter(ctx.lake, run_id=ctx.run_id) as w:
        for e in ends:
            outcome = "pass" if e["status"] == "pass" else "gave_up"
            turns = tuple(chains[e["candidate_id"]])
            w.add_trajectory(Trajectory(e["task_id"], domain, turns, outcome, ctx.run_id))
    return w.stats["trajectories"].written


def _chains(ctx: StageContext, ids: list[str]) -> dict[str, list[Turn]]:
    """The turns from the root of each candidate's repair chain down to it."""
    if not ids:
        return {}
    rows = db.rows(ctx.con, "repair_chains", ids=ids)
    return {
        r["end_id"]: [Turn(t["candidate_id"], t["verdict_id"], t["status"]) for t in r["turns"]]
        for r in rows
    }


def _latest_verdicts(ctx: StageContext, ids: list[str]) -> dict[str, dict[str, Any] | None]:
    """candidate_id -> its latest verdict row (None: in the lake, not verified yet)."""
    if not ids:
        return {}
    rows = ctx.con.execute(
        "SELECT c.candidate_id, v.verdict_id, v.status FROM candidates AS c "
        "LEFT JOIN latest_verdicts AS v USING (candidate_id) "
        "WHERE c.candidate_id IN (SELECT unnest($ids))",
        {"ids": ids},
    ).fetchall()
    return {cid: ({"verdict_id": vid, "status": st} if vid else None) for cid, vid, st in rows}


# --- dedup and export (the algorithms live in lake/) -------------------------------------


def dedup(ctx: StageContext) -> None:
    from lake.dedup import DedupSettings, run_dedup

    rep = reporter()
    rep.stage("dedup")
    counts = run_dedup(
        ctx.lake,
        ctx.con,
        run_id=ctx.run_id,
        settings=DedupSettings(**ctx.settings.dedup),
        domains=list(ctx.settings.domains),
    )
    for k, v in counts.items():
        if isinstance(v, int | float):
            ctx.count(f"dedup_{k}", v)
    rep.done()


def export(ctx: StageContext) -> None:
    """Write an export of the current lake; its manifest lands on `ctx.export_manifest`."""
    from lake.export import ExportSettings
    from lake.export import export as write_export

    s = ctx.settings
    if s.export is None:
        return
    rep = reporter()
    rep.stage("export")
    out = s.export_dir or (ctx.lake.root / "exports")
    fields = dict(s.export)
    fields.setdefault("out", out)
    result = write_export(ctx.lake, ctx.con, ExportSettings(**fields), run_id=ctx.run_id)
    ctx.counts["export_path"] = str(result.path)
    ctx.export_manifest = result.manifest
    for kind, n in result.counts.items():
        if isinstance(n, int):
            ctx.count(f"export_{kind}", n)
    rep.done()


# --- reports ----------------------------------------------------------------------------


def report(
    con: duckdb.DuckDBPyConnection, run_id: str | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Where the lake stands (every run so far), and with `run_id` what that run found:
    `run_pass_rates` and `run_taxonomy` over the verdicts it wrote."""
    out = {
        "pass_rates": db.rows(con, "pass_rates"),
        "pass_rates_by_level": db.rows(con, "pass_rates_by_level"),
        "taxonomy": db.rows(con, "error_taxonomy"),
        "survivors": db.rows(con, "perturbation_survivors"),
    }
    if run_id is not None:
        out["run_pass_rates"] = db.rows(con, "report_pass_rates", run_id=run_id)
        out["run_taxonomy"] = db.rows(con, "report_taxonomy", run_id=run_id)
    return out
