"""Where a Triton candidate's first call goes, in a child forked from a warm runner.

A runner forks one child per job, with a fresh Triton cache (the candidate's own). The
child's first call of a kernel then pays: the CUDA context, Triton's driver module
(`cuda_utils`, C compiled by gcc into the cache), the kernel's compile, and any launcher
Triton builds per signature. This probe times each, side by side in one run, for a child
forked from a parent that only imported torch and Triton (today's `runner.prime`) and one
forked from a parent that also loaded Triton's driver module first (no CUDA context: a
child may still make its own), each with an empty and with a warm kernel cache.

    python bench/probe_triton_start.py [--reps 3] [--out probe.json]

Needs a GPU; prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

KERNEL = """
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)
"""


def child(cache: str, w: int) -> None:
    os.environ["TRITON_CACHE_DIR"] = cache
    t = {}
    t0 = time.perf_counter()
    import torch

    torch.cuda.init()
    x = torch.randn(1 << 20, device="cuda")
    torch.cuda.synchronize()
    t["context"] = time.perf_counter() - t0
    import importlib.util

    path = Path(cache).parent / f"k_{os.getpid()}.py"
    path.write_text(KERNEL)
    spec = importlib.util.spec_from_file_location(f"k_{os.getpid()}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    t1 = time.perf_counter()
    import triton

    drv = triton.runtime.driver.active
    drv.utils  # noqa: B018  (the driver module: compiled here unless the parent had it)
    t["driver"] = time.perf_counter() - t1
    y = torch.empty_like(x)
    prof = None
    if os.environ.get("PROBE_PROFILE"):
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    t2 = time.perf_counter()
    mod.relu_kernel[(x.numel() // 1024,)](x, y, x.numel(), BLOCK=1024)
    torch.cuda.synchronize()
    t["first_call"] = time.perf_counter() - t2
    if prof is not None:
        import io
        import pstats

        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(45)
        t["profile"] = buf.getvalue()[-9000:]
    t3 = time.perf_counter()
    mod.relu_kernel[(x.numel() // 1024,)](x, y, x.numel(), BLOCK=1024)
    torch.cuda.synchronize()
    t["second_call"] = time.perf_counter() - t3
    t["ok"] = bool(torch.equal(y, x.clamp_min(0)))
    t["cache_files"] = sorted(p.name for p in Path(cache).rglob("*") if p.is_file())
    os.write(w, json.dumps(t).encode())


def run_child(cache: str) -> dict:
    r, w = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            child(cache, w)
            os._exit(0)
        except BaseException as e:
            os.write(w, json.dumps({"error": repr(e)[:500]}).encode())
            os._exit(1)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.waitpid(pid, 0)
    res = json.loads(data or b"{}")
    res["wall"] = time.perf_counter() - t0
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    import torch
    import triton
    import triton.language

    info = {"torch": torch.__version__, "triton": triton.__version__}
    from triton.backends.nvidia import driver as nv

    info["per_signature_launcher"] = hasattr(nv, "make_launcher")
    root = Path(tempfile.mkdtemp(prefix="probe-triton-"))
    rows: dict[str, list[dict]] = {}

    def variant(name: str, warm_from: str | None) -> None:
        for i in range(args.reps):
            cache = root / f"{name}-{i}" / "cache"
            if warm_from:
                shutil.copytree(warm_from, cache)
            else:
                cache.mkdir(parents=True)
            rows.setdefault(name, []).append(run_child(str(cache)))

    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"  # as the runner: no CUDA before a fork
    variant("plain_cold", None)
    warm = str(root / "plain_cold-0" / "cache")
    variant("plain_warm_kernel", warm)
    # only Triton's driver module in the cache (a trusted copy put there before the fork)
    utils = root / "utils_only"
    for f in Path(warm).rglob("cuda_utils*.so"):
        dst = utils / f.relative_to(warm)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dst)
    variant("utils_seeded_cold", str(utils))
    os.environ["PROBE_PROFILE"] = "1"
    variant("profile_warm_kernel", warm)
    variant("profile_utils_seeded", str(utils))
    os.environ.pop("PROBE_PROFILE")
    # the parent loads Triton's driver module (gcc into a cache of its own, then removed)
    own = tempfile.mkdtemp(prefix="probe-driver-")
    os.environ["TRITON_CACHE_DIR"] = own
    t0 = time.perf_counter()
    triton.runtime.driver.active.utils  # noqa: B018
    info["parent_driver_s"] = time.perf_counter() - t0
    shutil.rmtree(own)
    info["parent_cuda_initialized"] = torch.cuda.is_initialized()
    variant("driver_cold", None)
    variant("driver_warm_kernel", warm)
    summary = {}
    print(json.dumps(info))
    print(f"{'variant':22} {'wall':>7} {'context':>8} {'driver':>7} {'first':>7} {'second':>7} ok")
    for name, rs in rows.items():
        good = [r for r in rs if "error" not in r]
        if len(good) < len(rs):
            print(name, "errors:", [r.get("error") for r in rs if "error" in r])
        if not good:
            continue
        med = {
            k: statistics.median(r[k] for r in good)
            for k in ("wall", "context", "driver", "first_call", "second_call")
        }
        summary[name] = med | {"ok": all(r["ok"] for r in good), "n": len(good)}
        print(
            f"{name:22} {med['wall']:7.3f} {med['context']:8.3f} {med['driver']:7.3f} "
            f"{med['first_call']:7.3f} {med['second_call']:7.3f} {summary[name]['ok']}"
        )
    print("cache files, cold child:", rows["plain_cold"][0].get("cache_files"))
    for name in ("profile_warm_kernel", "profile_utils_seeded"):
        print(f"== {name}, first call")
        print(rows[name][-1].get("profile", rows[name][-1].get("error")))
    if args.out:
        args.out.write_text(json.dumps({"info": info, "summary": summary, "rows": rows}, indent=1))
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
