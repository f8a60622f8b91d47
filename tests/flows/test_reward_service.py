"""The reward service over real HTTP (uvicorn on a loopback port, the real RTL tools, a
real lake): answers, the token, every refusal writing nothing, backpressure (429 +
Retry-After), the deadline (504, then answered from what went on), and `crucible
reward-server` itself (token file, SIGTERM records the run)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn

from flows.reward_client import RewardClient, RewardServiceError
from flows.rewards import Item, Rewarder, Tasks
from flows.service import ServiceSettings, create_app
from tests.flows.lakeq import q
from tests.flows.test_rewards import HANG, TASK

TOKEN = "t0k3n-" + "s3cr3t" * 4


@pytest.fixture(scope="module")
def tasks() -> Tasks:
    return Tasks.catalog(domains=["rtl"])


@contextlib.contextmanager
def serving(rewarder: Rewarder, **limits):
    """The app on a free loopback port in a thread; its base URL."""
    app = create_app(rewarder, ServiceSettings(token=TOKEN, **limits))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    t = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the service did not start"
        time.sleep(0.05)
    try:
        yield url
    finally:
        server.should_exit = True
        t.join(30)
        sock.close()


def auth(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def lake_counts(lake: Path) -> tuple[int, int, int]:
    return tuple(
        q(lake, f"SELECT count(*) FROM {t}")[0][0] for t in ("candidates", "verdicts", "rewards")
    )


def test_verify_tasks_health_and_curl(tmp_path, tasks):
    lake = tmp_path / "lake"
    ref = tasks.get(TASK).reference
    with Rewarder(tasks, lake=lake) as r, serving(r) as url:
        body = {
            "items": [
                {"task": TASK, "completion": f"```verilog\n{ref}```", "sample": 0},
                {"task": f"rtl/{TASK}", "code": "module adder8(); endmodule", "sample": 1},
            ],
            "rl_run": "http",
            "step": 3,
        }
        resp = httpx.post(f"{url}/v1/verify", json=body, headers=auth(), timeout=60)
        assert resp.status_code == 200, resp.text
        results = resp.json()["results"]
        assert (results[0]["status"], results[0]["reward"]) == ("pass", 1.0)
        assert results[1]["reward"] == 0.0 and results[1]["status"] != "pass"
        if shutil.which("curl"):  # the plain-curl path a user tries first
            out = subprocess.run(
                [
                    "curl",
                    "-s",
                    "-H",
                    f"Authorization: Bearer {TOKEN}",
                    "-d",
                    json.dumps(body),
                    f"{url}/v1/verify",
                ],
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
            again = json.loads(out.stdout)["results"]
            assert [x["cached"] for x in again] == [True, True]
        listed = httpx.get(f"{url}/v1/tasks?domain=rtl", headers=auth()).json()["tasks"]
        assert TASK in {t["name"] for t in listed} and {t["domain"] for t in listed} == {"rtl"}
        assert httpx.get(f"{url}/v1/health").json() == {"status": "ok"}  # no token: no more
        assert httpx.get(f"{url}/v1/health", headers=auth()).json()["counts"]["verified"] == 2
        # the client, as an RL loop uses it
        with RewardClient(url, TOKEN, client="loop") as c:
            got = c.verify([Item(TASK, code=ref)], rl_run="http", step=4)
            assert (got[0].status, got[0].reward, got[0].cached) == ("pass", 1.0, True)
    rows = q(lake, "SELECT step, sample, client, cached FROM rewards ORDER BY step, sample")
    assert [(s, smp) for s, smp, _, _ in rows] == [(3, "0"), (3, "1"), (4, "")]
    assert rows[-1][2] == "loop" and q(lake, "SELECT count(*) FROM raw_verdicts")[0][0] == 2


def test_refusals_are_clear_4xx_and_write_nothing(tmp_path, tasks, caplog):
    lake = tmp_path / "lake"
    ref = tasks.get(TASK).reference
    caplog.set_level(logging.DEBUG)
    with (
        Rewarder(tasks, lake=lake) as r,
        serving(r, max_items=4, max_code_bytes=2000, max_body_bytes=20_000) as url,
    ):
        post = lambda data, headers=None, **kw: httpx.post(  # noqa: E731
            f"{url}/v1/verify",
            headers=auth() if headers is None else headers,
            timeout=30,
            **({"json": data} if isinstance(data, dict) else {"content": data}),
            **kw,
        )
        ok = {"items": [{"task": TASK, "code": ref}]}
        cases = {
            "no token": (post(ok, headers={}), 401, "missing bearer token"),
            "wrong token": (post(ok, headers=auth("x" * 40)), 401, "wrong bearer token"),
            "not a bearer": (post(ok, headers={"Authorization": TOKEN}), 401, "wrong bearer"),
            "malformed JSON": (post(b'{"items": [', None), 400, "malformed JSON"),
            "not UTF-8": (post(b'{"items": "\xff"}'), 400, "not UTF-8"),
            "unknown field": (post({**ok, "stepp": 1}), 400, "unknown field(s) ['stepp']"),
            "no items": (post({"items": []}), 400, "non-empty list"),
            "both code and completion": (
                post({"items": [{"task": TASK, "code": ref, "completion": ref}]}),
                400,
                "exactly one of",
            ),
            "bad step": (post({**ok, "step": -1}), 400, '"step"'),
            "too many items": (post({"items": ok["items"] * 5}), 413, "batch of 5 items"),
            "oversize code": (
                post({"items": [{"task": TASK, "code": "x" * 3000}]}),
                413,
                "the limit is 2000",
            ),
            "oversize body": (post(b"{" + b" " * 30_000 + b"}"), 413, "the limit is 20000"),
            "lone surrogate": (
                post(b'{"items": [{"task": "adder8", "code": "module \\ud800"}]}'),
                400,
                "not valid Unicode",
            ),
            "surrogate tag": (
                post(b'{"rl_run": "\\udfff", "items": [{"task": "adder8", "code": "x"}]}'),
                400,
                "'rl_run'",
            ),
            "nested too deep": (post(b"[" * 9000 + b"]" * 9000), 400, "nested too deep"),
            "unknown task": (
                post({"items": [{"task": TASK, "code": ref}, {"task": "nope", "code": ref}]}),
                422,
                "unknown task 'nope'",
            ),
        }

        def chunks():  # no Content-Length: refused once the stream passes the limit
            for _ in range(40):
                yield b" " * 1000

        streamed = post(chunks())
        cases["oversize streamed body"] = (streamed, 413, "over 20000 bytes")
        for name, (resp, status, words) in cases.items():
            assert resp.status_code == status, (name, resp.status_code, resp.text)
            assert words in resp.json()["error"], (name, resp.text)
            assert TOKEN not in resp.text
        assert cases["no token"][0].headers["www-authenticate"] == "Bearer"
        assert r.counts.get("verified", 0) == 0 and r.counts.get("rewards", 0) == 0
        with pytest.raises(RewardServiceError, match="401"):
            RewardClient(url, "y" * 30).verify([(TASK, ref)])
    assert lake_counts(lake) == (0, 0, 0)
    assert TOKEN not in caplog.text  # nothing the service or the client logged shows it


def test_backpressure_is_429_with_retry_after_never_a_queue(tmp_path, tasks):
    """A candidate whose simulation spins until its CPU budget (~2 s) holds its slot."""
    ref = tasks.get(TASK).reference
    with (
        Rewarder(tasks, lake=tmp_path / "lake") as r,
        serving(r, client_concurrency=1, max_inflight_items=2) as url,
    ):
        slow: dict = {}
        t = threading.Thread(
            target=lambda: slow.update(
                resp=httpx.post(
                    f"{url}/v1/verify",
                    json={"items": [{"task": TASK, "code": HANG}]},
                    headers={**auth(), "X-Crucible-Client": "a"},
                    timeout=60,
                )
            )
        )
        t.start()
        deadline = time.monotonic() + 20
        while r.counts.get("verified", 0) == 0 and not r._inflight:  # the slow one is in
            assert time.monotonic() < deadline
            time.sleep(0.02)
        same = httpx.post(
            f"{url}/v1/verify",
            json={"items": [{"task": TASK, "code": ref}]},
            headers={**auth(), "X-Crucible-Client": "a"},
            timeout=30,
        )
        assert same.status_code == 429 and int(same.headers["retry-after"]) >= 1
        assert "client 'a' has 1 requests in flight" in same.json()["error"]
        full = httpx.post(
            f"{url}/v1/verify",
            json={"items": [{"task": TASK, "code": ref}] * 2},
            headers={**auth(), "X-Crucible-Client": "b"},
            timeout=30,
        )
        assert full.status_code == 429 and "takes at most 2" in full.json()["error"]
        # the client waits a 429 out and gets its answer
        with RewardClient(url, TOKEN, client="a") as c:
            got = c.verify([(TASK, ref)])
            assert got[0].status == "pass"
        t.join(60)
        assert slow["resp"].status_code == 200
        assert slow["resp"].json()["results"][0]["status"] in ("timeout", "resource_limit")


def test_past_the_deadline_is_504_and_the_work_is_kept(tmp_path, tasks):
    lake = tmp_path / "lake"
    with Rewarder(tasks, lake=lake) as r, serving(r, request_timeout_s=0.3) as url:
        body = {"items": [{"task": TASK, "code": HANG}], "rl_run": "d"}
        late = httpx.post(f"{url}/v1/verify", json=body, headers=auth(), timeout=30)
        assert late.status_code == 504 and late.headers["retry-after"]
        assert "ask again" in late.json()["error"]
        deadline = time.monotonic() + 30
        while r.counts.get("verified", 0) < 1:
            assert time.monotonic() < deadline, "the verification did not go on"
            time.sleep(0.1)
        again = httpx.post(f"{url}/v1/verify", json=body, headers=auth(), timeout=30)
        assert again.status_code == 200 and again.json()["results"][0]["cached"] is True
        assert r.counts["verified"] == 1


@pytest.mark.skipif(sys.platform != "linux", reason="signals and file modes as on Linux")
def test_the_command_writes_a_private_token_and_records_its_run(tmp_path, tasks):
    """`crucible reward-server` as a user starts it: ~8 s to import and start."""
    lake, token_file = tmp_path / "lake", tmp_path / "cfg" / "token"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "CRUCIBLE_REWARD_TOKEN"}
    exe = Path(sys.executable).with_name("crucible")
    proc = subprocess.Popen(
        [
            str(exe),
            "reward-server",
            "--lake",
            str(lake),
            "--port",
            str(port),
            "--domain",
            "rtl",
            "--token-file",
            str(token_file),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < deadline, "the service did not start"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()
        ref = tasks.get(TASK).reference
        with RewardClient(f"http://127.0.0.1:{port}", token) as c:
            assert c.verify([(TASK, ref)], rl_run="cli", step=1)[0].reward == 1.0
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert token not in out and "stopped; counts:" in out
    (flow, status) = q(lake, "SELECT flow, status FROM runs")[0]
    assert (flow, status) == ("rewards", "completed")
    assert q(lake, "SELECT rl_run, reward FROM rewards") == [("cli", 1.0)]
