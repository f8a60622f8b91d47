"""The pipeline end to end, offline: verified samples per hour, and what orchestration
(Prefect + Ray + lake) costs on top of the verifiers, measured side by side in one run.

One fresh lake, the whole built-in catalog, the offline generator with enough mutations
per task for >= 2,000 candidates, every stage (generate, verify, repair, dedup, export)
as one Prefect flow run (ephemeral API) on a local Ray. The verifier time is the sum of
the verdicts' own `duration_ms` (the time inside `Verifier.verify`, sandbox included);
with W verifier actors the best any orchestration could do is that sum / W. The overhead
is what the flow's wall time adds to that ideal.

Usage: python bench/bench_pipeline.py [--per-task 40] [--workers N] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

for k, v in {
    "RAY_AUTH_MODE": "disabled",
    "RAY_USAGE_STATS_ENABLED": "0",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING",
}.items():
    os.environ.setdefault(k, v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-task", type=int, default=40, help="mutations per task")
    ap.add_argument("--workers", type=int, default=None, help="verifier actors")
    ap.add_argument("--cold", action="store_true", help="a fresh Prefect database")
    ap.add_argument("--stages", default="generate,verify,repair,dedup,export")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "pipeline.json")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="crucible-bench-pipeline-"))
    os.environ.setdefault("PREFECT_HOME", str(tmp / "prefect"))
    prefect_db = "cold (new PREFECT_HOME: database created and migrated in the run)"
    if not args.cold:
        # A user's second run, or a scheduled one, finds Prefect's database made: make it
        # in another process first, so the run measured starts Prefect as they do.
        subprocess.run(
            [sys.executable, "-c", "from prefect import flow\nflow(lambda: 1)()"],
            check=True, capture_output=True, env=os.environ,
        )  # fmt: skip
        prefect_db = "warm (PREFECT_HOME's database made by an earlier process)"

    t_import = time.perf_counter()
    from flows.pipeline import pipeline_flow
    from flows.stages import PipelineSettings
    from lake import db
    from lake.store import Lake
    from ray_actors import cluster
    from ray_actors.verify import PoolSettings

    import_s = time.perf_counter() - t_import
    lake = tmp / "lake"
    settings = PipelineSettings(
        lake=lake,
        # the domain this bench has always measured (PipelineSettings' default is now
        # every default-run domain of the registry)
        domains=("rtl",),
        candidates_per_task=args.per_task,
        stages=tuple(args.stages.split(",")),
        pool=PoolSettings(workers=args.workers),
        ray=cluster.ClusterSettings(temp_dir=None),
    )
    t0 = time.perf_counter()
    result = pipeline_flow(settings)
    wall = time.perf_counter() - t0
    cluster.shutdown()

    con = db.connect(Lake(lake))
    run_id = result["run_id"]
    v = con.execute(
        "SELECT count(*), sum(duration_ms) / 1000, count(*) FILTER (WHERE passed) "
        "FROM verdicts WHERE run_id = $r",
        {"r": run_id},
    ).fetchone()
    workers = con.execute(
        "SELECT count(DISTINCT node) FROM verdicts WHERE run_id = $r", {"r": run_id}
    ).fetchone()[0]
    con.close()
    verdicts, verifier_s, passed = v[0], float(v[1] or 0), v[2]
    c = result["counts"]
    slots = args.workers or os.cpu_count() or 1
    ideal = verifier_s / slots
    rows = {
        "prefect start": prefect_db,
        "candidates (generated + repairs)": c.get("generated", 0) + c.get("repair_candidates", 0),
        "verdicts": verdicts,
        "passed": passed,
        "trajectories": c.get("trajectories_written", 0),
        "verifier seconds (sum of verdicts)": round(verifier_s, 2),
        "verifier actors": slots,
        "ideal wall = verifier seconds / actors": round(ideal, 2),
        "flow wall seconds (incl. Prefect start)": round(wall, 2),
        "flow body seconds (stages only)": result["seconds"],
        "overhead vs ideal (flow wall)": round(wall / ideal - 1, 3) if ideal else None,
        "overhead vs ideal (stages only)": round(result["seconds"] / ideal - 1, 3)
        if ideal
        else None,
        "verified samples / hour": round(verdicts / wall * 3600),
        "passing samples / hour": round(passed / wall * 3600),
        "import seconds (prefect, ray, lake)": round(import_s, 2),
        "peak RSS driver MB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    for name in ("generate", "verify", "repair", "dedup", "export"):
        rows[f"stage {name} seconds"] = c.get(f"seconds_{name}")
    print(f"pipeline bench: {platform.node()}, {os.cpu_count()} cores, {workers} nodes")
    width = max(map(len, rows))
    for k, val in rows.items():
        print(f"  {k:<{width}}  {val}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
                "per_task": args.per_task,
                "results": rows,
                "counts": c,
            },
            indent=2,
            default=str,
        )
        + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
