"""The reward API (`flows.rewards.Rewarder`) with the real RTL tools and a real lake: rewards
that follow the verdicts, candidates judged once (memo, lake, concurrent callers), a killed
tool process as `infra_error` (no reward), and nothing written for a bad request."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import psutil
import pytest

from flows.rewards import Item, Rewarder, RewardError, Tasks
from tests.flows.lakeq import q
from verifiers.reward import RewardConfig

TASK = "adder8"
# A zero-delay loop: vvp spins at one time step for ever (until its CPU budget).
HANG = """module adder8(input [7:0] a, input [7:0] b, input cin, output [7:0] sum, output cout);
  reg x;
  initial x = 0;
  always @(x) x <= ~x;
  assign sum = a + b + cin;
  assign cout = x;
endmodule
"""


@pytest.fixture(scope="module")
def tasks() -> Tasks:
    return Tasks.catalog(domains=["rtl", "ascendc"])


@pytest.fixture(scope="module")
def ref(tasks) -> str:
    return tasks.get(TASK).reference


def wrong(ref: str) -> str:
    assert " + {8'd0, cin}" in ref
    return ref.replace(" + {8'd0, cin}", "")  # the carry-in dropped


def counts(lake: Path) -> dict[str, int]:
    tables = ("tasks", "candidates", "verdicts", "rewards", "raw_verdicts")
    return {t: q(lake, f"SELECT count(*) FROM {t}")[0][0] for t in tables}


def test_rewards_follow_verdicts_and_land_in_the_lake(tmp_path, tasks, ref):
    lake = tmp_path / "lake"
    answer = f"Here is the adder.\n```verilog\n{ref}\n```\nIt adds."
    claims = "PASS. All tests passed. reward: 1.0\n```verilog\n" + wrong(ref) + "\n```"
    config = {"stage_credit": {"build": 0.25}}
    with Rewarder(tasks, lake=lake, reward=config) as r:
        got = r.verify(
            [
                Item(TASK, completion=answer, sample="0", prompt="add"),
                Item(TASK, completion=claims, sample="1"),
                Item(TASK, completion="I cannot do that.", sample="2"),
            ],
            rl_run="grpo-test",
            step=7,
        )
    assert [x.status for x in got] == ["pass", "wrong_answer", "format_error"]
    # a pass; a wrong adder that claims to pass earns only the build stage's credit
    assert [x.reward for x in got] == [1.0, 0.25, 0.0]
    rows = q(
        lake, "SELECT sample, rl_run, step, reward, reward_config_id FROM rewards ORDER BY sample"
    )
    assert [(s, run, st, rw) for s, run, st, rw, _ in rows] == [
        ("0", "grpo-test", 7, 1.0),
        ("1", "grpo-test", 7, 0.25),
        ("2", "grpo-test", 7, 0.0),
    ]
    assert {cfg for *_, cfg in rows} == {RewardConfig.from_dict(config).config_id}
    # the candidate is the extracted code, its prompt kept: an export reads it like any
    code, prompt, origin = q(
        lake,
        f"SELECT code, prompt, origin FROM candidates WHERE candidate_id = '{got[0].candidate_id}'",
    )[0]
    assert code.strip() == ref.strip() and prompt == "add" and origin == "llm"
    (flow, status, run_counts) = q(lake, "SELECT flow, status, counts FROM runs")[0]
    assert (flow, status) == ("rewards", "completed") and '"verified":3' in run_counts


def test_a_judged_candidate_is_answered_not_verified_again(tmp_path, tasks, ref):
    lake = tmp_path / "lake"
    with Rewarder(tasks, lake=lake) as r:
        first = r.verify([(TASK, ref), (TASK, wrong(ref))], rl_run="a", step=1)
        again = r.verify([(TASK, ref)], rl_run="a", step=2)
        assert r.counts["verified"] == 2
    assert [x.cached for x in first] == [False, False] and again[0].cached
    assert again[0].verdict_id == first[0].verdict_id
    # a new process on the same lake answers from the lake
    with Rewarder(tasks, lake=lake) as r2:
        third = r2.verify([(TASK, wrong(ref))], rl_run="a", step=3)
        assert r2.counts.get("verified", 0) == 0
    assert third[0].cached and third[0].status == "wrong_answer" and third[0].reward == 0.0
    c = counts(lake)
    assert c["raw_verdicts"] == c["verdicts"] == 2
    assert c["rewards"] == 4  # one per (verdict, step): each rollout is data


def test_concurrent_callers_share_one_verification(tmp_path, tasks, ref):
    lake = tmp_path / "lake"
    code = ref.replace("{1'b0, a} + {1'b0, b}", "{1'b0, b} + {1'b0, a}")  # new: not judged yet
    assert code != ref
    with Rewarder(tasks, lake=lake) as r:
        out: list = []
        start = threading.Barrier(8)

        def ask(k: int) -> None:
            start.wait()
            out.append(r.verify([Item(TASK, code=code, sample=str(k))], rl_run="c", step=0)[0])

        threads = [threading.Thread(target=ask, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert r.counts["verified"] == 1
    assert len(out) == 8 and {x.status for x in out} == {"pass"}
    assert len({x.verdict_id for x in out}) == 1
    c = counts(lake)
    assert c["raw_verdicts"] == 1 and c["rewards"] == 8


def test_a_bad_request_verifies_and_writes_nothing(tmp_path, tasks, ref):
    lake = tmp_path / "lake"
    with Rewarder(tasks, lake=lake) as r:
        with pytest.raises(RewardError, match="unknown task 'no_such_task'"):
            r.verify([(TASK, ref), ("no_such_task", ref)])
        with pytest.raises(RewardError, match="exactly one of code, completion"):
            r.verify([Item(TASK, code=ref, completion=ref)])
        # a lone surrogate would poison the lake writer for every later row
        with pytest.raises(RewardError, match="not valid Unicode"):
            r.verify([Item(TASK, code=ref + "// \ud800")])
        with pytest.raises(RewardError, match="rl_run must be text"):
            r.verify([(TASK, ref)], rl_run="\udfff")
        assert r.counts.get("verified", 0) == 0
    c = counts(lake)
    assert (c["candidates"], c["verdicts"], c["rewards"]) == (0, 0, 0)


def test_infra_error_is_no_reward_retried_and_never_an_answer(tmp_path, tasks):
    """A real infra_error: the AscendC compile gate needs CANN, which is not here."""
    lake = tmp_path / "lake"
    task = sorted((t for t in tasks if t.domain == "ascendc"), key=lambda t: t.name)[0]
    with Rewarder(tasks, lake=lake, infra_retries=1) as r:
        got = r.verify([(f"ascendc/{task.name}", task.reference)], rl_run="i", step=0)[0]
        assert (got.status, got.reward) == ("infra_error", None)
        assert (r.counts["infra_retried"], r.counts["infra_final"]) == (1, 1)
        again = r.verify([(f"ascendc/{task.name}", task.reference)], rl_run="i", step=1)[0]
        assert not again.cached and r.counts["verified"] == 2  # verified again, not answered
    assert q(lake, "SELECT count(*) FROM verdicts WHERE status = 'infra_error'")[0][0] == 4
    assert q(lake, "SELECT count(*) FROM rewards WHERE reward IS NULL")[0][0] == 2


def test_a_tool_killed_mid_batch_is_infra_error_and_the_batch_comes_back(tmp_path, tasks, ref):
    """The candidate's simulator is SIGKILLed from outside while its batch is verified: that
    candidate gets `infra_error` (killed_externally, no reward), the other one its verdict,
    and the call returns."""
    with Rewarder(tasks, lake=tmp_path / "lake", infra_retries=0) as r:
        out: dict = {}
        t = threading.Thread(
            target=lambda: out.update(r=r.verify([(TASK, HANG), (TASK, ref)], rl_run="k"))
        )
        t0 = time.monotonic()
        t.start()
        killed = False
        while t.is_alive() and time.monotonic() - t0 < 60 and not killed:
            for p in psutil.Process(os.getpid()).children(recursive=True):
                try:
                    if p.name() == "vvp" and time.monotonic() - t0 > 1.0:
                        p.kill()
                        killed = True
                except psutil.Error:
                    pass
            time.sleep(0.1)
        t.join(120)
        assert not t.is_alive(), "the batch never came back"
    assert killed
    hang, good = out["r"]
    assert (hang.status, hang.error_code, hang.reward) == ("infra_error", "killed_externally", None)
    assert (good.status, good.reward) == ("pass", 1.0)


def test_tasks_by_name_domain_name_and_id(tasks):
    t = tasks.get(TASK)
    assert tasks.get(f"rtl/{TASK}") is t and tasks.get(t.task_id) is t
    with pytest.raises(RewardError, match="unknown task"):
        tasks.get("rtl/nope")


def test_tasks_from_a_task_directory_and_a_lake(tmp_path, tasks, ref):
    from verifiers.datadirs import data_dir

    one = Tasks.directory(data_dir("tasks") / "rtl" / TASK)
    assert [t.name for t in one] == [TASK]
    with pytest.raises(RewardError, match="does not exist"):
        Tasks.directory(tmp_path / "missing")
    lake = tmp_path / "lake"
    with Rewarder(one, lake=lake) as r:
        r.verify([(TASK, ref)])
    assert [t.name for t in Tasks.from_lake(lake)] == [TASK]


def test_a_verifier_that_raises_is_infra_error_not_a_failed_request(tmp_path, tasks, ref):
    """A bug in Crucible's own verifier (stood in by a verify_many that raises) is no
    judgement of the candidate: infra_error `verifier_crashed`, no reward, the call returns."""
    with Rewarder(tasks, lake=tmp_path / "lake", infra_retries=1) as r:
        v = r.verifier_for("rtl")

        def broken(items, limits=None):
            raise RuntimeError("bug")

        v.verify_many = broken
        got = r.verify([(TASK, ref)])[0]
        assert (got.status, got.error_code, got.reward) == ("infra_error", "verifier_crashed", None)
        assert "RuntimeError: bug" in got.feedback and r.counts["infra_final"] == 1
