"""Verifier actors: a plain worker class that becomes a Ray actor only at submit time,
pinned by the node resource its verifier declares, fed batches (a Ray call costs ~0.2 ms,
a verification ~15-200 ms: batches keep the overhead out of sight).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import ray
from ray.util import ActorPool

from ray_actors import cluster
from verifiers.base import infra_verdict
from verifiers.contract import Candidate, Limits, Task, Verdict, content_id
from verifiers.registry import get_verifier

log = logging.getLogger(__name__)


class VerifierWorker:
    """Verifies batches of candidates for one domain. Plain class; see `make_pool`."""

    def __init__(self, domain: str, limits: dict):
        self.verifier = get_verifier(domain)
        self.limits = Limits.from_dict(limits)
        self.tasks: dict[str, Task] = {}

    def verify_batch(self, tasks: list[dict], items: list[tuple[str, str]]) -> list[dict]:
        """`items` are (task_id, code); tasks carries the specs this batch needs."""
        for t in tasks:
            self.tasks.setdefault(t["task_id"], Task.from_dict(t))
        pairs = [(self.tasks[tid], code) for tid, code in items]
        try:  # the GPU verifiers compile a batch in parallel
            verdicts = self.verifier.verify_many(pairs, self.limits)
        except Exception:  # a verifier bug is infra, and must not sink the batch
            log.exception(
                "the %s verifier crashed on a batch; verifying one by one", self.verifier.domain
            )
            verdicts = [self._one(task, code) for task, code in pairs]
        return [v.to_dict() for v in verdicts]

    def _one(self, task: Task, code: str) -> Verdict:
        try:
            return self.verifier.verify(task, code, self.limits)
        except Exception as e:  # a verifier bug is infra, and must not sink the batch
            log.exception("the %s verifier crashed on task %s", task.domain, task.name)
            reason = f"the verifier crashed: {type(e).__name__}: {str(e)[:300]}"
            v = self.verifier
            cid = content_id(task.task_id, code)
            return infra_verdict(task, cid, v.name, v.version, "tool_crash", "verify", reason)


@dataclass(frozen=True)
class PoolSettings:
    workers: int | None = None  # default: one per slot of the resource, capped by cores
    batch_size: int = 8


# The CPU fallback's actors: one warm runner process each (the kernel verifier's default
# is two per actor on CPU; the actors already take one core each).
FALLBACK_ENV = {"CRUCIBLE_KERNEL_WORKERS": "1"}
# A `cad` actor takes one slot (a core): one warm CAD worker each, not one per core.
RESOURCE_ENV = {"cad": {"CRUCIBLE_CAD_WORKERS": "1"}}


def make_pool(domain: str, limits: Limits, settings: PoolSettings) -> tuple[ActorPool, int]:
    verifier = get_verifier(domain)
    resource = verifier.resource
    available = cluster.slots(resource)
    extra: dict = {}
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
            env = {k: os.environ.get(k, v) for k, v in FALLBACK_ENV.items()}
            extra["runtime_env"] = {"env_vars": env}
    if available <= 0:
        raise NoNodeForResource(domain, verifier.resource)
    if resource in RESOURCE_ENV:
        env = {k: os.environ.get(k, v) for k, v in RESOURCE_ENV[resource].items()}
        extra["runtime_env"] = {"env_vars": env}
    n = min(settings.workers or available, available)
    actor_cls = ray.remote(VerifierWorker).options(
        **cluster.actor_options(resource), **extra, max_restarts=2, max_task_retries=2
    )
    actors = [actor_cls.remote(domain, limits.to_dict()) for _ in range(n)]
    # Each actor appears twice, so a second batch already waits in its queue while the
    # driver takes in the first one's verdicts (an actor runs one call at a time): the
    # actors never idle on the driver's lake writes.
    pool = ActorPool(actors * 2)
    pool.holds_natives = resource in cluster.RAY_NATIVE  # type: ignore[attr-defined]
    return pool, n


def _release_natives(pools: dict[str, tuple[ActorPool, int]]) -> None:
    """Drop the kept pools whose actors hold CPUs or GPUs (`cpu` / `GPU` verifiers, CPU
    fallbacks): another domain's new pool may need the same ones, and would wait for them
    forever while they sit idle here. Toolchain-resource pools take no CPU and stay warm."""
    for other in list(pools):
        pool, _ = pools[other]
        if getattr(pool, "holds_natives", False):
            del pools[other]  # the last handle gone, Ray stops its actors


class NoNodeForResource(RuntimeError):
    def __init__(self, domain: str, resource: str):
        self.domain, self.resource = domain, resource
        super().__init__(
            f"no Ray node offers the `{resource}` resource the {domain} verifier needs: "
            f"install its toolchain (bash infra/install-toolchains.sh {domain}) or start a "
            f"node with `ray start --resources='{{\"{resource}\": 4}}'`"
        )


def infra_verdicts(
    cands: Iterable[Candidate], tasks: dict[str, Task], reason: str, verifier: str, version: str
) -> list[Verdict]:
    """What work for a resource no node has becomes: reported at once, never left pending."""
    return [
        infra_verdict(
            tasks[c.task_id], c.candidate_id, verifier, version, "tool_missing", "schedule", reason
        )
        for c in cands
    ]


def verify_candidates(
    domain: str,
    candidates: list[Candidate],
    tasks: dict[str, Task],
    limits: Limits,
    settings: PoolSettings,
    on_batch: Callable[[list[Verdict]], None] | None = None,
    pools: dict[str, tuple[ActorPool, int]] | None = None,
) -> Iterator[Verdict]:
    """Verify on the cluster, yielding verdicts as batches finish (order not kept).

    `pools`, when given, keeps the domain's actors for the next call (a stage run that
    verifies several times, like repair rounds, starts its actors once); the actors live
    as long as the caller holds the dict.
    """
    if not candidates:
        return
    verifier = get_verifier(domain)
    try:
        if pools is not None and domain in pools:
            pool, n = pools[domain]
        else:
            if pools is not None:
                _release_natives(pools)
            pool, n = make_pool(domain, limits, settings)
            if pools is not None:
                pools[domain] = (pool, n)
    except NoNodeForResource as e:
        batch = infra_verdicts(candidates, tasks, str(e), verifier.name, verifier.version)
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

    for result in pool.map_unordered(submit, batches):
        verdicts = [Verdict.from_dict(d) for d in result]
        if on_batch:
            on_batch(verdicts)
        yield from verdicts
