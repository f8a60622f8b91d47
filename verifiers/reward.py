"""A verdict as a number: the reward an RL loop trains on.

One mapping for every domain, keyed on what every verdict carries: its status, the stage of
each gate that ran (`build`, `run`, `judge`, `perf`) and, where the verifier measured one,
the `speedup` metric (a ratio against the task's reference or baseline). The mapping is data
(`RewardConfig`), recorded with every reward it produced (`RewardConfig.config_id`), so a
number in the lake can always be traced to the rule that made it.

`infra_error` is never a reward: the machine failed, not the candidate. `reward_of` answers
None for it, and the caller retries (`flows.rewards`) or leaves the sample unrewarded (TRL
and verl both accept a missing reward).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from verifiers.contract import Status, Verdict, canonical_json, content_id

STAGES = ("build", "run", "judge", "perf")


class RewardConfigError(ValueError):
    """A reward configuration that cannot be used; the message names the field."""


@dataclass(frozen=True)
class RewardConfig:
    """How a verdict becomes a reward.

    - `passed`: a pass.
    - `slow`: correct, but below the task's speed (or size) bar.
    - `failed`: any other candidate outcome (compile error, wrong answer, timeout ...),
      plus `stage_credit` for every stage all of whose gates the candidate cleared: a
      candidate that compiles but is wrong earns `stage_credit["build"]`. Partial credit
      shapes a sparse reward; it is off by default.
    - `rejected`: an anti-cheat rule fired (may be negative: a penalty).
    - `format_error`: no code, or no entry point, in the answer.
    - `speedup_weight`, `speedup_bar`, `speedup_cap`: a pass with a measured `speedup`
      earns `speedup_weight * min(log2(speedup / speedup_bar), speedup_cap)` more when it
      beats the bar; nothing is taken away below it (that is `slow`'s job), and a speedup
      the verifier flags as implausible (`implausible_speedup` in its metrics) earns none:
      a policy would otherwise learn to hunt the flag. The bonus is only as sound as the
      verifier's timing, so it is off by default.
    """

    passed: float = 1.0
    slow: float = 0.5
    failed: float = 0.0
    rejected: float = 0.0
    format_error: float = 0.0
    stage_credit: Mapping[str, float] = field(default_factory=dict)
    speedup_weight: float = 0.0
    speedup_bar: float = 1.0
    speedup_cap: float = 2.0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "stage_credit":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise RewardConfigError(f"reward {f.name} must be a number, not {value!r}")
            if not math.isfinite(value):
                raise RewardConfigError(f"reward {f.name} must be finite, not {value!r}")
            object.__setattr__(self, f.name, float(value))
        if not isinstance(self.stage_credit, Mapping):
            raise RewardConfigError("reward stage_credit must map stages to numbers")
        credit = {}
        for stage, value in self.stage_credit.items():
            if stage not in STAGES:
                raise RewardConfigError(
                    f"reward stage_credit names stage {stage!r}; stages: {', '.join(STAGES)}"
                )
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise RewardConfigError(f"reward stage_credit[{stage!r}] must be a number")
            if not math.isfinite(value):
                raise RewardConfigError(f"reward stage_credit[{stage!r}] must be finite")
            credit[stage] = float(value)
        object.__setattr__(self, "stage_credit", dict(sorted(credit.items())))
        if self.speedup_bar <= 0:
            raise RewardConfigError("reward speedup_bar must be above 0")
        if self.speedup_cap < 0:
            raise RewardConfigError("reward speedup_cap must be 0 or more")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> RewardConfig:
        """A config from JSON-like data; unknown keys are refused (a typo would otherwise
        silently train on the defaults)."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise RewardConfigError("reward config must be an object of fields")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise RewardConfigError(
                f"unknown reward field(s) {', '.join(map(repr, unknown))}; fields: "
                + ", ".join(sorted(known))
            )
        return cls(**dict(data))

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["stage_credit"] = dict(self.stage_credit)
        return d

    @property
    def config_id(self) -> str:
        """The config's content hash: which rule made a reward row."""
        return content_id("reward-config", canonical_json(self.to_dict()))


def stages_cleared(verdict: Verdict) -> list[str]:
    """Stages every gate of which ran and let the candidate through, in gate order."""
    ok: dict[str, bool] = {}
    for check in verdict.checks:
        if check.stage not in STAGES:
            continue
        ok[check.stage] = ok.get(check.stage, True) and bool(check.ok)
    return [s for s in STAGES if ok.get(s)]


def speedup_bonus(verdict: Verdict, config: RewardConfig) -> float:
    if not config.speedup_weight:
        return 0.0
    if not isinstance(verdict.metrics, Mapping) or verdict.metrics.get("implausible_speedup"):
        return 0.0  # a speedup the verifier itself flags (e.g. past 50x) earns nothing more
    value = verdict.metrics.get("speedup")
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        return 0.0
    if not math.isfinite(value):
        return 0.0
    gain = math.log2(value / config.speedup_bar)
    return config.speedup_weight * min(max(gain, 0.0), config.speedup_cap)


def reward_of(verdict: Verdict, config: RewardConfig | None = None) -> float | None:
    """The verdict's reward under `config` (the defaults: 1 pass, 0.5 slow, 0 otherwise);
    None for `infra_error`, which is no judgement of the candidate."""
    c = config or RewardConfig()
    status = verdict.status
    if status is Status.INFRA_ERROR:
        return None
    if status is Status.PASS:
        return c.passed + speedup_bonus(verdict, c)
    if status is Status.SLOW:
        return c.slow
    if status is Status.REJECTED:
        return c.rejected
    if status is Status.FORMAT_ERROR:
        return c.format_error
    return c.failed + sum(c.stage_credit.get(s, 0.0) for s in stages_cleared(verdict))
