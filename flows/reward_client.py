"""A client of the reward service (`crucible reward-server`, `flows.service`) with the
`Rewarder`'s own `verify` signature, so an RL loop (and `flows.rl`'s adapters) can use the
service and the in-process API alike.

    client = RewardClient("http://127.0.0.1:8321", token=open(token_file).read().strip())
    client.verify([Item("adder8", completion=answer)], rl_run="grpo-7", step=3)[0].reward

A `429` or `504` is waited out (its `Retry-After`) up to `max_wait_s`; any other refusal
raises `RewardServiceError` with the service's message.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import httpx

from flows.rewards import Item, Result, RewardError
from generators.openai import retry_after_s

RETRIED = (429, 503, 504)


class RewardServiceError(RewardError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"reward service answered {status}: {message}")
        self.status = status


class RewardClient:
    def __init__(
        self,
        url: str,
        token: str,
        *,
        client: str = "",
        timeout_s: float = 900.0,
        max_wait_s: float = 600.0,
        http: httpx.Client | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"}
        if client:
            headers["X-Crucible-Client"] = client
        self.max_wait_s = max_wait_s
        self.http = http or httpx.Client(timeout=timeout_s)
        self.headers = headers
        self.waits = 0  # 429/504 waited out, for a caller's counters

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
        body: dict[str, Any] = {"items": [_item_json(it) for it in items], "rl_run": rl_run}
        if step is not None:
            body["step"] = int(step)
        if generator:
            body["generator"] = generator
        headers = dict(self.headers)
        if client:
            headers["X-Crucible-Client"] = client
        give_up = time.monotonic() + (self.max_wait_s if timeout_s is None else timeout_s)
        while True:
            resp = self.http.post(f"{self.url}/v1/verify", json=body, headers=headers)
            if resp.status_code == 200:
                return [Result(**r) for r in resp.json()["results"]]
            message = _message(resp)
            if resp.status_code in RETRIED:
                # no (or a zero) Retry-After: a second, not a busy loop
                wait = retry_after_s(resp.headers.get("retry-after")) or 1.0
                if time.monotonic() + wait < give_up:
                    self.waits += 1
                    time.sleep(wait)
                    continue
            raise RewardServiceError(resp.status_code, message)

    def rewards(self, items: Sequence[Item | tuple[str, str]], **tags: Any) -> list[float | None]:
        return [r.reward for r in self.verify(items, **tags)]

    def tasks(self, domain: str | None = None) -> list[dict[str, Any]]:
        params = {"domain": domain} if domain else None
        resp = self.http.get(f"{self.url}/v1/tasks", params=params, headers=self.headers)
        if resp.status_code != 200:
            raise RewardServiceError(resp.status_code, _message(resp))
        return resp.json()["tasks"]

    def health(self) -> dict[str, Any]:
        resp = self.http.get(f"{self.url}/v1/health", headers=self.headers)
        resp.raise_for_status()
        return resp.json()

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> RewardClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _item_json(it: Item | tuple[str, str]) -> dict[str, Any]:
    if isinstance(it, tuple):
        return {"task": it[0], "code": it[1]}
    d: dict[str, Any] = {"task": it.task}
    if it.code is not None:
        d["code"] = it.code
    else:
        d["completion"] = it.completion
    if it.sample:
        d["sample"] = it.sample
    if it.prompt is not None:
        d["prompt"] = it.prompt
    return d


def _message(resp: httpx.Response) -> str:
    try:
        return str(resp.json().get("error", resp.text[:300]))
    except ValueError:
        return resp.text[:300]
