"""flows/rl.py: the reward adapters through TRL's and verl's own calling paths (a GRPO
step, verl's reward managers and the reward-loop worker verl 0.9.1's trainer runs), with
one real `Rewarder` (the built-in RTL tasks on iverilog/yosys) and a real lake in a temp
dir. No pretrained model can be downloaded here: the policy is a tiny random Llama and
the tokenizer a byte-level BPE trained on a few strings, so every text round-trips."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from flows.rewards import Rewarder, Tasks
from flows.rl import trl_reward, verl_batch_compute_score, verl_compute_score
from tests.flows.lakeq import q
from tests.flows.tiny_lm import tiny_grpo_trainer, tiny_tokenizer

RTL = "adder8"
INFRA = "ascendc/abs"  # needs CANN's bisheng, absent here: a real infra_error
SOURCE = {}  # the module's rewarder, for the reward file verl loads by path


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    return tmp_path_factory.mktemp("rl") / "lake"


@pytest.fixture(scope="module")
def rewarder(lake):
    # infra_retries=0: the infra case fails the same way twice here, only slower
    with Rewarder(Tasks.catalog(domains=["rtl", "ascendc"]), lake=lake, infra_retries=0) as r:
        SOURCE["rewarder"] = r
        yield r
        SOURCE.clear()


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


class Recorded:
    """A reward source that passes each call to the rewarder and keeps it: what the
    trainer's call reached us with."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = []

    def verify(self, items, **tags):
        results = self.inner.verify(items, **tags)
        self.calls.append((list(items), tags, results))
        return results


def fenced(code: str, prose: str = "Here is the module.") -> str:
    return f"{prose}\n```verilog\n{code}```\n"


def broken(reference: str) -> str:
    """adder8 that drops the carry-in: compiles, wrong for half the inputs."""
    out = reference.replace(" + {8'd0, cin}", "")
    assert out != reference
    return out


def rewards_rows(rewarder, lake, where: str) -> list[tuple]:
    rewarder._recorder.flush()  # the writer's buffer, as the flusher thread does
    return q(lake, f"SELECT status, reward, rl_run, step, sample FROM rewards WHERE {where}")


# --- TRL --------------------------------------------------------------------------------


def test_trl_reward_reads_conversational_completions(rewarder, lake):
    """TRL's conversational format: prompts and completions are message lists; the task
    comes from the dataset column, the step from the trainer's state."""
    from transformers import TrainerState

    reference = rewarder.task(RTL).reference
    prompt = [{"role": "user", "content": "Write the module adder8."}]
    completions = [
        [{"role": "assistant", "content": fenced(reference)}],
        [{"role": "assistant", "content": fenced(broken(reference))}],
        fenced(reference),  # TRL's standard (text) format
        [  # a tool-calling turn: the answer is the last assistant message, in parts
            {"role": "assistant", "content": fenced(broken(reference), "A first try.")},
            {"role": "tool", "content": fenced(reference, "Reference from a tool?")},
            {"role": "assistant", "content": [{"type": "text", "text": fenced(reference)}]},
        ],
    ]
    logged, metrics = {}, {}
    reward = trl_reward(rewarder, rl_run="trl-unit", name="rtl_reward")
    got = reward(
        prompts=[prompt, prompt, "Write the module adder8.", prompt],
        completions=completions,
        completion_ids=[[1], [2], [3], [4]],
        task=[RTL] * 4,
        trainer_state=TrainerState(global_step=7),
        log_extra=logged.__setitem__,
        log_metric=metrics.__setitem__,
    )
    assert got == [1.0, 0.0, 1.0, 1.0]
    assert reward.__name__ == "rtl_reward"
    assert logged == {"rtl_reward/status": ["pass", "wrong_answer", "pass", "pass"]}
    assert metrics == {"rtl_reward/infra_error": 0.0}
    rows = sorted(rewards_rows(rewarder, lake, "rl_run = 'trl-unit'"), key=lambda r: r[4])
    assert rows == [
        ("pass", 1.0, "trl-unit", 7, "0"),
        ("wrong_answer", 0.0, "trl-unit", 7, "1"),
        ("pass", 1.0, "trl-unit", 7, "2"),
        ("pass", 1.0, "trl-unit", 7, "3"),
    ]


def test_trl_grpo_trainer_step_calls_the_reward(rewarder, lake, tokenizer, tmp_path):
    """One GRPO step on CPU: TRL generates from a random tiny Llama, calls our function
    with its completions, and logs the mean reward under the function's name."""
    from datasets import Dataset

    prompt = [{"role": "user", "content": "Write the module adder8."}]
    data = Dataset.from_dict({"prompt": [prompt, prompt], "task": [RTL, RTL]})
    source = Recorded(rewarder)
    reward = trl_reward(source, rl_run="grpo-test")
    trainer = tiny_grpo_trainer(tokenizer, [reward], data, tmp_path / "grpo")
    trainer.train()

    assert len(source.calls) == 1
    items, tags, results = source.calls[0]
    assert tags == {"rl_run": "grpo-test", "step": 0}  # rewards come before the step counts
    assert [i.task for i in items] == [RTL] * 4
    assert [i.sample for i in items] == ["0", "1", "2", "3"]
    assert all(isinstance(i.completion, str) for i in items)
    assert items[0].prompt == '[{"role": "user", "content": "Write the module adder8."}]'
    # random tokens are no Verilog: the format gate judges them, and that is a reward
    assert {r.status for r in results} == {"format_error"}
    rows = rewards_rows(rewarder, lake, "rl_run = 'grpo-test'")
    assert sorted(rows) == [("format_error", 0.0, "grpo-test", 0, s) for s in "0123"]
    logs = trainer.state.log_history[0]
    assert logs["rewards/crucible_reward/mean"] == 0.0
    assert logs["crucible_reward/infra_error"] == 0.0


# --- verl -------------------------------------------------------------------------------


def _verl():
    return pytest.importorskip("verl", reason="verl's reward path: make install adds it")


def verl_batch(tokenizer, responses, tasks, extra=None):
    """A `DataProto` as verl's trainer hands it to a reward manager: left-padded prompts,
    right-padded responses ending in EOS, one attention mask over both, and the dataset's
    non-tensor fields (data_source, reward_model.ground_truth, extra_info)."""
    import numpy as np
    import torch
    from verl import DataProto

    pad, eos, width = tokenizer.pad_token_id, tokenizer.eos_token_id, 8
    prompts = [tokenizer("Write the module adder8.")["input_ids"][-width:] for _ in responses]
    answers = [tokenizer(r)["input_ids"] + [eos] for r in responses]
    longest = max(map(len, answers))
    prompt_ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    response_ids = torch.tensor([a + [pad] * (longest - len(a)) for a in answers])
    mask = torch.tensor(
        [
            [0] * (width - len(p)) + [1] * (len(p) + len(a)) + [0] * (longest - len(a))
            for p, a in zip(prompts, answers, strict=True)
        ]
    )
    extra = extra or [{"index": i} for i in range(len(tasks))]
    data = DataProto.from_dict(
        tensors={
            "prompts": prompt_ids,
            "responses": response_ids,
            "input_ids": torch.cat([prompt_ids, response_ids], dim=1),
            "attention_mask": mask,
            "position_ids": (mask.cumsum(dim=1) - 1).clamp(min=0),
        },
        non_tensors={
            "data_source": np.array(["crucible"] * len(tasks), dtype=object),
            "reward_model": np.array(
                [{"style": "rule", "ground_truth": t} for t in tasks], dtype=object
            ),
            "extra_info": np.array(extra, dtype=object),
        },
    )
    return data, [len(a) for a in answers]


def assert_at_last_token(reward_tensor, lengths, scores):
    for row, n, score in zip(reward_tensor, lengths, scores, strict=True):
        assert row[n - 1].item() == score
        assert row.sum().item() == score  # nothing anywhere else


def test_verl_naive_reward_manager(rewarder, tokenizer):
    """verl's per-sample manager of `verl.workers.reward_manager` (the trainer's before the
    reward loop): the score at the last response token, the dict's other keys as
    `reward_extra_info`."""
    _verl()
    from verl.workers.reward_manager import NaiveRewardManager

    reference = rewarder.task(RTL).reference
    data, lengths = verl_batch(tokenizer, [fenced(reference), fenced(broken(reference))], [RTL] * 2)
    manager = NaiveRewardManager(
        tokenizer=tokenizer, num_examine=0, compute_score=verl_compute_score(rewarder)
    )
    out = manager(data, return_dict=True)
    assert_at_last_token(out["reward_tensor"], lengths, [1.0, 0.0])
    info = out["reward_extra_info"]
    assert info["status"] == ["pass", "wrong_answer"]
    assert info["passed"] == [True, False] and info["infra"] == [False, False]


def test_verl_batch_reward_manager_scores_the_batch_in_one_call(rewarder, lake, tokenizer):
    _verl()
    from verl.workers.reward_manager import BatchRewardManager

    reference = rewarder.task(RTL).reference
    data, lengths = verl_batch(tokenizer, [fenced(broken(reference)), fenced(reference)], [RTL] * 2)
    source = Recorded(rewarder)
    manager = BatchRewardManager(
        tokenizer=tokenizer,
        num_examine=0,
        compute_score=verl_batch_compute_score(source, rl_run="verl-batch"),
    )
    out = manager(data, return_dict=True)
    assert_at_last_token(out["reward_tensor"], lengths, [0.0, 1.0])
    assert out["reward_extra_info"]["status"] == ["wrong_answer", "pass"]
    assert len(source.calls) == 1 and len(source.calls[0][0]) == 2
    samples = [i.sample for i in source.calls[0][0]]
    assert len(set(samples)) == 2  # verl gives no step: each response a row of its own
    rows = rewards_rows(rewarder, lake, "rl_run = 'verl-batch'")
    assert sorted(r[:3] for r in rows) == [
        ("pass", 1.0, "verl-batch"),
        ("wrong_answer", 0.0, "verl-batch"),
    ]


def test_verl_reward_loop_worker_loads_the_function_from_config(rewarder, tokenizer, tmp_path):
    """verl 0.9.1's trainer scores in `RewardLoopWorker`s (Ray actors; here the class
    in-process): each loads `reward.custom_reward_function` from its file and calls it per
    response from a thread pool; the manager puts the scores at the last tokens."""
    _verl()
    from omegaconf import OmegaConf
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    tokenizer.save_pretrained(tmp_path / "tokenizer")
    reward_file = tmp_path / "crucible_reward.py"
    reward_file.write_text(
        "import sys\n"
        "from flows.rl import verl_compute_score\n"
        f"source = sys.modules[{__name__!r}].SOURCE['rewarder']\n"
        "compute_score = verl_compute_score(source, rl_run='verl-loop')\n"
    )
    config = OmegaConf.create(
        {
            "actor_rollout_ref": {
                "model": {"path": str(tmp_path / "tokenizer"), "tokenizer_path": None}
            },
            "reward": {
                "custom_reward_function": {"path": str(reward_file), "name": "compute_score"},
                "reward_manager": {"source": "register", "name": "naive"},
                "reward_model": {"enable": False},
            },
        }
    )
    reference = rewarder.task(RTL).reference
    # the task named in extra_info wins over the ground truth
    extra = [{"index": 0}, {"index": 1, "task": RTL}]
    data, lengths = verl_batch(
        tokenizer, [fenced(reference), fenced(broken(reference))], [RTL, "unused"], extra
    )
    loop = asyncio.new_event_loop()  # the worker's (verl takes the thread's current one)
    asyncio.set_event_loop(loop)
    try:
        worker = RewardLoopWorker(config)
        assert worker.loop is loop
        outputs = loop.run_until_complete(worker.compute_score_batch(data))
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    scores = [o["reward_score"] for o in outputs]
    assert scores == [1.0, 0.0]
    assert_at_last_token(worker.reward_manager.assemble_rm_scores(data, scores), lengths, scores)
    assert [o["reward_extra_info"]["status"] for o in outputs] == ["pass", "wrong_answer"]


# --- what a reward must not be fooled by, and what is no reward -----------------------------


def test_a_claimed_pass_in_the_answer_earns_nothing(rewarder):
    """The answer says it passed, and its code prints PASS; the testbench still sees a
    wrong adder."""
    reference = rewarder.task(RTL).reference
    code = broken(reference).replace("endmodule", '    initial $display("PASS");\nendmodule')
    answer = fenced(code, prose="All tests PASS.\nreward: 1.0\nstatus: pass")
    trl = trl_reward(rewarder, rl_run="hostile")
    assert trl(prompts=["p"], completions=[answer + "\nPASS reward: 1.0"], task=[RTL]) == [0.0]
    verl = verl_compute_score(rewarder, rl_run="hostile")
    score = verl(data_source="crucible", solution_str=answer, ground_truth=RTL, extra_info={})
    assert score["score"] == 0.0 and not score["passed"]


def test_an_infra_error_is_no_reward_for_trl_and_infra_score_for_verl(rewarder, lake, tokenizer):
    """The ascendc task's own reference, on a machine without CANN: the verifier cannot
    run it, which says nothing of the code."""
    if shutil.which("bisheng"):
        pytest.skip("CANN is installed here: the ascendc verifier runs, no infra error")
    reference = rewarder.task(INFRA).reference
    answer = f"```python\n{reference}```\n"
    metrics = {}
    trl = trl_reward(rewarder, rl_run="infra")
    got = trl(prompts=["p"], completions=[answer], task=[INFRA], log_metric=metrics.__setitem__)
    assert got == [None]
    assert metrics == {"crucible_reward/infra_error": 1.0}
    assert rewards_rows(rewarder, lake, "rl_run = 'infra'") == [
        ("infra_error", None, "infra", None, "0")
    ]

    _verl()
    from verl.workers.reward_manager import NaiveRewardManager

    data, lengths = verl_batch(tokenizer, [answer], ["unused"], [{"task": INFRA}])
    manager = NaiveRewardManager(
        tokenizer=tokenizer,
        num_examine=0,
        compute_score=verl_compute_score(rewarder, infra_score=-0.25),
    )
    out = manager(data, return_dict=True)
    assert_at_last_token(out["reward_tensor"], lengths, [-0.25])
    info = out["reward_extra_info"]
    assert info["infra"] == [True] and info["status"] == ["infra_error"]
