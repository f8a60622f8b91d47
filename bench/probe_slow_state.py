"""Does a machine state make a correct kernel time slow in every fresh job while it lasts?
A task's reference and its eager baseline timed with the verifier's own `time_cuda`, each
in a fresh process, under states a GPU node's batch puts the card in.

    python bench/probe_slow_state.py tasks/cuda/col_mean tasks/triton/col_mean \
        [--runs 5] [--out probe.json]

Why: in a catalog batch on the H100 node (`bench/results/kernels_i30_catalog_v10_h100.json`), cuda
col_mean's rename of its own reference timed 0.156 ms and then 0.154 ms in a second fresh
job (`confirm_slow`), where the reference alone times 0.101 ms: slow twice, so the
verdict stood. The states, each for `--runs` fresh timing processes:
- `alone`: nothing else on the GPU;
- `idle`: the process sleeps 2 s between its warm-up and its timing (clocks drop);
- `held`: 16 stopped processes each holding 2.5 GiB of GPU memory, as a batch's paused
  jobs do (42 GiB peak in that batch);
- `fragmented`: one process took 40 GiB in 2 MiB and 64 MiB pieces and gave every other
  one back, so a new allocation gets memory from between the ones it kept;
- `busy`: one process running memory-bound kernels all the while, never stopped (what a
  leak in the pause would look like).
In each process the reference is timed again with its output moved (`PADS`).
Needs a GPU and nvcc (cuda tasks). Prints one line per timing process: the state, the
task, the reference's and eager's medians, the SM clock nvidia-smi saw right after.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STATES = ("alone", "idle", "held", "fragmented", "busy")
PADS = (0, 512, 4096, 16384, 65536, 262144, 1 << 20, 1536 << 10)


def smi_clock() -> str:
    q = ["nvidia-smi", "--query-gpu=clocks.sm,memory.used", "--format=csv,noheader"]
    return subprocess.run(q, capture_output=True, text=True, check=False).stdout.strip()


def child(task: Path, idle_s: float) -> dict:
    """One fresh process: build the task's reference as the runner does, time it and eager."""
    with tempfile.TemporaryDirectory(prefix="probe-") as tmp:  # the cubin, while it runs
        return _timed(task, idle_s, Path(tmp))


def build(task: Path, tmp: Path) -> tuple:
    """The task's reference built as the runner builds a candidate (a CUDA task's cubin in
    `tmp`, with the verifier's flags), its eager model and the timing inputs."""
    import tomllib

    from verifiers.kernels import runner
    from verifiers.kernels.limits import DeviceLimits

    spec = tomllib.loads((task / "task.toml").read_text())
    problem = runner.problem_module((task / "problem.py").read_text(), None, "full")
    code = (task / "ref.py").read_text()
    extra = {}
    if "/cuda/" in str(task.resolve()):
        from verifiers.kernels.cudalaunch import CudaModule
        from verifiers.kernels.nvcc import cubin_flags, find_nvcc
        from verifiers.kernels.verifier import cuda_src

        src = cuda_src(code)
        arch = spec.get("platform", {}).get("arch", "sm_90")
        cu, cubin = tmp / "k.cu", tmp / "k.cubin"
        cu.write_text(src)  # compiled with the verifier's flags, loaded as the runner does
        cmd = [find_nvcc(), *cubin_flags(arch), "-o", str(cubin), str(cu)]
        built = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if built.returncode:
            raise RuntimeError(f"nvcc failed on {task}:\n{built.stderr[-2000:]}")
        extra["cuda_kernel"] = CudaModule(src, {}, DeviceLimits(), str(cubin)).kernel
    ref = runner.load_module("crucible_candidate", code, "ref.py", extra)
    inputs = runner.make_inputs(problem, 2024, "cuda")
    eager = runner.build_reference(problem, 0, "cuda")
    cand = runner.build_candidate(problem, ref, "ModelNew", eager, 0, "cuda")
    return cand, eager, inputs


def _timed(task: Path, idle_s: float, tmp: Path) -> dict:
    import torch

    from verifiers.kernels import runner

    cand, eager, inputs = build(task, tmp)
    with torch.no_grad():
        for _ in range(3):
            cand(*inputs), eager(*inputs)
    torch.cuda.synchronize()
    if idle_s:
        time.sleep(idle_s)
    t = runner.time_cuda(cand, inputs)
    clock = smi_clock()
    e = runner.time_cuda(eager, inputs)
    # the output's place: `forward` allocates it (small pool, 2 MiB segments), where the
    # job's earlier allocations leave room; padding moves it
    pads = {}
    for pad in PADS:
        hold = torch.empty(pad, dtype=torch.uint8, device="cuda") if pad else None
        with torch.no_grad():
            where = runner.as_outputs(cand(*inputs))[0].data_ptr() % (2 << 20)
        pads[pad] = (runner.time_cuda(cand, inputs)["median_ms"], where)
        del hold
    return {
        "pads": pads,
        "ref_ms": t["median_ms"],
        "ref_reps": t["reps"],
        "ref_ci": t["ci_ms"],
        "eager_ms": e["median_ms"],
        "clock_after_ref": clock,
        "x_ptr_mod_2mib": inputs[0].data_ptr() % (2 << 20),
    }


def run_child(script: str, *args: str, what: str) -> dict | None:
    """`script --child ARGS` in a fresh process: the JSON line it ends with, or None (its
    stderr's tail printed) where it failed."""
    out = subprocess.run(
        [sys.executable, script, "--child", *args], capture_output=True, text=True, check=False
    )
    if out.returncode:
        print(f"{what}: failed\n{out.stderr[-2000:]}", flush=True)
        return None
    return json.loads(out.stdout.splitlines()[-1])


def holder(gib: float, fragment: bool, busy: bool = False) -> None:
    """Hold `gib` GiB of GPU memory (fragment: in pieces, every other one given back),
    say so on stdout, then wait to be killed (the caller stops it, as a paused job is)."""
    import torch

    kept, pieces, total = [], [], 0
    while total < gib * 2**30:
        size = (2 << 20) if len(pieces) % 3 else (64 << 20)
        pieces.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
        total += size
    if fragment:
        kept = pieces[::2]
        del pieces
        torch.cuda.empty_cache()
    else:
        kept = pieces
    torch.cuda.synchronize()
    print(f"ready {sum(p.numel() for p in kept) / 2**30:.1f}", flush=True)
    if busy:  # another context's memory-bound kernels all the while (never stopped)
        while True:
            kept[0].add_(1)
    time.sleep(3600)


def start_holders(state: str) -> list[subprocess.Popen]:
    env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1")
    if state == "held":
        specs = [("2.5", "0")] * 16
    elif state == "fragmented":
        specs = [("40", "1")]
    elif state == "busy":
        specs = [("1", "busy")]
    else:
        return []
    procs = []
    for gib, frag in specs:
        procs.append(
            subprocess.Popen(
                [sys.executable, __file__, "--holder", gib, frag],
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
        )
    for p in procs:
        line = p.stdout.readline().strip()
        if not line.startswith("ready"):
            raise RuntimeError(f"a holder did not start: {line!r}")
        if state != "busy":
            os.kill(p.pid, signal.SIGSTOP)
    return procs


def each_child(script: str, states: str, tasks, runs: int, child_args):
    """For each state of `states` (comma-separated; its holders started, and killed after),
    each task and each of `runs` fresh processes: (state, task, run, the JSON line of
    `script --child TASK *child_args(state)`); a process that failed is skipped."""
    for state in states.split(","):
        procs = start_holders(state)
        try:
            print(f"== {state}: {smi_clock()}", flush=True)
            for task in tasks:
                for i in range(runs):
                    got = run_child(script, str(task), *child_args(state), what=f"{state} {task}")
                    if got is not None:
                        yield state, task, i, got
        finally:
            for p in procs:
                p.kill()
                p.wait()


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--holder":
        holder(float(sys.argv[2]), sys.argv[3] == "1", sys.argv[3] == "busy")
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(Path(sys.argv[2]), float(sys.argv[3]))), flush=True)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tasks", type=Path, nargs="+")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--states", default=",".join(STATES))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = []
    for state, task, _, got in each_child(
        __file__, args.states, args.tasks, args.runs, lambda st: ["2" if st == "idle" else "0"]
    ):
        row = {"state": state, "task": str(task), **got}
        rows.append(row)
        print(
            f"{state:10s} {task.parent.name}/{task.name:12s} "
            f"ref {row['ref_ms']:.4f} ms "
            f"({row['ref_reps']} reps)  eager {row['eager_ms']:.4f} ms  "
            f"x%2MiB={row['x_ptr_mod_2mib']}  after: {row['clock_after_ref']}\n"
            f"   output padded (pad: ms @ offset): {row['pads']}",
            flush=True,
        )
    print("\n== medians (ms): state task ref eager")
    for state in args.states.split(","):
        for task in args.tasks:
            got = [r for r in rows if r["state"] == state and r["task"] == str(task)]
            if got:
                ref = statistics.median(r["ref_ms"] for r in got)
                eager = statistics.median(r["eager_ms"] for r in got)
                lo, hi = min(r["ref_ms"] for r in got), max(r["ref_ms"] for r in got)
                print(f"{state:10s} {task}  ref {ref:.4f} [{lo:.4f}-{hi:.4f}]  eager {eager:.4f}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
