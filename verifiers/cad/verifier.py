"""The CAD verifier: a CadQuery script is judged by the geometry it builds.

Gates, in order (each a Check):

- **anticheat**: static rules over the script's AST (imports outside the CAD allowlist,
  builtins a part script has no use for: file access, exec, introspection).
- **build**: the script runs in a warm CAD worker's fresh build process (sandboxed, rlimits);
  its result is the `result` variable or what it passed to `show_object`. Nothing built is
  `format_error`; a wrong CadQuery call (unknown method, bad selector, a fillet OCC cannot
  make) is `api`.
- **solid**: valid OCC shape, closed shells, positive volume, as many solids as the part.
- **iou**: intersection over union with the reference by exact OCC booleans, in the task's
  frame (absolute, or normalized: centred and scaled to a unit box); below the task's pass
  mark, the feedback says whether a rotation by 90° multiples, an axis swap, a mirror, a
  swapped Euler order or a shift would match (`geometry_orientation` / `geometry_misplaced`).
- **surface**: Chamfer distance and the largest surface deviation, on sampled points
  measured against the other shape's surface (a missing small hole or fillet shows here).

Every candidate that built a shape gets a picture (candidate beside reference), STEP and
STL as artifacts.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verifiers.base import Context, GateFail, Tool, Verifier
from verifiers.cad import anticheat
from verifiers.contract import Artifact, Limits, Status, Task, Verdict
from verifiers.warm import JobTimeout, Worker, WorkerCommand, WorkerDied, WorkerPool, verify_on_pool

INSTALL_HINT = "pip install -e '.[cad]'"
START_MARGIN_S = 30.0  # the worker's own answer comes this long after the job's limits
JUDGE_TIMEOUT_S = 60.0
ARTIFACT_KINDS = {"picture": ("picture", "picture.png"), "step": ("step", "candidate.step"),
                  "stl": ("stl", "candidate.stl")}  # fmt: skip


class CadWorker(Worker):
    prefix = "cadworker"
    recycle_after_jobs = 5000

    def __init__(self, limits: Limits, index: int):
        self.refs_sent: set[str] = set()
        super().__init__(limits, index)

    def before_start(self) -> None:
        self.refs_sent = set()  # a fresh process has none

    def command(self, fd: int) -> WorkerCommand:
        env = {**self.python_env(), "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        argv = [sys.executable, "-m", "verifiers.cad.server", "--result-fd", str(fd)]
        # the interpreter and the verifiers package only: not tasks/ (the references)
        ro = [p for p in self.python_paths() if p != env["PYTHONPATH"]]
        ro.append(str(Path(env["PYTHONPATH"]) / "verifiers"))
        return WorkerCommand(argv, env, ro=ro)


class CadVerifier(Verifier):
    domain = "cad"
    name = "cad-verifier"
    version = "1"
    resource = "cad"
    gates = ("anticheat", "build", "solid", "iou", "surface")
    always = ("anticheat", "build")
    requires = {"solid": ("build",), "iou": ("solid",), "surface": ("iou",)}
    partial_versions = True

    def __init__(self, keep_workdirs: Path | None = None, workers: int | None = None) -> None:
        super().__init__(keep_workdirs)
        self._workers = workers
        self._pools: dict[bool, WorkerPool] = {}
        self._pool_lock = threading.Lock()
        self._refs: dict[str, str] = {}  # reference key -> BREP text
        self._ref_lock = threading.Lock()

    # --- tools and workers --------------------------------------------------------------
    def missing_tools(self) -> list[Tool]:
        missing = super().missing_tools()
        if importlib.util.find_spec("cadquery") is None:
            missing.append(Tool("cadquery", "python3", ("python3", "--version"), INSTALL_HINT))
        return missing

    def toolchain(self) -> dict[str, str]:
        if self._toolchain is None:
            from importlib.metadata import PackageNotFoundError, version

            tc = {}
            for pkg in ("cadquery", "cadquery-ocp"):
                with contextlib.suppress(PackageNotFoundError):
                    tc[pkg] = version(pkg)
            self._toolchain = tc
        return self._toolchain

    def pool(self, limits: Limits) -> WorkerPool:
        with self._pool_lock:
            pool = self._pools.get(limits.unconfined)
            if pool is None:
                n = self._workers or int(os.environ.get("CRUCIBLE_CAD_WORKERS", 0) or 0)
                n = n or max(1, os.cpu_count() or 1)
                pool = WorkerPool(lambda i: CadWorker(limits, i), n)
                self._pools[limits.unconfined] = pool
            return pool

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()

    def verify_many(
        self, items: Sequence[tuple[Task, Any]], limits: Limits | None = None
    ) -> list[Verdict]:
        """One candidate per worker at a time, all workers busy."""
        return verify_on_pool(self.verify, self.pool(limits or Limits()), items, limits)

    # --- gates --------------------------------------------------------------------------
    def gate_anticheat(self, ctx: Context) -> str:
        found = anticheat.scan(ctx.code)
        if found:
            first = found[0]
            raise GateFail(
                Status.REJECTED,
                first.rule,
                f"line {first.line}: {first.what}",
                feedback="\n".join(f"line {f.line}: {f.what} ({f.why})" for f in found[:5]),
            )
        return "no forbidden imports or calls"

    def gate_build(self, ctx: Context) -> str:
        task = ctx.task
        # the gates that will run (asking for `surface` alone runs `solid` and `iou` too)
        judging = "solid" in self._wanted(ctx.limits)
        ref_key = self._reference(task, ctx.limits) if judging and task.reference else None
        h = task.harness
        job: dict[str, Any] = {
            "script": ctx.code,
            "result_var": task.interface.get("result", "result"),
            "limits": {
                "timeout_s": ctx.limits.timeout_s,
                "cpu_s": ctx.limits.cpu_s,
                "memory_mb": ctx.limits.memory_mb,
                "fsize_mb": ctx.limits.fsize_mb,
            },
            "judge": judging,
            "judge_timeout_s": JUDGE_TIMEOUT_S,
            "artifacts": judging,
            "mode": h.get("compare", "absolute"),
            "iou_pass": float(h.get("iou_pass", 0.99)),
            "surface_pass": float(h.get("surface_pass", 0.01)),
            "chamfer_pass": float(h.get("chamfer_pass", 0.002)),
            "euler": h.get("euler"),
        }
        res = self._run_job(ctx, job, ref_key)
        build = res["build"]
        ctx.gate_seconds["build"] = build["seconds"]
        ctx.metrics["build_seconds"] = build["seconds"]
        ctx.metrics["worker_rss_mb"] = res.get("rss_mb")
        if build["outcome"] != "built":
            raise build_failure(build)
        ctx.state["judge"] = res.get("judge")
        if build.get("output", "").strip():
            ctx.notes.append(f"the script printed:\n{build['output'][-500:]}")
        return "built a shape"

    def gate_solid(self, ctx: Context) -> str:
        j = self._judged(ctx)
        steps = j.get("steps", {})
        ctx.gate_seconds["solid"] = steps.get("load", 0) + steps.get("solid", 0)
        if j.get("failed") == "solid":
            raise GateFail(Status.WRONG_ANSWER, j["code"], j["detail"], feedback=describe(j))
        cand = j["metrics"].get("candidate", {})
        return f"valid closed solid, volume {cand.get('volume', 0):.6g} mm³"

    def gate_iou(self, ctx: Context) -> str:
        j = self._judged(ctx)
        steps = j.get("steps", {})
        ctx.gate_seconds["iou"] = steps.get("iou", 0) + steps.get("orientation", 0)
        if not ctx.task.reference:
            raise GateFail(
                Status.INFRA_ERROR, "harness_error", "the task has no reference shape to compare"
            )
        if j.get("failed") == "iou":
            detail = j["detail"] + (f"; {j['diagnosis']}" if j.get("diagnosis") else "")
            raise GateFail(Status.WRONG_ANSWER, j["code"], detail, feedback=describe(j))
        return f"IoU {j['metrics']['iou']:.6f} >= {ctx.task.harness.get('iou_pass', 0.99)}"

    def gate_surface(self, ctx: Context) -> str:
        j = self._judged(ctx)
        ctx.gate_seconds["surface"] = j.get("steps", {}).get("surface", 0)
        if j.get("failed") == "surface":
            raise GateFail(Status.WRONG_ANSWER, j["code"], j["detail"], feedback=describe(j))
        m = j["metrics"]
        return f"Chamfer {m['chamfer']:.4g}, largest deviation {m['surface_max']:.4g}"

    # --- the worker job -----------------------------------------------------------------
    def _judged(self, ctx: Context) -> dict:
        j = ctx.state.get("judge")
        if not j:
            raise GateFail(Status.INFRA_ERROR, "harness_error", "the worker returned no judgement")
        if "judge_error" in j:
            if "timeout" in j["judge_error"]:
                raise GateFail(Status.TIMEOUT, "tool_timeout", j["judge_error"])
            raise GateFail(Status.WRONG_ANSWER, "invalid_solid", j["judge_error"])
        return j

    def _run_job(self, ctx: Context, job: dict, ref_key: str | None) -> dict:
        pool = self.pool(ctx.limits)
        worker = _lease(pool)
        dirty = False
        timeout = ctx.limits.timeout_s + JUDGE_TIMEOUT_S + START_MARGIN_S
        try:
            if ref_key is not None:
                job["ref"] = ref_key
                if ref_key not in worker.refs_sent:
                    job["ref_brep"] = self._refs[ref_key]
            died = 0
            while True:
                try:
                    res = worker.run(job, timeout)
                except WorkerDied as e:
                    # the script may have killed its worker (same uid); once more on a fresh
                    # one tells that from an infrastructure fault
                    dirty, died = True, died + 1
                    worker.refs_sent = set()
                    if died == 2:
                        raise GateFail(
                            Status.RUNTIME_ERROR,
                            "script_crash",
                            "the CAD worker died twice while running this script",
                            feedback=f"the worker process died: {e}"[:800],
                        ) from None
                    if ref_key is not None:
                        job["ref_brep"] = self._refs[ref_key]
                    continue
                if res.get("need_ref") and "ref_brep" not in job:
                    job["ref_brep"] = self._refs[ref_key]  # it dropped it (or never had it)
                    continue
                break
            if res.get("need_ref"):
                raise GateFail(Status.INFRA_ERROR, "harness_error", "the worker lost a reference")
            if ref_key is not None:
                worker.refs_sent.add(ref_key)
            if "harness_error" in res:
                dirty = True
                raise GateFail(Status.INFRA_ERROR, "harness_error", res["harness_error"][:300])
            self._collect(ctx, worker, res)
            return res
        except JobTimeout as e:
            dirty = True
            raise GateFail(
                Status.INFRA_ERROR, "harness_error", f"the CAD worker hung: {e}"
            ) from None
        finally:
            pool.release(worker, dirty)

    def _collect(self, ctx: Context, worker: Worker, res: dict) -> None:
        """Copy the artifacts out of the worker's dir before its next job clears it."""
        j = res.get("judge") or {}
        for key, path in (j.get("artifacts") or {}).items():
            if key not in ARTIFACT_KINDS:
                continue
            host = worker.host_path(path)
            try:
                data = host.read_bytes()
            except OSError:
                continue
            kind, name = ARTIFACT_KINDS[key]
            ctx.artifacts.append(Artifact(kind, name, data))
        ctx.metrics.update(j.get("metrics") or {})
        if j.get("steps"):
            ctx.metrics["judge_steps"] = j["steps"]
        if j.get("diagnosis"):
            ctx.metrics["diagnosis"] = j["diagnosis"]

    def _reference(self, task: Task, limits: Limits) -> str:
        """The reference's shape (BREP text), built once per verifier by a worker."""
        key = hashlib.sha256(f"{self.version}\0{task.reference}".encode()).hexdigest()[:32]
        with self._ref_lock:
            if key in self._refs:
                return key
        job = {
            "script": task.reference,
            "result_var": task.interface.get("result", "result"),
            "limits": {"timeout_s": 120.0, "cpu_s": 120, "memory_mb": 4096, "fsize_mb": 256},
            "judge": False,
        }
        pool = self.pool(limits)
        worker = _lease(pool)
        try:
            res = worker.run(job, 200.0)
            build = res.get("build", {})
            if build.get("outcome") != "built":
                why = build.get("error", {}).get("message") or build.get("outcome")
                raise GateFail(
                    Status.INFRA_ERROR,
                    "harness_error",
                    f"the task's reference script does not build ({why})"[:300],
                )
            text = worker.host_path(build["brep"]).read_text()
        except (WorkerDied, JobTimeout) as e:
            raise GateFail(Status.INFRA_ERROR, "harness_error", f"reference: {e}"[:300]) from None
        finally:
            pool.release(worker, False)
        with self._ref_lock:
            self._refs[key] = text
        return key


def _lease(pool: WorkerPool) -> Worker:
    try:
        return pool.lease()
    except WorkerDied as e:
        raise GateFail(Status.INFRA_ERROR, "harness_error", f"no CAD worker: {e}"[:300]) from None


# --- classification -----------------------------------------------------------------------

CQ_TYPES = ("Workplane", "Sketch", "Assembly", "Shape", "Solid", "Compound", "Face", "Edge",
            "Wire", "Vertex", "Shell", "Vector", "Location", "Plane", "Selector")  # fmt: skip
LIMIT_OUTCOMES = {
    "timeout": (Status.TIMEOUT, "tool_timeout"),
    "cpu_limit": (Status.RESOURCE_LIMIT, "cpu_limit"),
    "memory_limit": (Status.RESOURCE_LIMIT, "memory_limit"),
    "file_size_limit": (Status.RESOURCE_LIMIT, "file_size_limit"),
}


def build_failure(build: dict) -> GateFail:
    """The GateFail for a build that made no shape."""
    outcome = build["outcome"]
    printed = build.get("output", "")[-600:]
    if outcome == "harness_error":
        err = build.get("error") or {}
        detail = f"the CAD worker failed around the script: {err.get('type')}: {err.get('message')}"
        return GateFail(Status.INFRA_ERROR, "harness_error", detail[:400])
    if outcome in LIMIT_OUTCOMES:
        status, code = LIMIT_OUTCOMES[outcome]
        detail = f"the script was stopped by the {outcome.replace('_', ' ')}"
        return GateFail(status, code, f"{detail} after {build['seconds']:.2f}s")
    if outcome == "no_result":
        detail = f"the script built nothing: {build.get('reason', '')}"
        return GateFail(
            Status.FORMAT_ERROR,
            "no_result",
            detail,
            feedback=f"{detail}. Leave the solid in `result` (or pass it to show_object).",
        )
    if outcome == "crashed":
        return GateFail(
            Status.RUNTIME_ERROR,
            "script_crash",
            f"the script's process died (signal {build.get('signal')}), e.g. inside OCC",
            feedback=printed,
        )
    err = build.get("error") or {}
    status, code = classify_error(err)
    where = f" (line {err['line']})" if err.get("line") else ""
    detail = f"{err.get('type', 'error')}{where}: {err.get('message', '')}"[:400]
    feedback = detail
    if err.get("traceback"):
        feedback += "\n" + err["traceback"]
    if printed.strip():
        feedback += f"\nthe script printed:\n{printed}"
    return GateFail(status, code, detail, feedback=feedback)


def classify_error(err: dict) -> tuple[Status, str]:
    """(status, taxonomy code) of the exception a script raised."""
    kind = str(err.get("type", ""))
    name = kind.rsplit(".", 1)[-1]
    msg = str(err.get("message", ""))
    lib = bool(err.get("in_library"))
    if name in ("SyntaxError", "IndentationError", "TabError"):
        return Status.COMPILE_ERROR, "syntax_error"
    if name == "NameError":
        return Status.RUNTIME_ERROR, "undefined_identifier"
    if name in ("ModuleNotFoundError", "ImportError"):
        return Status.RUNTIME_ERROR, "wrong_api"
    if "pyparsing" in kind or name == "ParseException" or "selector" in msg.lower():
        return Status.RUNTIME_ERROR, "bad_selector"
    cq_object = any(f"'{t}'" in msg for t in CQ_TYPES) or "module 'cadquery" in msg
    if name == "AttributeError" and "has no attribute" in msg and cq_object:
        return Status.RUNTIME_ERROR, "wrong_api"
    if name == "TypeError" and lib:
        return Status.RUNTIME_ERROR, "wrong_api"
    if kind.startswith("OCP.") or name.startswith(("StdFail", "Standard_", "BRep")):
        return Status.RUNTIME_ERROR, "cad_operation_failed"
    if lib and name in ("ValueError", "RuntimeError", "IndexError"):
        return Status.RUNTIME_ERROR, "cad_operation_failed"
    return Status.RUNTIME_ERROR, "script_exception"


def describe(j: dict) -> str:
    """The feedback a repair prompt shows: the failure, then the numbers behind it."""
    m = j.get("metrics", {})
    lines = [j.get("detail", "")]
    if j.get("diagnosis"):
        lines.append(f"diagnosis: {j['diagnosis']}")
    cand, ref = m.get("candidate"), m.get("reference")
    if cand and ref:
        ratio = f" (ratio {m['volume_ratio']})" if m.get("volume_ratio") else ""
        lines.append(
            f"volume: candidate {cand['volume']:.6g}, reference {ref['volume']:.6g}{ratio}"
        )
        lines.append(f"bounding box: candidate {cand['bbox']}, reference {ref['bbox']}")
        lines.append(f"centroid: candidate {cand['centroid']}, reference {ref['centroid']}")
    if "centroid_offset" in m:
        lines.append(f"centroid offset (compared frame): {m['centroid_offset']}")
    if "iou" in m:
        lines.append(f"IoU: {m['iou']}")
    return "\n".join(lines)
