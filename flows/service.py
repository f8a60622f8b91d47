"""The reward service: `flows.rewards.Rewarder` over HTTP for RL loops (`crucible
reward-server`), on the ASGI stack Prefect already brings (Starlette, uvicorn).

Endpoints (JSON; every one but `/v1/health` needs `Authorization: Bearer <token>`):

- `POST /v1/verify`: `{"items": [{"task": NAME, "code": TEXT} | {"task": NAME,
  "completion": MODEL_ANSWER, "sample": ID, "prompt": TEXT}, ...], "rl_run": TAG, "step": N,
  "generator": NAME}` -> `{"run_id": ..., "results": [Result, ...]}` in item order.
- `GET /v1/tasks[?domain=D]`: the tasks it verifies against (name, domain, requirement,
  interface).
- `GET /v1/health`: `{"status": "ok"}`; with the token, also the load and counts.

What protects the verifiers and the caller:

- **Token**: compared in constant time (`hmac.compare_digest`), never logged or echoed.
- **Size**: a body over `max_body_bytes`, a batch over `max_items` or one code over
  `max_code_bytes` is `413`, read no further than the limit.
- **Backpressure, not queues**: a request that would take the candidates in flight past
  `max_inflight_items`, or a client's requests past `client_concurrency`, is `429` with
  `Retry-After` at once; nothing waits in an unbounded queue.
- **Time**: a request unanswered after `request_timeout_s` is `504` with `Retry-After`; its
  verifications go on and land in the lake, and asking again is answered from them.
- **Nothing from a bad request**: malformed JSON (`400`), an unknown field (`400`), an
  unknown task (`422`), a missing or wrong token (`401`) are refused before any candidate is
  verified or any row written.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from flows.rewards import Item, Rewarder, RewardError, is_unicode

log = logging.getLogger(__name__)

ITEM_FIELDS = frozenset({"task", "code", "completion", "sample", "prompt"})
BODY_FIELDS = frozenset({"items", "rl_run", "step", "generator"})
TAG_CHARS = 200  # rl_run, generator, sample and the client id: tags, not payloads


@dataclass(frozen=True)
class ServiceSettings:
    token: str
    max_body_bytes: int = 16 * 1024 * 1024
    max_items: int = 256
    max_code_bytes: int = 256 * 1024
    max_inflight_items: int = 2048
    client_concurrency: int = 64
    request_timeout_s: float = 600.0

    def __post_init__(self) -> None:
        if not isinstance(self.token, str) or len(self.token) < 16:
            raise ValueError("the service token must be at least 16 characters")
        for name in ("max_body_bytes", "max_items", "max_code_bytes", "max_inflight_items",
                     "client_concurrency"):  # fmt: skip
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1 (a limit of 0 would refuse all)")
        if self.request_timeout_s <= 0:
            raise ValueError("request_timeout_s must be above 0")


class Refused(Exception):
    """A request answered with a 4xx/5xx: `status`, the message, and extra headers."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.headers = dict(headers or {})


class Admission:
    """Candidates in flight (all clients) and requests in flight per client: taken before a
    request's work starts, refused (429) rather than queued."""

    def __init__(self, settings: ServiceSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self.items = 0
        self.by_client: dict[str, int] = {}
        self.refused = 0
        self._item_s = 0.5  # a running mean of seconds per candidate, for Retry-After

    def take(self, client: str, n: int) -> None:
        s = self.settings
        with self._lock:
            if self.by_client.get(client, 0) >= s.client_concurrency:
                self.refused += 1
                raise Refused(
                    429,
                    f"client {client!r} has {s.client_concurrency} requests in flight, its "
                    "limit: wait for one to finish",
                    {"Retry-After": str(self.retry_after())},
                )
            if self.items + n > s.max_inflight_items:
                self.refused += 1
                raise Refused(
                    429,
                    f"the service has {self.items} candidates in flight and takes at most "
                    f"{s.max_inflight_items}: retry after the Retry-After seconds",
                    {"Retry-After": str(self.retry_after())},
                )
            self.items += n
            self.by_client[client] = self.by_client.get(client, 0) + 1

    def give(self, client: str, n: int, seconds: float | None) -> None:
        with self._lock:
            self.items -= n
            left = self.by_client.get(client, 1) - 1
            if left:
                self.by_client[client] = left
            else:
                self.by_client.pop(client, None)
            if seconds is not None and n:
                self._item_s = 0.9 * self._item_s + 0.1 * (seconds / n)

    def retry_after(self) -> int:
        return max(1, min(60, math.ceil(self._item_s * max(1, self.items) / 16)))


def bearer_ok(header: str | None, token: str) -> bool:
    if not header:
        return False
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode("utf-8", "replace"), token.encode("utf-8"))


def _check_auth(request: Request, settings: ServiceSettings) -> None:
    header = request.headers.get("authorization")
    if not header:
        raise Refused(
            401,
            "missing bearer token: send `Authorization: Bearer <token>` (the token "
            "`crucible reward-server` wrote at start)",
            {"WWW-Authenticate": "Bearer"},
        )
    if not bearer_ok(header, settings.token):
        raise Refused(
            401, "wrong bearer token", {"WWW-Authenticate": 'Bearer error="invalid_token"'}
        )


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, refused (413) as soon as it passes `limit`: never read whole first."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise Refused(413, f"request body of {declared} bytes; the limit is {limit}")
        except ValueError:
            raise Refused(400, "malformed Content-Length header") from None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Refused(413, f"request body over {limit} bytes, the limit")
        chunks.append(chunk)
    return b"".join(chunks)


def _tag(body: Mapping[str, Any], key: str) -> str:
    value = body.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > TAG_CHARS or not is_unicode(value):
        raise Refused(400, f"{key!r} must be a string of at most {TAG_CHARS} characters")
    return value


def parse_request(raw: bytes, settings: ServiceSettings) -> tuple[list[Item], dict[str, Any]]:
    """The items and tags of a verify request, or `Refused` saying what is wrong."""
    try:
        body = json.loads(raw)
    except UnicodeDecodeError:
        raise Refused(400, "malformed JSON: the body is not UTF-8") from None
    except json.JSONDecodeError as e:
        raise Refused(400, f"malformed JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise Refused(400, "malformed JSON: nested too deep") from None
    if not isinstance(body, dict):
        raise Refused(400, 'the body must be a JSON object: {"items": [...], ...}')
    unknown = sorted(set(body) - BODY_FIELDS)
    if unknown:
        raise Refused(400, f"unknown field(s) {unknown}; fields: {sorted(BODY_FIELDS)}")
    items = body.get("items")
    if not isinstance(items, list) or not items:
        raise Refused(400, '"items" must be a non-empty list of {"task", "code" | "completion"}')
    if len(items) > settings.max_items:
        raise Refused(413, f"batch of {len(items)} items; the limit is {settings.max_items}")
    step = body.get("step")
    if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 0):
        raise Refused(400, '"step" must be a non-negative integer')
    tags = {"rl_run": _tag(body, "rl_run"), "generator": _tag(body, "generator"), "step": step}
    return [_item(i, it, settings) for i, it in enumerate(items)], tags


def _item(i: int, it: Any, settings: ServiceSettings) -> Item:
    where = f"items[{i}]"
    if not isinstance(it, dict):
        raise Refused(400, f"{where} must be an object")
    unknown = sorted(set(it) - ITEM_FIELDS)
    if unknown:
        raise Refused(400, f"{where}: unknown field(s) {unknown}; fields: {sorted(ITEM_FIELDS)}")
    if not isinstance(it.get("task"), str) or not it["task"]:
        raise Refused(400, f'{where}: "task" must name a task (GET /v1/tasks lists them)')
    given = [k for k in ("code", "completion") if it.get(k) is not None]
    if len(given) != 1:
        raise Refused(400, f'{where}: give exactly one of "code" and "completion"')
    text = it[given[0]]
    if not isinstance(text, str):
        raise Refused(400, f"{where}: {given[0]!r} must be a string")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > settings.max_code_bytes:
        raise Refused(
            413, f"{where}: {given[0]} of {size} bytes; the limit is {settings.max_code_bytes}"
        )
    sample = it.get("sample", "")
    if isinstance(sample, int) and not isinstance(sample, bool):
        sample = str(sample)
    if not isinstance(sample, str) or len(sample) > TAG_CHARS:
        raise Refused(400, f'{where}: "sample" must be a short string or integer')
    prompt = it.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise Refused(400, f'{where}: "prompt" must be a string')
    try:
        return Item(
            it["task"],
            code=it.get("code"),
            completion=it.get("completion"),
            sample=sample,
            prompt=prompt,
        )
    except RewardError as e:
        raise Refused(400, f"{where}: {e}") from None


def client_of(request: Request) -> str:
    """Who the per-client limit counts against: the `X-Crucible-Client` header, else the
    peer's address."""
    named = request.headers.get("x-crucible-client", "").strip()
    if named:
        return named[:TAG_CHARS]
    return request.client.host if request.client else "unknown"


def create_app(rewarder: Rewarder, settings: ServiceSettings) -> Starlette:
    """The ASGI app over `rewarder` (which the caller opens and closes)."""
    admission = Admission(settings)
    # one thread per admitted request at most: the admission bounds them, so the limiter
    # never queues (anyio's default of 40 would, unboundedly)
    threads = anyio.CapacityLimiter(settings.max_inflight_items)

    def answer(exc: Refused) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, exc.status, headers=exc.headers)

    async def verify(request: Request) -> JSONResponse:
        try:
            _check_auth(request, settings)
            items, tags = parse_request(
                await _read_body(request, settings.max_body_bytes), settings
            )
            client = client_of(request)
            admission.take(client, len(items))
        except Refused as e:
            return answer(e)
        seconds = None
        t0 = anyio.current_time()
        try:
            results = await anyio.to_thread.run_sync(
                lambda: rewarder.verify(
                    items, client=client, timeout_s=settings.request_timeout_s, **tags
                ),
                limiter=threads,
            )
            seconds = anyio.current_time() - t0
        except RewardError as e:
            return answer(Refused(422, str(e)))
        except TimeoutError as e:
            return answer(Refused(504, str(e), {"Retry-After": str(admission.retry_after())}))
        finally:
            admission.give(client, len(items), seconds)
        return JSONResponse({"run_id": rewarder.run_id, "results": [r.to_dict() for r in results]})

    async def tasks(request: Request) -> JSONResponse:
        try:
            _check_auth(request, settings)
        except Refused as e:
            return answer(e)
        domain = request.query_params.get("domain")
        rows = [
            {
                "task": f"{t.domain}/{t.name}",
                "name": t.name,
                "domain": t.domain,
                "task_id": t.task_id,
                "family": t.family,
                "level": t.level,
                "split": t.split,
                "requirement": t.requirement,
                "interface": t.interface,
            }
            for t in rewarder.tasks
            if domain is None or t.domain == domain
        ]
        return JSONResponse({"tasks": rows})

    async def health(request: Request) -> JSONResponse:
        body: dict[str, Any] = {"status": "ok"}
        if bearer_ok(request.headers.get("authorization"), settings.token):
            body |= {
                "run_id": rewarder.run_id,
                "tasks": len(rewarder.tasks),
                "inflight_items": admission.items,
                "refused": admission.refused,
                "counts": dict(rewarder.counts),
            }
        return JSONResponse(body)

    return Starlette(
        routes=[
            Route("/v1/verify", verify, methods=["POST"]),
            Route("/v1/tasks", tasks, methods=["GET"]),
            Route("/v1/health", health, methods=["GET"]),
        ]
    )
