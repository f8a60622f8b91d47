"""Verifier actors: a plain worker class that becomes a Ray actor only at submit time,
pinned by the node resource its verifier declares, fed batches (a Ray call costs ~0.2 ms,
a verification ~15-200 ms: batches keep the overhead out of sight).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import ray
from ray.util import ActorPool

from ray_actors import cluster
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

    def verify_batch(self, tasks: list[dict], items: list[tuple[str, str]]) -> list[dict]:
        """`items` are (task_id, code); tasks carries the specs this batch needs."""
        for t in tasks:
            self.tasks.setdefault(t["task_id"], Task.from_dict(t))
        pairs = [(self.tasks[tid], code) for tid, code in items]
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


class VerifierPool(ActorPool):
    """A domain's actors, each in the pool twice: a second batch already waits in an
    actor's queue while the driver takes in the first one's verdicts (an actor runs one
    call at a time), so the actors never idle on the driver's lake writes."""

    def __init__(self, actors: list, resource: str):
        super().__init__(actors * 2)
        self.actors, self.resource = actors, resource

    @property
    def holds_natives(self) -> bool:
        """Whether its actors hold CPUs or GPUs (not a toolchain resource)."""
        return self.resource in cluster.RAY_NATIVE

    def stop(self) -> None:
        """Stop the actors for good (e.g. waiting to restart on a node that is gone)."""
        for actor in self.actors:
            ray.kill(actor, no_restart=True)


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
        **cluster.actor_options(resource), max_restarts=2, max_task_retries=-1
    )
    chosen = actor_settings(domain, resource, verifier_settings)
    actors = [
        actor_cls.remote(domain, limits.to_dict(), chosen, settings.backend) for _ in range(n)
    ]
    return VerifierPool(actors, resource), n


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
) -> Iterator[Verdict]:
    """Verify on the cluster, yielding verdicts as batches finish (order not kept).

    `pools`, when given, keeps the domain's actors for the next call (a stage run that
    verifies several times, like repair rounds, starts its actors once); the actors live
    as long as the caller holds the dict. `verifier_settings`: the settings dict of the
    domain's verifier (`verifiers.settings`).
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

    def submit(actor, batch: list[Candidate]):
        needed = {c.task_id: tasks[c.task_id].to_dict() for c in batch}
        return actor.verify_batch.remote(
            list(needed.values()), [(c.task_id, c.code) for c in batch]
        )

    for batch in batches:
        pool.submit(submit, batch)
    left = {c.candidate_id for c in candidates}
    seen = time.monotonic()  # when a node last offered the resource
    while pool.has_next():
        try:
            result = pool.get_next_unordered(timeout=NODE_POLL_S)
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
        verdicts = [Verdict.from_dict(d) for d in result]
        left.difference_update(v.candidate_id for v in verdicts)
        if on_batch:
            on_batch(verdicts)
        yield from verdicts


def _node_lost(domain: str, resource: str, n: int, wait_s: float) -> str:
    """Why `n` candidates get `node_lost` verdicts (logged once, recorded in each)."""
    reason = (
        f"the Ray node verifying these {domain} candidates was lost and no node offering "
        f"`{resource}` came back within {wait_s:.0f} s (--node-wait): a machine fault, "
        "not the candidate's; the next run verifies them again"
    )
    log.warning("%d %s candidates: %s", n, domain, reason)
    return reason
