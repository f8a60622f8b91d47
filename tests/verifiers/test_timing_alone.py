"""The GPU alone for timed runs, from the host's side: a job that waits for it is stopped
whole (`Worker.still`: its server, the job's child and whatever the candidate started,
however it forked), and the GPU is checked quiet before the timed runs (`quiet.Prober`).

CI has no GPU: the stop runs on a real sandboxed worker; the quiet rule runs on scripted
probe times. `bench/probe_gpu_quiet.py` measures a probe on a quiet and on a busy GPU."""

from __future__ import annotations

import sys
import time

import pytest

from verifiers.contract import Limits
from verifiers.kernels.quiet import Prober
from verifiers.sandbox import _descendants, _stat, continue_pids, stop_tree, tree_snapshot
from verifiers.warm import Worker, WorkerCommand


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


class SpinWorker(Worker):
    prefix = "still"

    def command(self, fd: int) -> WorkerCommand:
        argv = [sys.executable, "-I", "-S", "-c", SERVER, str(fd)]
        return WorkerCommand(argv, self.python_env(), ro=self.python_paths())


def _cpu(root: int) -> float:
    return tree_snapshot(root).cpu_s


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
        before = _cpu(root)
        time.sleep(0.3)
        assert _cpu(root) - before > 0.2  # continued: they spin again
    finally:
        w.close()


def test_stop_tree_on_a_gone_process_stops_nothing():
    import subprocess

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert stop_tree(p.pid) == ()
    continue_pids([p.pid])  # nothing there: no error
