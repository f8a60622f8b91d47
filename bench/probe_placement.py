"""Does where a timing's input lies in GPU memory decide whether a correct kernel times slow?

    python bench/probe_placement.py tasks/cuda/col_mean tasks/triton/col_mean \
        [--allocs 10] [--procs 3] [--states alone,held] [--out probe.json]

Why: in the catalog batch at verifier 12 on the H100 node (`bench/results/
kernels_i30_catalog_v12_h100.json`), Triton col_mean's rename of its own reference timed
0.182, 0.110 and 0.172 ms in three fresh jobs (`confirm_slow`), the reference 0.110 ms,
the SM clock up (1,894 MHz read by the verifier's own kernel) and the eager baseline timed
again beside it as first measured (0.1229 ms): a state of the job, not of the card's
clocks. Each fresh process here copies the task's timing input `--allocs` times (every
copy kept, so each is memory of its own) and times the reference and the eager baseline
on each copy with the verifier's `time_cuda`, then every copy once more in the same order:
a slow time that follows its copy is the memory's place; one that follows the moment is
not. `held`: 16 stopped processes holding 2.5 GiB each (`probe_slow_state.start_holders`),
as a batch's paused jobs do. Needs a GPU and nvcc (cuda tasks).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def child(task: Path, allocs: int) -> dict:
    import torch
    from probe_slow_state import build

    from verifiers.kernels import runner

    with tempfile.TemporaryDirectory(prefix="probe-") as tmp:
        cand, eager, inputs = build(task, Path(tmp))
        copies = [inputs[0]] + [inputs[0].clone() for _ in range(allocs - 1)]
        rest = inputs[1:]
        with torch.no_grad():
            for _ in range(3):
                cand(*inputs), eager(*inputs)
        torch.cuda.synchronize()
        rounds = []
        for _ in range(2):  # every copy, then every copy again in the same order
            got = []
            for x in copies:
                t = runner.time_cuda(cand, [x, *rest])["median_ms"]
                e = runner.time_cuda(eager, [x, *rest])["median_ms"]
                got.append((t, e))
            rounds.append(got)
        return {
            "ptrs": [x.data_ptr() for x in copies],
            "ref_ms": [[t for t, _ in r] for r in rounds],
            "eager_ms": [[e for _, e in r] for r in rounds],
        }


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(Path(sys.argv[2]), int(sys.argv[3]))), flush=True)
        return 0
    from probe_slow_state import each_child

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tasks", type=Path, nargs="+")
    ap.add_argument("--allocs", type=int, default=10)
    ap.add_argument("--procs", type=int, default=3)
    ap.add_argument("--states", default="alone,held")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = []
    for state, task, p, got in each_child(
        __file__, args.states, args.tasks, args.procs, lambda _: [str(args.allocs)]
    ):
        rows.append({"state": state, "task": str(task), "proc": p, **got})
        best = min(min(r) for r in got["ref_ms"])
        print(f"{state} {task.parent.name}/{task.name} process {p}:", flush=True)
        for i, ptr in enumerate(got["ptrs"]):
            a, b = (got["ref_ms"][k][i] for k in (0, 1))
            ea, eb = (got["eager_ms"][k][i] for k in (0, 1))
            flag = "  SLOW" if max(a, b) > 1.2 * best else ""
            print(
                f"  copy {i:2d} @ {ptr:#x}: ref {a:.4f} then {b:.4f}  "
                f"eager {ea:.4f} then {eb:.4f}{flag}",
                flush=True,
            )
    print("\n== per task and state: timings over 1.2x the process's best (ref, eager)")
    for state in args.states.split(","):
        for task in args.tasks:
            got = [r for r in rows if r["state"] == state and r["task"] == str(task)]
            ref = [t for r in got for rr in r["ref_ms"] for t in rr]
            eag = [t for r in got for rr in r["eager_ms"] for t in rr]
            if not ref:
                continue
            lo = min(ref)
            slow = sum(t > 1.2 * lo for t in ref)
            elo = min(eag)
            print(
                f"{state:6s} {task}: ref median {statistics.median(ref):.4f} "
                f"[{lo:.4f}-{max(ref):.4f}] slow {slow}/{len(ref)}; eager median "
                f"{statistics.median(eag):.4f} slow {sum(t > 1.2 * elo for t in eag)}/{len(eag)}"
            )
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
