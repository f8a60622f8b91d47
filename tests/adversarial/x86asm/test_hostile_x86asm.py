"""Hostile assembly (tests/adversarial/x86asm/cases.py): none passes, none is infra, none
reaches the host, and the next candidate on the same verifier is judged right.

Every case runs through the front door and, where it has a `runtime` family, also with the
static rules switched off (`NoStaticRules`), so the driver's seccomp filter, the sandbox and
the harness's own checks are what stop it.
"""

from __future__ import annotations

import pytest

from tests.adversarial.harness import assert_innocent_fails, assert_innocent_passes, verify_settled
from tests.adversarial.x86asm.cases import ALL, FIXTURE
from tests.adversarial.x86asm.verifiers import NoStaticRules, needs_x86
from verifiers.catalog import load_task
from verifiers.contract import Limits, Status
from verifiers.x86asm.verifier import X86Verifier

pytestmark = needs_x86
# the driver writes ~110 bytes a case (640 of them on the fixture): room for that, not a flood
LIMITS = Limits(timeout_s=10.0, cpu_s=2, output_bytes=128 * 1024)
CORRECT = Limits(gates=("assemble", "static", "link", "execute", "abi", "correct"))


@pytest.fixture(scope="module")
def task():
    return load_task(FIXTURE, "x86asm")


@pytest.fixture(scope="module")
def front():
    return X86Verifier()


@pytest.fixture(scope="module")
def raw():
    return NoStaticRules()


@pytest.fixture
def outside():
    from tests.adversarial.harness import close_outside, make_outside

    out = make_outside()
    yield out
    close_outside(out)


def _after(verifier, task) -> None:
    assert_innocent_passes(lambda t, c: verifier.verify(t, c), task, task.reference)
    wrong = task.reference.replace("vpmulld", "vpaddd", 1)
    assert wrong != task.reference
    assert_innocent_fails(lambda t, c: verifier.verify(t, c, LIMITS), task, wrong)


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
def test_hostile_assembly_through_the_front_door(case, task, front, outside):
    v = verify_settled(front.verify, task, outside.fill(case.code), LIMITS)
    outside.check(v, case.front, settle_s=15.0)
    if case.code_front:
        assert v.code == case.code_front, (v.status, v.code, v.feedback[:600])
    _after(front, task)


RUNTIME = [c for c in ALL if c.runtime is not None]


@pytest.mark.parametrize("case", RUNTIME, ids=[c.id for c in RUNTIME])
def test_hostile_assembly_past_the_static_gate(case, task, raw, outside, tmp_path):
    v = verify_settled(raw.verify, task, outside.fill(case.code), LIMITS)
    assert v.status is not Status.INFRA_ERROR, v.feedback[:600]
    if Status.PASS not in case.runtime:
        outside.check(v, case.runtime, settle_s=15.0)
    if case.code_runtime:
        assert v.code == case.code_runtime, (v.status, v.code, v.feedback[:600])
    assert not list(tmp_path.parent.glob("crucible-x86asm-planted"))
    _after(raw, task)


def test_a_zeroed_count_past_the_static_gate_is_never_a_pass(task, raw):
    """valgrind's client requests (zero the count, switch collection off) reach callgrind
    only with the static rule off: the count is then refused (fewer calls than the driver
    made), or the run fails, never a pass with a forged speedup."""
    seen = {}
    for c in ALL:
        if c.id.startswith("valgrind-"):
            v = raw.verify(task, c.code)
            assert not v.passed and v.status is not Status.INFRA_ERROR, (c.id, v.metrics)
            seen[c.id] = (v.status, v.code)
    assert seen["valgrind-zero_stats"] == (Status.REJECTED, "timing_games"), seen


ROOT = FIXTURE.parents[3]
# mem_fill_u32(dst %rdi, v %esi, n %rdx): its range stops at n = 500, its perf workload is
# n = 98304 (a buffer that does not end at a page); code run only when n > 100000
HUGE = "mem_fill_u32:\n\tcmpq $100000, %rdx\n\tjbe 7f\n{}7:\n"


@pytest.mark.parametrize(
    "store",
    ["\tmovl %esi, (%rdi,%rdx,4)\n", "\tmovl %esi, -4(%rdi)\n"],
    ids=["dst_n", "before_dst"],
)
def test_a_write_outside_dst_only_past_n_100000_is_seen(front, store):
    """The cases reach twice the perf workload's n (196608) at every placement, so a store
    one element past either end of dst, made only when n > 100000, is out_of_bounds_write
    (a fault on the guard page where dst ends at one, the window's fill or red zone
    elsewhere), where before every case stopped at n = 500 and it passed."""
    task = load_task(ROOT / "tasks" / "x86asm" / "mem_fill_u32", "x86asm")
    code = task.reference.replace("mem_fill_u32:\n", HUGE.format(store), 1)
    v = front.verify(task, code, CORRECT)
    assert (v.status, v.code) == (Status.WRONG_ANSWER, "out_of_bounds_write"), v.feedback[:600]
    assert "dst" in v.feedback and "n=1" in v.feedback, v.feedback[:600]
