"""Machine or candidate (`verifiers.sandbox.Stop`), measured on real runs in the sandbox.

Runs a sleeper, busy loops, a CPU-bound tool starved on a loaded CPU, a tiny wall limit, a
kill from outside and the RLIMIT_CPU kill, and prints what the host measured of each and
how the one rule classified it:

    .venv/bin/python bench/machine_rule.py
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from verifiers.contract import Limits
from verifiers.sandbox import SCHEDSTAT, Sandbox

SPIN = "while :; do :; done"


def run(argv: list[str], **limits) -> tuple[str | None, str]:
    with tempfile.TemporaryDirectory(prefix="crucible-machine-") as tmp:
        sb = Sandbox(Limits(**limits))
        res = sb.run(argv, sb.prepare_workdir(Path(tmp)))
    return res.limit_hit, res.stop.describe() if res.stop else ""


def hogs(n: int, cpu: int) -> list[subprocess.Popen]:
    """`n` busy processes pinned to `cpu`: a loaded machine."""
    return [subprocess.Popen(["taskset", "-c", str(cpu), "sh", "-c", SPIN]) for _ in range(n)]


def killed_from_outside() -> tuple[str | None, str]:
    marker = f"{time.time_ns() % 10**6}.{os.getpid()}"
    out: list = []
    t = threading.Thread(target=lambda: out.append(run(["sleep", marker], timeout_s=20)))
    t.start()
    target = f"sleep\0{marker}\0".encode()
    for _ in range(400):
        for pid in (p for p in os.listdir("/proc") if p.isdigit()):
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes() == target:
                    os.kill(int(pid), signal.SIGKILL)
                    t.join()
                    return out[0]
            except OSError:
                continue
        time.sleep(0.01)
    t.join()
    return out[0]


def main() -> None:
    print(f"schedstat: {SCHEDSTAT}, cores: {os.cpu_count()}")
    cases = [
        ("sleeper, wall 1s, CPU 20s", lambda: run(["sleep", "30"], timeout_s=1)),
        ("busy loop, wall 2s = CPU 2s", lambda: run(["sh", "-c", SPIN], timeout_s=2, cpu_s=2)),
        (
            "2 busy loops ignoring SIGXCPU, wall 1.5s, CPU 1s",
            lambda: run(["sh", "-c", f"trap '' XCPU; ({SPIN}) & {SPIN}"], timeout_s=1.5, cpu_s=1),
        ),
        (
            "CPU-bound, wall 0.05s, CPU 20s",
            lambda: run(["sh", "-c", SPIN], timeout_s=0.05, cpu_s=20),
        ),
        (
            "CPU-bound, wall 0.05s, CPU 20s (python3 -c)",
            lambda: run(["python3", "-c", "sum(range(10**9))"], timeout_s=0.05, cpu_s=20),
        ),
        ("RLIMIT_CPU hard kill (ignores SIGXCPU), CPU 1s", None),
        ("SIGKILL from outside", killed_from_outside),
        ("exit 137 (not a signal)", lambda: run(["sh", "-c", "exit 137"])),
    ]
    for name, fn in cases:
        if fn is None:
            hit, measured = run(["sh", "-c", f"trap '' XCPU; {SPIN}"], timeout_s=20, cpu_s=1)
        else:
            hit, measured = fn()
        print(f"{name:52} {hit!s:18} {measured}")
    loaded = hogs(3, 0)
    try:
        time.sleep(0.2)
        hit, measured = run(["taskset", "-c", "0", "sh", "-c", SPIN], timeout_s=2, cpu_s=2)
        print(
            f"{'starved: pinned with 3 hogs on its CPU, wall 2s = CPU 2s':52} {hit!s:18} {measured}"
        )
    finally:
        for p in loaded:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
