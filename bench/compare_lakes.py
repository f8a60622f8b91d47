"""Compare two lakes made by `crucible run` on the same inputs: same candidate ids, and the
same status (and taxonomy code) per candidate and verifier version?

    python bench/compare_lakes.py LAKE_BEFORE LAKE_AFTER [--by-name] [--json OUT]

--by-name keys a candidate by its task's domain and name and its code, not its id: a task
whose spec changed (a harness line added) has a new task id, so its unchanged candidates
have new ids too, and are still the same candidates to compare.

Reads the Delta tables directly (no Crucible code), so lakes written by two versions of
Crucible compare on equal terms. Prints a table of counts and every difference.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections import Counter
from pathlib import Path

from deltalake import DeltaTable


def _rows(lake: Path, table: str, columns: list[str]) -> list[dict]:
    return DeltaTable(str(lake / "tables" / table)).to_pyarrow_table(columns=columns).to_pylist()


def _keys(lake: Path, by_name: bool) -> dict[str, str]:
    """candidate id -> the key it is compared by (itself, or domain/task:code hash), with
    its generator, for the report."""
    rows = _rows(lake, "candidates", ["candidate_id", "task_id", "code", "generator"])
    if not by_name:
        return {r["candidate_id"]: r["candidate_id"] for r in rows}
    names = {
        r["task_id"]: f"{r['domain']}/{r['name']}"
        for r in _rows(lake, "tasks", ["task_id", "domain", "name"])
    }
    return {
        r["candidate_id"]: f"{names.get(r['task_id'], r['task_id'])}:"
        f"{hashlib.sha256(r['code'].encode()).hexdigest()[:12]}:{r['generator']}"
        for r in rows
    }


def load(
    lake: Path, by_name: bool = False
) -> tuple[set[str], dict[tuple[str, str], tuple[str, str]]]:
    """Candidate keys, and (candidate key, verifier with its version's gate list) -> the
    last (status, code). The version number itself is left out of the key, so a verifier
    version bump compares verdict to verdict; `versions` reports the bump."""
    keys = _keys(lake, by_name)
    cands = set(keys.values())
    verdicts: dict[tuple[str, str], tuple[str, str]] = {}
    cols = ["candidate_id", "verifier", "verifier_version", "status", "code", "created_at"]
    for r in sorted(_rows(lake, "verdicts", cols), key=lambda r: r["created_at"]):
        # partial versions ("2+gates:a,b") keep their gate list: a different verdict kind
        gates = r["verifier_version"].partition("+")[2]
        cand = keys.get(r["candidate_id"], r["candidate_id"])
        key = (cand, f"{r['verifier']}{'+' + gates if gates else ''}")
        # the last verdict per key: an infra_error retried later is replaced
        verdicts[key] = (r["status"], r["code"] or "")
    return cands, verdicts


def versions(lake: Path) -> dict[str, int]:
    rows = _rows(lake, "verdicts", ["verifier", "verifier_version"])
    return dict(Counter(f"{r['verifier']} {r['verifier_version']}" for r in rows))


def compare(before: Path, after: Path, by_name: bool = False) -> dict:
    cb, vb = load(before, by_name)
    ca, va = load(after, by_name)
    common = vb.keys() & va.keys()
    status_diff = sorted(k for k in common if vb[k][0] != va[k][0])
    code_diff = sorted(k for k in common if vb[k][0] == va[k][0] and vb[k][1] != va[k][1])
    return {
        "candidates": {"before": len(cb), "after": len(ca), "common": len(cb & ca)},
        "only_before": sorted(cb - ca),
        "only_after": sorted(ca - cb),
        "verdicts": {"before": len(vb), "after": len(va), "common": len(common)},
        "versions": {"before": versions(before), "after": versions(after)},
        "verdict_keys_only_before": sorted(map(list, vb.keys() - va.keys())),
        "verdict_keys_only_after": sorted(map(list, va.keys() - vb.keys())),
        "status_before": dict(Counter(s for s, _ in vb.values())),
        "status_after": dict(Counter(s for s, _ in va.values())),
        "status_differences": [
            {"candidate_id": c, "version": v, "before": vb[(c, v)], "after": va[(c, v)]}
            for c, v in status_diff
        ],
        "code_differences": [
            {"candidate_id": c, "version": v, "before": vb[(c, v)], "after": va[(c, v)]}
            for c, v in code_diff
        ],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--json", type=Path, help="write the full comparison here")
    ap.add_argument("--by-name", action="store_true", help="key candidates by task name + code")
    args = ap.parse_args(argv)
    for lake in (args.before, args.after):
        if not (lake / "tables" / "candidates").is_dir():
            ap.error(f"{lake} is not a Crucible lake (no candidates table)")
    r = compare(args.before, args.after, args.by_name)
    print(f"{'':28}{'before':>10}{'after':>10}{'common':>10}")
    for what in ("candidates", "verdicts"):
        c = r[what]
        print(f"{what:28}{c['before']:>10}{c['after']:>10}{c['common']:>10}")
    for s in sorted(set(r["status_before"]) | set(r["status_after"])):
        print(f"  {s:26}{r['status_before'].get(s, 0):>10}{r['status_after'].get(s, 0):>10}")
    print(f"verifier versions before: {r['versions']['before']}")
    print(f"verifier versions after:  {r['versions']['after']}")
    print(f"candidate ids only before / after: {len(r['only_before'])} / {len(r['only_after'])}")
    print(f"status differences: {len(r['status_differences'])}")
    for d in r["status_differences"][:50]:
        print(f"  {d['candidate_id'][:60]} {d['version']}: {d['before']} -> {d['after']}")
    print(f"code differences (same status): {len(r['code_differences'])}")
    for d in r["code_differences"][:50]:
        print(f"  {d['candidate_id'][:60]} {d['version']}: {d['before']} -> {d['after']}")
    if args.json:
        args.json.write_text(json.dumps(r, indent=1) + "\n")
    same = not (r["only_before"] or r["only_after"] or r["status_differences"])
    return 0 if same else 1


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    os._exit(rc)  # deltalake's runtime threads abort a normal interpreter exit
