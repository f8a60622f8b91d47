"""Does a build node's precompile spare the GPU node Triton's compile? (issue #30)

`TritonVerifier.prebuild` compiles a candidate's kernels for sm_90 on a CPU runner
(`runner.precompile`: its forward on meta tensors, each launch compiled, none run); the
GPU node seeds that candidate's job cache with the cubins and metadata
(`tritondriver.seed_triton`). The CPU tests show a seeded cache compiles nothing under
the interpreter's stand-in driver; only a GPU shows whether the real JIT computes the
same keys. Per task (its reference), side by side in one run:

- the build: `prebuild` on this node's CPU (a sandboxed aot runner), its kernels;
- a fresh process on the GPU (the runner's env: Triton's keys primed, the driver module
  seeded as `runner.job_env` seeds it), once with an empty job cache and once seeded:
  seconds of the first forward at the timing and the small sizes, and what the JIT
  compiled there (IR files in the cache that the seed did not bring); where it did, the
  keys and each kernel's metadata fields that differ from the seeded ones.

    python bench/probe_triton_seed.py [--tasks a,b] [--n 6] [--out probe.json]

Needs a GPU, torch, Triton and bubblewrap; prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from verifiers.catalog import load_catalog  # noqa: E402

CHILD = r"""
import json, sys, time
from pathlib import Path
import torch
from verifiers.kernels.runner import load_module, prime_triton_keys, problem_module

job = json.loads(sys.stdin.read())
prime_triton_keys()  # as the warm runner does before it forks a job's child
t0 = time.perf_counter()
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
out = {"context_s": time.perf_counter() - t0}
cand = load_module("crucible_candidate", job["code"], "candidate.py")
for tag, sizes in (("full", None), ("small", job["small"])):
    problem = problem_module(job["problem"], sizes, tag)
    torch.manual_seed(0)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    torch.manual_seed(42)
    model = getattr(cand, job["entry"])(*problem.get_init_inputs()).cuda()
    for k in ("first", "again"):
        t = time.perf_counter()
        with torch.no_grad():
            model(*inputs)
        torch.cuda.synchronize()
        out[f"{tag}_{k}_s"] = time.perf_counter() - t
print(json.dumps(out))
"""

IR = (".ttir", ".ttgir", ".llir", ".ptx")  # what only a compile here writes


def files_of(cache: Path) -> dict[str, int]:
    return {str(p.relative_to(cache)): p.stat().st_size for p in cache.rglob("*") if p.is_file()}


def gpu_child(job: dict, cache: Path, driver: Path | None, seed: dict | None) -> dict:
    from verifiers.kernels import tritondriver

    cache.mkdir(parents=True)
    if driver is not None:
        tritondriver.seed_cache(cache, str(driver))
    seeded = tritondriver.seed_triton(cache, seed) if seed else 0
    before = set(files_of(cache))
    env = {**os.environ, "TRITON_CACHE_DIR": str(cache), "TRITON_HOME": str(cache.parent)}
    env.update(PYTHONPATH=str(ROOT), TRITON_INTERPRET="0")  # as the runners' env has it
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=json.dumps(job),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        return {"error": done.stderr[-1500:], "wall_s": wall}
    res = json.loads(done.stdout.strip().splitlines()[-1])
    new = sorted(set(files_of(cache)) - before)
    res.update(
        wall_s=wall,
        seeded_files=seeded,
        compiled_here=sorted({f.split("/")[0] for f in new if f.endswith(IR)}),
        launchers=[f for f in new if "launcher" in f],
        new_files=new[:40],
    )
    return res


def meta_diff(cache: Path, seed: dict) -> list[dict]:
    """For each kernel compiled here that the seed also holds (by name): its metadata
    fields whose values differ from the seeded kernel's."""
    import base64

    seeded = {}
    for rel, b64 in seed.items():
        if rel.endswith(".json"):
            seeded[Path(rel).name] = json.loads(base64.b64decode(b64))
    out = []
    for p in cache.rglob("*.json"):
        if p.name.startswith("__grp__") or p.name not in seeded:
            continue
        here = json.loads(p.read_text())
        other = seeded[p.name]
        if here == other:
            continue
        keys = sorted(set(here) | set(other))
        diff = {k: [other.get(k), here.get(k)] for k in keys if here.get(k) != other.get(k)}
        diff.pop("hash", None)
        out.append({"kernel": p.name, "key": p.parent.name, "differs": diff})
    return out


def line(row: dict) -> str:
    e, s = row["empty"], row["seeded"]

    def first(r: dict) -> str:
        return f"{r.get('full_first_s', -1):.3f}/{r.get('small_first_s', -1):.3f}s"

    text = (
        f"{row['task']:28s} build {row['build_s']:5.2f}s; first forward (full/small): "
        f"empty {first(e)}, seeded {first(s)}; kernels compiled here: empty "
        f"{len(e.get('compiled_here', []))}, seeded {len(s.get('compiled_here', []))}; "
        f"launchers built (seeded) {len(s.get('launchers', []))}"
    )
    errors = [r["error"] for r in (e, s) if "error" in r]
    return text + (f"\n    ERROR {errors[0]}" if errors else "")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", help="comma-separated triton task names")
    p.add_argument("--n", type=int, default=6, help="tasks (spread over the catalog)")
    p.add_argument("--out", default=None)
    args = p.parse_args()

    import triton

    from verifiers.kernels import tritondriver
    from verifiers.kernels.nvcc import default_cache_dir
    from verifiers.kernels.verifier import TritonVerifier, _runner_problem, small_sizes

    names = set(args.tasks.split(",")) if args.tasks else None
    tasks, errors = load_catalog(ROOT / "tasks", ["triton"], names)
    if errors:
        print(errors, file=sys.stderr)
    tasks = sorted(tasks, key=lambda t: t.name)
    if not names:
        step = max(1, len(tasks) // max(1, args.n))
        tasks = tasks[::step][: args.n]
    driver = tritondriver.build(default_cache_dir())
    print(f"triton {triton.__version__}; driver module {'built' if driver else 'NOT built'}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        node = TritonVerifier(device="cpu", cache_dir=Path(tmp) / "build", workers=2)
        try:
            for t in tasks:
                b0 = time.perf_counter()
                entries = node.prebuild(t, t.reference)
                build_s = time.perf_counter() - b0
                seed = entries[0]["body"]["files"] if entries else None
                job = {
                    "problem": _runner_problem(t.harness["problem"]),
                    "small": small_sizes(t),
                    "code": t.reference,
                    "entry": t.interface.get("entry", "ModelNew"),
                }
                row = {
                    "task": t.name,
                    "build_s": build_s,
                    "kernels_built": (entries[0]["body"]["kernels"] if entries else []),
                }
                for mode in ("empty", "seeded"):
                    cache = Path(tmp) / t.name / mode / "triton"
                    row[mode] = gpu_child(job, cache, driver, seed if mode == "seeded" else None)
                    if mode == "seeded" and seed and row[mode].get("compiled_here"):
                        row["seeded"]["differs"] = meta_diff(cache, seed)
                rows.append(row)
                print(line(row), flush=True)
                for d in row["seeded"].get("differs", []):
                    print(f"    {d['kernel']}: {json.dumps(d['differs'])[:600]}", flush=True)
        finally:
            node.close()
    out = Path(args.out or ROOT / "bench/results/triton_seed_probe.json")
    out.write_text(json.dumps({"triton": triton.__version__, "rows": rows}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
