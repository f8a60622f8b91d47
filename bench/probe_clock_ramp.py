"""Is a timing slow while the GPU's clock rises from idle, and does `quiet.clock_up` (the GPU
kept busy until the SM clock is up) make it the warm GPU's time?

    python bench/probe_clock_ramp.py tasks/cuda/col_mean [--cycles 2] [--out probe.json]

Why: `probe_slow_state.py`'s first timing process on a GPU that had no context open (NVML:
345 MHz) timed cuda col_mean's reference at 1.73x (0.1785 ms, 20 runs, interval
0.175-0.182), and 0.103 ms moments later in the same process. Each cycle here waits (no
CUDA context in this process) until NVML reads the SM clock idle, then starts one fresh
process per variant: `ref-first` times the reference first, `eager-first` the eager
baseline first, `spun` runs the host's check before timed runs (`quiet.gpu_quiet`: the
quiet probes, then `clock_up`) and then the reference. Each then times both
again (warm). A thread samples NVML's SM clock every millisecond in the timing process.
Needs a GPU, NVML (nvidia-ml-py) and nvcc (cuda tasks).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

VARIANTS = ("ref-first", "eager-first", "spun")
IDLE_MHZ = 600.0


def nvml_clock():
    """NVML's SM clock of card 0 (a one-GPU node; the main process opens no CUDA context,
    so it cannot ask torch which card, as `quiet.max_sm_mhz` does)."""
    import pynvml

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    return lambda: float(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))


def wait_idle(limit_s: float) -> tuple[float, float]:
    """Until NVML reads the SM clock at most IDLE_MHZ (this process holds no context)."""
    read, t0 = nvml_clock(), time.monotonic()
    mhz = read()
    while mhz > IDLE_MHZ and time.monotonic() - t0 < limit_s:
        time.sleep(0.1)
        mhz = read()
    return mhz, time.monotonic() - t0


def child(task: Path, variant: str) -> dict:
    import torch
    from probe_slow_state import build

    from verifiers.kernels import quiet, runner

    read = nvml_clock()
    trace: list[tuple[float, float]] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            trace.append((time.perf_counter(), read()))
            time.sleep(0.001)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="probe-") as tmp:
        cand, eager, inputs = build(task, Path(tmp))
        with torch.no_grad():
            for _ in range(3):
                cand(*inputs), eager(*inputs)
        torch.cuda.synchronize()
        out: dict = {"variant": variant, "kernel_mhz_before": quiet.gpu_mhz()}
        if variant == "spun":  # the host's own check before timed runs: quiet, clock up
            q = quiet.gpu_quiet()
            c = q.clock
            out["clock_up"] = {
                "ready": q.ready,
                "start_mhz": round(c.start_mhz),
                "mhz": round(c.mhz),
                "max_mhz": c.max_mhz,
                "spun_s": round(c.spun_s, 4),
                "up": c.up,
            }
        t0 = time.perf_counter()
        order = (eager, cand) if variant == "eager-first" else (cand, eager)
        firsts = [runner.time_cuda(m, inputs) for m in order]
        t1 = time.perf_counter()
        out["kernel_mhz_after_first"] = quiet.gpu_mhz()
        ref_w, eager_w = runner.time_cuda(cand, inputs), runner.time_cuda(eager, inputs)
    stop.set()
    sampler.join()
    ref_f, eager_f = firsts if variant != "eager-first" else firsts[::-1]
    during = [m for t, m in trace if t0 <= t <= t1]
    mx = max((m for _, m in trace), default=0.0)
    up_at = next((t - t_start for t, m in trace if m >= 0.9 * mx), None)
    out.update(
        ref_first_ms=ref_f["median_ms"],
        ref_first_reps=ref_f["reps"],
        eager_first_ms=eager_f["median_ms"],
        ref_warm_ms=ref_w["median_ms"],
        eager_warm_ms=eager_w["median_ms"],
        first_timings_s=round(t1 - t0, 4),
        nvml_at_start=trace[0][1] if trace else None,
        nvml_during_first=[min(during), max(during)] if during else None,
        nvml_max=mx,
        nvml_up_after_s=round(up_at, 3) if up_at is not None else None,
        timing_started_after_s=round(t0 - t_start, 3),
        samples=len(trace),
    )
    return out


def main() -> int:
    from probe_slow_state import run_child

    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(Path(sys.argv[2]), sys.argv[3])), flush=True)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("task", type=Path)
    ap.add_argument("--cycles", type=int, default=2)
    ap.add_argument("--variants", default=",".join(VARIANTS), help="in this order")
    ap.add_argument("--idle-wait-s", type=float, default=20.0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = []
    for cycle in range(args.cycles):
        for variant in args.variants.split(","):
            mhz, waited = wait_idle(args.idle_wait_s)
            got = run_child(__file__, str(args.task), variant, what=variant)
            if got is None:
                continue
            row = {"cycle": cycle, "idle_mhz": mhz, "idle_wait_s": round(waited, 2), **got}
            rows.append(row)
            up = row.get("clock_up") or {}
            print(
                f"{variant:11} idle {mhz:5.0f} MHz after {waited:5.1f}s  ref first "
                f"{row['ref_first_ms']:.4f} warm {row['ref_warm_ms']:.4f}  eager first "
                f"{row['eager_first_ms']:.4f} warm {row['eager_warm_ms']:.4f}  kernel MHz "
                f"{row['kernel_mhz_before']:.0f} -> {row['kernel_mhz_after_first']:.0f}  "
                f"nvml during {row['nvml_during_first']} up after {row['nvml_up_after_s']}s "
                f"(timing at {row['timing_started_after_s']}s)  clock_up {up}",
                flush=True,
            )
            if args.out:
                args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
