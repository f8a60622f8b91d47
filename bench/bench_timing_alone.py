"""Does a hostile neighbour move another candidate's timing? Honest candidates verified
concurrently with and without candidates that keep the GPU busy, side by side in one
run (the lent GPU: see bench/results/).

    python bench/bench_timing_alone.py [--task triton/relu] [--honest 12] [--hostile 3]
        [--workers 4] [--unconfined] [--out FILE.json]

Rounds, each verifying its candidates concurrently on `--workers` runners:
  alone, alone_again    only honest candidates (the task's reference): the noise floor
  hostile               honest and hostile candidates interleaved; waiting jobs are
                        stopped and the GPU is checked quiet before each timed run
  hostile_unguarded     the same, with the quiet check turned off: how much a paused
                        neighbour's queued work moved a timing

A hostile candidate is the reference whose forward, after its honest output, queues
its own forward on 2x larger inputs 100 times (no thread, no side stream: the anticheat
rejects both): work still on the GPU when its job is paused for another candidate's
timing, which only the quiet check sees. Prints, per round, the honest
candidates' median time and its ratio to `alone` with a bootstrap 95 % interval, and the
hostile candidates' verdicts.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from verifiers.catalog import load_catalog  # noqa: E402
from verifiers.contract import Limits  # noqa: E402

HAMMER = """

_Honest = ModelNew


class ModelNew(_Honest):
    def forward(self, *args):
        out = _Honest.forward(self, *args)
        # then its own forward on 2x larger inputs, 100 times, queued and not waited for:
        # work still on the GPU whenever the job is paused
        big = [
            torch.empty((a.shape[0] * 2, *a.shape[1:]), device=a.device, dtype=a.dtype)
            if isinstance(a, torch.Tensor) and a.is_cuda and a.dim() >= 1
            else a
            for a in args
        ]
        if any(b is not a for a, b in zip(args, big)):
            for _ in range(100):
                _Honest.forward(self, *big)
        return out
"""


def hostile(reference: str) -> str:
    return reference + HAMMER


def boot_ratio(xs: list[float], ys: list[float], n: int = 2000) -> tuple[float, float, float]:
    """median(xs) / median(ys) and its bootstrap 95 % interval."""
    rng = random.Random(0)
    r = statistics.median(xs) / statistics.median(ys)
    draws = sorted(
        statistics.median(rng.choices(xs, k=len(xs)))
        / statistics.median(rng.choices(ys, k=len(ys)))
        for _ in range(n)
    )
    return r, draws[int(0.025 * n)], draws[int(0.975 * n)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="triton/relu")
    p.add_argument("--honest", type=int, default=12)
    p.add_argument("--hostile", type=int, default=3)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--unconfined", action="store_true")
    p.add_argument("--out", default="")
    p.add_argument(
        "--check",
        action="store_true",
        help="no GPU needed: build the hostile candidate and pass it through the CPU gates",
    )
    args = p.parse_args()
    domain, name = args.task.split("/", 1)
    tasks, errors = load_catalog(ROOT / "tasks", [domain], [name])
    if errors or not tasks:
        p.error(f"no task {args.task}: {errors}")
    task = tasks[0]
    bad = hostile(task.reference)
    import torch

    from verifiers.kernels import verifier as kv
    from verifiers.kernels.verifier import CudaVerifier, TritonVerifier

    cls = TritonVerifier if domain == "triton" else CudaVerifier
    limits = Limits(unconfined=args.unconfined)
    if args.check:
        v = cls(device="cpu", workers=1)
        try:
            vd = v.verify(task, bad, Limits(gates=("parse", "anticheat", "compile")))
        finally:
            v.close()
        print(f"hostile candidate, CPU gates: {vd.status.value} {vd.code} {vd.feedback[:200]}")
        return 0 if vd.status.value == "pass" else 1
    if not torch.cuda.is_available():
        p.error("needs a GPU (or --check)")
    v = cls(cache_dir=Path(tempfile.mkdtemp(prefix="crucible-alone-")), workers=args.workers)
    v.pool(limits).warm_up()
    v.prepare_baselines([task], limits)
    v.verify(task, task.reference, limits)  # the first candidate's compile out of the rounds

    def batch(codes: list[str]) -> list:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.workers) as ex:
            return list(ex.map(lambda c: v.verify(task, c, limits), codes))

    def honest(n: int) -> list[str]:  # distinct sources: nothing cached across them
        return [f"{task.reference}\n# honest {i}\n" for i in range(n)]

    hostiles = {f"{bad}\n# hostile {i}\n" for i in range(args.hostile)}

    def mixed() -> list[str]:
        codes = honest(args.honest)
        step = max(1, len(codes) // max(1, args.hostile))
        for i, h in enumerate(sorted(hostiles)):
            codes.insert(min(len(codes), i * (step + 1)), h)
        return codes

    @contextlib.contextmanager
    def unguarded():
        quiet = kv.gpu_quiet
        kv.gpu_quiet = lambda: None
        try:
            yield
        finally:
            kv.gpu_quiet = quiet

    rounds: dict[str, list[dict]] = {}
    for label, codes, guard in [
        ("alone", honest(args.honest), contextlib.nullcontext),
        ("hostile", mixed(), contextlib.nullcontext),
        ("hostile_unguarded", mixed(), unguarded),
        ("alone_again", honest(args.honest), contextlib.nullcontext),
    ]:
        with guard():
            verdicts = batch(codes)
        rounds[label] = [
            {
                "hostile": c in hostiles,
                "status": vd.status.value,
                "code": vd.code,
                "time_ms": vd.metrics.get("time_ms"),
                "quiet_check_s": vd.metrics.get("gpu_quiet_check_s"),
                "slot_wait_s": vd.metrics.get("timing_slot_wait_s"),
            }
            for c, vd in zip(codes, verdicts, strict=True)
        ]
        print(f"{label}: done", flush=True)
    v.close()

    def honest_ms(label: str) -> list[float]:
        return [r["time_ms"] for r in rounds[label] if not r["hostile"] and r["time_ms"]]

    base = honest_ms("alone")
    print(f"\ndevice: {torch.cuda.get_device_name()}; task {args.task}; {args.workers} runners")
    print(f"{'round':<20}{'honest':>7}{'median ms':>11}{'ratio':>8}{'95% CI':>18}  hostile")
    for label, rows in rounds.items():
        ms = honest_ms(label)
        seen: dict[str, int] = {}
        for r in rows:
            if r["hostile"]:
                k = f"{r['status']}/{r['code']}"
                seen[k] = seen.get(k, 0) + 1
        hv = ", ".join(f"{k}:{n}" for k, n in sorted(seen.items())) or "-"
        if not ms:
            print(f"{label:<20}{0:>7}  no honest timing  {hv}")
            continue
        r, lo, hi = boot_ratio(ms, base)
        ci = f"[{lo:.3f}, {hi:.3f}]"
        print(f"{label:<20}{len(ms):>7}{statistics.median(ms):>11.5f}{r:>8.3f}{ci:>18}  {hv}")
    if args.out:
        Path(args.out).write_text(json.dumps({"task": args.task, "rounds": rounds}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
