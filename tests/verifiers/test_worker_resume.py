"""The JSONL worker loses nothing and leaves nothing behind: each verdict is on disk as it
completes, a killed run resumes where it stopped, SIGTERM / SIGINT remove the warm
workers' dirs, and a SIGKILLed run's dirs are swept by the next process. Real workers
(`python -m verifiers.<domain>`) with the real tools: RTL where no warm worker is needed
(cheapest), CAD where one is."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from verifiers.catalog import load_task
from verifiers.contract import Candidate, Limits, Status, Task, Verdict
from verifiers.registry import get_verifier
from verifiers.warm import sweep_stale
from verifiers.worker import _Writer, read_answered, run

ROOT = Path(__file__).resolve().parents[2]
RTL_TOOLS = ("iverilog", "vvp", "verilator", "yosys", "yosys-abc", "bwrap")
needs_rtl = pytest.mark.skipif(
    any(shutil.which(t) is None for t in RTL_TOOLS),
    reason="needs iverilog, verilator, yosys, bubblewrap: apt-get install -y iverilog "
    "verilator yosys bubblewrap",
)
needs_cad = pytest.mark.skipif(
    importlib.util.find_spec("cadquery") is None or shutil.which("bwrap") is None,
    reason="needs cadquery and bubblewrap: pip install cadquery; apt-get install bubblewrap",
)
# a simulation that never ends: the sim gate's timeout stops it (the line's own limits)
RTL_HANG = "  reg spin;\n  initial begin spin = 0; while (1) spin = ~spin; end\nendmodule"
CAD_HANG = (
    "import cadquery as cq\nx = 0\nwhile True:\n    x += 1\nresult = cq.Workplane().box(1, 1, 1)\n"
)


def line(task: Task, code: str, limits: Limits | None = None) -> str:
    cand = Candidate(task.task_id, code, "reference", "test")
    item = {"task": task.to_dict(), "candidate": cand.to_dict()}
    if limits is not None:
        item["limits"] = limits.to_dict()
    return json.dumps(item) + "\n"


def cid(raw: str) -> str:
    return json.loads(raw)["candidate"]["candidate_id"]


def rtl_lines() -> tuple[str, str, str]:
    """Two quick candidates and one whose simulation hangs until its 1.5 s timeout."""
    t = load_task(ROOT / "tasks" / "rtl" / "adder8")
    hang = t.reference.replace("endmodule", RTL_HANG)
    return (
        line(t, t.reference + "\n// a\n"),
        line(t, hang, Limits(timeout_s=1.5)),
        line(t, t.reference + "\n// b\n"),
    )


def cad_lines() -> tuple[str, str]:
    """One quick candidate and one that spins (60 s: the tests stop it first)."""
    t = load_task(ROOT / "tasks" / "cad" / "bolt_flange")
    return line(t, t.reference + "\n# a\n"), line(t, CAD_HANG, Limits(timeout_s=60, cpu_s=60))


class Worker:
    """`python -m verifiers.<domain> IN --out OUT ...` in the background."""

    def __init__(self, tmp: Path, domain: str, lines, *args: str, name: str = "run"):
        self.inp, self.out = tmp / "in.jsonl", tmp / "out.jsonl"
        self.inp.write_text("".join(lines))
        self.errfile = tmp / f"{name}.err"
        self.scratch = tmp / "scratch"
        self.scratch.mkdir(exist_ok=True)
        env = {**os.environ, "TMPDIR": str(self.scratch)}
        argv = [sys.executable, "-m", f"verifiers.{domain}", str(self.inp), "--out", str(self.out)]
        with self.errfile.open("w") as err:
            self.proc = subprocess.Popen([*argv, *args], cwd=ROOT, env=env, stderr=err)

    def verdicts(self) -> list[dict]:
        text = self.out.read_text() if self.out.exists() else ""
        return [json.loads(x) for x in text.splitlines(keepends=True) if x.endswith("\n")]

    def wait_for(self, n: int, timeout: float = 60) -> list[dict]:
        """The first `n` verdicts, asserting the worker is still running when they are out."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            got = self.verdicts()
            if len(got) >= n:
                assert self.proc.poll() is None, "the worker ended before the verdicts were read"
                return got
            assert self.proc.poll() is None, self.stderr()
            time.sleep(0.05)
        raise AssertionError(f"no {n} verdict(s) in {timeout}s: {self.stderr()}")

    def finish(self, timeout: float = 60) -> int:
        return self.proc.wait(timeout=timeout)

    def stderr(self) -> str:
        return self.errfile.read_text()

    def kill(self, *sigs: int) -> int:
        for s in sigs:
            self.proc.send_signal(s)
        return self.finish()

    def scratch_left(self) -> list[str]:
        return sorted(p.name for p in self.scratch.iterdir() if p.name.startswith("crucible-"))


@needs_rtl
def test_each_verdict_is_written_as_it_completes(tmp_path):
    """A batch of 8 with a slow line: the quick one's verdict is on disk while the slow
    one still runs (it used to wait for the whole batch)."""
    quick, slow, _ = rtl_lines()
    w = Worker(tmp_path, "rtl", [quick, slow], "--batch", "8")
    first = w.wait_for(1)
    assert [v["candidate_id"] for v in first] == [cid(quick)]
    assert first[0]["status"] == "pass"
    assert w.finish() == 0, w.stderr()
    got = w.verdicts()
    assert [v["candidate_id"] for v in got] == [cid(quick), cid(slow)]
    assert got[1]["status"] == Status.TIMEOUT


@needs_rtl
def test_a_killed_run_resumes_without_verifying_again(tmp_path):
    """SIGKILLed mid-batch (with a half-written line, as a kill mid-write leaves it): the
    rerun on the same --out keeps what was written, cuts the partial line and verifies
    only the line that had no verdict."""
    quick_a, slow, quick_b = rtl_lines()
    lines = [quick_a, "{not json\n", slow, quick_b]
    w = Worker(tmp_path, "rtl", lines, "--batch", "8")
    w.wait_for(2)  # the two quick ones (one group: the same limits); the slow one runs
    assert w.kill(signal.SIGKILL) == -signal.SIGKILL
    before = w.out.read_text()
    assert {json.loads(x)["candidate_id"] for x in before.splitlines()} == {
        cid(quick_a),
        cid(quick_b),
    }
    with w.out.open("a") as f:
        f.write(before.splitlines(keepends=True)[0][:150])  # no newline: cut off on resume

    again = Worker(tmp_path, "rtl", lines, "--batch", "8", name="rerun")
    assert again.finish() == 1  # the malformed line, as in any run
    err = again.stderr()
    assert "line 2: skipped, malformed" in err
    assert "2 line(s) already answered in the output, skipped" in err
    after = again.out.read_text()
    assert after.startswith(before)  # the first run's verdicts stand, byte for byte
    got = [json.loads(x) for x in after.splitlines()]  # every line whole JSON
    assert sorted(v["candidate_id"] for v in got) == sorted(map(cid, (quick_a, slow, quick_b)))
    assert got[-1]["candidate_id"] == cid(slow) and got[-1]["status"] == Status.TIMEOUT

    # once more: nothing left to verify; --fresh starts over
    third = Worker(tmp_path, "rtl", lines, name="third")
    assert third.finish() == 1 and "3 line(s) already answered" in third.stderr()
    assert third.out.read_text() == after
    fresh = Worker(tmp_path, "rtl", [quick_a], "--fresh", name="fresh")
    assert fresh.finish() == 0
    assert [v["candidate_id"] for v in fresh.verdicts()] == [cid(quick_a)]


@needs_rtl
def test_a_verdict_of_another_verifier_version_is_no_answer(tmp_path):
    """Resume skips a line answered by this verifier and version only: one an older
    version gave is verified again."""
    quick_a, _, quick_b = rtl_lines()
    task_id = json.loads(quick_a)["task"]["task_id"]
    current = get_verifier("rtl").version
    path = tmp_path / "out.jsonl"
    path.write_text(
        "".join(
            json.dumps(Verdict(cid(q), task_id, "rtl", "rtl", v, Status.PASS).to_dict()) + "\n"
            for q, v in ((quick_a, f"{current}-older"), (quick_b, current))
        )
    )
    answered = read_answered(path)
    err = io.StringIO()
    with path.open("a") as out:
        assert run("rtl", [quick_a, quick_b], out, err, answered=answered) == 0
    assert "1 line(s) already answered" in err.getvalue()
    got = [json.loads(x) for x in path.read_text().splitlines()]
    assert [(v["candidate_id"], v["verifier_version"]) for v in got[2:]] == [
        (cid(quick_a), current)
    ]


def test_resume_refuses_an_output_that_is_not_verdicts(tmp_path):
    (tmp_path / "out.jsonl").write_text('{"task": {}}\n')
    w = Worker(tmp_path, "rtl", [])
    assert w.finish() == 2
    assert "out.jsonl:1 is not a verdict line" in w.stderr() and "--fresh" in w.stderr()
    assert (tmp_path / "out.jsonl").read_text() == '{"task": {}}\n'


@needs_cad
def test_sigterm_removes_the_warm_workers_dirs(tmp_path):
    """SIGINT and SIGTERM at once while a candidate spins in a warm worker: cleanup is not
    cut short by the second signal; no worker dir, no verdict of the abandoned line."""
    quick, spin = cad_lines()
    w = Worker(tmp_path, "cad", [quick, spin], "--workers", "1", "--batch", "8")
    assert [v["candidate_id"] for v in w.wait_for(1)] == [cid(quick)]
    pid = w.proc.pid
    live = w.scratch_left()
    assert any(n.startswith("crucible-cadworker0-") and f"-p{pid}-" in n for n in live), live
    t0 = time.monotonic()
    rc = w.kill(signal.SIGINT, signal.SIGTERM)
    assert rc in (128 + signal.SIGINT, 128 + signal.SIGTERM), w.stderr()
    assert time.monotonic() - t0 < 30  # the spinning job is stopped, not waited for
    assert w.scratch_left() == []
    assert "warm workers stopped, their dirs removed" in w.stderr()
    assert "--out" in w.stderr()  # how to resume
    assert [v["candidate_id"] for v in w.verdicts()] == [cid(quick)]


@needs_cad
def test_the_dirs_of_a_sigkilled_worker_are_swept(tmp_path):
    """SIGKILL leaves the warm workers' dirs; the next process sweeps them (dead pid in
    their name), and only them."""
    quick, spin = cad_lines()
    w = Worker(tmp_path, "cad", [quick, spin], "--workers", "1", "--batch", "8")
    w.wait_for(1)
    dead = [n for n in w.scratch_left() if f"-p{w.proc.pid}-" in n]
    assert any(n.startswith("crucible-cadworker") for n in dead)
    assert w.kill(signal.SIGKILL) == -signal.SIGKILL
    assert set(dead) <= set(w.scratch_left())  # left behind

    scratch = w.scratch
    alive = scratch / f"crucible-kworker3-p{os.getpid()}-alive"
    unnamed = scratch / "crucible-kworker4-nopid"
    outside = tmp_path / "outside"
    for d in (alive, unnamed, outside):
        d.mkdir()
    (outside / "keep").write_text("x")
    link = scratch / f"crucible-kworker5-p{w.proc.pid}-link"
    link.symlink_to(outside)
    kept = {alive.name, unnamed.name, link.name}
    if os.geteuid() == 0:  # another uid's dir, under a dead pid: not ours to remove
        others = scratch / f"crucible-kworker6-p{w.proc.pid}-theirs"
        others.mkdir()
        os.chown(others, 4242, 4242)
        kept.add(others.name)

    removed = sweep_stale(scratch)
    assert sorted(p.name for p in removed) == sorted(dead)
    left = set(w.scratch_left())
    assert not left & set(dead)
    assert kept <= left
    assert (outside / "keep").read_text() == "x"  # a link is never followed


def _held_race():
    """A CAD batch of one spinning candidate whose verifier's build-gate pool call is
    held until the verifier is closed (30 s at most: the ordering of the race, made
    certain): (batches, its pending lines, verifier, asked, made, its real close), `asked`
    set once the candidate in flight is past its stop check and asks."""
    from verifiers.cad.verifier import CadVerifier
    from verifiers.worker import _Batches, _parse

    _, spin = cad_lines()
    task, cand, limits = _parse("cad", spin)
    batches = _Batches("cad", None, _Writer(io.StringIO(), io.StringIO(), False))
    v = batches._verifier = CadVerifier()
    asked, closed, made = threading.Event(), threading.Event(), []
    real_pool, real_close = v.pool, v.close

    def late_pool(lim: Limits, role: str = "build"):
        if not made:  # verify_many's, before any candidate's stop check
            made.append(real_pool(lim, role))
            return made[-1]
        asked.set()  # the build gate's, inside the candidate's verify
        closed.wait(30)
        made.append(real_pool(lim, role))
        return made[-1]

    def close() -> None:
        real_close()
        closed.set()

    v.pool, v.close = late_pool, close
    return batches, [(1, task, cand, limits)], v, asked, made, real_close


@needs_cad
def test_a_pool_the_verifier_makes_after_the_stop_is_closed_too():
    """A stop lands while the candidate in flight is past its stop check but has not
    made its pool yet (the verifier's static work before it): the pool it makes after
    the stop's first close, and the worker it starts there, are closed too. The stop does
    not wait for the candidate's own timeout (60 s; a CI run's SIGTERM test once did)."""
    batches, pending, v, asked, made, real_close = _held_race()
    t = threading.Thread(target=batches.verify, args=(pending,), daemon=True)
    t.start()
    try:
        assert asked.wait(60), "the candidate never asked for a pool"
        assert not batches._idle.is_set()  # the batch thread is inside its batch
        t0 = time.monotonic()
        batches.abort()
        assert time.monotonic() - t0 < 30  # the spinning job stopped, not waited for
        t.join(10)
        assert not t.is_alive()
        assert len(made) == 2 and all(p._closed for p in made)
        assert not v._pools  # none made after the last close
    finally:
        batches.shutdown()
        real_close()


@needs_cad
def test_a_stop_between_the_batchs_submit_and_its_bookkeeping_still_closes_it():
    """The signal's handler runs on the thread that submitted the batch, between two of
    its bytecodes: here right after the submit returns, once the candidate is past its
    stop check. The stop still sees the batch in flight (the batch thread marks itself
    busy; a future stored after the submit was not stored yet) and closes what it runs.
    Before: the stop saw no batch, closed nothing, and the candidate ran on for its
    held 30 s and its own 60 s timeout."""
    batches, pending, _, asked, made, real_close = _held_race()
    real_submit, took = batches._thread.submit, []

    def submit_then_signal(fn, *args):
        fut = real_submit(fn, *args)
        assert asked.wait(60), "the candidate never asked for a pool"
        t0 = time.monotonic()
        batches.abort()
        took.append(time.monotonic() - t0)
        return fut

    batches._thread.submit = submit_then_signal
    t = threading.Thread(target=batches.verify, args=(pending,), daemon=True)
    t.start()
    try:
        t.join(40)
        assert not t.is_alive(), "the batch ran on after the stop"
        assert took and took[0] < 30
        assert len(made) == 2 and all(p._closed for p in made)
    finally:
        batches.shutdown()
        real_close()


SERVER = """
import json, os, sys
out = os.fdopen(int(sys.argv[1]), "w", buffering=1)
out.write('{"ready": true}\\n')
for line in sys.stdin:
    out.write('{"ok": true}\\n')
"""


def test_a_worker_closed_as_it_starts_does_not_start(monkeypatch):
    """`close` from another thread lands while a restart makes the server, before `start`
    holds it (the stop of a run racing a restart): close cannot see that process, so
    start stops it itself and fails, instead of running a job in a closed worker."""
    import verifiers.warm as warm
    from verifiers.warm import Worker, WorkerCommand, WorkerStartError

    class Server(Worker):
        prefix = "closing"

        def command(self, fd: int) -> WorkerCommand:
            argv = [sys.executable, "-I", "-S", "-c", SERVER, str(fd)]
            return WorkerCommand(argv, self.python_env(), ro=self.python_paths())

    # unconfined: no bwrap to fail on the dirs close removed, the race at its plainest
    w = Server(Limits(unconfined=True), index=11)  # started
    assert w.run({}, 30) == {"ok": True}
    made = []
    spawner = warm._SPAWNER

    class ClosingSpawner:
        """The spawner's Popen, then `close` before start reads its result."""

        def submit(self, fn, *args, **kwargs):
            fut = spawner.submit(fn, *args, **kwargs)
            made.append(fut.result())
            w.close()
            return fut

    monkeypatch.setattr(warm, "_SPAWNER", ClosingSpawner())
    try:
        with pytest.raises(WorkerStartError, match="as it started"):
            w.restart()  # a dirty worker's, or a job's after its server died
        assert w.proc is None
        assert made[0].wait(timeout=10) is not None  # killed, not left running
    finally:
        monkeypatch.undo()
        w.close()
        for proc in made:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _verdict(n: int) -> Verdict:
    return Verdict(f"c{n}", "t", "rtl", "rtl", "1", Status.PASS)


@pytest.mark.parametrize("ordered", [False, True])
def test_writer_orders_only_when_asked(ordered):
    """Completion order by default; `--ordered` holds a verdict until each earlier line of
    its batch has one (or has none: a crash releases the lines behind it)."""
    out, err = io.StringIO(), io.StringIO()
    w = _Writer(out, err, ordered)
    w.begin([(10, "a"), (11, "b"), (12, "c")])

    def ids() -> list[str]:
        return [json.loads(x)["candidate_id"] for x in out.getvalue().splitlines()]

    w.answer("c", _verdict(3))
    assert ids() == ([] if ordered else ["c3"])
    w.answer("a", _verdict(1))
    assert ids() == (["c1"] if ordered else ["c3", "c1"])
    w.give_up("b", "the verifier crashed: boom")
    assert ids() == (["c1", "c3"] if ordered else ["c3", "c1"])
    assert err.getvalue() == "line 11: no verdict, the verifier crashed: boom\n"
    assert w.lost == 1
    w.answer("a", _verdict(9))  # a key answered already: nothing more
    w.close()
    w.begin([(13, "d")])
    w.answer("d", _verdict(4))  # closed: a verdict finished while stopping is not written
    assert len(ids()) == 2
