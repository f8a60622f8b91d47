"""Crucible's rewards as the reward function of an RL trainer: TRL's `GRPOTrainer` and
verl's reward managers, calling the trainer's own reward-function signature.

Every adapter takes a *source*: anything with `verify(items, *, rl_run, step, client,
generator, timeout_s) -> [result]` (`RewardSource`), i.e. an in-process
`flows.rewards.Rewarder` or the reward service's client (`flows.reward_client.
RewardClient`), so a trainer switches between them without other change. A trainer that
runs its reward function in several processes (TRL on several GPUs, verl's reward workers)
builds one source per process: a `Rewarder` with a lake holds that lake's run lock, so
there the processes share one reward service through `RewardClient` instead (or give each
`Rewarder` no lake, and keep nothing).

**TRL** (`GRPOTrainer`, and the trainers that share its `reward_funcs`): the dataset has a
column naming each row's task (`task`; `task_column=` for another), and TRL passes every
column to the reward function:

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from flows.rewards import Rewarder
    from flows.rl import trl_reward

    data = Dataset.from_dict({"prompt": prompts, "task": ["adder8", "counter4", ...]})
    with Rewarder(lake="./crucible-lake") as rewarder:
        GRPOTrainer(model=..., reward_funcs=[trl_reward(rewarder, rl_run="grpo-7")],
                    args=GRPOConfig(...), train_dataset=data).train()

The completions (text, or conversational messages: the last assistant message's content)
are judged as model answers (the code extracted with the domain's rules), tagged with
`rl_run`, the trainer's `global_step` and the index within the call (`sample`). TRL logs the
mean under `rewards/<name>/mean`, each completion's status in the completions table
(`<name>/status`) and the share of infra errors as `<name>/infra_error`.

**verl** (0.9.1): a file (or module: `pkg://my.module`) that builds the function, named in
the config; each reward worker (a Ray actor, `reward.num_workers` of them) loads it and
calls it once per response, from a thread pool:

    # crucible_reward.py
    from flows.reward_client import RewardClient
    from flows.rl import verl_compute_score
    compute_score = verl_compute_score(RewardClient(...), rl_run="ppo-3")

    python -m verl.trainer.main_ppo ... \\
        reward.custom_reward_function.path=crucible_reward.py \\
        reward.custom_reward_function.name=compute_score

(An in-process `Rewarder` there needs `reward.num_workers=1` with a lake, and
`atexit.register(rewarder.close)`: what it has not flushed is lost with the worker.)
A row names its task in `extra_info["task"]`, or else as its ground truth
(`reward_model: {"ground_truth": "adder8"}`). The score dict's other keys (status, passed,
cached, infra) become verl's `reward_extra_info`: kept with each rollout (and dumped with
`trainer.rollout_data_dir`), and averaged in validation metrics (pass rate, infra rate).
verl passes no training step to a reward function, so each response gets a sample tag of
its own instead (`sample`), and every response is a reward row. `verl_batch_compute_score`
has the signature of `verl.workers.reward_manager.BatchRewardManager` (one `verify` call
for the whole batch), which verl 0.9.1 still ships but its trainer's reward loop no longer
chooses (its managers: naive, dapo, gdpo, limited, remote, all scoring one response at a
time); earlier trainers chose it with `reward_model.reward_manager=batch`.

**Infra errors** (a verifier that could not run: tool missing, sandbox failure) are no
judgement of the candidate: the source retries them, and one still unjudged has no reward.
TRL takes that as None: `GRPOTrainer._calculate_rewards` (TRL 1.16) turns it into NaN and
the logged means skip it; a completion that every reward function left NaN is left out of
its group's mean and std and gets advantage 0 (TRL logs a warning), while beside other
reward functions the missing one counts as 0 in the weighted sum (`sum_then_normalize`) or
as its group's mean (`normalize_then_sum`). verl has no missing reward: there it scores
`infra_score` (default 0.0) and says `infra: True`; with group baselines (GRPO) a constant
still moves the group's mean, so watch the infra rate. Any other failure (an unknown task,
an unreachable service, a timeout) raises: it would be wrong for every sample alike.
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from flows.rewards import Item

TRL_STATUS_COLUMN = "{name}/status"
TRL_INFRA_METRIC = "{name}/infra_error"


class Judged(Protocol):
    """What an adapter reads of a source's result (`flows.rewards.Result` has it)."""

    reward: float | None
    status: str
    passed: bool
    cached: bool


class RewardSource(Protocol):
    """An in-process `Rewarder` or a remote `RewardClient`."""

    def verify(
        self,
        items: Sequence[Item],
        *,
        rl_run: str = "",
        step: int | None = None,
        client: str = "",
        generator: str = "",
        timeout_s: float | None = None,
    ) -> Sequence[Judged]: ...


# --- TRL --------------------------------------------------------------------------------


def trl_reward(
    source: RewardSource,
    *,
    task_column: str = "task",
    rl_run: str = "",
    name: str = "crucible_reward",
    **tags: Any,
) -> Callable[..., list[float | None]]:
    """A reward function for TRL (`GRPOTrainer(reward_funcs=[...])`):
    `(prompts, completions, **columns) -> [reward | None]`, named `name` (TRL logs under
    the function's name). `tags` (`client`, `generator`, `timeout_s`) go to every
    `verify` call. A reward is None where the candidate could not be judged (infra
    error); TRL 1.16 counts it as NaN (the module docstring says what that does)."""

    def reward(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[Any]:
        if task_column not in kwargs:
            raise KeyError(
                f"the dataset has no column {task_column!r} naming each row's task "
                f"(columns passed: {', '.join(sorted(kwargs)) or 'none'}); "
                "add one or pass task_column="
            )
        tasks = kwargs[task_column]
        items = [
            Item(task=task, completion=_answer(c), sample=str(i), prompt=_prompt_text(p))
            for i, (task, p, c) in enumerate(zip(tasks, prompts, completions, strict=True))
        ]
        step = getattr(kwargs.get("trainer_state"), "global_step", None)
        results = source.verify(items, rl_run=rl_run, step=step, **tags)
        rewards = [r.reward for r in results]
        log_extra, log_metric = kwargs.get("log_extra"), kwargs.get("log_metric")
        if callable(log_extra):
            log_extra(TRL_STATUS_COLUMN.format(name=name), [r.status for r in results])
        if callable(log_metric) and rewards:
            missing = sum(r is None for r in rewards)
            log_metric(TRL_INFRA_METRIC.format(name=name), missing / len(rewards))
        return rewards

    reward.__name__ = reward.__qualname__ = name
    return reward


def _answer(completion: Any) -> str:
    """A completion's text: as is, or the last assistant message's content (text parts
    joined) of a conversational one."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence):
        for message in reversed(completion):
            if isinstance(message, Mapping) and message.get("role") == "assistant":
                return _content_text(message.get("content"))
        return ""
    raise TypeError(f"a completion is text or a list of messages, not {type(completion)}")


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = [p.get("text", "") for p in content if isinstance(p, Mapping)]
    return "".join(p for p in parts if isinstance(p, str))


def _prompt_text(prompt: Any) -> str | None:
    if prompt is None or isinstance(prompt, str):
        return prompt
    return json.dumps(prompt, ensure_ascii=False, default=str)


# --- verl -------------------------------------------------------------------------------


def verl_compute_score(
    source: RewardSource, *, rl_run: str = "", infra_score: float = 0.0, **tags: Any
) -> Callable[..., dict[str, Any]]:
    """A custom reward function for verl's reward managers (`reward.custom_reward_function`):
    `(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> dict` with
    `score` (what verl trains on) and `status`, `passed`, `cached`, `infra` (verl's
    `reward_extra_info`). The task is `extra_info["task"]`, else `ground_truth`. An infra
    error scores `infra_score` with `infra: True`: verl has no missing reward. Other
    keyword arguments verl passes (`reward_kwargs` of the config, a reward router's
    address) are not used."""
    samples = _Samples()

    def compute_score(
        data_source: Any,
        solution_str: str,
        ground_truth: Any,
        extra_info: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        item = _verl_item(solution_str, ground_truth, extra_info, samples.next())
        (result,) = source.verify([item], rl_run=rl_run, **tags)
        return _verl_score(result, infra_score)

    return compute_score


def verl_batch_compute_score(
    source: RewardSource, *, rl_run: str = "", infra_score: float = 0.0, **tags: Any
) -> Callable[..., list[dict[str, Any]]]:
    """`verl_compute_score` for verl's `BatchRewardManager`: `(data_sources,
    solution_strs, ground_truths, extra_infos, **kwargs) -> [dict]`, the whole batch in
    one `verify` call (the source verifies them in parallel)."""
    samples = _Samples()

    def compute_score(
        data_sources: Sequence[Any],
        solution_strs: Sequence[str],
        ground_truths: Sequence[Any],
        extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
        **kwargs: Any,
    ) -> list[dict[str, Any]]:
        extras = [None] * len(solution_strs) if extra_infos is None else extra_infos
        items = [
            _verl_item(text, truth, extra, samples.next())
            for text, truth, extra in zip(solution_strs, ground_truths, extras, strict=True)
        ]
        results = source.verify(items, rl_run=rl_run, **tags)
        if len(results) != len(items):
            raise RuntimeError(f"the reward source answered {len(results)} of {len(items)} items")
        return [_verl_score(r, infra_score) for r in results]

    return compute_score


class _Samples:
    """Sample tags unique to one adapter: verl gives no step, so without them every
    rollout of the same answer would be one reward row."""

    def __init__(self) -> None:
        self._prefix = uuid.uuid4().hex[:12]
        self._n = itertools.count()  # next() is atomic: verl calls from many threads

    def next(self) -> str:
        return f"{self._prefix}:{next(self._n)}"


def _verl_item(
    solution: str, ground_truth: Any, extra_info: Mapping[str, Any] | None, sample: str
) -> Item:
    task = extra_info.get("task") if isinstance(extra_info, Mapping) else None
    if task is None:
        task = ground_truth
    return Item(task=str(task), completion=str(solution), sample=sample)


def _verl_score(result: Judged, infra_score: float) -> dict[str, Any]:
    """The same keys for every sample: verl stacks each key across the batch."""
    infra = result.reward is None
    return {
        "score": float(infra_score) if infra else float(result.reward),
        "status": str(result.status),
        "passed": bool(result.passed),
        "cached": bool(result.cached),
        "infra": infra,
    }
