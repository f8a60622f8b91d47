"""Ctrl-C and SIGTERM stop `crucible run` as a user sends them: the command runs in a
terminal of its own (a pty, so its progress bars draw live), Ctrl-C goes to its whole
process group as a terminal sends it, SIGTERM to the command alone as `kill` does. Each
stops the run within seconds, with one line, the lake's `runs` row `cancelled`, and
nothing of the run left (Prefect's temporary API, Ray's processes, verifier workers,
sandboxes); a second signal ends the command at once."""

from __future__ import annotations

import os
import pty
import re
import secrets
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from flows import reaper
from tests.flows.lakeq import q
from tests.flows.test_left_behind import _cmdline, _describe, _gone_within

ROOT = Path(__file__).resolve().parents[2]
# enough candidates that verify lasts well past the moment the test sees it begin
NAMES = ("mux4", "updown_counter8", "alu8", "uart_tx8")
STOP_BOUND_S = 60.0  # a hang guard: the run stops in seconds (printed); it hung minutes
_ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")
_VERIFY = re.compile(r"(?m)^verify\s+\D*?(\d+)/(\d+)")


class Terminal:
    """A `crucible` command on a pty of its own, in a session of its own (its process
    group is the one a terminal's Ctrl-C reaches)."""

    def __init__(self, args: list[str], env: dict[str, str]):
        master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "flows.cli", *args],
            cwd=ROOT, env=env, stdin=slave, stdout=slave, stderr=slave,
            start_new_session=True,
        )  # fmt: skip
        os.close(slave)
        self.master = master
        self.raw = bytearray()

    def read(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if not ready:
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the command ended and closed the terminal
                return
            if not chunk:
                return
            self.raw += chunk

    def text(self) -> str:
        """What the terminal shows, line by line (a redrawn line once per frame)."""
        plain = _ANSI.sub(b"", bytes(self.raw)).decode(errors="replace")
        return "\n".join(x.strip() for x in re.split(r"[\r\n]+", plain) if x.strip())

    def wait_until_verifying(self, token: str, timeout_s: float = 300) -> None:
        """Until the verify bar shows verdicts landing and a verifier actor is up."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.proc.poll() is None:
            self.read(0.2)
            done = [int(m[0]) for m in _VERIFY.findall(self.text()) if int(m[0]) < int(m[1])]
            ray = any(b"ray::" in _cmdline(p) for p in reaper.processes_of(token))
            if done and max(done) >= 2 and ray:
                return
        raise AssertionError(f"never seen verifying: {self.text()[-3000:]}")

    def wait(self, timeout_s: float) -> int | None:
        deadline = time.monotonic() + timeout_s
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.read(0.2)
        self.read(0.5)
        return self.proc.poll()

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        os.close(self.master)


@pytest.fixture
def scratch():
    """The commands' temp dir: short, as Ray's socket paths under it must be."""
    path = Path(tempfile.mkdtemp(prefix="int-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _env(tmp_path: Path, scratch: Path, token: str) -> dict[str, str]:
    env = dict(os.environ, CRUCIBLE_GUARD=token, TMPDIR=str(scratch), COLUMNS="160")
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")  # the temporary API, as a user's
    env.pop("PREFECT_API_URL", None)
    return env


def _stop(term: Terminal, token: str, send) -> tuple[int | None, float, str]:
    """Send the signal mid-verify; the exit code, seconds to exit, the terminal's text."""
    term.wait_until_verifying(token)
    before = reaper.processes_of(token)
    assert len(before) > 3, _describe(before)  # Prefect's server, Ray's, a verifier actor
    t0 = time.monotonic()
    send(term.proc.pid)
    rc = term.wait(STOP_BOUND_S)
    took = time.monotonic() - t0
    left = _gone_within(token, 5)
    assert not left, f"left behind: {_describe(left)}"
    return rc, took, term.text()


def _one_cancelled_line(text: str, run_id: str, how: str, args: list[str]) -> None:
    for noise in ("Traceback", "Crash detected", "Error logging to API", "Aborted"):
        assert noise not in text, text[-3000:]
    said = [x for x in text.splitlines() if x.startswith("cancelled:")]
    again = shlex.join(["crucible", *args])
    assert said == [
        f"cancelled: run {run_id} stopped {how} (recorded as cancelled); resume with: {again}"
    ], text[-3000:]


def test_ctrl_c_then_sigterm_cancel_the_run_in_seconds_and_leave_nothing(tmp_path, scratch):
    """Over 30 s: two `crucible run` commands, each with its own Prefect API and Ray
    (what a Ctrl-C does to them is the point), stopped mid-verify; the second resumes
    the first's lake."""
    root = tmp_path / "catalog"
    for n in NAMES:
        shutil.copytree(ROOT / "tasks" / "rtl" / n, root / "rtl" / n)
    lake = tmp_path / "lake"
    token = f"test{secrets.token_hex(6)}"
    common = ["--lake", str(lake), "--tasks", str(root), "--batch-size", "2", "--workers", "1"]

    # Ctrl-C in the terminal: SIGINT to the command's whole process group
    args = ["run", *common, "--stages", "generate,verify", "--commit-every", "2"]
    term = Terminal(args, _env(tmp_path, scratch, token))
    try:
        rc, took, text = _stop(term, token, lambda pid: os.killpg(pid, signal.SIGINT))
    finally:
        term.close()
    assert rc == 128 + signal.SIGINT, text[-3000:]
    ((run_id, status, error),) = q(lake, "SELECT run_id, status, error FROM runs")
    assert (status, error) == ("cancelled", "cancelled: stopped by SIGINT (Ctrl-C)")
    _one_cancelled_line(text, run_id, "after Ctrl-C", args)
    print(f"Ctrl-C: exit {rc} {took:.1f}s after the signal")

    # SIGTERM to the command alone (`kill PID`), on a run that resumes the first's verify
    verified = q(lake, "SELECT count(*) FROM verdicts")[0][0]
    args = ["run", *common, "--stages", "verify", "--commit-every", "2"]
    term = Terminal(args, _env(tmp_path, scratch, token))
    try:
        rc, took, text = _stop(term, token, lambda pid: os.kill(pid, signal.SIGTERM))
    finally:
        term.close()
    assert rc == 128 + signal.SIGTERM, text[-3000:]
    sql = f"SELECT run_id, status, error FROM runs WHERE run_id != '{run_id}'"
    ((second, status, error),) = q(lake, sql)
    assert (status, error) == ("cancelled", "cancelled: stopped by SIGTERM")
    _one_cancelled_line(text, second, "by SIGTERM", args)
    assert q(lake, "SELECT count(*) FROM verdicts")[0][0] > verified  # it resumed
    print(f"SIGTERM: exit {rc} {took:.1f}s after the signal")


_SECOND = """
import signal, sys, time
from flows import interrupt
try:
    with interrupt.cancel_on_signals("forced"):
        print("ready", flush=True)
        time.sleep(60)
except KeyboardInterrupt:
    print("cancelling", flush=True)
    time.sleep(60)  # a cleanup that hangs
"""

_STUCK = """
import signal, time
from flows import interrupt
try:
    with interrupt.cancel_on_signals("forced"):
        # the main thread stuck where no signal interrupts it (as in a C call that does
        # not return to Python for a while): its handler waits, the signals still arrive
        signal.pthread_sigmask(signal.SIG_BLOCK, interrupt.SIGNALS)
        print("ready", flush=True)
        time.sleep(60)
except KeyboardInterrupt:
    time.sleep(60)  # and its cleanup too
"""


def _python(src: str) -> subprocess.Popen:
    """`src` run by this Python in the repository, its output read as text."""
    return subprocess.Popen(
        [sys.executable, "-c", src], cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.mark.parametrize("first", [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_ends_the_command_at_once(first):
    proc = _python(_SECOND)
    try:
        assert proc.stdout.readline() == "ready\n"
        proc.send_signal(first)
        assert proc.stdout.readline() == "cancelling\n"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 128 + first, proc.stderr.read()
        assert proc.stderr.read().strip() == "forced"
    finally:
        proc.kill()
        proc.wait()


def test_a_second_signal_ends_it_while_the_main_thread_is_stuck():
    proc = _python(_STUCK)
    try:
        assert proc.stdout.readline() == "ready\n"
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)  # two Ctrl-Cs, not one: a signal still pending absorbs the next
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 128 + signal.SIGINT, proc.stderr.read()  # not after 60 s
        assert proc.stderr.read().strip() == "forced"
    finally:
        proc.kill()
        proc.wait()


_MID_QUERY = """
import duckdb
from flows import interrupt
con = duckdb.connect()
try:
    with interrupt.cancel_on_signals("forced"):
        print("ready", flush=True)
        con.sql("SELECT count(*) FROM range(100000000000) a, range(10) b").fetchall()
except BaseException as e:
    print(type(e).__name__, interrupt.is_cancellation(e), interrupt.first_signal(), flush=True)
"""


def test_a_signal_mid_query_is_a_cancellation_not_an_error():
    """DuckDB checks for signals mid-query and raises `RuntimeError: Query interrupted`
    in place of the handler's `Cancelled`: still the cancellation (a run recorded
    `cancelled`, exit 143), not `internal error` and exit 1, as a SIGTERM that landed in a
    lake query made of `crucible run` once."""
    proc = _python(_MID_QUERY)
    try:
        assert proc.stdout.readline() == "ready\n"
        time.sleep(0.3)  # in the query
        proc.send_signal(signal.SIGTERM)
        assert proc.stdout.readline() == f"RuntimeError True {int(signal.SIGTERM)}\n"
        assert proc.wait(30) == 0, proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()
