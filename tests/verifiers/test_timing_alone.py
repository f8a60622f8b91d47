"""The GPU alone for timed runs, from the host's side: a job that waits for it is stopped
whole (`Worker.still`: its server, the job's child and whatever the candidate started,
however it forked), and the GPU is checked quiet before the timed runs (`quiet.Prober`).

CI has no GPU: the stop runs on a real sandboxed worker; the quiet rule runs on scripted
probe times. `bench/probe_gpu_quiet.py` measures a probe on a quiet and on a busy GPU."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from verifiers.contract import Limits
from verifiers.kernels.pool import GpuLock
from verifiers.kernels.quiet import Prober
from verifiers.sandbox import (
    _descendants,
    _stat,
    _states,
    continue_pids,
    resisting,
    stop_tree,
    tree_snapshot,
)
from verifiers.warm import StopResisted

from .scriptworker import script_worker


# --- the quiet rule ---------------------------------------------------------------------------
class _Clock:
    def __init__(self, step: float):
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def _prober(times_us: list[float]) -> Prober:
    it = iter(times_us)
    return Prober(lambda: next(it))


def test_five_fast_probes_in_a_row_make_a_quiet_gpu():
    # a busy GPU's probes wait for another context's time slice; a fast probe among them
    # is luck (one landed at a slice's end), five in a row are a quiet GPU
    p = _prober([1900, 40, 2100, 35, 30, 1800, 30, 31, 33, 30, 2000, 40, 41, 39, 38, 37])
    q = p.wait_quiet(limit_s=60, clock=_Clock(0.001))
    assert q.quiet and q.probes == 16 and q.slowest_us == 2100 and q.bar_us == 200


def test_a_gpu_busy_past_the_limit_is_not_quiet():
    p = _prober([40, 30, 30, 30] + [1500, 25] * 1000)
    q = p.wait_quiet(limit_s=0.5, clock=_Clock(0.01))
    assert not q.quiet and q.slowest_us == 1500
    assert 0.5 <= q.waited_s < 0.6 and "1500 us" in q.describe()


def test_a_busy_gpus_own_probes_never_set_the_bar():
    """Slow probes all alike (a GPU busy from the first probe on) stay slow: the bar is
    the floor, or the round trip measured before any candidate ran."""
    q = _prober([1900, 1800, 2000] * 400).wait_quiet(limit_s=0.5, clock=_Clock(0.001))
    assert not q.quiet and q.bar_us == 200
    # a host whose own idle round trips are slow (calibrated): 4x its median
    p = _prober([300, 280, 320, 900, 1100, 1150, 1000, 1190])
    assert p.calibrate(n=3) == 300 and p.bar_us() == 1200
    q = p.wait_quiet(limit_s=60, clock=_Clock(0.001))
    assert q.quiet and q.probes == 5 and q.bar_us == 1200
    # a fast host: the floor
    p = _prober([10, 12, 11, 150, 199, 200, 100, 90])
    assert p.calibrate(n=3) == 11 and p.bar_us() == 200
    assert p.wait_quiet(limit_s=60, clock=_Clock(0.001)).quiet


# --- a waiting job stopped whole -------------------------------------------------------------
SERVER = """
import json, os, sys, threading, time
out = os.fdopen(int(sys.argv[1]), "w", buffering=1)
out.write('{"ready": true}\\n')

def spin():
    while True:
        pass

for line in sys.stdin:
    threading.Thread(target=spin, daemon=True).start()  # a thread the candidate left
    if os.fork() == 0:  # a child
        spin()
    if os.fork() == 0:  # an orphan in a session of its own (re-parented to pid 1)
        os.setsid()
        if os.fork() == 0:
            spin()
        os._exit(0)
    out.write('{"spinning": true}\\n')
    time.sleep(3600)
"""


SpinWorker = script_worker(SERVER, "still")


def _cpu(root: int) -> float:
    return tree_snapshot(root).cpu_s


def _progress(cpu, need_s: float = 0.05, within_s: float = 10.0) -> bool:
    """Whether `cpu()` grows by `need_s` within `within_s` (a loaded machine gives a
    spinner a small share of a core, never none)."""
    before, deadline = cpu(), time.monotonic() + within_s
    while time.monotonic() < deadline:
        if cpu() - before >= need_s:
            return True
        time.sleep(0.05)
    return False


def test_a_stilled_worker_runs_nothing_until_it_is_continued():
    """The job's thread, its child and a setsid'd orphan spin; while the worker is still,
    none of its processes gets CPU, and all run again after. Spins both cores for ~1 s."""
    w = SpinWorker(Limits(), index=11)
    try:
        assert w.run({"go": 1}, 30) == {"spinning": True}  # and it left them spinning
        root = w.proc.pid
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # until the orphan's spinner runs too
            if sum(1 for p in _descendants(root) if (st := _stat(p)) and st[0] == b"R") >= 2:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the job's spinners never ran")
        with w.still() as pids:
            time.sleep(0.1)  # what was on a CPU as it stopped is off it now
            before = _cpu(root)
            tree = _descendants(root)
            assert set(tree) <= set(pids), "a process of the worker was not stopped"
            states = [st[0] for st in map(_stat, tree) if st]
            assert all(x in b"TtZ" for x in states), states
            time.sleep(0.4)
            assert _cpu(root) - before < 0.02
        assert _progress(lambda: _cpu(root))  # continued: they spin again
    finally:
        w.close()


# a hostile candidate's processes that continue each other: each spins, sending SIGCONT to
# the others, so one stopped before the rest runs again unless it is stopped again
WAKERS = """
import os, signal
r, w = os.pipe()
kids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        os.close(w)
        others = [int(x) for x in os.read(r, 200).split()]
        while True:
            for p in others:
                try:
                    os.kill(p, signal.SIGCONT)
                except OSError:
                    pass
    kids.append(pid)
os.write(w, (" ".join(map(str, kids + [os.getpid()])) + " ").encode() * 3)
while True:
    for p in kids:
        os.kill(p, signal.SIGCONT)
"""


# the same, where the waker's main thread ended (pthread_exit) and its other thread runs
# on: /proc lists the process as a zombie (its leader's state), though it runs
ZOMBIE_LEADER = """
import ctypes, os, signal, threading
parent = os.getpid()
kid = os.fork()
if kid == 0:
    def wake():
        while True:
            try:
                os.kill(parent, signal.SIGCONT)
            except OSError:
                pass
    threading.Thread(target=wake).start()
    ctypes.CDLL(None).pthread_exit(None)
while True:
    os.kill(kid, signal.SIGCONT)
"""


@pytest.mark.parametrize(("program", "procs"), [(WAKERS, 4), (ZOMBIE_LEADER, 2)])
def test_processes_that_continue_each_other_are_stopped_all_the_same(program, procs):
    """Processes send each other SIGCONT in a loop. A stop that signalled each once left
    one running in about 3 of 8 rounds here (one continued a sibling before its own stop
    landed); one that re-stopped only what /proc listed as running missed the process
    whose leader is a zombie (2 of 3 runs of 8 rounds). Each of 12 rounds, every thread
    is stopped, none gets CPU, and `resisting` names none. Spins both cores ~3 s each."""
    p = subprocess.Popen([sys.executable, "-c", program], start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while len(_descendants(p.pid)) < procs and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # the kids have read their siblings' pids, the leader has ended
        for _ in range(12):
            pids = stop_tree(p.pid)
            assert len(pids) == procs
            time.sleep(0.05)
            before = _cpu(p.pid)
            time.sleep(0.1)
            states = {q: _states(q) for q in pids}
            assert resisting(p.pid) == {}, states
            assert all(x <= {b"T", b"Z"} for x in states.values()), states
            assert _cpu(p.pid) - before < 0.01
            continue_pids(pids)
            time.sleep(0.1)  # they spin again, continuing each other
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def test_stop_tree_on_a_gone_process_stops_nothing():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert stop_tree(p.pid) == ()
    continue_pids([p.pid])  # nothing there: no error


# --- a timing pauses the running jobs (GpuLock, pause mode) ---------------------------------
SPIN = "import time\nwhile True:\n    pass\n"


class _Job:
    """A running job as the lock sees it: a spinning process and the pauses it was told."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", SPIN])
        self.pauses: list[float] = []

    def root_pid(self) -> int:
        return self.proc.pid

    def pause_began(self) -> None:
        self._at = time.monotonic()

    def pause_ended(self) -> None:
        self.pauses.append(time.monotonic() - self._at)

    def cpu(self) -> float:
        return tree_snapshot(self.proc.pid).cpu_s

    def state(self) -> bytes:
        return _stat(self.proc.pid)[0]

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _started(target, *args) -> threading.Thread:
    t = threading.Thread(target=target, args=args, daemon=True)
    t.start()
    return t


def test_a_timing_pauses_the_running_jobs_at_once_and_continues_them():
    """Two jobs run under shared holds and a comparison is under way: a writer does not
    wait for the jobs to end (the drain); it stops them, waits for the comparison, and
    while it holds the GPU no job and no comparison starts. After it, the jobs run again,
    told how long they were paused. Spins both cores for ~1 s."""
    lock = GpuLock()
    jobs = [_Job(), _Job()]
    may_end = threading.Event()
    comparing, compared = threading.Event(), threading.Event()

    def running(job):
        with lock.shared(), lock.attach(job):
            may_end.wait(20)

    def comparison():
        with lock.shared(), lock.host_use():
            comparing.set()
            time.sleep(0.4)
            compared.set()  # inside: the writer waits for the comparison under way

    try:
        threads = [_started(running, j) for j in jobs]
        time.sleep(0.3)
        _started(comparison)
        comparing.wait(5)
        t0 = time.monotonic()
        late_job, late_compare = _Job(), threading.Event()
        with lock.exclusive():
            waited = time.monotonic() - t0
            assert compared.is_set() and 0.2 < waited < 5  # the comparison, not the jobs
            assert not may_end.is_set() and all(t.is_alive() for t in threads)
            assert [j.state() for j in jobs] == [b"T", b"T"]
            before = [j.cpu() for j in jobs]

            def late():
                with lock.attach(late_job):
                    pass
                with lock.host_use():
                    late_compare.set()

            starter = _started(late)
            time.sleep(0.4)
            assert [j.cpu() - b for j, b in zip(jobs, before, strict=True)] == [0.0, 0.0]
            assert starter.is_alive() and not late_compare.is_set()
        starter.join(5)
        assert late_compare.is_set()
        assert all(len(j.pauses) == 1 and j.pauses[0] >= 0.4 for j in jobs)
        assert all(_progress(j.cpu) for j in jobs)  # they run again
        assert lock.pauses == 1 and lock.pause_s >= 0.4
        # where the pause went: the stop, then the comparison under way (~0.4 s), in all
        [(stop_s, host_s, whole_s)] = lock.pause_log
        assert 0 <= stop_s < 2.0 and 0.1 < host_s < 5 and whole_s >= stop_s + host_s
        may_end.set()
        for t in threads:
            t.join(5)
        late_job.close()
    finally:
        may_end.set()
        for j in jobs:
            j.close()


def test_the_writers_own_job_runs_and_the_drain_still_waits():
    """An upgrade pauses the other jobs, never its own. With `pause=False` (the drain)
    nothing is stopped: the writer waits for the other job to end."""
    for pause in (True, False):
        lock = GpuLock(pause=pause)
        mine, other = _Job(), _Job()
        other_may_end, upgraded = threading.Event(), threading.Event()
        seen: dict = {}

        def others_job(lock=lock, other=other, other_may_end=other_may_end):
            with lock.shared(), lock.attach(other):
                other_may_end.wait(20)

        def my_job(lock=lock, mine=mine, other=other, seen=seen, upgraded=upgraded):
            with lock.shared(), lock.attach(mine):
                lock.upgrade()
                seen["other"], seen["mine"] = other.state(), mine.state()
                upgraded.set()
                lock.downgrade()

        try:
            t_other = _started(others_job)
            time.sleep(0.2)
            t_mine = _started(my_job)
            if pause:
                assert upgraded.wait(5) and seen["other"] == b"T" and seen["mine"] in b"RS"
            else:
                assert not upgraded.wait(0.5)  # the drain: it waits for the other job
                other_may_end.set()
                assert upgraded.wait(5) and seen["other"] in b"RS"
            other_may_end.set()
            t_mine.join(5)
            t_other.join(5)
            assert lock.pauses == (1 if pause else 0)
        finally:
            other_may_end.set()
            mine.close()
            other.close()


CPU_SERVER = """
import json, os, sys, time
out = os.fdopen(int(sys.argv[1]), "w", buffering=1)
out.write('{"ready": true}\\n')
for line in sys.stdin:
    need = json.loads(line)["cpu_s"]
    t0 = time.process_time()
    while time.process_time() - t0 < need:
        pass
    out.write('{"ok": true}\\n')
"""


CpuWorker = script_worker(CPU_SERVER, "paused")


def test_a_paused_job_is_not_timed_out_by_the_pause():
    """A job needing 0.3 CPU-s under a 6 s deadline is paused 6.5 s by another's timing:
    its deadline moves by the pause, and it finishes (it would be a time-out without)."""
    lock = GpuLock()
    w = CpuWorker(Limits(), index=12)
    out: dict = {}

    def job():
        with lock.shared(), lock.attach(w):
            try:
                out["res"] = w.run({"cpu_s": 0.3}, 6.0, cpu_s=60)
            except Exception as e:
                out["err"] = e

    try:
        t = _started(job)
        time.sleep(0.2)
        with lock.exclusive():
            time.sleep(6.5)
        t.join(20)
        assert out == {"res": {"ok": True}}, out
    finally:
        w.close()


RESIST_SERVER = """
import json, os, sys, time
out = os.fdopen(int(sys.argv[1]), "w", buffering=1)
out.write('{"ready": true}\\n')
for line in sys.stdin:
    for _ in range(2):
        if os.fork() == 0:
            while True:
                pass
    time.sleep(3600)
"""


ResistWorker = script_worker(RESIST_SERVER, "resist")


def test_a_job_still_running_after_the_stop_is_killed_as_the_candidates():
    """A job whose processes still run when the writer's stop has settled (here: a settle
    time too short for any stop to land, as a tree that outruns `stop_tree` would leave
    it) is killed; its job ends `StopResisted` (`resisted_stop`, the candidate's), and the
    worker starts again clean for the next job."""
    lock = GpuLock(settle_s=0.0)
    w = ResistWorker(Limits(), index=13)
    out: dict = {}

    def job():
        with lock.shared(), lock.attach(w):
            try:
                out["res"] = w.run({"go": 1}, 30.0, cpu_s=60)
            except Exception as e:
                out["err"] = e

    try:
        t = _started(job)
        deadline = time.monotonic() + 20
        while len(_descendants(w.root_pid())) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        with lock.exclusive():
            pass
        t.join(20)
        assert isinstance(out.get("err"), StopResisted), out
        assert "kept running while the host stopped them" in str(out["err"])
        assert lock.resisted == 1
        w.start()
        assert w.root_pid() is not None and w._resisted == []
    finally:
        w.close()
