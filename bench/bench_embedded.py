"""Embedded verification benchmark: where a candidate's time goes, what the harness costs
next to the bare tools, how many candidates per second this machine verifies, and whether
the same firmware always gets the same verdict.

Measured in one run over the catalog's references (tasks/embedded/*):

1. Per-candidate milliseconds by gate (median, p90): compile, link, size, boot, the judges
   (exit + uart + registers), the verdict's `duration_ms`, and the harness's own time
   (duration minus the seconds of its tool runs, `metrics["tool_runs"]`).
2. The bare tools side by side: for each task the same compile (arm-none-eabi-gcc -c, the
   same CFLAGS, -include of the interface header), link (the same LDFLAGS, linker script,
   harness objects and the task's test.o) and emulator run (the same QEMU argv), run
   directly with subprocess, no sandbox. Verifier and bare runs alternate per task
   (A B A B, the order flipped every round) so machine noise hits both; --rounds rounds,
   medians. Ratio = verifier / bare, in total and per gate. The time between them is
   split into sandbox (tool-run seconds minus bare seconds: bwrap, the limits shell, perl
   pid 1, setpriv, the seccomp filter) and Python (duration minus tool-run seconds); the
   sandbox's pieces are timed alone on /bin/true.
3. Candidates per second: `verify_many` of all references with workers=1 and with
   workers=os.cpu_count(), wall clock.
4. Determinism: each reference verified --repeat times (on os.cpu_count() threads): the
   same status, code and trace_sha every time.

Timings are reported, never asserted. Usage:
    python bench/bench_embedded.py [--tasks DIR] [--rounds 3] [--repeat 5] [--only NAME ...]
                                   [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verifiers.catalog import load_catalog  # noqa: E402
from verifiers.contract import Limits, Task, Verdict  # noqa: E402
from verifiers.embedded import build  # noqa: E402
from verifiers.embedded.emulator import FEEDER, Qemu  # noqa: E402
from verifiers.embedded.verifier import EmbeddedVerifier  # noqa: E402
from verifiers.sandbox import SANDBOX_PATH  # noqa: E402

JUDGES = ("exit", "uart", "registers")
GATES = ("compile", "link", "size", "boot", "judges")
TARGET_RATIO = 1.2
TARGET_PER_S = 10.0
PARTS_REPS = 20  # runs of /bin/true per sandbox piece


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


# --- the verifier side --------------------------------------------------------------------


def gate_ms(v: Verdict) -> dict[str, float]:
    """ms per gate of one verdict, the judges summed; total, tool runs, harness."""
    secs = {c.name: c.seconds for c in v.checks}
    out = {g: secs[g] * 1000 for g in ("compile", "link", "size", "boot") if g in secs}
    out["judges"] = sum(secs.get(j, 0.0) for j in JUDGES) * 1000
    tools = sum(r["seconds"] for r in v.metrics.get("tool_runs", ()))
    out["tools"] = tools * 1000
    out["total"] = v.duration_ms
    out["harness"] = v.duration_ms - tools * 1000
    # the tool runs by gate (compile and link are the first two, boot the third)
    runs = [r["seconds"] * 1000 for r in v.metrics.get("tool_runs", ())]
    for name, i in (("compile_run", 0), ("link_run", 1), ("boot_run", 2)):
        if i < len(runs):
            out[name] = runs[i]
    return out


def fingerprint(v: Verdict) -> tuple[str, str, str]:
    return (v.status.value, v.code, str(v.metrics.get("trace_sha")))


# --- the bare side ------------------------------------------------------------------------


def bare(task: Task, version: str) -> dict[str, float]:
    """The verifier's three tool runs, run directly in a temp dir; ms each, and the exit code
    (so a bare run that did something else is seen)."""
    h = task.harness
    objs = build.harness_objects(version)
    objs += build.compile_trusted({"test.c": h["test"]}, version).values()  # cached, untimed
    qemu = Qemu()
    with tempfile.TemporaryDirectory(prefix="crucible-bench-bare-") as tmp:
        d = Path(tmp)
        (d / "cand.c").write_text(task.reference or "")
        (d / "iface.h").write_text(build.interface_header(task.interface["functions"]))
        uart_input = None
        if h.get("uart_input"):
            (d / "uart_in.txt").write_bytes(h["uart_input"].encode())
            shutil.copy(FEEDER, d / FEEDER.name)
            uart_input = "uart_in.txt"
        cc = [build.CC, *build.CFLAGS, "-I", str(build.INCLUDE), "-include", "iface.h"]
        link = [build.CC, *build.LDFLAGS, "-T", str(build.LINKER_SCRIPT), "cand.o"]
        steps = [
            ("compile", [*cc, "-c", "cand.c", "-o", "cand.o"], 120.0),
            ("link", [*link, *map(str, objs), "-o", "fw.elf"], 120.0),
            ("run", qemu.argv("fw.elf", uart_input=uart_input), float(h.get("timeout_s", 5)) + 1),
        ]
        # the sandbox's environment (its PATH: the system's python3 for the feeder, not a
        # pyenv shim the caller's PATH may find first)
        env = {"PATH": SANDBOX_PATH, "HOME": tmp, "LANG": "C.UTF-8", "TMPDIR": "/tmp"}
        out: dict[str, float] = {}
        for name, argv, timeout in steps:
            t0 = time.perf_counter()
            # a session of its own: a timeout kills the feeder's QEMU too
            proc = subprocess.Popen(
                argv,
                cwd=d,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            try:
                proc.communicate(timeout=timeout)
                rc = proc.returncode
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                rc = -1
            out[name] = (time.perf_counter() - t0) * 1000
            if name != "run" and rc != 0:
                raise SystemExit(f"{task.name}: bare {name} failed (rc {rc}): {argv}")
            out[f"{name}_rc"] = rc
        out["build"] = out["compile"] + out["link"]
        out["total"] = out["build"] + out["run"]
        return out


# --- the sandbox's pieces, alone ----------------------------------------------------------


def sandbox_parts() -> dict[str, float]:
    """Median ms of /bin/true alone and inside each piece of a sandboxed tool run."""
    from verifiers import sandbox as sb
    from verifiers import seccomp

    lim = Limits()
    box = sb.Sandbox(lim)
    true = ["/bin/true"]
    out: dict[str, float] = {}

    def timed(name: str, fn) -> None:
        xs = []
        for _ in range(PARTS_REPS):
            t0 = time.perf_counter()
            fn()
            xs.append((time.perf_counter() - t0) * 1000)
        out[name] = med(xs)

    def sp(argv: list[str]) -> None:
        subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, check=False)

    with tempfile.TemporaryDirectory(prefix="crucible-bench-parts-") as tmp:
        work = box.prepare_workdir(Path(tmp) / "w")
        c = sb.Confinement(work)
        timed("true (fork+exec from Python)", lambda: sp(true))
        shell = sb.limits_shell(lim, lim.cpu_s, None, status=False)
        timed("sh -c ulimits (limits shell)", lambda: sp([*shell, *true]))
        if sb.PERL:
            timed("perl pid-1 wrapper", lambda: sp([sb.PERL, "-e", sb.PID1, "--", *true]))
        if box.drop_uid is not None:
            drop = [
                "setpriv",
                f"--reuid={box.drop_uid}",
                f"--regid={box.drop_uid}",
                "--clear-groups",
                "--no-new-privs",
                "--inh-caps=-all",
                "--bounding-set=-all",
            ]
            timed("setpriv uid drop", lambda: sp([*drop, *true]))
        confined = sb.confined_argv(c, lim, box.drop_uid is not None)
        timed("bwrap (the verifier's mounts)", lambda: sp([*confined, *true]))
        timed("Sandbox.run (all of it)", lambda: box.run(true, work))
        filt = seccomp.no_writes()
        timed("Sandbox.run + seccomp (boot's)", lambda: box.run(true, work, seccomp=filt))
        with box.session(work) as session:
            session.run(true)  # its bwrap start, not counted
            timed("session.run (compile/link's)", lambda: session.run(true))
    return out


# --- the run ------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--tasks", default=str(ROOT / "tasks"), help="catalog root (default tasks)")
    ap.add_argument("--rounds", type=int, default=3, help="A B rounds per task (default 3)")
    ap.add_argument("--repeat", type=int, default=5, help="verifications per task for determinism")
    ap.add_argument("--only", action="append", default=[], metavar="NAME", help="a task (repeat)")
    ap.add_argument("--json", type=Path, help="write the raw numbers here")
    args = ap.parse_args()

    tasks, errs = load_catalog(args.tasks, ["embedded"], args.only or None)
    if errs:
        raise SystemExit("catalog errors:\n" + "\n".join(map(str, errs)))
    tasks = [t for t in tasks if t.reference]
    if not tasks:
        raise SystemExit("no embedded task with a reference")
    ncpu = os.cpu_count() or 1
    verifier = EmbeddedVerifier(workers=1)
    if missing := verifier.missing_tools():
        raise SystemExit("missing tools: " + ", ".join(t.name for t in missing))
    version = verifier.toolchain().get("arm-none-eabi-gcc", "")
    print(
        f"# {len(tasks)} embedded tasks, {args.rounds} rounds, {ncpu} cores, "
        f"{platform.node()}, gcc {version}",
        flush=True,
    )
    # warm up: harness objects and every test.o in the cache, the sandbox probed
    for t in tasks:
        build.compile_trusted({"test.c": t.harness["test"]}, version)
    verifier.verify(tasks[0], tasks[0].reference)
    bare(tasks[0], version)

    # 1 + 2: verifier and bare, interleaved per task
    ver: dict[str, list[dict[str, float]]] = defaultdict(list)
    bar: dict[str, list[dict[str, float]]] = defaultdict(list)
    verdicts: dict[str, list[Verdict]] = defaultdict(list)
    problems: list[str] = []
    for r in range(args.rounds):
        t0 = time.perf_counter()
        for t in tasks:
            order = ("A", "B") if r % 2 == 0 else ("B", "A")
            for side in order:
                if side == "A":
                    v = verifier.verify(t, t.reference)
                    verdicts[t.name].append(v)
                    ver[t.name].append(gate_ms(v))
                    if v.status.value != "pass":
                        problems.append(f"{t.name}: reference verdict {v.status.value} {v.code}")
                else:
                    b = bare(t, version)
                    bar[t.name].append(b)
                    want = int(t.harness.get("exit_code", 0))
                    if b["run_rc"] != want:
                        problems.append(f"{t.name}: bare run exit {b['run_rc']}, expected {want}")
        print(f"round {r + 1}: {time.perf_counter() - t0:.1f} s", flush=True)

    # the timing tables count only tasks whose reference passed and whose bare run exited as
    # expected every round (a hang costs its timeout on both sides and says nothing)
    bad = {p.split(":")[0] for p in problems}
    timed = [t.name for t in tasks if t.name not in bad]
    if not timed:
        raise SystemExit("no task ran cleanly:\n" + "\n".join(problems))
    ver = {n: ver[n] for n in timed}
    bar = {n: bar[n] for n in timed}

    # per task: the median over rounds (of a sum of keys); then median / p90 over tasks
    def per_task(d: dict[str, list[dict[str, float]]], *keys: str) -> list[float]:
        return [med([sum(x.get(k, 0.0) for k in keys) for x in runs]) for runs in d.values()]

    def stats(xs: list[float]) -> dict[str, float]:
        return {"median": med(xs), "p90": pct(xs, 0.9)}

    v_keys = [*GATES, "total", "tools", "harness", "compile_run", "link_run", "boot_run"]
    v_stats = {k: stats(per_task(ver, k)) for k in v_keys}
    b_stats = {k: stats(per_task(bar, k)) for k in ("compile", "link", "run", "build", "total")}
    # side by side: (label, verifier keys summed, bare key); size rides with link, the
    # judges with boot (neither has a tool run of its own)
    rows = [
        ("compile", ("compile",), "compile"),
        ("link + size", ("link", "size"), "link"),
        ("build (compile+link+size)", ("compile", "link", "size"), "build"),
        ("boot + judges (qemu run)", ("boot", "judges"), "run"),
        ("total (duration_ms)", ("total",), "total"),
    ]
    side: dict[str, dict[str, dict[str, float]]] = {}
    ratios: dict[str, list[float]] = {}
    for label, vks, bk in rows:
        vs, bs = per_task(ver, *vks), per_task(bar, bk)
        ratios[label] = [ratio(a, b) for a, b in zip(vs, bs, strict=True)]
        side[label] = {
            "verifier": stats(vs),
            "bare": stats(bs),
            "ratio": stats(ratios[label]),
            "ratio_of_sums": ratio(sum(vs), sum(bs)),
        }
    r_stats = {label: s["ratio"] for label, s in side.items()}

    # 3: throughput
    items = [(t, t.reference) for t in tasks]
    through = {}
    for workers in sorted({1, ncpu}):
        vv = EmbeddedVerifier(workers=workers)
        t0 = time.perf_counter()
        got = vv.verify_many(items)
        secs = time.perf_counter() - t0
        for t, v in zip(tasks, got, strict=True):
            verdicts[t.name].append(v)
        through[workers] = {
            "candidates": len(items),
            "seconds": secs,
            "per_second": len(items) / secs,
            "passed": sum(v.status.value == "pass" for v in got),
        }
        print(f"throughput workers={workers}: {len(items) / secs:.2f}/s", flush=True)

    # 4: determinism, all tasks' repeats in one batch on every core
    vv = EmbeddedVerifier(workers=ncpu)
    batch = [(t, t.reference) for t in tasks for _ in range(args.repeat)]
    got = vv.verify_many(batch)
    determinism = {}
    for i, t in enumerate(tasks):
        mine = got[i * args.repeat : (i + 1) * args.repeat]
        prints = [fingerprint(v) for v in mine]
        first = prints[0]
        same = sum(p == first for p in prints)
        every = [fingerprint(v) for v in verdicts[t.name]] + prints
        determinism[t.name] = {
            "identical": same,
            "of": len(prints),
            "all_runs_identical": sum(p == first for p in every),
            "all_runs": len(every),
            "fingerprint": list(first),
        }
        for p in sorted(set(every) - {first}):
            problems.append(f"{t.name}: verdict differs: {first} vs {p}")

    parts = sandbox_parts()

    # --- the table ----------------------------------------------------------------------
    print()
    left = f", left out: {', '.join(sorted(bad))}" if bad else ""
    print(
        f"Per-candidate ms over {len(timed)} of {len(tasks)} references "
        f"(per-task median of {args.rounds} rounds{left})"
    )
    print(
        f"{'':27}{'verifier med':>13}{'p90':>9}{'bare med':>10}{'p90':>9}"
        f"{'ratio med':>11}{'p90':>7}{'sum':>7}"
    )
    for label, s in side.items():
        v, b, r = s["verifier"], s["bare"], s["ratio"]
        print(
            f"{label:27}{v['median']:13.1f}{v['p90']:9.1f}{b['median']:10.1f}{b['p90']:9.1f}"
            f"{r['median']:10.2f}x{r['p90']:6.2f}x{s['ratio_of_sums']:6.2f}x"
        )
    print("  (ratio: verifier / bare per task, median and p90 over tasks; sum: ratio of totals)")
    print()
    print("Verifier gates alone (ms)        median      p90")
    for k in ("compile", "link", "size", "boot", "judges", "total"):
        print(f"  {k:30}{v_stats[k]['median']:8.1f}{v_stats[k]['p90']:9.1f}")
    print(
        f"  {'harness (total - tool runs)':30}"
        f"{v_stats['harness']['median']:8.1f}{v_stats['harness']['p90']:9.1f}"
    )
    print()
    vt, bt = v_stats["total"]["median"], b_stats["total"]["median"]
    tools = v_stats["tools"]["median"]
    print("Where the verifier's time goes (medians, ms)")
    print(f"  bare tools (compile+link+qemu) {bt:8.1f}")
    print(
        f"  sandbox (tool runs - bare)     {tools - bt:8.1f}   "
        f"compile {v_stats['compile_run']['median'] - b_stats['compile']['median']:+.1f}, "
        f"link {v_stats['link_run']['median'] - b_stats['link']['median']:+.1f}, "
        f"boot {v_stats['boot_run']['median'] - b_stats['run']['median']:+.1f}"
    )
    print(f"  python (total - tool runs)     {v_stats['harness']['median']:8.1f}")
    print(f"  verifier total                 {vt:8.1f}")
    print()
    print(f"Sandbox pieces alone, /bin/true, median of {PARTS_REPS} (ms)")
    for k, x in parts.items():
        print(f"  {k:34}{x:7.2f}")
    print()
    print("Determinism (status, code, trace_sha)")
    width = max(len(n) for n in determinism)
    for n, d in determinism.items():
        print(
            f"  {n:{width}}  {d['identical']}/{d['of']} identical  "
            f"(with rounds + throughput runs {d['all_runs_identical']}/{d['all_runs']})"
        )
    tot_same = sum(d["identical"] for d in determinism.values())
    tot = sum(d["of"] for d in determinism.values())
    all_same = sum(d["all_runs_identical"] for d in determinism.values())
    all_n = sum(d["all_runs"] for d in determinism.values())
    print(f"  overall: {tot_same}/{tot} identical (all runs {all_same}/{all_n})")
    print()
    print("Summary                                measured      target")
    rt = r_stats["total (duration_ms)"]["median"]
    print(
        f"  verifier / bare (total, median)      {rt:7.2f}x   <= {TARGET_RATIO:.1f}x  "
        f"{'met' if rt <= TARGET_RATIO else f'MISSED by {rt / TARGET_RATIO:.2f}x'}"
    )
    for label, st in side.items():
        if label.startswith("total"):
            continue
        r = st["ratio"]["median"]
        mark = "met" if r <= TARGET_RATIO else "MISSED"
        print(f"    {label:34}{r:7.2f}x   <= {TARGET_RATIO:.1f}x  {mark}")
    rs = side["total (duration_ms)"]["ratio_of_sums"]
    print(
        f"  verifier / bare (total, sum)         {rs:7.2f}x   <= {TARGET_RATIO:.1f}x  "
        f"{'met' if rs <= TARGET_RATIO else 'MISSED'}"
    )
    for w, d in through.items():
        tgt = f">= {TARGET_PER_S:.0f}/s" if w == ncpu else ""
        verdict = ""
        if w == ncpu:
            verdict = "met" if d["per_second"] >= TARGET_PER_S else "MISSED"
        print(
            f"  candidates/s, workers={w:<2}            {d['per_second']:7.2f}     "
            f"{tgt:8} {verdict}"
        )
    print(
        f"  determinism                          {tot_same}/{tot}     all identical  "
        f"{'met' if tot_same == tot and all_same == all_n else 'MISSED'}"
    )
    if problems:
        print()
        print("Problems:")
        for p in problems:
            print(f"  {p}")

    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "tasks": [t.name for t in tasks],
                    "timed": timed,
                    "rounds": args.rounds,
                    "cpus": ncpu,
                    "verifier_ms": ver,
                    "bare_ms": bar,
                    "verifier_stats": v_stats,
                    "bare_stats": b_stats,
                    "ratios": ratios,
                    "side_by_side": side,
                    "throughput": through,
                    "determinism": determinism,
                    "sandbox_parts_ms": parts,
                    "problems": problems,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
