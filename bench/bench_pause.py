"""What pausing the running jobs costs a timing (`GpuLock`, pause mode), on this machine.

    python bench/bench_pause.py [--runners 1,4,8,16] [--rounds 30] [--unconfined]

Starts the most runners asked for: real sandboxed warm workers, each running a job whose
candidate process spins in a forked child (a job mid-trial). For each count, one thread
per runner holds the lock shared with its job attached, and a writer takes the GPU alone
`--rounds` times with nothing inside: the pause's own cost (stopping every attached
runner's sandbox tree, one pass over /proc for all, and continuing them). No GPU needed:
this is the CPU side of the pause; the timed runs themselves are on the GPU bench. Prints
the median and 90th percentile milliseconds per pause, and the processes stopped.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from verifiers.contract import Limits  # noqa: E402
from verifiers.kernels.pool import GpuLock  # noqa: E402
from verifiers.warm import Worker, WorkerCommand  # noqa: E402

SERVER = """
import json, os, sys, time
out = os.fdopen(int(sys.argv[1]), "w", buffering=1)
out.write('{"ready": true}\\n')
for line in sys.stdin:
    if os.fork() == 0:  # the job's child, mid-trial: it computes
        while True:
            time.sleep(0.001)
    out.write('{"running": true}\\n')
"""


class JobWorker(Worker):
    prefix = "pausebench"

    def command(self, fd: int) -> WorkerCommand:
        argv = [sys.executable, "-I", "-S", "-c", SERVER, str(fd)]
        return WorkerCommand(argv, self.python_env(), ro=self.python_paths())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runners", default="1,4,8,16")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--unconfined", action="store_true")
    args = p.parse_args()
    counts = [int(x) for x in args.runners.split(",")]
    limits = Limits(unconfined=args.unconfined)
    workers = [JobWorker(limits, index=40 + i) for i in range(max(counts))]
    rows = []
    try:
        for w in workers:
            assert w.run({}, 60) == {"running": True}
        for n in counts:
            lock = GpuLock()
            done = threading.Event()
            ready = threading.Barrier(n + 1)

            def hold(w, lock=lock, ready=ready, done=done):
                with lock.shared(), lock.attach(w):
                    ready.wait()
                    done.wait()

            threads = [threading.Thread(target=hold, args=(w,)) for w in workers[:n]]
            for t in threads:
                t.start()
            ready.wait()
            times = []
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                with lock.exclusive():
                    stopped = len(lock._paused[1]) if lock._paused else 0
                times.append((time.perf_counter() - t0) * 1e3)
                time.sleep(0.01)
            done.set()
            for t in threads:
                t.join()
            q = sorted(times)
            rows.append((n, stopped, statistics.median(q), q[int(0.9 * (len(q) - 1))]))
    finally:
        for w in workers:
            w.close()

    print(f"cores {os.cpu_count()}; {args.rounds} pauses per row")
    print(f"{'runners':>8}{'stopped':>9}{'median ms':>11}{'p90 ms':>9}")
    for n, stopped, med, p90 in rows:
        print(f"{n:>8}{stopped:>9}{med:>11.2f}{p90:>9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
