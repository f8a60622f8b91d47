"""Kill the pipeline at random points, restart it, and compare the lake with an
uninterrupted run: the same ids in every table, no duplicate row.

Each trial runs `crucible run` on a few catalog tasks in its own process group (its own
Prefect and Ray), SIGKILLs the whole group after a random delay, then runs it again to
the end. The reference is one uninterrupted run of the same command.

Usage: python bench/bench_resume.py [--trials 5] [--seed 0] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NAMES = ("mux4", "updown_counter8", "seq_det_1011_mealy", "sync_fifo8", "cmp8_mode")
TABLES = {
    "tasks": "task_id",
    "candidates": "candidate_id, parent_id, attempt",
    "verdicts": "verdict_id, status",
    "trajectories": "trajectory_id, outcome",
    "dedup": "candidate_id, exact_key, cluster_id, keeper, contaminated",
}

# dedup is judged by each candidate's current outcome (a pass appends only changes)
VIEW = {"dedup": "latest_dedup"}


def run(lake: Path, catalog: Path, home: Path, kill_after: float | None) -> tuple[float, bool]:
    """One `crucible run`; returns (seconds, whether it was killed before finishing)."""
    env = dict(os.environ, PREFECT_HOME=str(home))
    env.pop("PREFECT_API_URL", None)
    cmd = [sys.executable, "-m", "flows.cli", "run", "--lake", str(lake), "--tasks",
           str(catalog), "--commit-every", "8", "--batch-size", "4"]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        proc.wait(timeout=kill_after)
        killed = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        killed = True
    if not killed and proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with exit code {proc.returncode}")
    return time.monotonic() - t0, killed


def state(lake: Path) -> tuple[dict[str, list], dict[str, int]]:
    from lake import db
    from lake.store import Lake

    con = db.connect(Lake(lake))
    try:
        ids = {
            t: sorted(map(tuple, con.execute(f"SELECT {cols} FROM {VIEW.get(t, t)}").fetchall()))
            for t, cols in TABLES.items()
        }
        ids["verdicts"] = [r for r in ids["verdicts"] if r[1] != "infra_error"]
        key = {t: cols.split(",")[0] for t, cols in TABLES.items()}
        dups = {
            t: con.execute(f"SELECT count(*) - count(DISTINCT {key[t]}) FROM raw_{t}").fetchone()[0]
            for t in ("tasks", "candidates", "verdicts", "trajectories")
        }
    finally:
        con.close()
    return ids, dups


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "resume.json")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="crucible-bench-resume-"))
    catalog = tmp / "catalog"
    for n in NAMES:
        shutil.copytree(ROOT / "tasks" / "rtl" / n, catalog / "rtl" / n)

    whole_s, _ = run(tmp / "whole", catalog, tmp / "home-whole", None)
    reference, _ = state(tmp / "whole")
    print(f"uninterrupted run: {whole_s:.1f}s, " + ", ".join(
        f"{t} {len(v)}" for t, v in reference.items()))  # fmt: skip
    trials = []
    for i in range(args.trials):
        lake = tmp / f"trial{i}"
        kill_at = rng.uniform(3.0, whole_s)
        _, killed = run(lake, catalog, tmp / f"home{i}", kill_at)
        partial, _ = state(lake) if (lake / "tables").is_dir() else ({}, {})
        resumed_s, _ = run(lake, catalog, tmp / f"home{i}b", None)
        got, dups = state(lake)
        same = got == reference
        trials.append(
            {
                "kill_at_s": round(kill_at, 2),
                "killed": killed,
                "rows_before_restart": {t: len(v) for t, v in partial.items()},
                "restart_s": round(resumed_s, 1),
                "same_rows_as_uninterrupted": same,
                "duplicate_rows": dups,
                "differs_in": [t for t in reference if got.get(t) != reference[t]],
            }
        )
        print(f"trial {i}: killed at {kill_at:5.1f}s ({'killed' if killed else 'finished'}), "
              f"rows then {trials[-1]['rows_before_restart']}, restart {resumed_s:.1f}s, "
              f"same rows: {same}, duplicates: {sum(dups.values())}")  # fmt: skip
    ok = sum(t["same_rows_as_uninterrupted"] and not sum(t["duplicate_rows"].values())
             for t in trials)  # fmt: skip
    print(f"{ok}/{len(trials)} restarted runs ended with exactly the uninterrupted run's rows")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"tasks": NAMES, "uninterrupted_s": round(whole_s, 1),
                                    "rows": {t: len(v) for t, v in reference.items()},
                                    "trials": trials, "ok": ok}, indent=2) + "\n")  # fmt: skip
    print(f"wrote {args.out}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
