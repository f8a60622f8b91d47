"""One sandbox for a candidate's runs (`Sandbox.session`), tested against `Sandbox.run`:
the same results, and nothing of one run left for the next."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from tests.verifiers.test_sandbox import _alive, _unique
from verifiers import sandbox as sandbox_mod
from verifiers.contract import Limits
from verifiers.sandbox import INSTALL_HINT, PERL, Sandbox, sandbox_uid

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason=f"needs bubblewrap: {INSTALL_HINT}"
)
# the session's own pid 1 runs only where jobs drop to the sandbox uid; elsewhere a
# session is Sandbox.run, run by run (the comparisons below hold either way)
served = pytest.mark.skipif(
    os.geteuid() != 0 or PERL is None, reason="a session has its own pid 1 only as root"
)


@pytest.fixture
def work():
    # straight under the temp root, like the verifier's: the sandbox uid must reach it
    with tempfile.TemporaryDirectory(prefix="crucible-session-test-") as tmp:
        yield Path(tmp)


def _sh(script: str) -> list[str]:
    return ["/bin/sh", "-c", script]


def _both(work: Path, script: str, **limits):
    """The same run by `Sandbox.run` and in a session (the session's second run, so it
    is not the one that started it)."""
    sb = Sandbox(Limits(**limits))
    wd = sb.prepare_workdir(work)
    alone = sb.run(_sh(script), wd)
    with sb.session(wd) as s:
        s.run(["true"])
        together = s.run(_sh(script))
    return alone, together


def _same(a, b) -> None:
    for f in ("returncode", "stdout", "stderr", "timed_out", "output_capped", "signal"):
        assert getattr(a, f) == getattr(b, f), f
    assert a.started and b.started
    assert a.limit_hit == b.limit_hit
    assert a.sandbox_fault == b.sandbox_fault
    assert (a.stop.signal, a.stop.wall_kill) == (b.stop.signal, b.stop.wall_kill)
    assert a.stop.code() == b.stop.code()


@pytest.mark.parametrize(
    "script",
    [
        "echo out; echo err >&2",
        "exit 3",
        "exit 137",  # a shell's 137 ...
        "kill -9 $$",  # ... and a real SIGKILL: the status tells them apart
        "kill -XCPU $$",
        "no-such-tool",
    ],
)
def test_the_same_result_as_a_run_of_its_own(work, script):
    alone, together = _both(work, script)
    _same(alone, together)


def test_a_real_sigkill_is_known_and_a_chosen_137_is_not(work):
    sb = Sandbox(Limits())
    with sb.session(sb.prepare_workdir(work)) as s:
        chosen, real = s.run(_sh("exit 137")), s.run(_sh("kill -9 $$"))
    assert chosen.returncode == real.returncode == 137
    assert chosen.stop.signal is None and chosen.limit_hit is None
    assert real.stop.signal == 9 and real.limit_hit == "killed_externally"


def test_runs_as_the_sandbox_uid(work):
    sb = Sandbox(Limits())
    with sb.session(sb.prepare_workdir(work)) as s:
        res = s.run(["id", "-u"])
    expected = sandbox_uid() if os.geteuid() == 0 else os.geteuid()
    assert expected != 0 and res.stdout.strip() == str(expected)


def test_each_run_has_its_own_output(work):
    sb = Sandbox(Limits())
    with sb.session(sb.prepare_workdir(work)) as s:
        first = s.run(_sh("echo one; echo ONE >&2; (sleep 0.3; echo late; echo LATE >&2) &"))
        second = s.run(_sh("sleep 0.5; echo two; echo TWO >&2"))
        third = s.run(_sh("head -c 200000 /dev/zero | tr '\\0' a; echo; echo three >&2"))
        fourth = s.run(_sh("echo four"))
    assert (first.stdout, first.stderr) == ("one\n", "ONE\n")
    assert (second.stdout, second.stderr) == ("two\n", "TWO\n")  # nothing "late"
    assert third.stdout == "a" * 200000 + "\n" and third.stderr == "three\n"  # > a pipe
    assert (fourth.stdout, fourth.stderr) == ("four\n", "")


def test_nothing_of_a_run_lives_into_the_next(work):
    # the RTL harness writes its private files into the work dir between two runs: a
    # process the candidate left running (here: a background one, a setsid'd one, a
    # double fork) must be gone before the run returns, not merely soon after
    a, b, c = _unique("81"), _unique("82"), _unique("83")
    spy = "sleep 0.5; cat /work/secret > /work/stolen"
    sb = Sandbox(Limits())
    wd = sb.prepare_workdir(work)
    with sb.session(wd) as s:
        res = s.run(
            _sh(
                f"sleep {a} & setsid sh -c 'sleep {b}' & (sh -c 'sleep {c}' &) ; "
                f"(sh -c '{spy}' &) ; sleep 0.1; echo started"
            )
        )
        assert res.returncode == 0 and res.stdout == "started\n"
        assert not _alive(f"sleep {a}") and not _alive(f"sleep {b}") and not _alive(f"sleep {c}")
        (wd / "secret").write_text("the reference\n")  # what the host does next
        after = s.run(_sh("for p in /proc/[0-9]*; do cat $p/comm; done"))
        time.sleep(0.8)
    assert not (wd / "stolen").exists()
    # the next run sees its own processes and pid 1, nothing else
    assert sorted(after.stdout.split()) == ["perl", "sh"]  # (the glob ran before cat)


def test_a_flag_set_on_the_output_reaches_no_later_run(work):
    # the output pipes are the session's: a run writing through a non-blocking stdout
    # that an earlier one left would lose what it prints (a report, a proof's verdict)
    flip = "import os; os.set_blocking(1, False); os.set_blocking(2, False)"
    sb = Sandbox(Limits())
    with sb.session(sb.prepare_workdir(work)) as s:
        s.run(["python3", "-c", flip])
        res = s.run(["python3", "-c", "import os; print(os.get_blocking(1), os.get_blocking(2))"])
    assert res.stdout == "True True\n"


def test_tmp_is_empty_for_every_run(work):
    sb = Sandbox(Limits())
    with sb.session(sb.prepare_workdir(work)) as s:
        s.run(_sh("mkdir -p /tmp/d/e; echo x > /tmp/d/e/f; echo y > /tmp/.hidden"))
        res = s.run(_sh("ls -A /tmp"))
    assert res.returncode == 0 and res.stdout == ""


def test_ipc_objects_go_with_their_run(work):
    make = (
        "import ctypes; libc = ctypes.CDLL(None); "
        "print(libc.shmget(0, 1 << 20, 0o1600), libc.msgget(0, 0o1600))"
    )
    sb = Sandbox(Limits())
    with sb.session(sb.prepare_workdir(work)) as s:
        made = s.run(["python3", "-c", make])
        res = s.run(_sh("cat /proc/sysvipc/shm /proc/sysvipc/msg | wc -l"))
    assert made.returncode == 0 and "-1" not in made.stdout.split()
    assert res.stdout.strip() == "2"  # the headers alone


@served
def test_a_run_cannot_reach_the_sessions_pipes(work):
    sb = Sandbox(Limits())
    with sb.session(sb.prepare_workdir(work)) as s:
        own = s.run(_sh("ls /proc/$$/fd"))
        pid1 = s.run(_sh("ls /proc/1/fd; echo x > /proc/1/fd/0; cat /proc/1/fd/3"))
        still = s.run(_sh("echo fine"))
    assert own.stdout.split() == ["0", "1", "2"]  # no job pipe, no status pipe
    assert pid1.returncode != 0 and "Permission denied" in pid1.stderr
    assert still.stdout == "fine\n" and s.starts == 1


@served
def test_output_cap_ends_the_session_and_the_next_run_is_fine(work):
    alone, together = _both(work, "yes spam", output_bytes=4096, timeout_s=10)
    _same(alone, together)
    assert together.output_capped and len(together.stdout) <= 4096
    sb = Sandbox(Limits(output_bytes=4096, timeout_s=10))
    with sb.session(sb.prepare_workdir(work)) as s:
        assert s.run(_sh("yes spam")).limit_hit == "output_limit"
        res = s.run(_sh("echo next"))
    assert res.stdout == "next\n" and res.limit_hit is None and s.starts == 2
    # more than the cap from a run that ends at once (read before or after its end)
    with sb.session(sb.prepare_workdir(work)) as s:
        big = s.run(_sh("head -c 5000 /dev/zero; head -c 5000 /dev/zero >&2"))
        res = s.run(_sh("echo next"))
    assert big.output_capped and big.limit_hit == "output_limit"
    assert res.stdout == "next\n" and res.stderr == ""


@served
def test_wall_timeout_is_measured_and_the_session_restarts(work):
    sb = Sandbox(Limits(timeout_s=0.5))
    wd = sb.prepare_workdir(work)
    alone = sb.run(_sh("(sleep 1.5; echo late > /work/marker) & sleep 30"), wd)
    with sb.session(wd) as s:
        start = time.perf_counter()
        res = s.run(_sh("(sleep 1.5; echo late > /work/marker) & sleep 30"))
        assert time.perf_counter() - start < 5
        _same(alone, res)
        assert res.timed_out and res.limit_hit == "timeout"
        assert res.stop.wall_kill and res.stop.usage is not None and res.stop.budget_s == 20
        nxt = s.run(_sh("echo again"))
    assert nxt.stdout == "again\n" and nxt.limit_hit is None and s.starts == 2
    time.sleep(1.5)
    assert not (wd / "marker").exists()


def test_cpu_limit(work):
    sb = Sandbox(Limits(timeout_s=20))
    with sb.session(sb.prepare_workdir(work)) as s:
        res = s.run(_sh("while :; do :; done"), cpu_s=1)
        nxt = s.run(_sh("while :; do :; done"), cpu_s=1)  # its own budget, not the rest
    assert res.limit_hit == nxt.limit_hit == "cpu_limit"
    assert res.stop.budget_s == 1 and res.stop.usage.cpu_s >= 0.9


def test_file_size_limit(work):
    alone, together = _both(work, "head -c 3000000 /dev/zero > /work/big", fsize_mb=1)
    _same(alone, together)
    assert together.limit_hit == "file_size_limit"
    assert (work / "big").stat().st_size <= 1024 * 1024


def test_address_space_and_process_limits(work):
    script = "python3 -c 'bytearray(400 * 2**20)'"
    alone, together = _both(work, script, memory_mb=200)
    assert alone.returncode == together.returncode != 0
    assert "MemoryError" in together.stderr
    if os.geteuid() == 0:  # RLIMIT_NPROC holds only for a uid of our own
        sb = Sandbox(Limits(nproc=8))
        with sb.session(sb.prepare_workdir(work)) as s:
            res = s.run(_sh("for i in 1 2 3 4 5 6 7 8 9 10; do sleep 1 & done 2>&1; wait"))
        assert "fork" in res.stdout + res.stderr or res.returncode != 0


@served
def test_a_session_that_died_is_started_again(work):
    sb = Sandbox(Limits())
    with sb.session(sb.prepare_workdir(work)) as s:
        s.run(["true"])
        os.killpg(s._proc.pid, 9)  # what the OOM killer or an operator might do
        s._proc.wait()
        res = s.run(_sh("echo back"))
    assert res.stdout == "back\n" and s.starts == 2


def test_a_session_that_cannot_start_says_why_as_a_run_would(work, monkeypatch):
    real = sandbox_mod.confined_argv
    monkeypatch.setattr(
        sandbox_mod, "confined_argv", lambda *a, **k: [*real(*a, **k), "--no-such-bwrap-option"]
    )
    sb = Sandbox(Limits())
    with sb.session(sb.prepare_workdir(work)) as s:
        res = s.run(["true"])
    assert not res.started and res.sandbox_fault and "no-such-bwrap-option" in res.stderr


def test_unconfined_runs_one_by_one(work):
    sb = Sandbox(Limits(unconfined=True))
    with sb.session(sb.prepare_workdir(work)) as s:
        res = s.run(_sh("echo $$"))
    assert not s.served and s.starts == 0 and res.returncode == 0


@served
def test_a_verifier_opens_one_session_per_candidate(monkeypatch):
    from verifiers.catalog import load_catalog
    from verifiers.rtl.verifier import SIM_ONLY, RtlVerifier

    starts = []
    real = sandbox_mod.SandboxSession._spawn
    monkeypatch.setattr(
        sandbox_mod.SandboxSession, "_spawn", lambda self: starts.append(1) or real(self)
    )
    monkeypatch.setattr(RtlVerifier, "session_sandbox", True)  # the opt-in
    tasks, _ = load_catalog(Path("tasks"), ["rtl"])
    task = next(t for t in tasks if t.reference and t.harness.get("testbench"))
    v = RtlVerifier()
    verdict = v.verify(task, task.reference, Limits(gates=SIM_ONLY))
    runs = verdict.metrics["tool_runs"]
    assert verdict.status.value == "pass", verdict.feedback
    assert len(runs) >= 2 and len(starts) == 1
