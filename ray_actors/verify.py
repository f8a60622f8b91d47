"""Verifier actors: a plain worker class that becomes a Ray actor only at submit time,
pinned by the node resource its verifier declares, fed batches (a Ray call costs ~0.2 ms,
a verification ~15-200 ms: batches keep the overhead out of sight).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import ray

from ray_actors import cluster, lastwords
from verifiers import domain as domains
from verifiers.base import infra_verdict
from verifiers.contract import Candidate, Limits, Task, Verdict, content_id
from verifiers.registry import get_verifier
from verifiers.settings import settings_class

log = logging.getLogger(__name__)


class VerifierWorker:
    """Verifies batches of candidates for one domain. Plain class; see `make_pool`.

    `settings` is the verifier's settings dict (`verifiers.settings`), as `crucible
    verify --settings` and `python -m verifiers.<domain> --settings` take it."""

    def __init__(
        self, domain: str, limits: dict, settings: dict | None = None, backend: str = "host"
    ):
        self.verifier = get_verifier(domain, settings)
        self.limits = Limits.from_dict(limits)
        self.tasks: dict[str, Task] = {}
        # "container": the node image's worker in a warm container (`ray_actors.container`)
        self.container = _container(domain, settings, backend)
        self.node = cluster.node_label()  # the Ray node, not only the host, verdicts name

    def verify_batch(
        self, tasks: list[dict], items: list[tuple[str, str]], artifacts: list | None = None
    ) -> list[dict]:
        """`items` are (task_id, code); tasks carries the specs this batch needs;
        `artifacts`: what a build node built for them (`BuildWorker`), seeded into this
        node's caches first, so their compile gates find it."""
        for t in tasks:
            self.tasks.setdefault(t["task_id"], Task.from_dict(t))
        pairs = [(self.tasks[tid], code) for tid, code in items]
        if items:  # named in a death's record, should this process die holding it
            lastwords.holding(content_id(*items[0]), len(items))
        if artifacts:
            self._seed(artifacts)
        try:  # the GPU verifiers compile a batch in parallel
            if self.container is not None:
                verdicts = self._in_container(pairs)
            else:
                verdicts = self.verifier.verify_many(pairs, self.limits)
        except Exception:  # a verifier bug is infra, and must not sink the batch
            log.exception(
                "the %s verifier crashed on a batch; verifying one by one", self.verifier.domain
            )
            verdicts = [self._one(task, code) for task, code in pairs]
        return [replace(v, node=self.node).to_dict() for v in verdicts]

    def _seed(self, artifacts: list) -> None:
        try:
            counts = self.verifier.seed(artifacts)
        except Exception:  # only a saving: the compiles then run here, as without it
            log.exception("could not seed the %s build node's artifacts", self.verifier.domain)
            return
        if counts.get("refused"):
            log.warning(
                "%d of %d artifacts from the build node failed their checks and were dropped "
                "(their candidates compile here)",
                counts["refused"],
                len(artifacts),
            )

    def _in_container(self, pairs: list[tuple[Task, str]]) -> list[Verdict]:
        from ray_actors.container import ContainerUnavailable

        try:
            return self.container.verify_many(pairs, self.limits)
        except ContainerUnavailable as e:  # no engine, socket or image: infra, said once
            v, why = self.verifier, str(e)
            return [
                infra_verdict(
                    t, content_id(t.task_id, c), v.name, v.version, "tool_missing", "container", why
                )
                for t, c in pairs
            ]

    def _one(self, task: Task, code: str) -> Verdict:
        try:
            return self.verifier.verify(task, code, self.limits)
        except Exception as e:  # a verifier bug is infra, and must not sink the batch
            log.exception("the %s verifier crashed on task %s", task.domain, task.name)
            reason = f"the verifier crashed: {type(e).__name__}: {str(e)[:300]}"
            v = self.verifier
            cid = content_id(task.task_id, code)
            return infra_verdict(task, cid, v.name, v.version, "tool_crash", "verify", reason)


class BuildWorker:
    """Builds a GPU domain's candidates on a build node (`cluster.BUILD`: CPU only), so
    the GPU node only loads and runs them: its verifier's `prebuild` returns the sealed
    cache entries each candidate compiles to, which the verifying actor seeds
    (`VerifierWorker.verify_batch`). Plain class; a Ray actor at submit time
    (`_build_actors`). A candidate whose build raises gets no entries: it is built where
    it is verified, as without a build node, never a verdict here."""

    def __init__(self, domain: str, limits: dict, settings: dict | None = None):
        self.verifier = get_verifier(domain, settings)
        self.limits = Limits.from_dict(limits)
        self.tasks: dict[str, Task] = {}

    def build_batch(self, tasks: list[dict], items: list[tuple[str, str]]) -> list[list[dict]]:
        """One list of entries per item (task_id, code), in order."""
        for t in tasks:
            self.tasks.setdefault(t["task_id"], Task.from_dict(t))
        out = []
        for tid, code in items:
            try:
                out.append(self.verifier.prebuild(self.tasks[tid], code, self.limits))
            except Exception:  # a saving lost, not a verdict: the GPU node builds it
                log.exception("the %s build of a candidate failed", self.verifier.domain)
                out.append([])
        return out


BACKENDS = ("host", "container")


def _container(domain: str, settings: dict | None, backend: str) -> Any:
    if backend not in BACKENDS:
        raise ValueError(f"unknown verifier backend {backend!r}: choose {' or '.join(BACKENDS)}")
    if backend == "host":
        return None
    from ray_actors.container import ContainerBackend

    return ContainerBackend(domain, settings)


@dataclass(frozen=True)
class PoolSettings:
    workers: int | None = None  # default: one per slot of the resource, capped by cores
    batch_size: int = 8
    backend: str = "host"  # or "container": each actor's worker runs in the node image
    # After the last node offering the resource is lost, how long unfinished batches wait
    # for one to come back before they become `node_lost` infra verdicts (the next run
    # verifies them again); a node that returns in time loses nothing.
    node_wait_s: float = 600.0


# How often a wait for a batch looks whether a node still offers the domain's resource.
NODE_POLL_S = 1.0


def actor_settings(domain: str, resource: str, given: Mapping[str, Any] | None) -> dict:
    """The verifier settings an actor on `resource` is built with: `given`, plus
    `workers=1` where the domain's verifier keeps warm workers (`VerifierSettings`'
    convention) and one actor holds one core (a toolchain slot, a `cpu` actor of a CPU
    fallback): the actors already spread over the cores, so each runs one warm worker,
    not one per core. A `workers` the caller gave wins."""
    out = dict(given or {})
    counts_workers = "workers" in settings_class(domain).field_names()
    if counts_workers and cluster.per_core(resource) and out.get("workers") is None:
        out["workers"] = 1
    return out


class VerifierPool:
    """A domain's actors, each given two calls at a time: a second batch already waits in
    an actor's queue while the driver takes in the first one's verdicts (an actor runs one
    call at a time), so the actors never idle on the driver's lake writes.

    An actor whose worker died for good (Ray's restarts spent: ActorDiedError) leaves the
    pool. The job its worker held when it died comes back with the error (`next_done`):
    the batch the death's record names (`lastwords.holding`), else the oldest call that
    failed; order alone cannot tell, since a call whose reply the death cut off runs again
    after the restart. Its other calls, only queued, are sent again, and one that ended
    before the death keeps its result. `spawn` (when given) starts a fresh actor in its
    place, so a batch that kills every worker it meets costs its own candidates only; but
    not after more final deaths in a row than the pool had actors, plus one, with no batch
    verified between them: a worker that dies on everything (a verifier that cannot
    start) would otherwise be started three times per batch."""

    DEPTH = 2

    def __init__(self, actors: list, resource: str, spawn: Callable[[], Any] | None = None):
        self.actors, self.resource = list(actors), resource
        self.started = len(self.actors)
        self._spawn, self._deaths_in_row = spawn, 0
        self._free = [a for a in self.actors for _ in range(self.DEPTH)]
        self._pending: deque[tuple[Callable[[Any, Any], Any], Any]] = deque()
        # ObjectRef -> (actor, fn, job, submission order)
        self._inflight: dict[Any, tuple[Any, Callable[[Any, Any], Any], Any, int]] = {}
        self._done: deque[tuple[Any, Any]] = deque()  # (job, result) not yet returned
        self._seq = 0
        self.deaths = lastwords.DeathWatch(self.actors)

    @property
    def holds_natives(self) -> bool:
        """Whether its actors hold CPUs or GPUs (not a toolchain resource)."""
        return self.resource in cluster.RAY_NATIVE

    def submit(self, fn: Callable[[Any, Any], Any], job: Any) -> None:
        self._pending.append((fn, job))
        self._dispatch()

    def has_next(self) -> bool:
        return bool(self._done or self._inflight or self._pending)

    def next_done(self, timeout: float) -> tuple[Any, Any]:
        """(job, its result) of a call that ended, or (job, WorkerLost) for one whose
        actor died for good holding it, or for a job no live actor is left to take.
        TimeoutError when none ended within `timeout`."""
        if self._done:
            return self._done.popleft()
        if not self._inflight:
            _, job = self._pending.popleft()
            return job, WorkerLost(None, None)  # no live actor is left
        ready, _ = ray.wait(list(self._inflight), num_returns=1, timeout=timeout)
        if not ready:
            raise TimeoutError
        actor, fn, job, seq = self._inflight.pop(ready[0])
        try:
            result = ray.get(ready[0])
        except ray.exceptions.ActorDiedError as e:
            self._lost(actor, [(seq, fn, job)], e)
            return self._done.popleft()
        self._deaths_in_row = 0
        self._free.append(actor)
        self._dispatch()
        return job, result

    def stop(self) -> None:
        """Stop the actors for good (e.g. waiting to restart on a node that is gone)."""
        for actor in self.actors:
            ray.kill(actor, no_restart=True)

    def _dispatch(self) -> None:
        while self._pending and self._free:
            actor = self._free.pop()
            fn, job = self._pending.popleft()
            self._seq += 1
            self._inflight[fn(actor, job)] = (actor, fn, job, self._seq)

    def _lost(self, actor: Any, failed: list[tuple[int, Any, Any]], error: BaseException) -> None:
        """Settle every call of a dead actor: one that ended before it died keeps its
        result, the oldest that failed is blamed, the rest are sent again."""
        for ref, (a, fn, job, seq) in list(self._inflight.items()):
            if a is not actor:
                continue
            del self._inflight[ref]
            if ray.wait([ref], timeout=0)[0]:
                try:
                    self._done.append((job, ray.get(ref)))
                    continue
                except ray.exceptions.ActorDiedError:
                    pass
            failed.append((seq, fn, job))
        death = self.deaths.final(actor._actor_id.hex())
        failed.sort(key=lambda f: f[0])  # the oldest first: where a death names no batch
        named = [f for f in failed if death.held and _first_id(f[2]) == death.held]
        blamed = (named or failed)[0]
        self._done.append((blamed[2], WorkerLost(actor._actor_id.hex(), error, death)))
        for _, fn, job in reversed([f for f in failed if f is not blamed]):
            self._pending.appendleft((fn, job))
        self._deaths_in_row += 1
        self.actors.remove(actor)
        self._free = [a for a in self._free if a is not actor]
        if self._spawn is not None and self._deaths_in_row <= self.started + 1:
            fresh = self._spawn()
            self.actors.append(fresh)
            self.deaths.add(fresh)
            self._free += [fresh] * self.DEPTH
        self._dispatch()


def _first_id(job: tuple[list[Candidate], list]) -> str:
    """A job's first candidate: what its worker names as it takes it (`lastwords.holding`)."""
    batch, _ = job
    return batch[0].candidate_id if batch else ""


@dataclass(frozen=True)
class WorkerLost:
    """A call whose actor died for good (`actor_id`, Ray's `error`, the `death` that ended
    it), or a job left when no actor was (all None)."""

    actor_id: str | None
    error: BaseException | None
    death: lastwords.WorkerDeath | None = None


def make_pool(
    domain: str,
    limits: Limits,
    settings: PoolSettings,
    verifier_settings: Mapping[str, Any] | None = None,
) -> tuple[VerifierPool, int]:
    """Actors for `domain` on the nodes offering its resource; `verifier_settings` is the
    dict each actor's verifier is built with (see `actor_settings`)."""
    verifier = get_verifier(domain, verifier_settings)
    resource = verifier.resource
    available = cluster.slots(resource)
    if available <= 0 and resource != "cpu" and getattr(verifier, "cpu_fallback", False):
        available = cluster.slots("cpu")
        if available > 0:
            log.warning(
                "no Ray node offers the `%s` resource the %s verifier needs: running it on "
                "`cpu` actors (its CPU fallback); the gates that need a %s end as "
                "infra_error / no_gpu and are retried when such a node joins",
                resource,
                domain,
                resource,
            )
            resource = "cpu"
    if available <= 0:
        raise NoNodeForResource(domain, verifier.resource)
    n = min(settings.workers or available, available)
    # A batch lost with its actor is sent again until the actor is back (a verdict is a
    # pure function of task and code, so running it twice changes nothing). The retries
    # must not be counted: while the head has not yet noticed a lost node (Ray's health
    # checks: seconds to a minute), every resend to the dead actor's old address fails at
    # once and would spend one, and the run would end on ActorUnavailableError although
    # the node came back. A crash loop stays bounded: after `max_restarts` the actor is
    # dead and its calls raise ActorDiedError.
    actor_cls = ray.remote(VerifierWorker).options(
        **cluster.actor_options(resource),
        **lastwords.runtime_env(),  # how its worker ends is kept (ray_actors/lastwords.py)
        max_restarts=2,
        max_task_retries=-1,
    )
    chosen = actor_settings(domain, resource, verifier_settings)

    def spawn() -> Any:
        return actor_cls.remote(domain, limits.to_dict(), chosen, settings.backend)

    return VerifierPool([spawn() for _ in range(n)], resource, spawn), n


def _release_natives(pools: dict[str, tuple[VerifierPool, int]]) -> None:
    """Drop the kept pools whose actors hold CPUs or GPUs (`cpu` / `GPU` verifiers, CPU
    fallbacks): another domain's new pool may need the same ones, and would wait for them
    forever while they sit idle here. Toolchain-resource pools take no CPU and stay warm."""
    for other in list(pools):
        pool, _ = pools[other]
        if pool.holds_natives:
            del pools[other]  # the last handle gone, Ray stops its actors


class NoNodeForResource(RuntimeError):
    def __init__(self, domain: str, resource: str):
        self.domain, self.resource = domain, resource
        super().__init__(
            f"no Ray node offers the `{resource}` resource the {domain} verifier needs: "
            f"install its toolchain ({domains.get(domain).install}) or start a "
            f"node with `ray start --resources='{{\"{resource}\": 4}}'`"
        )


def infra_verdicts(
    cands: Iterable[Candidate],
    tasks: dict[str, Task],
    code: str,
    reason: str,
    verifier: str,
    version: str,
) -> list[Verdict]:
    """What work no node can do becomes (`tool_missing`: no node has the resource;
    `node_lost`: its node went and none came back): reported, never left pending."""
    return [
        infra_verdict(tasks[c.task_id], c.candidate_id, verifier, version, code, "schedule", reason)
        for c in cands
    ]


def verify_candidates(
    domain: str,
    candidates: list[Candidate],
    tasks: dict[str, Task],
    limits: Limits,
    settings: PoolSettings,
    on_batch: Callable[[list[Verdict]], None] | None = None,
    pools: dict[str, tuple[VerifierPool, int]] | None = None,
    verifier_settings: Mapping[str, Any] | None = None,
    build_settings: Mapping[str, Any] | None = None,
    on_death: Callable[[dict], None] | None = None,
) -> Iterator[Verdict]:
    """Verify on the cluster, yielding verdicts as batches finish (order not kept).

    `pools`, when given, keeps the domain's actors for the next call (a stage run that
    verifies several times, like repair rounds, starts its actors once); the actors live
    as long as the caller holds the dict. `verifier_settings`: the settings dict of the
    domain's verifier (`verifiers.settings`).

    A domain whose verifier can `prebuild` is built first on the build nodes
    (`cluster.BUILD`) where the cluster has any: each batch goes to its verifying actor
    with what it compiled to as soon as its build ends. `build_settings`: the build
    actors' verifier settings where they differ (default `verifier_settings`). A build
    that fails, or a build node lost, only leaves the compiles to the verifying node.
    """
    if not candidates:
        return
    verifier = get_verifier(domain, verifier_settings)
    version = verifier.version_for(limits)  # what this call's verdicts carry
    try:
        if pools is not None and domain in pools:
            pool, n = pools[domain]
        else:
            if pools is not None:
                _release_natives(pools)
            pool, n = make_pool(domain, limits, settings, verifier_settings)
            if pools is not None:
                pools[domain] = (pool, n)
    except NoNodeForResource as e:
        batch = infra_verdicts(candidates, tasks, "tool_missing", str(e), verifier.name, version)
        if on_batch:
            on_batch(batch)
        yield from batch
        return
    log.info("verifying %d %s candidates on %d actors", len(candidates), domain, n)
    size = max(1, settings.batch_size)
    batches = [candidates[i : i + size] for i in range(0, len(candidates), size)]

    def submit(actor, job: tuple[list[Candidate], list]):
        batch, artifacts = job
        needed = {c.task_id: tasks[c.task_id].to_dict() for c in batch}
        return actor.verify_batch.remote(
            list(needed.values()), [(c.task_id, c.code) for c in batch], artifacts
        )

    chosen = build_settings if build_settings is not None else verifier_settings
    builders = _build_actors(domain, verifier, limits, settings, pools, chosen)
    builds = _submit_builds(builders, batches, tasks)
    if not builds:
        for batch in batches:
            pool.submit(submit, (batch, []))
    left = {c.candidate_id for c in candidates}
    seen = time.monotonic()  # when a node last offered the resource
    while builds or pool.has_next():
        if builds:  # each built batch goes to the verifiers at once
            for batch, artifacts in _built(domain, builds, wait=not pool.has_next(), pools=pools):
                pool.submit(submit, (batch, artifacts))
            if not pool.has_next():
                continue
        for death in pool.deaths.poll():
            _said_death(domain, death, on_death)
        try:
            job, result = pool.next_done(timeout=BUILD_POLL_S if builds else NODE_POLL_S)
        except TimeoutError:
            if cluster.slots(pool.resource) > 0:
                seen = time.monotonic()
            elif time.monotonic() - seen > settings.node_wait_s:
                lost = [c for c in candidates if c.candidate_id in left]
                reason = _node_lost(domain, pool.resource, len(lost), settings.node_wait_s)
                batch = infra_verdicts(lost, tasks, "node_lost", reason, verifier.name, version)
                # the next call for the domain starts over: actors if a node is back,
                # else at once the infra verdicts of a resource no node offers
                pool.stop()
                if pools is not None:
                    pools.pop(domain, None)
                if on_batch:
                    on_batch(batch)
                yield from batch
                return
            continue
        seen = time.monotonic()
        if isinstance(result, WorkerLost):
            reason = _worker_lost(domain, pool, job[0], result, on_death)
            verdicts = infra_verdicts(job[0], tasks, "worker_died", reason, verifier.name, version)
        else:
            verdicts = [Verdict.from_dict(d) for d in result]
        left.difference_update(v.candidate_id for v in verdicts)
        if on_batch:
            on_batch(verdicts)
        yield from verdicts
    if not pool.actors and pools is not None:
        pools.pop(domain, None)  # every worker died: the next call starts fresh ones


# How often a wait for verdicts looks whether a build has ended, while builds are out.
BUILD_POLL_S = 0.2


def _build_actors(
    domain: str,
    verifier: Any,
    limits: Limits,
    settings: PoolSettings,
    pools: dict[str, tuple[VerifierPool, int]] | None,
    build_settings: Mapping[str, Any] | None,
) -> list:
    """The domain's build actors, one per `BUILD` slot (kept in `pools` like the
    verifiers'), or none: no build node, a verifier with nothing to prebuild, or the
    container backend (its worker's caches are the container's, not this node's)."""
    if not callable(getattr(verifier, "prebuild", None)) or settings.backend != "host":
        return []
    n = cluster.slots(cluster.BUILD)
    if n <= 0:
        return []
    key = _build_key(domain)
    if pools is not None and key in pools:
        return pools[key][0].actors
    # no restarts, no retries: a build lost with its node is not worth waiting for, the
    # verifying node builds it itself
    actor_cls = ray.remote(BuildWorker).options(
        **cluster.actor_options(cluster.BUILD), max_restarts=0, max_task_retries=0
    )
    chosen = dict(build_settings) if build_settings is not None else None
    actors = [actor_cls.remote(domain, limits.to_dict(), chosen) for _ in range(n)]
    log.info("building %s candidates on %d build actors", domain, n)
    if pools is not None:
        pools[key] = (VerifierPool(actors, cluster.BUILD), n)
    return actors


def _build_key(domain: str) -> str:
    return f"{domain}/{cluster.BUILD}"


def _submit_builds(actors: list, batches: list[list[Candidate]], tasks: dict[str, Task]) -> dict:
    """ObjectRef of each batch's build -> the batch, spread over `actors` in turn."""
    builds = {}
    for i, batch in enumerate(batches if actors else []):
        needed = {c.task_id: tasks[c.task_id].to_dict() for c in batch}
        ref = actors[i % len(actors)].build_batch.remote(
            list(needed.values()), [(c.task_id, c.code) for c in batch]
        )
        builds[ref] = batch
    return builds


def _built(
    domain: str, builds: dict, wait: bool, pools: dict | None
) -> list[tuple[list[Candidate], list[dict]]]:
    """The batches whose builds have ended (taken out of `builds`), each with its
    artifacts: none for a build that failed, or for every build still out once no node
    offers `BUILD` (an actor placed on a lost node would never answer). `wait`: block up
    to NODE_POLL_S for one (there is nothing else to wait for)."""
    refs = list(builds)
    ready, _ = ray.wait(refs, num_returns=1, timeout=NODE_POLL_S if wait else 0)
    if ready:
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
    out = []
    for ref in ready:
        batch = builds.pop(ref)
        try:
            per_item = ray.get(ref)
        except Exception as e:  # the actor died, its node was lost: a saving lost
            log.warning("a %s build batch failed (%s): it compiles where verified", domain, e)
            if pools is not None:  # the next call starts build actors anew, if a node is up
                pools.pop(_build_key(domain), None)
            per_item = []
        out.append((batch, [a for arts in per_item for a in arts]))
    if builds and cluster.slots(cluster.BUILD) <= 0:
        log.warning(
            "no build node is left: %d %s batches compile where verified", len(builds), domain
        )
        out += [(batch, []) for batch in builds.values()]
        builds.clear()
    return out


def _said_death(
    domain: str, death: lastwords.WorkerDeath, on_death: Callable[[dict], None] | None
) -> None:
    """A worker death, in the run's log the moment it is seen, and to the stage."""
    log.warning("a %s %s", domain, death.describe())
    if on_death is not None:
        on_death(death.to_dict())


def _worker_lost(
    domain: str,
    pool: VerifierPool,
    batch: list[Candidate],
    lost: WorkerLost,
    on_death: Callable[[dict], None] | None,
) -> str:
    """Why `batch` gets `worker_died` verdicts: the death that ended its actor for good,
    with its exit status or signal and last stderr lines (logged, and kept in each)."""
    death = lost.death
    if death is None:
        reason = (
            f"no {domain} verifier worker was left to verify these candidates: every one "
            "died (the deaths above say how); the next run verifies them again"
        )
        log.warning("%d %s candidates: %s", len(batch), domain, reason)
        return reason
    for d in pool.deaths.poll():  # that death among them, said before what it costs
        _said_death(domain, d, on_death)
    reason = (
        f"the {domain} {death.describe()}; it held these candidates, and Ray's restarts "
        "of it were spent: a machine or verifier fault, not the candidate's; the next run "
        "verifies them again"
    )
    log.warning("%d %s candidates get infra_error (worker_died): %s", len(batch), domain, reason)
    return reason


def _node_lost(domain: str, resource: str, n: int, wait_s: float) -> str:
    """Why `n` candidates get `node_lost` verdicts (logged once, recorded in each)."""
    reason = (
        f"the Ray node verifying these {domain} candidates was lost and no node offering "
        f"`{resource}` came back within {wait_s:.0f} s (--node-wait): a machine fault, "
        "not the candidate's; the next run verifies them again"
    )
    log.warning("%d %s candidates: %s", n, domain, reason)
    return reason
