"""Crucible's verifiers as an online reward: verify (task, code) pairs for an RL loop, turn
each verdict into a number, and keep every verdict and reward in the lake.

    from flows.rewards import Item, Rewarder

    with Rewarder(lake="./crucible-lake") as r:          # the built-in catalog's tasks
        results = r.verify([Item("counter4", completion=model_output)], rl_run="grpo-7", step=12)
        results[0].reward, results[0].status, results[0].feedback

- **Tasks** come from the catalog (default), a task directory, or a lake's `tasks` table
  (`Tasks.catalog`, `Tasks.directory`, `Tasks.from_lake`), named by name, `domain/name` or
  task id.
- **Code** is given as is (`Item.code`) or extracted from a model's answer with the
  domain's rules (`Item.completion`: fenced blocks, `<think>` removed), as the pipeline's
  LLM generator does; a candidate's id is sha256(task id, code), the pipeline's own.
- **Warm pools are reused**: one verifier per domain lives as long as the `Rewarder`, and
  each domain runs as many verifications at once as its verifier has workers. Concurrent
  callers share them (the HTTP service is such a caller).
- **Judged once**: a candidate this verifier version already judged (in the lake, or by
  this process) is answered from that verdict, and one being verified for another caller
  is waited for, not verified twice. `infra_error` is never an answer: it is retried
  (`infra_retries`), and a candidate still unjudged after that gets reward None.
- **Recorded**: with a lake, every task, candidate, verdict and reward is appended through
  one batching writer (flushed every `flush_s` and at `close`), with the caller's run/step
  tags, under a `runs` row of flow `rewards`; the lake's run lock is held meanwhile.
  Without a lake nothing is kept.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import logging
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generators.extract import answer_code, entry_name, extract_code
from verifiers.base import Verifier, infra_verdict
from verifiers.catalog import TaskSpecError, load_catalog, load_task
from verifiers.contract import Candidate, Limits, Task, Verdict, content_id, utc_now
from verifiers.datadirs import data_dir
from verifiers.registry import new_verifier
from verifiers.reward import RewardConfig, reward_of

log = logging.getLogger(__name__)

DEFAULT_TASKS = data_dir("tasks")
MEMO_SIZE = 100_000  # judged verdicts kept in memory (the lake has them all)


class RewardError(ValueError):
    """A request that cannot be served as asked (unknown task, bad item); nothing of it was
    verified or written. The message says what to change."""


class TaskNotFound(RewardError):
    pass


# --- tasks ------------------------------------------------------------------------------


class Tasks:
    """The tasks a `Rewarder` verifies against, by task id, by `domain/name`, and by name
    where the name is one domain's only."""

    def __init__(self, tasks: Iterable[Task], where: str = "the given tasks") -> None:
        self.where = where
        self.by_id: dict[str, Task] = {}
        self._by_name: dict[str, list[Task]] = {}
        for t in tasks:
            self.by_id[t.task_id] = t
            self._by_name.setdefault(t.name, []).append(t)
            self._by_name.setdefault(f"{t.domain}/{t.name}", []).append(t)

    @classmethod
    def catalog(
        cls, root: str | os.PathLike[str] | None = None, domains: Iterable[str] | None = None
    ) -> Tasks:
        """Every task of a catalog (`<root>/<domain>/<name>/task.toml`; default: the
        built-in one). A malformed task is left out and logged, as a run does."""
        root = Path(root) if root is not None else DEFAULT_TASKS
        tasks, errors = load_catalog(root, domains)
        for e in errors:
            log.warning("task left out: %s", e)
        if not tasks:
            raise RewardError(f"no task in catalog {root} (expected <domain>/<name>/task.toml)")
        return cls(tasks, f"catalog {root}")

    @classmethod
    def directory(cls, path: str | os.PathLike[str]) -> Tasks:
        """One task directory (holding `task.toml`, its domain named by its parent) or a
        catalog root."""
        p = Path(path)
        if (p / "task.toml").is_file():
            try:
                return cls([load_task(p)], f"task dir {p}")
            except TaskSpecError as e:
                raise RewardError(str(e)) from None
        if not p.is_dir():
            raise RewardError(f"task directory {p} does not exist")
        return cls.catalog(p)

    @classmethod
    def from_lake(cls, lake: Any) -> Tasks:
        """Every task in a lake's `tasks` table (imported benchmarks included)."""
        from lake import db
        from lake.schema import task_from_row

        con = db.connect(lake, readonly=True)
        try:
            rows = con.execute("SELECT * FROM tasks").to_arrow_table().to_pylist()
        finally:
            con.close()
        if not rows:
            raise RewardError(f"lake {lake} holds no task: run `crucible run` or an import first")
        return cls([task_from_row(r) for r in rows], f"lake {lake}")

    def get(self, ref: str) -> Task:
        if not isinstance(ref, str) or not ref:
            raise TaskNotFound("a task is named by its name, domain/name or task id")
        if ref in self.by_id:
            return self.by_id[ref]
        found = self._by_name.get(ref, [])
        if len(found) == 1:
            return found[0]
        if found:
            options = ", ".join(sorted(f"{t.domain}/{t.name}" for t in found))
            raise TaskNotFound(f"task {ref!r} is ambiguous in {self.where}: name one of {options}")
        raise TaskNotFound(f"unknown task {ref!r} in {self.where} (list them: GET /v1/tasks)")

    def __len__(self) -> int:
        return len(self.by_id)

    def __iter__(self):
        return iter(sorted(self.by_id.values(), key=lambda t: (t.domain, t.name)))


# --- requests and results -----------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One candidate to judge: a task and either the code itself or the model's whole
    answer (`completion`) to extract it from. `sample` tells apart rollouts of one
    request that happen to be the same code (e.g. the index in a GRPO group); `prompt` is
    kept with the candidate (what the model was asked)."""

    task: str
    code: str | None = None
    completion: str | None = None
    sample: str = ""
    prompt: str | None = None

    def __post_init__(self) -> None:
        if (self.code is None) == (self.completion is None):
            raise RewardError(f"item for task {self.task!r}: give exactly one of code, completion")
        text = self.code if self.code is not None else self.completion
        if not isinstance(text, str):
            raise RewardError(f"item for task {self.task!r}: code must be text")
        for what, value in (("code", text), ("prompt", self.prompt), ("sample", self.sample)):
            if isinstance(value, str) and not is_unicode(value):
                # a lone surrogate cannot be written to the lake (nor read by a tool)
                raise RewardError(f"item for task {self.task!r}: {what} is not valid Unicode")


@dataclass(frozen=True)
class Result:
    """A candidate's judgement and its reward. `cached`: the verdict was already in the
    lake or judged by this process for an earlier request; `seconds`: how long this
    request waited for it."""

    task: str
    task_id: str
    domain: str
    candidate_id: str
    verdict_id: str
    status: str
    passed: bool
    reward: float | None
    cached: bool
    seconds: float
    error_code: str
    category: str
    feedback: str
    metrics: Mapping[str, Any]
    stages: Mapping[str, bool]
    verifier: str
    verifier_version: str
    reward_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# --- the rewarder -------------------------------------------------------------------------


Key = tuple[str, str, str]  # (candidate_id, verifier, verifier_version)


@dataclass
class _Job:
    task: Task
    code: str
    candidate: Candidate
    key: Key
    future: concurrent.futures.Future[tuple[Verdict, bool]]


class Rewarder:
    """Verify candidates for an RL loop and reward them; see the module docstring.

    - `tasks`: a `Tasks`, a list of `Task`s, or None (the built-in catalog).
    - `lake`: a lake path or `Lake` to record into and answer judged candidates from, or
      None (nothing kept, nothing answered from a lake).
    - `reward`: the `RewardConfig` (or its dict); recorded with every reward.
    - `limits`: one `Limits` for every domain, or a mapping domain -> `Limits`.
    - `settings`: verifier settings per domain (`{"<domain>": {"workers": 4}}`).
    - `infra_retries`: how many times an `infra_error` is verified again.
    """

    def __init__(
        self,
        tasks: Tasks | Iterable[Task] | None = None,
        *,
        lake: Any = None,
        reward: RewardConfig | Mapping[str, Any] | None = None,
        limits: Limits | Mapping[str, Limits] | None = None,
        settings: Mapping[str, Mapping[str, Any]] | None = None,
        infra_retries: int = 1,
        flush_s: float = 2.0,
        batch_size: int = 2000,
        command: str = "rewards",
    ) -> None:
        if isinstance(tasks, Tasks):
            self.tasks = tasks
        elif tasks is None:
            self.tasks = Tasks.catalog()
        else:
            self.tasks = Tasks(tasks)
        self.reward = reward if isinstance(reward, RewardConfig) else RewardConfig.from_dict(reward)
        self._reward_dict, self._reward_id = self.reward.to_dict(), self.reward.config_id
        self._limits = limits
        self._settings = dict(settings or {})
        if infra_retries < 0:
            raise ValueError("infra_retries must be 0 or more")
        self.infra_retries = infra_retries
        self.run_id = uuid.uuid4().hex
        self.started_at = utc_now()
        self._t0 = time.perf_counter()
        self._lock = threading.Lock()
        self._vlock = threading.Lock()  # verifiers are built outside `_lock`
        self._inflight: dict[Key, concurrent.futures.Future[tuple[Verdict, bool]]] = {}
        self._memo: OrderedDict[Key, Verdict] = OrderedDict()
        self._pools: dict[str, concurrent.futures.ThreadPoolExecutor] = {}
        self._verifiers: dict[str, Verifier] = {}
        self.counts: dict[str, int] = {}
        self._closed = False
        self._stack = contextlib.ExitStack()
        self._recorder: _Recorder | None = None
        if lake is not None:
            try:
                self._recorder = _Recorder(lake, self, command, flush_s, batch_size)
            except BaseException:
                self._stack.close()
                raise

    # --- the public calls -----------------------------------------------------------------

    def verify(
        self,
        items: Sequence[Item | tuple[str, str]],
        *,
        rl_run: str = "",
        step: int | None = None,
        client: str = "",
        generator: str = "",
        timeout_s: float | None = None,
    ) -> list[Result]:
        """Judge and reward every item, in order. `rl_run`, `step` and `client` tag the
        reward rows; `generator` names the policy (default `rl:<rl_run>`). Every item is
        checked (task known, code given) before any is verified: a bad one raises
        `RewardError` and nothing of the request is verified or written. `timeout_s`: a
        `TimeoutError` past it (the verifications go on and are recorded; asking again
        answers from them)."""
        if self._closed:
            raise RuntimeError("this Rewarder is closed")
        for what, tag in (("rl_run", rl_run), ("client", client), ("generator", generator)):
            if not isinstance(tag, str) or not is_unicode(tag):
                raise RewardError(f"{what} must be text (valid Unicode)")
        if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
            raise RewardError("step must be an integer or None")
        t0 = time.perf_counter()
        jobs = [self._job(self._item(it), rl_run, generator) for it in items]
        if not jobs:
            return []
        futures = self._submit([j for j, _ in jobs])
        out = []
        deadline = None if timeout_s is None else t0 + timeout_s
        for (job, item), fut in zip(jobs, futures, strict=True):
            left = None if deadline is None else max(0.0, deadline - time.perf_counter())
            try:
                verdict, was_cached = fut.result(timeout=left)
            except concurrent.futures.TimeoutError:
                raise TimeoutError(
                    f"verification took over {timeout_s} s; it goes on and is recorded: "
                    "ask again to be answered from it"
                ) from None
            out.append(self._result(job, item, verdict, was_cached, time.perf_counter() - t0))
        self._record_rewards(out, [i for _, i in jobs], rl_run, step, client)
        return out

    def rewards(self, items: Sequence[Item | tuple[str, str]], **tags: Any) -> list[float | None]:
        """Only the numbers of `verify`."""
        return [r.reward for r in self.verify(items, **tags)]

    def task(self, ref: str) -> Task:
        return self.tasks.get(ref)

    def limits_for(self, domain: str) -> Limits:
        if isinstance(self._limits, Limits):
            return self._limits
        if isinstance(self._limits, Mapping) and domain in self._limits:
            return self._limits[domain]
        return Limits()

    def verifier_for(self, domain: str) -> Verifier:
        """This rewarder's own verifier of `domain` (its warm workers end with `close`)."""
        with self._vlock:
            v = self._verifiers.get(domain)
            if v is None:
                v = self._verifiers[domain] = new_verifier(domain, self._settings.get(domain))
            return v

    def close(self) -> None:
        """Wait for verifications under way, record them, close the verifiers' workers
        and release the lake."""
        if self._closed:
            return
        self._closed = True
        for pool in list(self._pools.values()):
            pool.shutdown(wait=True, cancel_futures=False)
        try:
            if self._recorder is not None:
                self._recorder.close()
        finally:
            for v in self._verifiers.values():
                close = getattr(v, "close", None)
                if close is not None:
                    close()
            self._stack.close()

    def __enter__(self) -> Rewarder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.counts[key] = self.counts.get(key, 0) + n

    # --- one request's parts --------------------------------------------------------------

    @staticmethod
    def _item(it: Item | tuple[str, str]) -> Item:
        if isinstance(it, Item):
            return it
        if isinstance(it, tuple) and len(it) == 2:
            return Item(task=it[0], code=it[1])
        raise RewardError("an item is an Item or a (task, code) pair")

    def _job(self, item: Item, rl_run: str, generator: str) -> tuple[_Job, Item]:
        task = self.tasks.get(item.task)
        if item.completion is not None:
            extraction = extract_code(item.completion, task.domain, entry_name(task))
            code = answer_code(extraction, task.domain)
        else:
            code = item.code or ""
        verifier = self.verifier_for(task.domain)
        key = (
            content_id(task.task_id, code),
            verifier.name,
            verifier.version_for(self.limits_for(task.domain)),
        )
        candidate = Candidate(
            task_id=task.task_id,
            code=code,
            origin="llm",
            generator=generator or f"rl:{rl_run or 'unnamed'}",
            prompt=item.prompt,
            run_id=self.run_id,
        )
        return _Job(task, code, candidate, key, concurrent.futures.Future()), item

    def _submit(self, jobs: list[_Job]) -> list[concurrent.futures.Future[tuple[Verdict, bool]]]:
        """Each job's future: a judged verdict (memo, then the lake), one already under way
        for another caller, or a new verification."""
        futures: list[concurrent.futures.Future[tuple[Verdict, bool]] | None] = [None] * len(jobs)
        cached: set[Key] = set()
        with self._lock:
            missing = []
            for i, j in enumerate(jobs):
                v = self._memo.get(j.key)
                if v is not None:
                    self._memo.move_to_end(j.key)
                    futures[i] = _done(v)
                    cached.add(j.key)
                elif j.key in self._inflight:  # being verified here: the lake has nothing
                    futures[i] = self._inflight[j.key]
                else:
                    missing.append(i)
        if missing and self._recorder is not None:
            found = self._recorder.judged([jobs[i].key for i in missing])
            for i in list(missing):
                v = found.get(jobs[i].key)
                if v is not None:
                    futures[i] = _done(v)
                    cached.add(jobs[i].key)
                    self._remember(jobs[i].key, v)
            missing = [i for i in missing if futures[i] is None]
        with self._lock:
            for i in missing:
                j = jobs[i]
                under_way = self._inflight.get(j.key)
                if under_way is not None:
                    futures[i] = under_way
                    continue
                v = self._memo.get(j.key)  # judged since the memo was first read
                if v is not None:
                    futures[i] = _done(v)
                    cached.add(j.key)
                    continue
                self._inflight[j.key] = j.future
                futures[i] = j.future
                self._pool(j.task.domain).submit(self._run, j)
        self.count("cached", sum(j.key in cached for j in jobs))  # items, as reward rows count
        return [f for f in futures if f is not None]

    def _pool(self, domain: str) -> concurrent.futures.ThreadPoolExecutor:
        """The domain's verification threads: as many as its verifier has workers (more
        would wait on a worker while holding what the verifier took before leasing one)."""
        pool = self._pools.get(domain)
        if pool is None:
            verifier = self.verifier_for(domain)
            n = getattr(verifier.settings, "workers", None) or os.cpu_count() or 1
            pool = concurrent.futures.ThreadPoolExecutor(n, f"reward-{domain}")
            self._pools[domain] = pool
        return pool

    def _run(self, job: _Job) -> None:
        """Verify one candidate (an infra_error again, up to `infra_retries` times) and
        record what came out; the future gets the last verdict."""
        try:
            verifier = self.verifier_for(job.task.domain)
            limits = self.limits_for(job.task.domain)
            verdicts = []
            for attempt in range(self.infra_retries + 1):
                try:
                    v = verifier.verify_many([(job.task, job.code)], limits)[0]
                except Exception as e:  # the verifier's own fault: infra, never the candidate's
                    log.exception("the %s verifier failed on %s", job.task.domain, job.key[0])
                    why = f"{type(e).__name__}: {e}"
                    cid, name, version = job.key
                    v = infra_verdict(
                        job.task, cid, name, version, "verifier_crashed", "verify", why
                    )
                verdicts.append(v)
                if not v.status.is_infra:
                    break
                self.count("infra_retried" if attempt < self.infra_retries else "infra_final")
            if self._recorder is not None:
                self._recorder.verdicts(job, verdicts)
            final = verdicts[-1]
            if not final.status.is_infra:
                self._remember(job.key, final)
            self.count("verified")
            job.future.set_result((final, False))
        except BaseException as e:  # the caller sees it; the next ask verifies again
            job.future.set_exception(e)
        finally:
            with self._lock:
                self._inflight.pop(job.key, None)

    def _remember(self, key: Key, verdict: Verdict) -> None:
        with self._lock:
            self._memo[key] = verdict
            self._memo.move_to_end(key)
            while len(self._memo) > MEMO_SIZE:
                self._memo.popitem(last=False)

    def _result(self, job: _Job, item: Item, v: Verdict, cached: bool, seconds: float) -> Result:
        stages: dict[str, bool] = {}
        for c in v.checks:
            stages[c.stage] = stages.get(c.stage, True) and bool(c.ok)
        return Result(
            task=item.task,
            task_id=job.task.task_id,
            domain=job.task.domain,
            candidate_id=job.key[0],
            verdict_id=v.verdict_id,
            status=v.status.value,
            passed=v.passed,
            reward=reward_of(v, self.reward),
            cached=cached,
            seconds=round(seconds, 4),
            error_code=v.code,
            category=v.category,
            feedback=v.feedback,
            metrics=dict(v.metrics),
            stages=stages,
            verifier=v.verifier,
            verifier_version=v.verifier_version,
        )

    def _record_rewards(
        self,
        results: list[Result],
        items: list[Item],
        rl_run: str,
        step: int | None,
        client: str,
    ) -> None:
        from lake.schema import Reward

        rows = []
        for k, (r, item) in enumerate(zip(results, items, strict=True)):
            row = Reward(
                candidate_id=r.candidate_id,
                verdict_id=r.verdict_id,
                task_id=r.task_id,
                domain=r.domain,
                status=r.status,
                reward=r.reward,
                reward_config=self._reward_dict,
                reward_config_id=self._reward_id,
                rl_run=rl_run,
                step=step,
                sample=item.sample,
                client=client,
                cached=r.cached,
                seconds=r.seconds,
                run_id=self.run_id,
            )
            results[k] = dataclasses.replace(r, reward_id=row.reward_id)
            rows.append(row)
        self.count("rewards", len(rows))
        if self._recorder is not None:
            self._recorder.rewards(rows)


def _id_hash(candidate_id: str) -> int:
    """A candidate id as 64 bits, for this process only (a false match costs a query)."""
    return hash(candidate_id)


def _done(v: Verdict) -> concurrent.futures.Future[tuple[Verdict, bool]]:
    f: concurrent.futures.Future[tuple[Verdict, bool]] = concurrent.futures.Future()
    f.set_result((v, True))
    return f


# --- the lake side ------------------------------------------------------------------------


class _Recorder:
    """The lake a `Rewarder` answers from and appends to: its run lock held, one writer
    (behind a lock: many verification threads add to it), a flusher thread, and the run's
    `runs` row at close."""

    def __init__(self, lake: Any, owner: Rewarder, command: str, flush_s: float, batch: int):
        from lake import db
        from lake.lock import hold
        from lake.store import Lake
        from lake.writer import BatchWriter

        self.owner = owner
        self.lake = lake if isinstance(lake, Lake) else Lake(lake)
        owner._stack.enter_context(hold(self.lake.root, f"crucible {command}", owner.run_id))
        self.writer = BatchWriter(self.lake, run_id=owner.run_id, batch_size=batch)
        self._con = db.connect(self.lake)
        self._wlock = threading.Lock()
        self._qlock = threading.Lock()
        self._tasks_written: set[str] = set()
        self._ids: dict[tuple[str, str], set[int]] = {}
        self._stop = threading.Event()
        self.flush_s = flush_s
        self.error: BaseException | None = None
        self._flusher = threading.Thread(target=self._flush_loop, name="reward-flush", daemon=True)
        self._flusher.start()

    def judged(self, keys: list[Key]) -> dict[Key, Verdict]:
        """Verdicts the lake already has for these keys (the same verifier version). A scan
        of the verdicts costs ~50 ms at 1,300 of them and grows with the lake, so it is run
        only for ids the lake is known to hold (`_judged_ids`), not for every new one."""
        from lake import db
        from lake.schema import verdict_from_row

        by_version: dict[tuple[str, str], list[str]] = {}
        for cid, name, version in keys:
            by_version.setdefault((name, version), []).append(cid)
        out: dict[Key, Verdict] = {}
        with self._qlock:
            for (name, version), ids in by_version.items():
                held = self._judged_ids(name, version)
                ids = [c for c in ids if _id_hash(c) in held]
                if not ids:
                    continue
                rows = db.rows(
                    self._con,
                    "judged_verdicts",
                    verifier=name,
                    verifier_version=version,
                    candidate_ids=ids,
                )
                for row in rows:
                    out[(row["candidate_id"], name, version)] = verdict_from_row(row)
        return out

    def _judged_ids(self, name: str, version: str) -> set[int]:
        """Which candidates the lake has a verdict of this version for (their ids' hashes:
        ~60 MB a million), read once per version and then kept with this process's own
        verdicts. While the run lock is held nobody else writes the lake; an object-store
        lake takes no lock, and a verdict another run writes there meanwhile is not seen
        here: that candidate is verified again, to the same verdict id."""
        from lake import db

        held = self._ids.get((name, version))
        if held is None:
            rows = db.run_sql(self._con, "judged_ids", verifier=name, verifier_version=version)
            held = {_id_hash(c) for c in rows.column("candidate_id").to_pylist()}
            self._ids[(name, version)] = held
        return held

    def verdicts(self, job: _Job, verdicts: list[Verdict]) -> None:
        if not verdicts[-1].status.is_infra:
            cid, name, version = job.key
            with self._qlock:
                self._judged_ids(name, version).add(_id_hash(cid))
        with self._wlock:
            self._task(job.task)
            self.writer.add_candidate(job.candidate, job.task.domain)
            for v in verdicts:
                self.writer.add_verdict(v)

    def rewards(self, rows: list[Any]) -> None:
        """Reward rows only: each one's candidate, task and verdict were written with the
        verdict (`verdicts`), or were in the lake it was answered from."""
        with self._wlock:
            for row in rows:
                self.writer.add_reward(row)

    def _task(self, task: Task) -> None:
        if task.task_id not in self._tasks_written:
            self.writer.add_task(task)
            self._tasks_written.add(task.task_id)

    def flush(self) -> None:
        with self._wlock:
            self.writer.flush()

    def _flush_loop(self) -> None:
        while not self._stop.wait(self.flush_s):
            try:
                self.flush()
            except Exception as e:  # kept: the rows stay buffered, close tries again
                self.error = e
                log.warning("reward lake flush failed (retried): %s", e)

    def close(self) -> None:
        from lake.schema import Run

        self._stop.set()
        self._flusher.join()
        o = self.owner
        run = Run(
            run_id=o.run_id,
            flow="rewards",
            status="completed",
            started_at=o.started_at,
            finished_at=utc_now(),
            seconds=round(time.perf_counter() - o._t0, 3),
            params={"reward": o.reward.to_dict(), "infra_retries": o.infra_retries},
            counts=dict(o.counts),
            lake_versions_written=None,
        )
        try:
            with self._wlock:
                self.writer.add_run(run)
                self.writer.close()
        finally:
            with self._qlock:
                self._con.close()
