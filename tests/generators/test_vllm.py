"""The vllm generator: clear errors where vllm or a GPU is missing (the real situation
here), and the shared candidate building driven through a stand-in engine (a GPU engine
cannot run here)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import ray

from generators.base import RepairRequest
from generators.openai import GeneratorError
from generators.settings import LLMSettings
from generators.vllm import INSTALL_HINT, VllmEngine, VllmGenerator
from ray_actors.generate import require_gpu, start_engine
from tests.generators.standin_openai import fenced
from verifiers.catalog import load_catalog
from verifiers.contract import Candidate
from verifiers.registry import get_verifier

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = LLMSettings(model="standin/coder-7b", n=3)
no_vllm = pytest.mark.skipif(
    importlib.util.find_spec("vllm") is not None, reason="vllm is installed here"
)


@pytest.fixture(scope="module")
def tasks():
    tasks, errors = load_catalog(ROOT / "tasks", ("rtl",), None)
    assert not errors
    return tasks


class StandinEngine:
    """Stands in for `VllmEngine` (which needs a GPU): answers each conversation with the
    task's reference, at most `max_outputs` samples per conversation."""

    def __init__(self, references: dict[str, str], max_outputs: int | None = None) -> None:
        self.references = references
        self.max_outputs = max_outputs
        self.calls: list[tuple[list, list]] = []

    def generate_batch(self, conversations, params):
        self.calls.append((conversations, params))
        out = []
        for conv, p in zip(conversations, params, strict=True):
            user = conv[1]["content"]
            top = next(name for name in self.references if f"Top module `{name}`" in user)
            k = min(p["n"], self.max_outputs or p["n"])
            texts = [fenced(f"// seed {p['seed']} #{i}\n{self.references[top]}") for i in range(k)]
            out.append(
                {
                    "choices": [{"text": t, "finish_reason": "stop"} for t in texts],
                    "prompt_tokens": 100,
                    "completion_tokens": 40 * k,
                }
            )
        return out


@no_vllm
def test_constructing_without_vllm_gives_the_install_hint():
    with pytest.raises(GeneratorError) as err:
        VllmGenerator(SETTINGS)
    assert str(err.value) == INSTALL_HINT
    assert "pip install vllm" in INSTALL_HINT and "vllm serve" in INSTALL_HINT
    with pytest.raises(GeneratorError, match="pip install vllm"):
        VllmEngine(SETTINGS)  # the real import fails the same way, with its reason


def test_no_gpu_is_refused():
    with pytest.raises(GeneratorError, match="no Ray node has a GPU"):
        require_gpu({"CPU": 2.0, "eda": 2.0})
    assert require_gpu({"CPU": 8.0, "GPU": 2.0}) == 2


def test_no_gpu_is_refused_before_any_actor_exists(monkeypatch):
    def no_actor(*args, **kwargs):
        raise AssertionError("an actor was made although no node has a GPU")

    monkeypatch.setattr(ray, "remote", no_actor)
    with pytest.raises(GeneratorError, match="use the openai generator"):
        start_engine(SETTINGS, resources={"CPU": 2.0})


def test_batches_go_to_the_engine_whole_and_candidates_are_shared_logic(tasks):
    picked = tasks[:5]
    engine = StandinEngine({t.interface["top"]: t.reference for t in picked}, max_outputs=2)
    gen = VllmGenerator(SETTINGS, engine=engine)
    results = list(gen.generate_many(picked, seed=11))
    assert [t.task_id for t, _ in results] == [t.task_id for t in picked]
    # one engine call for all five conversations, then one to top up the missing sample
    assert [len(convs) for convs, _ in engine.calls] == [5, 5]
    first, second = (params for _, params in engine.calls)
    assert {(p["n"], p["seed"]) for p in first} == {(3, 11)}
    assert {p["n"] for p in second} == {1} and second[0]["seed"] != 11
    assert set(first[0]) == {"n", "temperature", "top_p", "max_tokens", "seed"}
    for t, cands in results:
        assert len(cands) == 3
        for c in cands:
            assert (c.origin, c.generator, c.task_id) == ("llm", "vllm:standin/coder-7b", t.task_id)
            assert c.code.startswith("// seed") and "```" not in c.code
            p = json.loads(c.prompt)
            assert p["usage"]["prompt_tokens"] == 100
            assert p["params"]["seed"] in (11, second[0]["seed"])
    assert gen.stats["requests"] == 10 and gen.stats["candidates"] == 15
    assert gen.stats["prompt_tokens"] == 1000
    t0, (c0, *_) = results[0]
    assert get_verifier("rtl").verify(t0, c0.code).passed


def test_repair_through_the_engine(tasks):
    task = tasks[0]
    engine = StandinEngine({task.interface["top"]: task.reference})
    failed = Candidate(task.task_id, "module nothing();\nendmodule\n", "llm", "vllm:x")
    verdict = get_verifier("rtl").verify(task, failed.code)
    gen = VllmGenerator(SETTINGS, engine=engine)
    (child,) = gen.repair(RepairRequest(task, failed, verdict), seed=2)
    ((convs, params),) = engine.calls
    assert params[0]["n"] == 1 and convs[0][-1]["role"] == "user"
    assert verdict.status.value in convs[0][-1]["content"]
    assert (child.origin, child.parent_id, child.attempt) == ("repair", failed.candidate_id, 1)
