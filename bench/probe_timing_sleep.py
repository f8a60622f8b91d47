"""Does the sleep queued before each timed run cover the host's launch work? (#30)

`runner.time_cuda` queues a GPU sleep of 50-200 us (the run's own estimate, clamped)
before each timed run, so that its events time the device's work and not the Python
launch in front of it. Two runs of the same catalog batch on the H100 node
(`bench/results/kernels_i30_p16_{pause,prebuild}.json`) gave 10 of 303 verdicts apart,
all pass against slow, on kernels of 0.04-0.4 ms, up to 4x apart (linear_gelu_fp16
renamed: 0.99x, then 0.23x of eager). Where a forward's host-side issue outlasts the
sleep, the GPU idles inside the timed interval and the time follows the host's pace.

A second suspect: the GPU's clocks. The references, verified one at a time, flipped too
(col_mean's CUDA reference: 0.100 then 0.324 ms), and a mostly idle GPU lets its clocks
fall between candidates; the timed runs start seconds of idle later.

Per task (its reference, Triton), in this process on the GPU: the host-side issue time of
one forward (no synchronize), and `time_cuda`'s median after 2 s idle (cold) and after
200 ms of GPU spin (warm), with the rule's sleep and a long one, quiet and beside CPU
hogs, the SM clock read before each; the eager reference the same way.

    python bench/probe_timing_sleep.py [--tasks a,b] [--hogs 16] [--reps 3] [--long-us 2000]

Needs a GPU; prints one line per (task, model, condition) and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from verifiers.catalog import load_catalog  # noqa: E402

FLIPPED = "linear_gelu_fp16,log_softmax_rows,matmul_fp16,row_sum,row_sum_fp16,gelu_tanh,row_max"


def spin(stop) -> None:
    while not stop.is_set():
        sum(range(10_000))


def settle(state: str) -> None:
    """The GPU idle for 2 s (`cold`: its clocks fall) or spinning for 200 ms (`warm`)."""
    import torch

    torch.cuda.synchronize()
    if state == "cold":
        time.sleep(2.0)
    else:
        torch.cuda._sleep(int(0.2 * 2.0e9))
        torch.cuda.synchronize()


def clock_mhz() -> int | None:
    """The SM clock now (NVML, through torch), None where unreadable."""
    import torch

    try:
        return int(torch.cuda.clock_rate())
    except Exception:
        return None


def issue_ms(fn, args, n: int = 20) -> float:
    """Median wall ms of one forward's host side: the call returning, before any sync."""
    import torch

    out = []
    with torch.no_grad():
        for _ in range(n):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn(*args)
            out.append(1e3 * (time.perf_counter() - t0))
    torch.cuda.synchronize()
    return statistics.median(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", default=FLIPPED, help="comma-separated triton task names")
    p.add_argument("--hogs", type=int, default=16, help="CPU-spinning processes for 'loaded'")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--long-us", type=float, default=2000.0, help="the long sleep, us")
    p.add_argument("--out", default=None)
    args = p.parse_args()

    import torch

    from verifiers.kernels import runner
    from verifiers.kernels.verifier import _runner_problem

    tasks, errors = load_catalog(ROOT / "tasks", ["triton"], set(args.tasks.split(",")))
    if errors:
        print(errors, file=sys.stderr)
    rows = []
    for t in sorted(tasks, key=lambda t: t.name):
        problem = runner.problem_module(_runner_problem(t.harness["problem"]), None, "full")
        inputs = runner.make_inputs(problem, 2024, "cuda")
        cand = runner.load_module("crucible_candidate", t.reference, "candidate.py")
        entry = t.interface.get("entry", "ModelNew")
        # the eager model from the full problem (the runner's copy has no forward)
        full = runner.problem_module(t.harness["problem"], None, "eager")
        ref = runner.build_reference(full, 42, "cuda")
        models = {
            "reference": runner.build_candidate(problem, cand, entry, ref, 42, "cuda"),
            "eager": ref,
        }
        for name, model in models.items():
            issue = issue_ms(model, inputs)
            # (GPU state before timing, host load, the sleep): cold = idle 2 s first (the
            # clocks fall), warm = 200 ms of GPU spin first (the clocks rise)
            for state, load, sleep in (
                ("cold", "quiet", None),
                ("warm", "quiet", None),
                ("warm", "quiet", args.long_us),
                ("warm", "loaded", None),
                ("warm", "loaded", args.long_us),
            ):
                stop = multiprocessing.Event()
                hogs = [
                    multiprocessing.Process(target=spin, args=(stop,)) for _ in range(args.hogs)
                ]
                if load == "loaded":
                    for h in hogs:
                        h.start()
                try:
                    meds, clocks = [], []
                    for _ in range(args.reps):
                        settle(state)
                        clocks.append(clock_mhz())
                        # the rule's sleep unless this row names one
                        timed = runner.time_cuda(model, inputs, sleep="rule", sleep_us=sleep)
                        meds.append(timed["median_ms"])
                finally:
                    stop.set()
                    for h in hogs:
                        if h.is_alive():
                            h.join()
                row = {
                    "task": t.name,
                    "model": name,
                    "gpu": state,
                    "load": load,
                    "sleep_us": sleep if sleep is not None else "rule",
                    "issue_ms": round(issue, 4),
                    "clock_mhz_before": clocks,
                    "median_ms": [round(m, 4) for m in meds],
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    out = Path(args.out or ROOT / "bench/results/timing_sleep_probe.json")
    out.write_text(json.dumps({"device": torch.cuda.get_device_name(0), "rows": rows}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
