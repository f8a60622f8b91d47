"""The CAD verifier: a CadQuery script is judged by the geometry it builds.

Gates, in order (each a Check):

- **anticheat**: static rules over the script's AST (`verifiers/cad/anticheat.py`: imports
  outside the CAD allowlist, attribute chains to modules CadQuery imports, dunders,
  introspection, file I/O, protocol overrides).
- **build**: the script runs in a warm CAD build server's fresh build process (sandboxed,
  rlimits); its result is the `result` variable or what it passed to `show_object`.
  Nothing built is `format_error`; a wrong CadQuery call (unknown method, bad selector, a
  fillet OCC cannot make) is `api`.
- **solid**: valid OCC shape, closed shells, positive volume, as many solids as the part.
- **iou**: intersection over union with the reference by exact OCC booleans, in the task's
  frame (absolute, or normalized: centred and scaled to a unit box); below the task's pass
  mark, the feedback says whether a rotation by 90° multiples, an axis swap, a mirror, a
  swapped Euler order or a shift would match (`geometry_orientation` / `geometry_misplaced`).
- **surface**: Chamfer distance and the largest surface deviation, on sampled points
  measured against the other shape's surface (a missing small hole or fillet shows here).

The trust boundary (`verifiers/cad/server.py` says how each side keeps it):

- Build servers (`CadWorker`) run candidate code and never hold a reference or another
  candidate's text: each job is a fresh dir the host makes (`Worker.fresh_outdir`) holding
  the script as a file, read by the build process only, and removed after the verdict.
  What the build leaves (status, printed output, BREP) is read here, by the host, without
  following links and size-capped (`Worker.read_output`), and it can only fail the
  candidate: no file a script can write ever makes a verdict `infra_error`.
- Judges (`CadJudgeWorker`) are sandboxed workers of their own that never run candidate
  code: the host sends them the candidate's BREP and, once per judge, the reference's. A
  build process cannot see, signal or read a judge; a shape that crashes or hangs one
  fails that candidate, and the next candidate gets a fresh judge.
- References are built like candidates (the script in a file, on a build server) and the
  candidate first: a reference that does not build fails its own text as a candidate as
  what it is, and every other candidate of the task as `harness_error` naming the task.
- `infra_error` comes only from faults a script cannot cause: no worker could start, the
  build process failed before the script ran (a byte on a pipe the script never holds),
  a reference that does not build. A build server lost twice on one script (a script can
  kill its own server: same uid) is the script's `script_crash`.

Every candidate that built a shape gets a picture (candidate over reference in three views
and an isometric one, with the verdict, IoU, diagnosis and a legend: `judge.caption`,
`render.render_views`), STEP and STL as artifacts.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from verifiers.base import LIMIT_STATUS, Context, GateFail, Tool, Verifier
from verifiers.cad import anticheat
from verifiers.cad.domain import DOMAIN, CadSettings
from verifiers.contract import Artifact, Limits, Status, Task, Verdict
from verifiers.sandbox import MACHINE_CODES, Stop, Usage
from verifiers.warm import (
    JobTimeout,
    OutputRefused,
    Worker,
    WorkerCommand,
    WorkerDied,
    WorkerPool,
    verify_on_pool,
)

INSTALL_HINT = "pip install -e '.[cad]'"
START_MARGIN_S = 30.0  # the worker's own answer comes this long after the job's limits
JUDGE_TIMEOUT_S = 60.0
STATUS_CAP = 64 * 1024
OUTPUT_TAIL = 2000
ARTIFACT_KINDS = {"picture": ("picture", "picture.png"), "step": ("step", "candidate.step"),
                  "stl": ("stl", "candidate.stl")}  # fmt: skip
ARTIFACT_CAP = 64 * 2**20
REFERENCE_LIMITS = {"timeout_s": 120.0, "cpu_s": 120, "memory_mb": 4096, "fsize_mb": 256}


class CadWorker(Worker):
    """A build server (`verifiers.cad.server --role build`): runs candidate scripts and
    never holds a reference."""

    prefix = "cadworker"
    role = "build"
    recycle_after_jobs = 5000

    def command(self, fd: int) -> WorkerCommand:
        env = {**self.python_env(), "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        args = ["--role", self.role, "--result-fd", str(fd)]
        if not self.limits.unconfined:
            args.append("--sandboxed")  # its own /tmp and pid namespace: emptied after builds
        argv = self.python_argv("verifiers.cad.server", *args)
        # the interpreter and the verifiers package only: not tasks/ (the references)
        return WorkerCommand(argv, env, ro=self.python_paths())


class CadJudgeWorker(CadWorker):
    """A judge server (`--role judge`), in a sandbox of its own: it holds the references
    and never runs candidate code; no build process can see, signal or read it."""

    prefix = "cadworker-judge"
    role = "judge"

    def __init__(self, limits: Limits, index: int):
        self.refs_sent: set[str] = set()
        super().__init__(limits, index)

    def before_start(self) -> None:
        self.refs_sent = set()  # a fresh process has none


class CadVerifier(Verifier):
    domain = "cad"
    name = "cad-verifier"
    # 2: a spent CPU budget is a timeout (was resource_limit); the machine rule
    version = "2"
    resource = "cad"
    gates = DOMAIN.gate_names
    always = ("anticheat", "build")
    requires = {"solid": ("build",), "iou": ("solid",), "surface": ("iou",)}
    partial_versions = True

    def __init__(
        self,
        keep_workdirs: Path | None = None,
        *,
        settings: CadSettings | Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> None:
        """`settings`: `CadSettings` or its dict; its fields may also be given by name
        (`CadVerifier(workers=1)`)."""
        super().__init__(keep_workdirs, settings=settings, **overrides)
        self._workers = self.settings.workers
        self._pools: dict[tuple[str, bool], WorkerPool] = {}
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

    def pool(self, limits: Limits, role: str = "build") -> WorkerPool:
        """The build servers (`role="build"`) or the judges (`"judge"`): as many of each
        as there are cores (or `workers`)."""
        with self._pool_lock:
            pool = self._pools.get((role, limits.unconfined))
            if pool is None:
                n = self._workers or max(1, os.cpu_count() or 1)
                if role == "judge":  # indices after the builds': sandbox uids of their own
                    pool = WorkerPool(lambda i: CadJudgeWorker(limits, n + i), n)
                else:
                    pool = WorkerPool(lambda i: CadWorker(limits, i), n)
                self._pools[(role, limits.unconfined)] = pool
            return pool

    def close(self) -> None:
        with self._pool_lock:  # a verify thread may be making a pool meanwhile
            pools = list(self._pools.values())
            self._pools.clear()
        for pool in pools:
            pool.close()

    def verify_many(
        self, items: Sequence[tuple[Task, Any]], limits: Limits | None = None
    ) -> list[Verdict]:
        """One candidate per worker at a time, all workers busy."""
        lim = limits or Limits()
        if len(items) > 1 and "solid" in self._wanted(lim):
            judges = threading.Thread(target=self.pool(lim, "judge").warm_up, daemon=True)
            judges.start()  # both kinds start together
            self.pool(lim).warm_up()
            judges.join()
        return verify_on_pool(self.verify, self.pool(lim), items, limits)

    # --- gates --------------------------------------------------------------------------
    def gate_anticheat(self, ctx: Context) -> str:
        found = anticheat.scan(ctx.code)
        if found:
            first = found[0]
            raise GateFail(
                Status.REJECTED,
                first.rule,
                f"line {first.line}: {first.name}: {first.what}",
                feedback="\n".join(
                    f"line {f.line}: {f.name}: {f.what} ({f.why})" for f in found[:5]
                ),
            )
        return "no forbidden imports or calls"

    def gate_build(self, ctx: Context) -> str:
        task = ctx.task
        lim = ctx.limits
        limits = {"timeout_s": lim.timeout_s, "cpu_s": lim.cpu_s, "memory_mb": lim.memory_mb,
                  "fsize_mb": lim.fsize_mb}  # fmt: skip
        build = self._build(ctx.limits, ctx.code, task.interface.get("result", "result"), limits)
        ctx.gate_seconds["build"] = build["seconds"]
        ctx.metrics["build_seconds"] = build["seconds"]
        ctx.metrics["worker_rss_mb"] = build.get("rss_mb")
        if build["outcome"] != "built":
            raise build_failure(build)
        if build.get("output", "").strip():
            ctx.notes.append(f"the script printed:\n{build['output'][-500:]}")
        # the gates that will run (asking for `surface` alone runs `solid` and `iou` too)
        if "solid" in self._wanted(ctx.limits):
            # the reference after the candidate: a reference that does not build fails
            # every other candidate as infra, but itself (as a candidate) as what it is
            ref_key = self._reference(task, ctx.limits) if task.reference else None
            h = task.harness
            job = {
                "mode": h.get("compare", "absolute"),
                "iou_pass": float(h.get("iou_pass", 0.99)),
                "surface_pass": float(h.get("surface_pass", 0.01)),
                "chamfer_pass": float(h.get("chamfer_pass", 0.002)),
                "euler": h.get("euler"),
            }
            ctx.state["judge"] = self._judge(ctx, job, build["brep"], ref_key)
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

    def _build(self, limits: Limits, script: str, result_var: str, job_limits: dict) -> dict:
        """Run a script on a build server: the build as the host reads it back."""
        pool = self.pool(limits)
        timeout = float(job_limits["timeout_s"]) + START_MARGIN_S
        lost = []
        while True:
            worker = _lease(pool)
            dirty, job_dir = True, None
            try:
                job_dir = worker.fresh_outdir()
                _write_new(job_dir / "candidate.py", script.encode("utf-8"))
                job = {"job_dir": worker.guest_path(job_dir), "result_var": result_var,
                       "limits": job_limits}  # fmt: skip
                try:
                    res = worker.run(job, timeout, cpu_s=float(job_limits["cpu_s"]))
                except (WorkerDied, JobTimeout) as e:
                    # the server is pid 1 of its sandbox and cleans up after every build, so
                    # this is rare; once more on a fresh one tells a fault of ours from
                    # whatever this script did, and a second time it is the script's
                    lost.append(e)
                    if len(lost) < 2:
                        continue
                    raise lost_twice(lost) from None
                if "harness_error" in res:
                    raise GateFail(Status.INFRA_ERROR, "harness_error", res["harness_error"][:300])
                dirty = not res["build"].get("clean")  # something stayed: a fresh worker
                build = read_build(worker, job_dir, res["build"], job_limits)
                build["rss_mb"] = res.get("rss_mb")
                return build
            finally:
                if job_dir is not None:
                    shutil.rmtree(job_dir, ignore_errors=True)  # fd-based: no link followed
                pool.release(worker, dirty)

    def _judge(self, ctx: Context, job: dict, brep: bytes, ref_key: str | None) -> dict:
        """Measure the candidate's shape on a judge server (sent the reference, by the
        host, the first time it needs it)."""
        pool = self.pool(ctx.limits, "judge")
        for _ in range(3):
            worker = _lease(pool)
            dirty, d = True, None
            try:
                d = worker.fresh_outdir()
                _write_new(d / "candidate.brep", brep)
                req: dict[str, Any] = {"dir": worker.guest_path(d), "job": job, "ref": ref_key,
                                       "artifacts": True}  # fmt: skip
                if ref_key is not None and ref_key not in worker.refs_sent:
                    _write_new(d / "ref.brep", self._refs[ref_key].encode("latin-1"))
                    req["ref_file"] = "ref.brep"
                try:
                    res = worker.run(req, JUDGE_TIMEOUT_S + START_MARGIN_S)
                except JobTimeout:
                    return {"judge_error": "the judge timed out on this shape (timeout)"}
                except WorkerDied:
                    return {"judge_error": "the judge crashed on this shape"}
                if res.get("need_ref"):  # it dropped it (or never had it)
                    worker.refs_sent.discard(ref_key)
                    dirty = False
                    continue
                if "harness_error" in res:  # the reference or the request: ours
                    raise GateFail(
                        Status.INFRA_ERROR, "harness_error", f"judge: {res['harness_error']}"[:300]
                    )
                if ref_key is not None:
                    worker.refs_sent.add(ref_key)
                dirty = False
                j = res.get("judge") or {}
                self._collect(ctx, worker, j)
                return j
            finally:
                if d is not None:
                    shutil.rmtree(d, ignore_errors=True)
                pool.release(worker, dirty)
        raise GateFail(Status.INFRA_ERROR, "harness_error", "the judge kept losing the reference")

    def _collect(self, ctx: Context, worker: Worker, j: dict) -> None:
        """Copy the artifacts out of the judge's dir before it is removed."""
        for key, path in (j.get("artifacts") or {}).items():
            if key not in ARTIFACT_KINDS:
                continue
            try:
                data = worker.read_output(str(path), ARTIFACT_CAP)
            except (OSError, OutputRefused):
                continue
            kind, name = ARTIFACT_KINDS[key]
            ctx.artifacts.append(Artifact(kind, name, data))
        ctx.metrics.update(j.get("metrics") or {})
        if j.get("steps"):
            ctx.metrics["judge_steps"] = j["steps"]
        if j.get("diagnosis"):
            ctx.metrics["diagnosis"] = j["diagnosis"]

    def _reference(self, task: Task, limits: Limits) -> str:
        """The reference's shape (BREP text), built once per verifier on a build server
        (the script goes in a file of its own, never through the server's memory); the
        judges get it from here."""
        key = hashlib.sha256(f"{self.version}\0{task.reference}".encode()).hexdigest()[:32]
        with self._ref_lock:
            if key in self._refs:
                return key
        result_var = task.interface.get("result", "result")
        try:
            build = self._build(limits, task.reference, result_var, dict(REFERENCE_LIMITS))
        except GateFail as f:
            raise GateFail(
                Status.INFRA_ERROR,
                "harness_error",
                f"task {task.name}: the reference script could not be built ({f.detail})"[:300],
            ) from None
        if build["outcome"] in MACHINE_CODES:  # the machine's, not the task's: retried
            raise build_failure(build)
        if build["outcome"] != "built":
            err = build.get("error") or {}
            why = err.get("message") or build.get("reason") or build["outcome"]
            raise GateFail(
                Status.INFRA_ERROR,
                "harness_error",
                f"task {task.name}: the reference script does not build "
                f"({err.get('type', build['outcome'])}: {why})"[:300],
            )
        with self._ref_lock:
            self._refs[key] = build["brep"].decode("latin-1")
        return key


def _write_new(path: Path, data: bytes) -> None:
    """A file the host puts in a dir it has just made (never an existing name or link)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _read(worker: Worker, path: Path, cap: int) -> bytes | None:
    """A file the build left, read by the host without following links; None when it is
    missing, not a plain file or over `cap` (the script's doing, whichever it is)."""
    try:
        return worker.read_output(worker.guest_path(path), cap)
    except (OSError, OutputRefused):
        return None


def read_build(worker: Worker, job_dir: Path, wait: dict, job_limits: dict) -> dict:
    """What a build made, from the server's wait status and the files the build wrote.
    Those files are the script's to write: whatever they say can only make it fail (a
    pass needs geometry the judge measures), and nothing in them is ever infra."""
    fsize = int(job_limits["fsize_mb"]) * 2**20
    output = _read(worker, job_dir / "output.txt", fsize + 2**20) or b""
    res: dict = {
        "seconds": wait["seconds"],
        "output": output[-OUTPUT_TAIL:].decode("utf-8", "replace"),
    }
    if not wait.get("started") and not wait.get("timed_out"):
        # the one outcome of ours: the build process failed before any of the script ran
        detail = f"exit {wait.get('exit')}, signal {wait.get('signal')}"
        return {**res, "outcome": "harness_error", "error": {"type": "build", "message": detail}}
    sig = wait.get("signal")
    # whose doing a time-out or a SIGKILL was: the sandbox's one rule, on what the build
    # server measured from /proc (never on what the script wrote)
    stop = build_stop(wait, job_limits)
    judged = stop.code() if (wait.get("timed_out") or sig == signal.SIGKILL) else None
    if judged in MACHINE_CODES:
        return {**res, "outcome": judged, "measured": stop.describe()}
    if wait.get("timed_out"):
        return {**res, "outcome": "timeout"}
    if sig == signal.SIGXCPU or judged == "cpu_limit":
        return {**res, "outcome": "cpu_limit"}
    if sig == signal.SIGXFSZ:
        return {**res, "outcome": "file_size_limit"}
    if sig is not None:
        return {**res, "outcome": "crashed", "signal": sig}
    brep = _read(worker, job_dir / "shape.brep", fsize)
    if brep:
        return {**res, "outcome": "built", "brep": brep}
    try:
        info = json.loads(_read(worker, job_dir / "status.json", STATUS_CAP) or b"{}")
    except ValueError:
        info = {}
    if not isinstance(info, dict):
        info = {}
    limit = info.get("limit")
    if isinstance(limit, str) and limit in LIMIT_OUTCOMES:
        return {**res, "outcome": limit}
    if isinstance(info.get("error"), dict):
        err = {k: v for k, v in info["error"].items() if isinstance(v, (str, int, bool, list))}
        return {**res, "outcome": "error", "error": err}
    reason = info.get("no_result") or "the script exited before it built a shape"
    return {**res, "outcome": "no_result", "reason": str(reason)[:300]}


def build_stop(wait: dict, job_limits: dict) -> Stop:
    """A build as the build server measured it (`server._wait`), for `Stop.code`. The
    script's code runs there and may signal itself: a SIGKILL is the machine's only with
    the OOM killer's count as evidence."""
    cpu, pause, rivals = wait.get("cpu_s"), wait.get("wait_s"), wait.get("contenders")
    usage = None
    if isinstance(cpu, (int, float)):
        usage = Usage(
            float(cpu),
            float(pause) if isinstance(pause, (int, float)) else None,
            int(rivals) if isinstance(rivals, int) else 0,
        )
    return Stop(
        float(wait.get("wall_s") or wait.get("seconds") or 0.0),
        wall_kill=bool(wait.get("timed_out")),
        usage=usage,
        budget_s=float(job_limits["cpu_s"]),
        signal=wait.get("signal"),
        oom_kills=wait.get("oom_kills"),
        self_signal=True,
    )


def lost_twice(lost: list[Exception]) -> GateFail:
    """Two build servers lost on one script: the script's doing, never retried."""
    if all(isinstance(e, JobTimeout) for e in lost):
        return GateFail(
            Status.TIMEOUT, "tool_timeout", "the CAD build server stopped answering twice"
        )
    return GateFail(
        Status.RUNTIME_ERROR,
        "script_crash",
        "the CAD worker died twice while running this script",
        feedback=f"the worker process died: {lost[-1]}"[:800],
    )


def _lease(pool: WorkerPool) -> Worker:
    try:
        return pool.lease()
    except WorkerDied as e:
        raise GateFail(Status.INFRA_ERROR, "harness_error", f"no CAD worker: {e}"[:300]) from None


# --- classification -----------------------------------------------------------------------

CQ_TYPES = ("Workplane", "Sketch", "Assembly", "Shape", "Solid", "Compound", "Face", "Edge",
            "Wire", "Vertex", "Shell", "Vector", "Location", "Plane", "Selector")  # fmt: skip
# the base's one table of which limit is which label (output floods are caught there too)
LIMIT_OUTCOMES = LIMIT_STATUS


def build_failure(build: dict) -> GateFail:
    """The GateFail for a build that made no shape."""
    outcome = build["outcome"]
    printed = build.get("output", "")[-600:]
    if outcome == "harness_error":  # before any of the script ran: never the script's doing
        err = build.get("error") or {}
        detail = f"the build process failed before the script ran ({err.get('message')})"
        return GateFail(Status.INFRA_ERROR, "harness_error", detail[:400])
    if outcome in MACHINE_CODES:  # the machine's: infra, retried
        why = "slow machine" if outcome == "machine_slow" else "killed from outside"
        detail = f"the build was stopped by the {why} ({build.get('measured', '')})"
        return GateFail(Status.INFRA_ERROR, outcome, detail)
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
