"""KernelBench level-1 problems at their own sizes, verified by Crucible and, side by side in
the same process, by KernelBench's own `eval_kernel_against_ref`.

The candidates are ours (`bench/kernelbench_candidates/`, each with its expected verdict),
plus KernelBench's three adversarial kernels as Crucible's fixtures keep them
(`tests/verifiers/kernel_fixtures/kb_*.py`, against `kb_matmul_problem.py`) when present.
The problems become Crucible tasks through the KernelBench importer; each domain's
candidates then go through one `verify_many` call. KernelBench follows in the same process,
the way its batch scripts run it: CUDA extensions precompiled in parallel processes
(`build_compile_cache`, each into its own build dir), then `eval_kernel_against_ref` one
candidate at a time with the arguments of its adversarial tests (5 correctness trials, 100
timed, cuda_event timing, the excessive-speedup check).

A verdict counts as `ok` when the candidate was judged correct and not flagged: Crucible's
`pass` or `slow` (its speed bar is its own; KernelBench has none) without an implausible
speedup; KernelBench's `correctness` without `excessive_speedup`. `agree` compares the two.

KernelBench needs its `src/` (a copy at `kb_root/src`) and pydantic, tqdm and python-dotenv;
its `kernelbench.utils` also imports the LLM clients openai and litellm at module level,
which the eval never calls: where they are not installed, stand-ins that raise are put in
their place.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import importlib
import importlib.util
import multiprocessing
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.kernelbench_candidates import HERE as CANDIDATES  # noqa: E402
from bench.kernelbench_candidates import MANIFEST  # noqa: E402
from verifiers.contract import Limits, Status, Verdict  # noqa: E402

FIXTURES = ROOT / "tests" / "verifiers" / "kernel_fixtures"
FIXTURE_PROBLEM = "kb_matmul_problem.py"
FIXTURE_CANDIDATES = ("kb_side_stream.py", "kb_empty_result.py", "kb_zero_inputs.py")
FIXTURES_NAME = "fixtures"  # the name that selects them in `problems`
# eval_kernel_against_ref as KernelBench's adversarial tests call it
KB_EVAL_ARGS = {
    "num_correct_trials": 5,
    "num_perf_trials": 100,
    "measure_performance": True,
    "timing_method": "cuda_event",
    "check_for_excessive_speedup": True,
    "excessive_speedup_threshold": 10,
}
KB_ARCH = ["Hopper"]  # TORCH_CUDA_ARCH_LIST for its builds, as its scripts set it (H100/H200)
KB_NEEDS = "pydantic, pydantic_core, annotated_types, typing_inspection, tqdm, python-dotenv"
SHM = "/dev/shm"
CRUCIBLE_OK = (Status.PASS, Status.SLOW)


@dataclass(frozen=True)
class Candidate:
    name: str  # its file name
    problem: str  # the problem file's stem
    problem_file: Path
    domain: str  # cuda | triton
    expected: str  # pass | fail
    code: str
    note: str = ""
    fixture: bool = False  # one of KernelBench's adversarial kernels

    @property
    def order(self) -> int:
        """ok ones first, then wrong ones, then fixtures: a kernel that leaves KernelBench's
        process a broken CUDA context spoils only what comes after it."""
        return 2 if self.fixture else (0 if self.expected == "pass" else 1)


def _domain_of(code: str) -> str:
    return "triton" if "triton.jit" in code or "@triton" in code else "cuda"


def candidates(kb_root: Path, problems: list[str] | None) -> list[Candidate]:
    """The manifest's candidates for `problems` (stems; None: all), plus the adversarial
    fixtures that exist when `problems` is None or names `fixtures`."""
    level1 = Path(kb_root) / "KernelBench" / "level1"
    wanted = set(problems) if problems else None
    known = {m["problem"] for m in MANIFEST.values()} | {FIXTURES_NAME}
    if wanted and wanted - known:
        raise SystemExit(f"unknown --kb-problems {sorted(wanted - known)}; known: {sorted(known)}")
    out = []
    for name, m in MANIFEST.items():
        if wanted is not None and m["problem"] not in wanted:
            continue
        problem_file = level1 / f"{m['problem']}.py"
        if not problem_file.is_file():
            raise SystemExit(f"{problem_file} missing: is {kb_root} a KernelBench checkout?")
        code = (CANDIDATES / name).read_text(encoding="utf-8")
        out.append(
            Candidate(
                name,
                m["problem"],
                problem_file,
                m["domain"],
                m["expected"],
                code,
                m.get("note", ""),
            )
        )
    if wanted is None or FIXTURES_NAME in wanted:
        problem_file = FIXTURES / FIXTURE_PROBLEM
        for name in FIXTURE_CANDIDATES:
            path = FIXTURES / name
            if problem_file.is_file() and path.is_file():
                code = path.read_text(encoding="utf-8")
                out.append(
                    Candidate(
                        name,
                        problem_file.stem,
                        problem_file,
                        _domain_of(code),
                        "fail",
                        code,
                        "KernelBench adversarial kernel",
                        fixture=True,
                    )
                )
    return sorted(out, key=lambda c: c.order)


def import_tasks(cands: list[Candidate], work: Path) -> dict[tuple[str, str], object]:
    """(domain, problem stem) -> the Crucible task the KernelBench importer makes of it."""
    from verifiers.catalog import load_catalog
    from verifiers.kernels.importer import import_kernelbench, slug
    from verifiers.specfields import ImportProblems

    src = work / "problems" / "level1"  # the importer reads the level from the folder name
    src.mkdir(parents=True)
    files = {c.problem_file for c in cands}
    for f in files:
        shutil.copyfile(f, src / f.name)
    domains = tuple(sorted({c.domain for c in cands}))
    try:
        import_kernelbench(work / "problems", work / "tasks", domains=domains)
    except ImportProblems as e:  # the others are imported: their candidates still run
        print(f"  importer: {e}", flush=True)
    tasks, errors = load_catalog(work / "tasks", domains)
    for err in errors:
        print(f"  task error: {err}", flush=True)
    by_name = {(t.domain, t.name): t for t in tasks}
    out = {}
    for c in cands:
        key = (c.domain, slug(c.problem_file, 1))
        if key in by_name:
            out[(c.domain, c.problem)] = by_name[key]
    return out


# --- the machine while it runs -----------------------------------------------------------
def oom_kills() -> int | None:
    """The kernel's count of OOM kills (/proc/vmstat oom_kill), None where unreadable."""
    try:
        for line in Path("/proc/vmstat").read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
    except OSError:
        pass
    return None


class ShmWatch:
    """The largest /dev/shm use seen, sampled every `every_s` from a thread."""

    def __init__(self, every_s: float = 0.5) -> None:
        self.every_s = every_s
        self.max_used = 0
        self.start_used = self._used()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="shm-watch")

    @staticmethod
    def _used() -> int:
        try:
            return shutil.disk_usage(SHM).used
        except OSError:
            return 0

    def _run(self) -> None:
        while not self._stop.is_set():
            self.max_used = max(self.max_used, self._used())
            self._stop.wait(self.every_s)

    def __enter__(self) -> ShmWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.max_used = max(self.max_used, self._used())


@dataclass
class Machine:
    """What one phase did to the machine: /dev/shm's peak, OOM kills, wall seconds."""

    shm_max_gb: float = 0.0
    shm_start_gb: float = 0.0
    oom_kills: int | None = None
    wall_s: float = 0.0


@contextlib.contextmanager
def watched(into: Machine):
    """Fill `into` with what happens to the machine during the block."""
    t0, oom0 = time.perf_counter(), oom_kills()
    with ShmWatch() as shm:
        try:
            yield into
        finally:
            into.wall_s = round(time.perf_counter() - t0, 2)
    oom1 = oom_kills()
    into.shm_max_gb = round(shm.max_used / 2**30, 3)
    into.shm_start_gb = round(shm.start_used / 2**30, 3)
    into.oom_kills = None if oom0 is None or oom1 is None else oom1 - oom0


# --- Crucible ----------------------------------------------------------------------------
def crucible_fields(vd: Verdict) -> dict:
    implausible = bool(vd.metrics.get("implausible_speedup", False))
    return {
        "crucible_status": vd.status.value,
        "crucible_code": vd.code,
        "crucible_ok": vd.status in CRUCIBLE_OK and not implausible,
        "crucible_s": round(vd.duration_ms / 1000, 3),
        "crucible_gates": {c.name: round(c.seconds, 3) for c in vd.checks},
        "crucible_speedup": vd.metrics.get("speedup"),
        "crucible_time_ms": vd.metrics.get("time_ms"),
        "crucible_eager_ms": vd.metrics.get("eager_ms"),
        "crucible_implausible": implausible,
        "crucible_feedback": vd.feedback[-1500:],
    }


def build_node(
    cls, mine: list[Candidate], tasks: dict, limits: Limits, workers: int | None, cache: Path
) -> tuple[list[list[dict]], dict[str, float]]:
    """The domain's candidates built as a build node builds them (`prebuild` on a CPU-only
    verifier of its own cache, `workers` at a time), on this node's CPUs before the GPU
    node's clock starts: the entries for the GPU verifier's `seed`, and each candidate's
    build seconds (its build node time, reported beside KernelBench's own precompile)."""
    node = cls(device="cpu", cache_dir=cache, workers=workers)
    seconds: dict[str, float] = {}

    def one(c: Candidate) -> list[dict]:
        t0 = time.perf_counter()
        try:
            return node.prebuild(tasks[(c.domain, c.problem)], c.code, limits)
        finally:
            seconds[c.name] = round(time.perf_counter() - t0, 3)

    try:
        n = max(1, min(len(mine), workers or (os.cpu_count() or 2) // 2))
        with concurrent.futures.ThreadPoolExecutor(n) as ex:
            built = list(ex.map(one, mine))
    finally:
        node.close()
    return built, seconds


def crucible_verify(
    cands: list[Candidate],
    tasks: dict,
    limits: Limits,
    workers: int | None,
    cache: Path,
    *,
    prebuild: bool = False,
) -> tuple[dict[str, dict], dict]:
    """Every candidate of a domain through one verify_many call (workers started and the
    references' eager timings taken first, outside the clock). `prebuild`: the builds are
    made first as a build node makes them (`build_node`, timed apart, `crucible_build_s`)
    and seeded, so `crucible_s` is the GPU node's time alone."""
    from verifiers.kernels.verifier import CudaVerifier, TritonVerifier

    out: dict[str, dict] = {}
    info: dict = {}
    for domain, cls in (("cuda", CudaVerifier), ("triton", TritonVerifier)):
        mine = [c for c in cands if c.domain == domain]
        if not mine:
            continue
        build_s: dict[str, float] = {}
        if prebuild:
            b0 = time.perf_counter()
            built, build_s = build_node(cls, mine, tasks, limits, workers, cache / "build-node")
            info[f"{domain}_build_node_s"] = round(time.perf_counter() - b0, 2)
        v = cls(cache_dir=cache, workers=workers)
        try:
            if prebuild:
                info[f"{domain}_seeded"] = v.seed([e for es in built for e in es])
                print(f"  crucible {domain}: build node {info[f'{domain}_seeded']}", flush=True)
            t0 = time.perf_counter()
            v.pool(limits).warm_up()
            t1 = time.perf_counter()
            distinct = list({id(t): t for t in (tasks[(domain, c.problem)] for c in mine)}.values())
            v.prepare_baselines(distinct, limits, set())
            t2 = time.perf_counter()
            print(
                f"  crucible {domain}: {len(mine)} candidates (workers {t1 - t0:.1f}s, "
                f"reference timings {t2 - t1:.1f}s)",
                flush=True,
            )
            verdicts = v.verify_many([(tasks[(domain, c.problem)], c.code) for c in mine], limits)
            wall = time.perf_counter() - t2
        finally:
            v.close()
        info[domain] = {
            "candidates": len(mine),
            "workers_s": round(t1 - t0, 2),
            "baselines_s": round(t2 - t1, 2),
            "verify_many_s": round(wall, 2),
        }
        for c, vd in zip(mine, verdicts, strict=True):
            out[c.name] = crucible_fields(vd)
            if prebuild:
                out[c.name]["crucible_build_s"] = build_s.get(c.name, 0.0)
            print(
                f"    {c.name:52} {vd.status.value:14} {vd.code:22} {vd.duration_ms / 1000:7.1f}s",
                flush=True,
            )
    return out, info


# --- KernelBench -------------------------------------------------------------------------
def _stand_in_llm_clients() -> list[str]:
    """kernelbench.utils imports openai.OpenAI and litellm.completion at module level for
    its LLM queries; the eval never calls them. Where they are missing: stand-ins that raise."""
    made = []
    for name, attr in (("openai", "OpenAI"), ("litellm", "completion")):
        if name in sys.modules or importlib.util.find_spec(name) is not None:
            continue

        def refuse(*_a, _name=name, **_k):
            raise RuntimeError(f"{_name} stand-in: the KernelBench phase queries no LLM")

        mod = types.ModuleType(name)
        setattr(mod, attr, refuse)
        sys.modules[name] = mod
        made.append(name)
    return made


def load_kernelbench(kb_root: Path) -> types.ModuleType:
    """KernelBench's `kernelbench.eval`, imported from `kb_root/src`."""
    src = str(Path(kb_root).resolve() / "src")
    if not Path(src, "kernelbench", "eval.py").is_file():
        raise SystemExit(f"{src}/kernelbench/eval.py missing: pass a KernelBench checkout")
    if src not in sys.path:
        sys.path.insert(0, src)
    _stand_in_llm_clients()
    try:
        kb_eval = importlib.import_module("kernelbench.eval")
        importlib.import_module("kernelbench.utils")  # the eval imports it on first call
    except ImportError as e:
        raise SystemExit(
            f"KernelBench does not import ({e}); it needs {KB_NEEDS}: pip install --target DIR "
            "the wheels in .whl/ and put DIR on PYTHONPATH"
        ) from None
    return kb_eval


def _kb_precompile(kb_root: str, code: str, build_dir: str) -> dict:
    """In a fresh process: KernelBench's build_compile_cache of one candidate."""
    kb_eval = load_kernelbench(Path(kb_root))
    sys.modules["kernelbench.utils"].set_gpu_arch(KB_ARCH)
    t0 = time.perf_counter()
    ok, _log, err = kb_eval.build_compile_cache(code, verbose=False, build_dir=build_dir)
    return {"ok": bool(ok), "s": time.perf_counter() - t0, "error": str(err or "")[:300]}


def kb_precompile(kb_root: Path, cands: list[Candidate], build: dict[str, Path]) -> dict:
    """The CUDA candidates' extensions built side by side in spawned processes, as
    KernelBench's `compile.batch_compile` does before its evals."""
    cuda = [c for c in cands if c.domain == "cuda"]
    if not cuda:
        return {}
    n = max(1, min(len(cuda), (os.cpu_count() or 2) // 2))
    ctx = multiprocessing.get_context("spawn")
    out = {}
    with concurrent.futures.ProcessPoolExecutor(max_workers=n, mp_context=ctx) as ex:
        futs = {
            ex.submit(_kb_precompile, str(kb_root), c.code, str(build[c.name])): c for c in cuda
        }
        for f in concurrent.futures.as_completed(futs):
            c = futs[f]
            try:
                out[c.name] = f.result()
            except Exception as e:  # the build process died: recorded, the eval still runs
                out[c.name] = {"ok": False, "s": 0.0, "error": f"{type(e).__name__}: {e}"[:300]}
            b = out[c.name]
            print(
                f"    kb build {c.name:46} ok={b['ok']} {b['s']:.1f}s {b['error'][:80]}", flush=True
            )
    return out


def _jsonable(v):
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return f"{type(v).__name__}: {v}"[:300]


def kb_eval_one(kb_eval, c: Candidate, build_dir: Path) -> dict:
    import torch

    problem_src = c.problem_file.read_text(encoding="utf-8")
    t0 = time.perf_counter()
    error = ""
    try:
        res = kb_eval.eval_kernel_against_ref(
            problem_src,
            c.code,
            build_dir=str(build_dir),
            device=torch.device("cuda:0"),
            backend=c.domain,
            precision=torch.float32,
            **KB_EVAL_ARGS,
        )
    except Exception as e:  # its own failures, per candidate
        res, error = None, f"{type(e).__name__}: {str(e)[:300]}"
    seconds = time.perf_counter() - t0
    if res is None and not error:
        error = "eval returned None (a build-lock error: KernelBench asks for a retry)"
    meta = _jsonable(dict(res.metadata)) if res is not None else {}
    compiled = bool(res is not None and res.compiled)
    correct = bool(res is not None and res.correctness)
    flagged = bool(meta.get("excessive_speedup", False))
    return {
        "kb_compiled": compiled,
        "kb_correctness": correct,
        "kb_excessive_speedup": flagged,
        "kb_ok": correct and not flagged,
        # KernelBench's mean of its cuda_event timings, in ms (-1: not timed)
        "kb_runtime_ms": res.runtime if res is not None else None,
        "kb_ref_runtime_ms": res.ref_runtime if res is not None else None,
        "kb_eval_s": round(seconds, 3),
        "kb_error": error,
        "kb_metadata": {
            k: v
            for k, v in meta.items()
            if k not in ("hardware", "device", "runtime_error_traceback")
        },
    }


def kernelbench_eval(
    kb_root: Path, kb_eval, cands: list[Candidate], work: Path, done: Callable[[str, dict], None]
) -> dict:
    """Precompile, then each candidate's eval; `done(name, row)` after each one."""
    import torch

    build = {c.name: work / "kb_build" / Path(c.name).stem for c in cands}
    for d in build.values():
        d.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    built = kb_precompile(kb_root, cands, build)
    precompile_wall = time.perf_counter() - t0
    sys.modules["kernelbench.utils"].set_gpu_arch(KB_ARCH)  # the flags the builds used
    out = {}
    for c in cands:
        row = kb_eval_one(kb_eval, c, build[c.name])
        b = built.get(c.name)
        row["kb_build_s"] = round(b["s"], 3) if b else 0.0
        row["kb_build_ok"] = b["ok"] if b else None
        row["kb_s"] = round(row["kb_eval_s"] + row["kb_build_s"], 3)
        out[c.name] = row
        done(c.name, row)
        print(
            f"    kb {c.name:52} compiled={row['kb_compiled']!s:5} "
            f"correct={row['kb_correctness']!s:5} flagged={row['kb_excessive_speedup']!s:5} "
            f"{row['kb_s']:7.1f}s {row['kb_error'][:80]}",
            flush=True,
        )
        torch.cuda.empty_cache()
    return {"rows": out, "precompile_wall_s": round(precompile_wall, 2)}


# --- the phase ---------------------------------------------------------------------------
def _table(rows: list[list], head: list[str]) -> str:
    cols = [head, *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cols) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join(
        [fmt.format(*head), fmt.format(*["-" * w for w in widths])]
        + [fmt.format(*r) for r in cols[1:]]
    )


def _median(xs: list[float]) -> float | None:
    return round(statistics.median(xs), 3) if xs else None


def summarize(rows: list[dict], machine: dict, extra: dict) -> dict:
    both = [r for r in rows if "kb_ok" in r and "crucible_ok" in r]
    c_med = _median([r["crucible_s"] for r in both])
    k_med = _median([r["kb_s"] for r in both])
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux
    rss_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    gpu_peak = None
    try:
        import torch

        if torch.cuda.is_available():
            gpu_peak = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    except ImportError:
        pass
    per_domain = {}
    for domain in sorted({r["domain"] for r in both}):
        mine = [r for r in both if r["domain"] == domain]
        d = {
            "candidates": len(mine),
            "median_s_crucible": _median([r["crucible_s"] for r in mine]),
            "median_s_kernelbench": _median([r["kb_s"] for r in mine]),
            "median_kb_eval_s": _median([r["kb_eval_s"] for r in mine]),
            "median_kb_build_s": _median([r["kb_build_s"] for r in mine]),
        }
        if any("crucible_build_s" in r for r in mine):
            # both sides' builds off the GPU node: Crucible's build node, KernelBench's own
            # parallel precompile; the GPU node's time is Crucible's verdict against KB's eval
            d["median_crucible_build_s"] = _median([r.get("crucible_build_s", 0) for r in mine])
        c, k = d["median_s_crucible"], d["median_s_kernelbench"]
        d["ratio_crucible_over_kb"] = round(c / k, 3) if c and k else None
        ke = d["median_kb_eval_s"]
        d["ratio_crucible_over_kb_eval"] = round(c / ke, 3) if c and ke else None
        per_domain[domain] = d
    # each domain's verify_many (beside them: the build node's seconds and what it seeded)
    domains = [d for d in extra.get("crucible_domains", {}).values() if isinstance(d, dict)]
    c_wall = sum(d.get("verify_many_s", 0.0) for d in domains)
    verified = [r for r in rows if "crucible_ok" in r]  # KernelBench may have skipped some
    k_eval = sum(r["kb_eval_s"] for r in both)
    k_wall = extra.get("kb_precompile_wall_s", 0.0) + k_eval
    return {
        "candidates": len(rows),
        "agree": sum(r["agree"] for r in both),
        "compared": len(both),
        "disagree": [r["candidate"] for r in both if not r["agree"]],
        "crucible_as_expected": sum(r["crucible_ok"] == (r["expected"] == "pass") for r in both),
        "kb_as_expected": sum(r["kb_ok"] == (r["expected"] == "pass") for r in both),
        "median_s_crucible": c_med,
        "median_s_kernelbench": k_med,
        "median_ratio_kb_over_crucible": round(k_med / c_med, 2) if c_med and k_med else None,
        # the phase's wall over its candidates (Crucible: its verify_many calls; KernelBench:
        # the parallel precompile plus the evals one after another)
        "wall_per_candidate_crucible_s": round(c_wall / len(verified), 2) if verified else None,
        "wall_per_candidate_kb_s": round(k_wall / len(both), 2) if both else None,
        "wall_per_candidate_kb_eval_s": round(k_eval / len(both), 2) if both else None,
        # each candidate's Crucible seconds over KernelBench's eval alone (no build on
        # either side where the builds were made first: `prebuild`)
        "per_candidate_over_kb_eval": {
            r["candidate"]: round(r["crucible_s"] / r["kb_eval_s"], 3)
            for r in both
            if r.get("kb_eval_s")
        },
        "per_domain": per_domain,
        "host_peak_rss_gb": round(rss, 2),
        "children_peak_rss_gb": round(rss_children, 2),
        "host_gpu_peak_alloc_gb": gpu_peak,
        "machine": machine,
        **extra,
    }


def _ms(v) -> str:
    return "-" if v is None or v < 0 else f"{v:.3f}"


def print_report(rows: list[dict], summary: dict) -> None:
    def yn(v) -> str:
        return "-" if v is None else ("yes" if v else "no")

    print("\n== KernelBench level 1 at its own sizes: Crucible vs KernelBench's eval")
    print(
        _table(
            [
                [
                    r["candidate"],
                    r["domain"],
                    r["expected"],
                    f"{r.get('crucible_status', '-')}/{r.get('crucible_code') or '-'}",
                    yn(r.get("crucible_ok")),
                    f"{r.get('crucible_s', 0):.1f}",
                    f"{yn(r.get('kb_compiled'))}/{yn(r.get('kb_correctness'))}"
                    + ("/flag" if r.get("kb_excessive_speedup") else ""),
                    yn(r.get("kb_ok")),
                    _ms(r.get("crucible_time_ms")),
                    _ms(r.get("kb_runtime_ms")),
                    f"{r.get('kb_s', 0):.1f}",
                    yn(r.get("agree")),
                ]
                for r in rows
            ],
            [
                "candidate",
                "domain",
                "expect",
                "crucible",
                "c_ok",
                "c_s",
                "kb comp/corr",
                "kb_ok",
                "c_ms",
                "kb_ms",
                "kb_s",
                "agree",
            ],
        )
    )
    s = summary
    m = s["machine"]
    print(
        f"\nagreement: {s['agree']}/{s['compared']}"
        + (f" (disagree: {', '.join(s['disagree'])})" if s["disagree"] else "")
        + f"; as expected: Crucible {s['crucible_as_expected']}/{s['compared']}, "
        f"KernelBench {s['kb_as_expected']}/{s['compared']}"
    )
    print(
        f"median seconds per candidate: Crucible {s['median_s_crucible']}, KernelBench "
        f"{s['median_s_kernelbench']} (ratio KB/Crucible {s['median_ratio_kb_over_crucible']})"
    )
    for domain, d in s.get("per_domain", {}).items():
        built = d.get("median_crucible_build_s")
        print(
            f"{domain}: median s per candidate Crucible {d['median_s_crucible']} / KernelBench "
            f"{d['median_s_kernelbench']} (build {d['median_kb_build_s']} + eval "
            f"{d['median_kb_eval_s']}) = {d['ratio_crucible_over_kb']}; against KB's eval "
            f"alone {d['ratio_crucible_over_kb_eval']}"
            + ("" if built is None else f"; Crucible's build node {built} s per candidate")
        )
    print(
        f"wall per candidate: Crucible {s['wall_per_candidate_crucible_s']}s, KernelBench "
        f"{s['wall_per_candidate_kb_s']}s (its evals alone "
        f"{s.get('wall_per_candidate_kb_eval_s')}s)"
    )
    for name, ratio in s.get("per_candidate_over_kb_eval", {}).items():
        print(f"  {name}: Crucible / KernelBench's eval = {ratio}")
    print(
        f"host peak RSS {s['host_peak_rss_gb']} GB (children {s['children_peak_rss_gb']} GB); "
        f"host GPU peak {s['host_gpu_peak_alloc_gb']} GB"
    )
    for phase, mm in m.items():
        print(
            f"{phase}: wall {mm['wall_s']}s, /dev/shm max {mm['shm_max_gb']} GB "
            f"(at start {mm['shm_start_gb']} GB), OOM kills {mm['oom_kills']}"
        )


def run_phase(
    kb_root: Path,
    problems: list[str] | None,
    limits: Limits,
    workers: int | None,
    out_rows: list,
    *,
    on_row: Callable[[], None] | None = None,
    out_summary: dict | None = None,
    kb_skip: tuple[str, ...] = (),
    prebuild: bool = False,
) -> dict:
    """Verify the chosen problems' candidates with Crucible, then with KernelBench's eval in
    this same process; append one row per candidate to `out_rows` and return the summary.
    `on_row` is called whenever rows land or change (the caller saves its JSON), so a run
    cut short keeps what it finished; `out_summary` gets the phase facts as they are known."""
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("the KernelBench phase needs a GPU (KernelBench's eval asserts one)")
    kb_root = Path(kb_root).resolve()
    kb_eval = load_kernelbench(kb_root)  # fail before the long part
    cands = candidates(kb_root, problems)
    print(f"\n== KernelBench phase: {len(cands)} candidates", flush=True)
    work = Path(tempfile.mkdtemp(prefix="crucible-kb-phase-"))
    machine = {"crucible": Machine(), "kernelbench": Machine()}
    partial = out_summary if out_summary is not None else {}
    partial.update(limits=limits.to_dict(), kb_eval_args=KB_EVAL_ARGS)
    try:
        tasks = import_tasks(cands, work)
        skipped = [c.name for c in cands if (c.domain, c.problem) not in tasks]
        if skipped:
            print(f"  no task (its problem did not import), skipped: {skipped}", flush=True)
            cands = [c for c in cands if (c.domain, c.problem) in tasks]
        with watched(machine["crucible"]):
            crucible, info = crucible_verify(
                cands, tasks, limits, workers, work / "nvcc-cache", prebuild=prebuild
            )
        torch.cuda.empty_cache()
        partial.update(
            crucible_domains=info, crucible_machine=dataclasses.asdict(machine["crucible"])
        )
        rows = []
        for c in cands:
            t = tasks[(c.domain, c.problem)]
            rows.append(
                {
                    "candidate": c.name,
                    "problem": c.problem,
                    "task": t.name,
                    "domain": c.domain,
                    "expected": c.expected,
                    "note": c.note,
                    **crucible[c.name],
                }
            )
        out_rows.extend(rows)
        saved = on_row or (lambda: None)
        saved()
        by_name = {r["candidate"]: r for r in rows}

        def done(name: str, kb_row: dict) -> None:
            r = by_name[name]
            r.update(kb_row)
            r["agree"] = r["crucible_ok"] == r["kb_ok"]
            saved()

        # `kb_skip`: candidates (by name prefix) that only Crucible verifies this run
        kb_cands = [c for c in cands if not c.name.startswith(tuple(kb_skip) or ("\0",))]
        with watched(machine["kernelbench"]):
            kb = (
                kernelbench_eval(kb_root, kb_eval, kb_cands, work, done)
                if kb_cands
                else {"precompile_wall_s": 0.0}
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    partial.pop("crucible_machine", None)
    partial["kb_precompile_wall_s"] = kb["precompile_wall_s"]
    summary = summarize(rows, {k: dataclasses.asdict(v) for k, v in machine.items()}, partial)
    partial.clear()
    partial.update(summary)
    print_report(rows, summary)
    return summary


def resummarize(path: Path) -> dict:
    """The report again from a saved run (`bench_kernels.py --only-kernelbench --out`): its
    rows and phase facts as saved, the summary recomputed and written back. A run that
    stopped before KernelBench's precompile wall was saved gets its longest build there
    (the builds ran in parallel: a lower bound), said in `kb_precompile_wall_note`."""
    import json

    results = json.loads(Path(path).read_text())
    section = results["kernelbench"]
    rows, saved = section["rows"], dict(section.get("summary") or {})
    extra = {k: saved[k] for k in ("limits", "kb_eval_args", "crucible_domains") if k in saved}
    extra["kb_precompile_wall_s"] = saved.get("kb_precompile_wall_s")
    if extra["kb_precompile_wall_s"] is None:
        builds = [r["kb_build_s"] for r in rows if r.get("kb_build_s")]
        extra["kb_precompile_wall_s"] = max(builds, default=0.0)
        extra["kb_precompile_wall_note"] = "not saved: the longest build (a lower bound)"
    machine = saved.get("machine") or {}
    if not machine and "crucible_machine" in saved:
        machine = {"crucible": saved["crucible_machine"]}
    summary = summarize(rows, machine, extra)
    for k in ("host_peak_rss_gb", "children_peak_rss_gb", "host_gpu_peak_alloc_gb"):
        summary[k] = saved.get(k)  # the run's, never this process's
    section["summary"] = summary
    Path(path).write_text(json.dumps(results, indent=1, default=_jsonable))
    print_report(rows, summary)
    return summary


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="the KernelBench phase's report from a saved run")
    ap.add_argument("--summarize", metavar="JSON", required=True, help="a run's --out file")
    resummarize(Path(ap.parse_args().summarize))
