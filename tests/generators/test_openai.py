"""The OpenAI-compatible generator against a stand-in server over real HTTP (no model
server can run here), with real catalog tasks and the real RTL verifier."""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

import pytest

from generators.base import RepairRequest
from generators.openai import GeneratorError, OpenAIGenerator, retry_after_s
from generators.prompts import instruction_messages
from generators.settings import LLMSettings
from tests.generators.standin_openai import Reply, StandinOpenAI, fenced
from verifiers.catalog import load_catalog
from verifiers.contract import Candidate, Status
from verifiers.registry import get_verifier

ROOT = Path(__file__).resolve().parents[2]
MODEL = "standin/coder-7b"


@pytest.fixture(scope="module")
def tasks():
    tasks, errors = load_catalog(ROOT / "tasks", ("rtl",), None)
    assert not errors
    return {t.name: t for t in tasks}


@pytest.fixture
def task(tasks):
    return tasks["adder8"]


@pytest.fixture
def server():
    with StandinOpenAI() as s:
        yield s


def settings_for(server: StandinOpenAI, **kw) -> LLMSettings:
    base = {"model": MODEL, "base_url": server.base_url, "backoff_s": 0.01, "timeout_s": 10.0}
    return LLMSettings(**{**base, **kw})


def reference_answer(task):
    """Each sample is the reference, marked by seed and index so the samples differ."""

    def answer(request, i):
        return fenced(f"// sample seed={request['seed']} i={i}\n{task.reference}")

    return answer


def prompt(cand: Candidate) -> dict:
    return json.loads(cand.prompt)


def test_generate_returns_n_llm_candidates_with_the_request_recorded(server, task):
    server.answer = reference_answer(task)
    st = settings_for(server, n=3, api_key="sk-standin", temperature=0.5, top_p=0.9)
    with OpenAIGenerator(st) as gen:
        cands = gen.generate(task, seed=7)
    assert len(cands) == 3
    assert {c.origin for c in cands} == {"llm"}
    assert {c.generator for c in cands} == {f"openai:{MODEL}"}
    assert all(c.task_id == task.task_id for c in cands)
    assert all(c.code.startswith("// sample seed=7") and "endmodule" in c.code for c in cands)
    assert "```" not in cands[0].code
    # what went over the wire
    (body,) = server.requests
    assert body["model"] == MODEL and body["n"] == 3 and body["seed"] == 7
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.5, 0.9, 2048)
    assert body["messages"] == instruction_messages(task)
    user = body["messages"][-1]["content"]
    for section in ("## Requirement", "## Interface", "## Platform", "## Output format"):
        assert section in user
    assert server.authorizations == ["Bearer sk-standin"]
    # what the candidate keeps of it
    p = prompt(cands[0])
    assert p["messages"] == body["messages"] and p["model"] == MODEL
    assert p["params"] == {"temperature": 0.5, "top_p": 0.9, "max_tokens": 2048, "seed": 7}
    assert p["usage"]["choices"] == 3
    assert p["usage"]["prompt_tokens"] > 0 and p["usage"]["completion_tokens"] > 0
    assert p["finish_reason"] == "stop"
    assert gen.stats["requests"] == 1 and gen.stats["candidates"] == 3
    assert gen.stats["prompt_tokens"] == p["usage"]["prompt_tokens"]
    assert gen.stats["format_errors"] == 0 and gen.stats["retries"] == 0


def test_reference_answer_verifies_as_pass(server, task):
    server.answer = reference_answer(task)
    with OpenAIGenerator(settings_for(server, n=1)) as gen:
        (cand,) = gen.generate(task)
    assert get_verifier("rtl").verify(task, cand.code).status is Status.PASS


def test_prose_answer_is_a_format_error_candidate(server, task):
    with OpenAIGenerator(settings_for(server, n=2)) as gen:
        cands = gen.generate(task)
    # both samples said the same prose: one candidate, the duplicate counted
    assert len(cands) == 1 and gen.stats["duplicates"] == 1
    assert gen.stats["format_errors"] == 2
    assert "carry" in cands[0].code
    assert prompt(cands[0])["extraction"].startswith("no fenced block")
    verdict = get_verifier("rtl").verify(task, cands[0].code)
    assert verdict.status is Status.FORMAT_ERROR


def test_empty_answer_becomes_a_placeholder_comment(server, task):
    server.answer = lambda req, i: ""
    with OpenAIGenerator(settings_for(server, n=1)) as gen:
        (cand,) = gen.generate(task)
    assert cand.code.startswith("// no code in answer: the answer is empty")


def test_fewer_choices_than_asked_are_topped_up_with_fresh_seeds(server, task):
    server.answer = reference_answer(task)
    server.max_choices = 2
    with OpenAIGenerator(settings_for(server, n=5)) as gen:
        cands = gen.generate(task, seed=3)
    assert len(cands) == 5
    assert [r["n"] for r in server.requests] == [5, 3, 1]
    seeds = [r["seed"] for r in server.requests]
    assert seeds[0] == 3 and len(set(seeds)) == 3
    assert gen.stats["requests"] == 3 and gen.stats["short_responses"] == 2


def test_retries_429_honouring_retry_after_then_5xx_then_succeeds(server, task):
    server.answer = reference_answer(task)
    server.replies.extend(
        [Reply(429, headers={"Retry-After": "0.3"}), Reply(500), Reply(503, body="busy")]
    )
    start = time.monotonic()
    with OpenAIGenerator(settings_for(server, n=1)) as gen:
        (cand,) = gen.generate(task)
    assert time.monotonic() - start >= 0.3
    assert "endmodule" in cand.code
    assert len(server.requests) == 4
    assert gen.stats["retries"] == 3 and gen.stats["http_errors"] == 3
    assert gen.stats["requests"] == 1


def test_gives_up_after_the_last_retry_naming_the_endpoint(server, task):
    server.replies.extend(Reply(500) for _ in range(10))
    with (
        OpenAIGenerator(settings_for(server, retries=2)) as gen,
        pytest.raises(GeneratorError) as err,
    ):
        gen.generate(task)
    assert len(server.requests) == 3
    msg = str(err.value)
    assert f"{server.base_url}/chat/completions" in msg
    assert "HTTP 500" in msg and "vllm serve" in msg


def test_client_error_is_not_retried(server, task):
    server.replies.append(Reply(400, body='{"error": {"message": "max_tokens too large"}}'))
    with OpenAIGenerator(settings_for(server)) as gen, pytest.raises(GeneratorError) as err:
        gen.generate(task)
    assert len(server.requests) == 1 and gen.stats["retries"] == 0
    assert "HTTP 400" in str(err.value) and "max_tokens too large" in str(err.value)


def test_unauthorized_says_to_check_the_key(server, task):
    server.replies.append(Reply(401))
    st = settings_for(server, api_key_env="STANDIN_KEY")
    with OpenAIGenerator(st) as gen, pytest.raises(GeneratorError, match=r"\$STANDIN_KEY"):
        gen.generate(task)


def test_nothing_listening_is_a_clear_error(task):
    with StandinOpenAI() as s:
        url = s.base_url  # a port that was just free again
    st = LLMSettings(model=MODEL, base_url=url, retries=1, backoff_s=0.01)
    with OpenAIGenerator(st) as gen, pytest.raises(GeneratorError, match="is `vllm serve`"):
        gen.generate(task)
    assert gen.stats["transport_errors"] == 2 and gen.stats["retries"] == 1


def test_timeouts_are_retried(server, task):
    server.delay_s = 0.4
    st = settings_for(server, timeout_s=0.1, retries=1)
    with OpenAIGenerator(st) as gen, pytest.raises(GeneratorError, match="Timeout"):
        gen.generate(task)
    assert gen.stats["transport_errors"] == 2


def test_generate_many_keeps_input_order_within_the_concurrency_limit(server, tasks):
    picked = list(tasks.values())[:9]

    def answer(request, i):
        time.sleep(random.uniform(0.02, 0.15))  # finish out of order
        top = re.search(r"Top module `(\w+)`", request["messages"][-1]["content"]).group(1)
        return fenced(f"module {top}();\nendmodule")

    server.answer = answer
    with OpenAIGenerator(settings_for(server, n=1, concurrency=3)) as gen:
        results = list(gen.generate_many(picked, seed=1))
    assert [t.name for t, _ in results] == [t.name for t in picked]
    for t, (cand,) in results:
        assert cand.task_id == t.task_id
        assert f"module {t.interface['top']}()" in cand.code
    assert server.max_in_flight <= 3
    assert server.max_in_flight >= 2  # it did overlap
    assert gen.stats["requests"] == 9


def test_repair_sends_the_failed_code_and_feedback(server, task):
    failed_code = task.reference.replace(" + {8'd0, cin}", "")
    verdict = get_verifier("rtl").verify(task, failed_code)
    assert verdict.status is Status.WRONG_ANSWER and verdict.feedback
    failed = Candidate(task.task_id, failed_code, "llm", f"openai:{MODEL}", attempt=0)
    request = RepairRequest(task, failed, verdict)
    server.answer = lambda req, i: fenced(task.reference, prose="Fixed: the carry-in was dropped.")
    with OpenAIGenerator(settings_for(server, n=4)) as gen:
        (child,) = gen.repair(request, seed=5)
    (body,) = server.requests
    assert body["n"] == 1 and body["seed"] == 5
    *_, attempt, last = body["messages"]
    assert attempt["role"] == "assistant" and failed_code.strip() in attempt["content"]
    assert last["role"] == "user"
    assert "wrong_answer" in last["content"]
    assert verdict.feedback.strip()[:200] in last["content"]
    assert child.origin == "repair" and child.generator == f"openai:{MODEL}"
    assert child.parent_id == failed.candidate_id and child.attempt == 1
    assert child.code.strip() == task.reference.strip()
    assert json.loads(child.prompt)["messages"] == body["messages"]
    assert get_verifier("rtl").verify(task, child.code).passed


def test_repair_many_keeps_input_order(server, tasks):
    picked = list(tasks.values())[:4]
    requests = []
    for t in picked:
        failed = Candidate(t.task_id, "module broken();", "llm", "x")
        verdict = get_verifier("rtl").verify(t, failed.code)
        requests.append(RepairRequest(t, failed, verdict))

    def answer(request, i):
        time.sleep(random.uniform(0.0, 0.1))
        top = re.search(r"Top module `(\w+)`", request["messages"][1]["content"]).group(1)
        return fenced(f"module {top}();\nendmodule")

    server.answer = answer
    with OpenAIGenerator(settings_for(server, concurrency=4)) as gen:
        out = list(gen.repair_many(requests))
    assert [r.task.name for r, _ in out] == [t.name for t in picked]
    for r, (child,) in out:
        assert child.parent_id == r.failed.candidate_id
        assert f"module {r.task.interface['top']}()" in child.code


def test_settings_round_trip_and_keep_the_key_out():
    st = LLMSettings(model="m", api_key="secret", n=2, engine_args={"max_model_len": 4096})
    d = st.to_dict()
    assert "api_key" not in d and "secret" not in repr(st)
    assert LLMSettings.from_dict(d) == LLMSettings(
        model="m", n=2, engine_args={"max_model_len": 4096}
    )
    with pytest.raises(ValueError, match="unknown LLM setting"):
        LLMSettings.from_dict({"model": "m", "temprature": 0.1})
    env = {"MY_KEY": "k1"}
    assert LLMSettings(model="m", api_key_env="MY_KEY").with_api_key_from(env).api_key == "k1"
    assert LLMSettings(model="m").with_api_key_from(env).api_key is None
    with pytest.raises(ValueError):
        LLMSettings(model="m", concurrency=0)


def test_a_model_name_is_required():
    with pytest.raises(GeneratorError, match="model name"):
        OpenAIGenerator(LLMSettings())


def test_retry_after_values():
    assert retry_after_s(None) == 0.0
    assert retry_after_s("2") == 2.0
    assert retry_after_s("soon") == 0.0
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert retry_after_s("99999") == 300.0
