"""Hostile firmware (tests/adversarial/embedded/cases.py): none passes, none is infra,
none reaches the host, and the next candidate on the same verifier is judged right.

Every case runs through the front door and, where it traps to the emulator's host,
also past the link gate's trap check (`NoTrapCheck`), so the runtime defences are what
stop it: the sandbox, its seccomp filter (no file opened for writing, removed or renamed),
QEMU's own seccomp (no process created).
"""

from __future__ import annotations

import shutil

import pytest

from tests.adversarial.embedded.cases import ALL, EXACT, FIXTURE
from tests.adversarial.harness import assert_innocent_fails, assert_innocent_passes, verify_settled
from verifiers.catalog import load_task
from verifiers.contract import Limits, Status
from verifiers.embedded.verifier import EmbeddedVerifier

pytestmark = pytest.mark.skipif(
    any(shutil.which(t) is None for t in ("arm-none-eabi-gcc", "qemu-system-arm", "bwrap")),
    reason="embedded toolchain missing: bash infra/install-toolchains.sh embedded",
)
LIMITS = Limits(timeout_s=5.0, cpu_s=2, output_bytes=64 * 1024)


class NoTrapCheck(EmbeddedVerifier):
    """Test-only: the link gate lets a semihosting trap through."""

    def refuse_traps(self, obj) -> None:
        return None


@pytest.fixture(scope="module")
def task():
    return load_task(FIXTURE, "embedded")


@pytest.fixture(scope="module")
def front():
    return EmbeddedVerifier()


@pytest.fixture(scope="module")
def raw():
    return NoTrapCheck()


@pytest.fixture
def outside():
    from tests.adversarial.harness import close_outside, make_outside

    out = make_outside()
    yield out
    close_outside(out)


def _after(verifier, task) -> None:
    assert_innocent_passes(lambda t, c: verifier.verify(t, c, LIMITS), task, task.reference)
    wrong = task.reference.replace("(1UL << 5)", "(1UL << 6)", 1)
    assert_innocent_fails(lambda t, c: verifier.verify(t, c, LIMITS), task, wrong)


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
def test_hostile_firmware_through_the_front_door(case, task, front, outside):
    v = verify_settled(front.verify, task, outside.fill(case.code), LIMITS)
    outside.check(v, case.front, settle_s=15.0)
    _after(front, task)


RUNTIME = [c for c in ALL if c.runtime is not None]


@pytest.mark.parametrize("case", RUNTIME, ids=[c.id for c in RUNTIME])
def test_hostile_firmware_past_the_trap_check(case, task, raw, outside, tmp_path):
    v = verify_settled(raw.verify, task, outside.fill(case.code), LIMITS)
    outside.check(v, case.runtime, settle_s=15.0)
    assert v.status is not Status.INFRA_ERROR
    assert not list(tmp_path.parent.glob("crucible-embedded-planted"))
    _after(raw, task)


EXACT_TASKS = {c.task for c in EXACT}


@pytest.fixture(scope="module")
def tasks():
    return {t: load_task(t, "embedded") for t in EXACT_TASKS}


@pytest.mark.parametrize("case", EXACT, ids=[c.id for c in EXACT])
def test_hostile_firmware_fails_for_its_own_reason(case, tasks, front):
    """What the task's cases never reached (#29): each class fails with its real reason's
    status and code, never a pass, never infra; and no host data reaches the transcript."""
    v = front.verify(tasks[case.task], case.code, LIMITS)
    assert (v.status, v.code) == (case.status, case.reason), v.feedback
    uart = next((a.data for a in v.artifacts if a.name == "uart.txt"), b"")
    assert not any(word in uart for word in (b"PATH=", b"HOME=", b"proc ", b"bwrap", b"qemu"))
