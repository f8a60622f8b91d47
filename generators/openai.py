"""Chat-model generators: the shared bookkeeping (`ChatGenerator`) and the client for any
OpenAI-compatible endpoint (`OpenAIGenerator`: `vllm serve`, SGLang, a hosted API).

A chat generator only has to answer conversations (`_complete`); the base builds the prompts
from the task, asks again when an answer came back with fewer samples than requested,
extracts code, keeps the exact request in `Candidate.prompt`, and counts. An answer without
code still becomes a candidate: the verifier's format gate makes it a `format_error`, a
training negative like any other.
"""

from __future__ import annotations

import email.utils
import itertools
import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

import httpx

from generators.base import Generator, RepairRequest, seeded_rng
from generators.extract import Extraction, answer_code, entry_name, extract_code
from generators.prompts import Message, instruction_messages, repair_messages
from generators.settings import LLMSettings
from verifiers.contract import Candidate, Task, canonical_json

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

RETRY_STATUSES = frozenset({408, 429})  # plus every 5xx
MAX_BACKOFF_S = 60.0
MAX_RETRY_AFTER_S = 300.0
STATUS_HINTS = {
    401: "check the API key (the entry point reads it from ${env})",
    403: "check the API key (the entry point reads it from ${env})",
    404: "check base_url (it should end in /v1) and that the server serves model {model!r}",
}
DEFAULT_HINT = "check the model name ({model!r}) and the request parameters"


class GeneratorError(RuntimeError):
    """A generator could not produce candidates (endpoint down, engine missing): an
    infrastructure fault, never a fault of the model's answer."""


@dataclass(frozen=True)
class ChatRequest:
    messages: list[Message]
    n: int
    seed: int


@dataclass(frozen=True)
class Choice:
    text: str
    finish_reason: str | None = None


@dataclass(frozen=True)
class Completion:
    """One request's answer. Usage is the request's: the prompt once, all choices' tokens."""

    choices: tuple[Choice, ...]
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "choices": [{"text": c.text, "finish_reason": c.finish_reason} for c in self.choices],
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Completion:
        choices = tuple(Choice(c["text"], c.get("finish_reason")) for c in d["choices"])
        return cls(choices, int(d.get("prompt_tokens", 0)), int(d.get("completion_tokens", 0)))


@dataclass(frozen=True)
class _Sample:
    request: ChatRequest
    completion: Completion
    choice: Choice


class ChatGenerator(Generator):
    """Samples a chat model. Subclasses implement `_complete` and may override `_fan_out`."""

    batch_size: ClassVar[int] = 64  # conversations per `_complete` call in `_fan_out`

    def __init__(self, settings: LLMSettings) -> None:
        super().__init__()
        if not settings.model:
            raise GeneratorError(
                f"the {self.name} generator needs a model name "
                "(e.g. Qwen/Qwen2.5-Coder-7B-Instruct)"
            )
        self.settings = settings
        self._stats_lock = threading.Lock()  # `_complete` may run on several threads

    @property
    def label(self) -> str:
        """The `Candidate.generator` value: `<name>:<model>`."""
        return f"{self.name}:{self.settings.model}"

    @property
    def candidates_like(self) -> str:
        return self.label  # another model's samples do not count toward this one's

    def close(self) -> None:
        """Release connections / engines. The generator is not used afterwards."""

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- what a backend supplies ---------------------------------------------------------------
    def _complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """One completion per request, in order. Raises GeneratorError when it cannot."""
        raise NotImplementedError

    def _fan_out(self, work: Callable[[list[T]], list[R]], items: Sequence[T]) -> Iterator[R]:
        """Run `work` over `items`, yielding results in input order. Default: batches of
        `batch_size` (an engine batches internally; an HTTP client overrides this)."""
        for i in range(0, len(items), self.batch_size):
            yield from work(list(items[i : i + self.batch_size]))

    # --- the Generator interface ---------------------------------------------------------------
    def generate(self, task: Task, *, n: int | None = None, seed: int = 0) -> list[Candidate]:
        return next(self.generate_many([task], n=n, seed=seed))[1]

    def generate_many(
        self, tasks: Sequence[Task], *, n: int | None = None, seed: int = 0
    ) -> Iterator[tuple[Task, list[Candidate]]]:
        count = self.settings.n if n is None else n
        tasks = list(tasks)

        def work(chunk: list[Task]) -> list[list[Candidate]]:
            sampled = self._sample([instruction_messages(t) for t in chunk], count, seed)
            return [
                self._candidates(t, s, self._llm_candidate(t))
                for t, s in zip(chunk, sampled, strict=True)
            ]

        yield from zip(tasks, self._fan_out(work, tasks), strict=True)

    def repair(self, request: RepairRequest, *, seed: int = 0) -> list[Candidate]:
        return next(self.repair_many([request], seed=seed))[1]

    def repair_many(
        self, requests: Sequence[RepairRequest], *, seed: int = 0
    ) -> Iterator[tuple[RepairRequest, list[Candidate]]]:
        requests = list(requests)

        def work(chunk: list[RepairRequest]) -> list[list[Candidate]]:
            convs = [
                repair_messages(r.task, r.failed.code, r.verdict.status.value, r.verdict.feedback)
                for r in chunk
            ]
            sampled = self._sample(convs, 1, seed)
            return [
                self._candidates(
                    r.task, s, lambda code, prompt, r=r: r.child(code, self.label, prompt)
                )
                for r, s in zip(chunk, sampled, strict=True)
            ]

        yield from zip(requests, self._fan_out(work, requests), strict=True)

    # --- shared bookkeeping --------------------------------------------------------------------
    def _count(self, **amounts: int) -> None:
        with self._stats_lock:
            self.stats.update(amounts)

    def _sample(self, convs: list[list[Message]], n: int, seed: int) -> list[list[_Sample]]:
        """`n` samples per conversation; a server that returns fewer is asked again, with a
        fresh seed derived from `seed` (the same seed would return the same samples)."""
        got: list[list[_Sample]] = [[] for _ in convs]
        pending = list(range(len(convs))) if n > 0 else []
        for round_ in itertools.count():
            if not pending:
                break
            rseed = _round_seed(seed, round_)
            requests = [ChatRequest(convs[i], n - len(got[i]), rseed) for i in pending]
            completions = self._complete(requests)
            self._count(requests=len(requests))
            still = []
            for i, req, comp in zip(pending, requests, completions, strict=True):
                self._count(
                    prompt_tokens=comp.prompt_tokens, completion_tokens=comp.completion_tokens
                )
                got[i].extend(_Sample(req, comp, c) for c in comp.choices[: req.n])
                if not comp.choices:
                    self._count(empty_responses=1)  # asking again would loop forever
                elif len(got[i]) < n:
                    self._count(short_responses=1)
                    still.append(i)
            pending = still
        return got

    def _llm_candidate(self, task: Task) -> Callable[[str, str], Candidate]:
        def make(code: str, prompt: str) -> Candidate:
            return Candidate(
                task_id=task.task_id, code=code, origin="llm", generator=self.label, prompt=prompt
            )

        return make

    def _candidates(
        self, task: Task, samples: list[_Sample], make: Callable[[str, str], Candidate]
    ) -> list[Candidate]:
        """One candidate per distinct code (the same code is the same `candidate_id`)."""
        entry = entry_name(task)
        out, seen = [], set()
        for s in samples:
            ex = extract_code(s.choice.text, task.domain, entry)
            self._count(samples=1, format_errors=int(not ex.ok))
            if s.choice.finish_reason == "length":
                self._count(truncated=1)
            code = answer_code(ex, task.domain)
            if code in seen:
                self._count(duplicates=1)
                continue
            seen.add(code)
            out.append(make(code, self._prompt_json(s, ex)))
        self._count(candidates=len(out))
        return out

    def _prompt_json(self, s: _Sample, ex: Extraction) -> str:
        st = self.settings
        return canonical_json(
            {
                "messages": s.request.messages,
                "model": st.model,
                "params": {
                    "temperature": st.temperature,
                    "top_p": st.top_p,
                    "max_tokens": st.max_tokens,
                    "seed": s.request.seed,
                },
                # the request's usage, shared by its `choices` samples
                "usage": {
                    "prompt_tokens": s.completion.prompt_tokens,
                    "completion_tokens": s.completion.completion_tokens,
                    "choices": len(s.completion.choices),
                },
                "finish_reason": s.choice.finish_reason,
                "extraction": ex.reason,
            }
        )


class OpenAIGenerator(ChatGenerator):
    """`POST {base_url}/chat/completions` over HTTP, at most `concurrency` requests at once,
    retried with exponential backoff and jitter on 408/429/5xx and connection errors."""

    name = "openai"

    def __init__(self, settings: LLMSettings) -> None:
        super().__init__(settings)
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        c = settings.concurrency
        self._client = httpx.Client(
            timeout=settings.timeout_s,
            headers=headers,
            limits=httpx.Limits(max_connections=c, max_keepalive_connections=c),
        )
        # the bound holds even when callers share this generator across their own threads
        self._in_flight = threading.BoundedSemaphore(c)
        self._jitter = random.Random()

    def close(self) -> None:
        self._client.close()

    def _fan_out(self, work: Callable[[list[T]], list[R]], items: Sequence[T]) -> Iterator[R]:
        """One item per job on `concurrency` threads, a bounded window submitted ahead, results
        yielded in input order as soon as the head of the window is done."""
        items = list(items)
        if len(items) <= 1:
            yield from work(items)
            return
        workers = min(self.settings.concurrency, len(items))
        pending = iter(items)
        with ThreadPoolExecutor(workers, thread_name_prefix=f"{self.name}-gen") as pool:
            window: deque[Future[list[R]]] = deque()
            try:
                while True:
                    for item in itertools.islice(pending, 2 * workers - len(window)):
                        window.append(pool.submit(work, [item]))
                    if not window:
                        return
                    yield window.popleft().result()[0]
            finally:
                for f in window:
                    f.cancel()

    def _complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return [self._post(r) for r in requests]

    def _post(self, request: ChatRequest) -> Completion:
        st = self.settings
        payload = {
            "model": st.model,
            "messages": request.messages,
            "n": request.n,
            "temperature": st.temperature,
            "top_p": st.top_p,
            "max_tokens": st.max_tokens,
            "seed": request.seed,
        }
        last = ""
        delay = 0.0
        for attempt in range(st.retries + 1):
            if attempt:
                self._count(retries=1)
                time.sleep(delay)
            try:
                with self._in_flight:
                    resp = self._client.post(self.url, json=payload)
            except httpx.TransportError as e:  # connection refused, reset, timeouts
                self._count(transport_errors=1)
                last = f"{type(e).__name__}: {e}"
                delay = self._backoff(attempt)
                continue
            if resp.status_code == 200:
                return self._parse(resp)
            self._count(http_errors=1)
            last = f"HTTP {resp.status_code}: {_body(resp)}"
            if resp.status_code not in RETRY_STATUSES and resp.status_code < 500:
                hint = STATUS_HINTS.get(resp.status_code, DEFAULT_HINT)
                raise GeneratorError(
                    f"{self.url} refused the request ({last}); "
                    + hint.format(env=st.api_key_env, model=st.model)
                )
            delay = max(self._backoff(attempt), retry_after_s(resp.headers.get("retry-after")))
            log.warning("%s answered %s; retrying in %.1f s", self.url, resp.status_code, delay)
        raise GeneratorError(
            f"no answer from {self.url} after {st.retries + 1} attempts (last: {last}): "
            f"is `vllm serve` (or another OpenAI-compatible server) running at {st.base_url} "
            f"and serving model {st.model!r}?"
        )

    def _backoff(self, attempt: int) -> float:
        base = min(MAX_BACKOFF_S, self.settings.backoff_s * 2**attempt)
        return base * (0.5 + self._jitter.random())  # jitter keeps retrying clients apart

    def _parse(self, resp: httpx.Response) -> Completion:
        try:
            data = resp.json()
            raw = sorted(data["choices"], key=lambda c: c.get("index", 0))
            choices = tuple(
                Choice((c.get("message") or {}).get("content") or "", c.get("finish_reason"))
                for c in raw
            )
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise GeneratorError(
                f"{self.url} answered 200 without a chat completion ({type(e).__name__}; "
                f"body: {_body(resp)}): is it an OpenAI-compatible endpoint?"
            ) from None
        usage = data.get("usage") or {}
        return Completion(
            choices, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        )


def probe(settings: LLMSettings, *, timeout_s: float = 5.0) -> tuple[str, ...]:
    """`GET {base_url}/models` once, with a short timeout, before a run depends on the
    endpoint: a server that is not there, or refuses, is a GeneratorError in seconds
    (naming the URL and what to do), not after the first request's retries. Returns the
    model ids it lists (empty when its answer lists none)."""
    base = settings.base_url.rstrip("/")
    url = base + "/models"
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    try:
        resp = httpx.get(url, headers=headers, timeout=timeout_s)
    except (httpx.TransportError, httpx.InvalidURL) as e:  # refused, unreachable, timed out
        raise GeneratorError(
            f"no OpenAI-compatible server answers at {base} ({type(e).__name__}: {e}): start "
            f"one there (e.g. `vllm serve {settings.model}`) or pass its --base-url"
        ) from None
    if resp.status_code != 200:
        hint = STATUS_HINTS.get(resp.status_code, "is it an OpenAI-compatible endpoint?")
        body = _body(resp, 120)
        raise GeneratorError(
            f"{url} answered HTTP {resp.status_code}{f' ({body})' if body else ''}: "
            + hint.format(env=settings.api_key_env, model=settings.model)
        )
    try:
        return tuple(str(m["id"]) for m in resp.json().get("data") or ())
    except (ValueError, KeyError, TypeError, AttributeError):
        return ()  # it answers; the model list is a courtesy, not the contract


def _round_seed(seed: int, round_: int) -> int:
    return seed if round_ == 0 else seeded_rng(str(seed), "round", str(round_)).getrandbits(31)


def retry_after_s(value: str | None) -> float:
    """Seconds a `Retry-After` header asks for (a number or an HTTP date), capped."""
    if not value:
        return 0.0
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return 0.0
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return min(max(0.0, seconds), MAX_RETRY_AFTER_S)


def _body(resp: httpx.Response, limit: int = 300) -> str:
    text = resp.text.strip().replace("\n", " ")
    return text[:limit] + ("..." if len(text) > limit else "")
