"""A stand-in for an OpenAI-compatible model server (what `vllm serve` offers), for tests:
no model server can run here. It serves `POST /v1/chat/completions` over real HTTP on
127.0.0.1 and is scripted: `answer(request, index)` writes each choice's text, `replies`
queues error replies served before any answer, `max_choices` returns fewer choices than
asked, `delay_s` slows every request. It records every request body and the most requests
it ever had in flight at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PATH = "/v1/chat/completions"


@dataclass
class Reply:
    """A scripted non-answer: an HTTP status, a body, headers."""

    status: int
    body: str = '{"error": {"message": "scripted by the stand-in"}}'
    headers: dict[str, str] = field(default_factory=dict)


def fenced(code: str, tag: str = "systemverilog", prose: str = "Here is the design.") -> str:
    return f"{prose}\n\n```{tag}\n{code.strip()}\n```\n"


def prose(request: dict[str, Any], index: int) -> str:
    return "I would use an adder here; the carry comes out of the ninth bit."


class StandinOpenAI:
    def __init__(self, answer: Callable[[dict[str, Any], int], str] = prose) -> None:
        self.answer = answer
        self.replies: deque[Reply] = deque()
        self.max_choices: int | None = None
        self.delay_s = 0.0
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []  # the Authorization header of each
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> StandinOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def respond(
        self, body: dict[str, Any], authorization: str | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.requests.append(body)
            self.authorizations.append(authorization)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            scripted = self.replies.popleft() if self.replies else None
        try:
            if self.delay_s:
                time.sleep(self.delay_s)
            if scripted is not None:
                return scripted.status, scripted.headers, scripted.body.encode()
            n = int(body.get("n") or 1)
            k = min(n, self.max_choices) if self.max_choices is not None else n
            texts = [self.answer(body, i) for i in range(k)]
            prompt_tokens = sum(len(m["content"].split()) for m in body["messages"])
            completion = {
                "id": f"chatcmpl-standin-{len(self.requests)}",
                "object": "chat.completion",
                "model": body.get("model"),
                # reversed on purpose: clients must order choices by `index`
                "choices": [
                    {
                        "index": i,
                        "message": {"role": "assistant", "content": t},
                        "finish_reason": "stop",
                    }
                    for i, t in reversed(list(enumerate(texts)))
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": sum(len(t.split()) for t in texts),
                    "total_tokens": prompt_tokens + sum(len(t.split()) for t in texts),
                },
            }
            return 200, {"Content-Type": "application/json"}, json.dumps(completion).encode()
        finally:
            with self._lock:
                self.in_flight -= 1


def _handler(standin: StandinOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real server offers

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            if self.path != PATH:
                status, headers, data = 404, {}, b'{"error": {"message": "no such route"}}'
            else:
                status, headers, data = standin.respond(body, self.headers.get("Authorization"))
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

    return Handler
