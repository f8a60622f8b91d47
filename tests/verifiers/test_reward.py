"""The verdict -> reward mapping (`verifiers.reward`): every status, stage credit, the
speedup bonus and its bar, infra as no reward, and configs that are refused."""

from __future__ import annotations

import math

import pytest

from verifiers.contract import Check, Status, Verdict
from verifiers.reward import RewardConfig, RewardConfigError, reward_of, stages_cleared


def verdict(status: str, checks=(), **metrics) -> Verdict:
    return Verdict("c", "t", "rtl", "v", "1", Status(status), checks=tuple(checks), metrics=metrics)


BUILT = (Check("format", True, 0, "", "build"), Check("compile", True, 0, "", "build"))
RAN_WRONG = (*BUILT, Check("simulate", False, 0, "mismatch", "run"))


def test_defaults_per_status():
    got = {s.value: reward_of(verdict(s.value)) for s in Status}
    assert got.pop("infra_error") is None
    assert got == {
        "pass": 1.0,
        "slow": 0.5,
        "format_error": 0.0,
        "compile_error": 0.0,
        "runtime_error": 0.0,
        "wrong_answer": 0.0,
        "timeout": 0.0,
        "resource_limit": 0.0,
        "rejected": 0.0,
    }


def test_stage_credit_counts_only_stages_wholly_cleared():
    c = RewardConfig(stage_credit={"build": 0.2, "run": 0.3})
    assert stages_cleared(verdict("wrong_answer", RAN_WRONG)) == ["build"]
    assert reward_of(verdict("wrong_answer", RAN_WRONG), c) == pytest.approx(0.2)
    half_built = (Check("format", True, 0, "", "build"), Check("compile", False, 0, "", "build"))
    assert reward_of(verdict("compile_error", half_built), c) == 0.0
    # a rejected (anti-cheat) candidate gets its own value, never stage credit
    assert (
        reward_of(
            verdict("rejected", BUILT),
            RewardConfig(rejected=-1.0, **{"stage_credit": {"build": 0.2}}),
        )
        == -1.0
    )


def test_speedup_bonus_over_the_bar_capped_and_never_below_it():
    c = RewardConfig(speedup_weight=0.5, speedup_bar=1.0, speedup_cap=2.0)
    assert reward_of(verdict("pass", speedup=2.0), c) == pytest.approx(1.5)
    assert reward_of(verdict("pass", speedup=64.0), c) == pytest.approx(2.0)  # capped
    assert reward_of(verdict("pass", speedup=0.5), c) == 1.0  # no penalty: `slow` says so
    for junk in (math.nan, math.inf, -3.0, "fast", True):
        assert reward_of(verdict("pass", speedup=junk), c) == 1.0
    assert reward_of(verdict("pass", speedup=4.0), RewardConfig()) == 1.0  # off by default
    # a pass whose speedup the verifier flagged (kernels: past 50x) gets no bonus for it
    assert reward_of(verdict("pass", speedup=64.0, implausible_speedup=True), c) == 1.0


def test_bad_configs_are_refused_with_the_field_named():
    with pytest.raises(RewardConfigError, match=r"unknown reward field.*'pased'"):
        RewardConfig.from_dict({"pased": 1})
    with pytest.raises(RewardConfigError, match="stage 'compile'"):
        RewardConfig(stage_credit={"compile": 0.1})
    with pytest.raises(RewardConfigError, match="passed must be finite"):
        RewardConfig(passed=math.inf)
    with pytest.raises(RewardConfigError, match="speedup_bar"):
        RewardConfig(speedup_bar=0)
    with pytest.raises(RewardConfigError, match="must be a number"):
        RewardConfig.from_dict({"slow": "0.5"})


def test_config_id_names_the_rule():
    a = RewardConfig.from_dict({"stage_credit": {"run": 0.1, "build": 0.1}})
    b = RewardConfig(stage_credit={"build": 0.1, "run": 0.1})
    assert a.config_id == b.config_id != RewardConfig().config_id
    assert RewardConfig.from_dict(a.to_dict()) == a
