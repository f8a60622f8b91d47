"""The CAD worker: imports CadQuery once, then verifies one candidate per job.

Started by `verifiers.cad.verifier` inside the sandbox (`verifiers.warm`). Two kinds of
process are forked from its clean, warm state:

1. a **build** process per job runs the candidate's script under the job's rlimits
   (address space, CPU, file size) with its own process group, no inherited descriptors
   and its output in a file; it writes the shape it built as BREP. Whatever it prints or
   claims in its status file can only make it fail: a pass needs geometry. It drops the
   worker's copy of the references before the script runs.
2. the **judge** process, which never runs candidate code, reads that BREP and measures
   it against the reference (`verifiers/cad/geometry.py`): validity, IoU by exact
   booleans, surface distances, orientation diagnostics, then the picture, STEP and STL.
   It lives across jobs (its references and caches stay warm), answers on a pipe only it
   holds, and is replaced after a crash, a time-out or RECYCLE_AFTER requests.

The worker itself is not dumpable (no ptrace or /proc/<pid>/mem by the build process, which
has the same uid), keeps OCC's thread pool at one thread (a fork must not inherit a pool
whose threads it does not have), and after every build kills whatever the script left
running. Protocol: one JSON job per stdin line, one JSON result per line on --result-fd.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import ctypes
import errno
import gc
import json
import os
import resource
import select
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

# one thread everywhere: forks of a process with idle pool threads deadlock
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

STATUS_CAP = 64 * 1024
JUDGE_MEMORY_MB = 4096  # the judge's address space beyond the worker's
OUTPUT_TAIL = 2000
CANDIDATE_FILE = "candidate.py"


# --- the build process (candidate code) ---------------------------------------------------


def _status_kb(field: str, pid: int | str = "self") -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _vm_bytes() -> int:
    return _status_kb("VmSize") * 1024


def _set_limits(lim: dict, extra_mb: int) -> None:
    """Address space: what the worker maps already plus the candidate's memory budget.
    Never above the worker's own hard limits (the sandbox set them)."""
    _limit(resource.RLIMIT_AS, _vm_bytes() + extra_mb * 2**20)
    cpu = int(lim["cpu_s"])
    _limit(resource.RLIMIT_CPU, cpu, cpu + 1)
    _limit(resource.RLIMIT_FSIZE, int(lim["fsize_mb"]) * 2**20)
    _limit(resource.RLIMIT_CORE, 0)


def _limit(which: int, soft: int, hard: int | None = None) -> None:
    cap = resource.getrlimit(which)[1]
    hard = soft if hard is None else hard
    if cap != resource.RLIM_INFINITY:
        soft, hard = min(soft, cap), min(hard, cap)
    resource.setrlimit(which, (soft, hard))


def _to_shape(obj: Any):
    """The OCC shape of what a script built, or None."""
    import cadquery as cq
    from OCP.TopoDS import TopoDS_Shape

    if obj is None:
        return None
    if isinstance(obj, TopoDS_Shape):
        return obj
    if isinstance(obj, cq.Shape):
        return obj.wrapped
    if isinstance(obj, cq.Assembly):
        return obj.toCompound().wrapped
    if isinstance(obj, cq.Sketch):
        faces = obj._faces
        return faces.wrapped if faces is not None else None
    if isinstance(obj, cq.Workplane):
        shapes = [v for v in obj.vals() if isinstance(v, cq.Shape)]
        if not shapes:
            return None
        return shapes[0].wrapped if len(shapes) == 1 else cq.Compound.makeCompound(shapes).wrapped
    if isinstance(obj, (list, tuple)):
        parts = [s for s in (_to_shape(o) for o in obj) if s is not None]
        if not parts:
            return None
        return cq.Compound.makeCompound([cq.Shape.cast(s) for s in parts]).wrapped
    return None


def _error_info(e: BaseException) -> dict:
    frames = traceback.extract_tb(e.__traceback__)
    line = next((f.lineno for f in reversed(frames) if f.filename == CANDIDATE_FILE), None)
    # the candidate's own frames plus the library frame that raised
    keep = [f for f in frames if f.filename == CANDIDATE_FILE] + frames[-1:]
    text = "".join(traceback.format_list(keep[-6:]))
    cls = type(e)
    name = cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"
    return {
        "type": name,
        "bases": [c.__name__ for c in cls.__mro__[1:4]],
        "message": str(e)[:1500],
        "line": line,
        "traceback": text[-3000:],
        "in_library": bool(frames) and frames[-1].filename != CANDIDATE_FILE,
    }


def build_child(job: dict, job_dir: Path, worker: Worker) -> None:
    """Runs in the forked build process; never returns."""
    status: dict = {}
    try:
        worker.refs.clear()  # the script must not find the references among our objects
        job.pop("ref_brep", None)
        if worker.judge.to_judge is not None:  # nor talk to the judge
            worker.judge.to_judge = worker.judge.from_judge = None
        os.setpgid(0, 0)
        null = os.open("/dev/null", os.O_RDONLY)
        out = os.open(job_dir / "output.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.closerange(3, 65536)  # the job and result pipes are the worker's alone
        os.chdir(job_dir)
        _set_limits(job["limits"], int(job["limits"]["memory_mb"]))
        shown: list = []

        def show_object(obj, name=None, options=None, **kwargs):
            shown.append(obj)

        def _ignore(*args, **kwargs):
            return None

        env = {
            "__name__": "__cad__",
            "__builtins__": builtins,
            "show_object": show_object,
            "debug": _ignore,
            "log": _ignore,
        }
        try:
            code = compile(job["script"], CANDIDATE_FILE, "exec")
        except SyntaxError as e:
            status = {"error": {"type": "SyntaxError", "message": e.msg, "line": e.lineno}}
        else:
            try:
                exec(code, env)
            except MemoryError:
                status = {"limit": "memory_limit"}
            except OSError as e:
                # Python ignores SIGXFSZ: the file-size limit shows as EFBIG
                big = e.errno == errno.EFBIG
                status = {"limit": "file_size_limit"} if big else {"error": _error_info(e)}
            except BaseException as e:
                status = {"error": _error_info(e)}
            else:
                var = job.get("result_var", "result")
                obj = env.get(var) if var in env else (shown if shown else None)
                if obj is None and var in env:
                    status = {"no_result": f"`{var}` is None"}
                elif obj is None:
                    status = {"no_result": f"no `{var}` variable and no show_object() call"}
                else:
                    shape = _to_shape(obj)
                    if shape is None:
                        status = {
                            "no_result": f"`{var}` holds a {type(obj).__name__} with no shape in it"
                        }
                    else:
                        from OCP.BRepTools import BRepTools

                        BRepTools.Write_s(shape, str(job_dir / "shape.brep"))
                        status = {"built": type(obj).__name__}
    except MemoryError:
        status = {"limit": "memory_limit"}
    except BaseException as e:  # the harness around the script failed
        status = {"error": _error_info(e), "harness": True}
    with contextlib.suppress(BaseException):
        data = json.dumps(status, default=str).encode()[:STATUS_CAP]
        with open(job_dir / "status.json", "wb") as f:
            f.write(data)
    os._exit(0)


# --- the worker ---------------------------------------------------------------------------


def _wait(pid: int, timeout_s: float) -> tuple[int | None, bool]:
    """(wait status, timed out); on time-out the process group is killed."""
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], timeout_s)
    finally:
        os.close(fd)
    timed_out = not ready
    if timed_out:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return status, timed_out


def _kill_strays(spare: int | None) -> None:
    """Kill whatever a script left running. As pid 1 of the sandbox's pid namespace the
    worker can see every process of it; outside a sandbox, the build's group was killed."""
    if os.getpid() != 1:
        return
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in (1, spare):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(name), signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def _build(job: dict, job_dir: Path, worker: Worker) -> dict:
    lim = job["limits"]
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        build_child(job, job_dir, worker)
    status, timed_out = _wait(pid, float(lim["timeout_s"]))
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # anything the script started in its group
    _kill_strays(spare=worker.judge.pid)
    seconds = time.perf_counter() - t0
    res: dict = {"seconds": round(seconds, 6), "output": _tail(job_dir / "output.txt")}
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    if timed_out:
        return {**res, "outcome": "timeout"}
    if sig == signal.SIGXCPU:
        return {**res, "outcome": "cpu_limit"}
    if sig == signal.SIGXFSZ:
        return {**res, "outcome": "file_size_limit"}
    if sig is not None:
        return {**res, "outcome": "crashed", "signal": sig}
    try:
        with open(job_dir / "status.json", "rb") as f:
            info = json.loads(f.read(STATUS_CAP))
        if not isinstance(info, dict):
            info = {}
    except (OSError, ValueError):
        info = {}
    brep = job_dir / "shape.brep"
    if brep.is_file() and not brep.is_symlink():
        return {**res, "outcome": "built", "brep": str(brep)}
    if "limit" in info:
        return {**res, "outcome": str(info["limit"])}
    if info.get("harness"):
        return {**res, "outcome": "harness_error", "error": info.get("error")}
    if isinstance(info.get("error"), dict):
        return {**res, "outcome": "error", "error": info["error"]}
    reason = info.get("no_result") or "the script exited before it built a shape"
    return {**res, "outcome": "no_result", "reason": str(reason)[:300]}


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - OUTPUT_TAIL))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


class Judge:
    """The judge process: forked once from the warm worker, it measures one candidate's
    shape per request and keeps the references (and its caches) warm between them. It
    never runs candidate code; a shape that crashes or hangs it costs that candidate its
    verdict (`judge_error`) and the next request gets a fresh judge."""

    RECYCLE_AFTER = 300  # requests: bounds whatever OCC keeps between them

    def __init__(self) -> None:
        self.pid: int | None = None
        self.requests = 0
        self.to_judge = self.from_judge = None
        self.refs_sent: set[str] = set()

    def start(self) -> None:
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(down_w)
            os.close(up_r)
            _judge_main(down_r, up_w)  # never returns
        os.close(down_r)
        os.close(up_w)
        self.pid, self.requests = pid, 0
        self.to_judge = os.fdopen(down_w, "w")
        self.from_judge = os.fdopen(up_r, "r")
        self.refs_sent = set()

    def stop(self) -> None:
        if self.pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        for f in (self.to_judge, self.from_judge):
            with contextlib.suppress(OSError):
                f.close()
        self.pid = None

    def run(self, job: dict, brep: str, art_dir: Path | None, refs: dict[str, str]) -> dict:
        if self.pid is None or self.requests >= self.RECYCLE_AFTER:
            self.stop()
            self.start()
        self.requests += 1
        # what the judge measures by; it has no use for the script
        job = {k: v for k, v in job.items() if k != "script"}
        req: dict = {"job": job, "brep": brep, "art_dir": str(art_dir) if art_dir else None}
        key = job.get("ref")
        if key and key not in self.refs_sent:
            req["ref_brep"] = refs[key]
        t0 = time.perf_counter()
        timeout = float(job.get("judge_timeout_s", 60))
        try:
            self.to_judge.write(json.dumps(req) + "\n")
            self.to_judge.flush()
            ready, _, _ = select.select([self.from_judge], [], [], timeout)
            line = self.from_judge.readline() if ready else ""
        except OSError:
            line = ""
        seconds = round(time.perf_counter() - t0, 6)
        if not line:
            why = "timed out" if not ready else "crashed"
            self.stop()
            return {"judge_error": f"the judge {why} on this shape", "seconds": seconds}
        if key:
            self.refs_sent.add(key)
        out = json.loads(line)
        out["seconds"] = seconds
        return out


def _judge_main(down: int, up: int) -> None:
    """The judge process's loop; never returns."""
    from verifiers.cad import judge

    code = 0
    try:
        os.setpgid(0, 0)
        _limit(resource.RLIMIT_AS, _vm_bytes() + JUDGE_MEMORY_MB * 2**20)
        _limit(resource.RLIMIT_CORE, 0)
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)  # not the worker's job pipe
        lo, hi = sorted((down, up))
        os.closerange(3, lo)  # the worker's result pipe among them
        os.closerange(lo + 1, hi)
        os.closerange(hi + 1, 65536)
        refs: dict[str, judge.Reference] = {}
        requests = os.fdopen(down, "r")
        replies = os.fdopen(up, "w")
        for line in requests:
            req = json.loads(line)
            job = req["job"]
            key = job.get("ref")
            try:
                if req.get("ref_brep"):
                    refs[key] = _load_reference(req["ref_brep"])
                ref = refs[key] if key else None
                if ref is not None:
                    ref.prime(job)
                art = Path(req["art_dir"]) if req.get("art_dir") else None
                out = judge.judge(job, req["brep"], ref, art)
            except Exception as e:
                out = {"judge_error": f"{type(e).__name__}: {e}"[:500]}
            replies.write(json.dumps(out, default=float) + "\n")
            replies.flush()
    except BaseException:
        code = 1
    os._exit(code)


def _load_reference(brep_text: str):
    from verifiers.cad import judge

    fd, path = tempfile.mkstemp(prefix="ref-", suffix=".brep")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(brep_text)
        return judge.Reference(path)
    finally:
        os.unlink(path)


class Worker:
    """The worker's state: the reference texts it was sent and its judge."""

    def __init__(self, work: Path):
        self.work = work
        self.jobs = 0
        self.refs: dict[str, str] = {}  # reference key -> BREP text, for the judge
        self.judge = Judge()

    MAX_REFS = 256  # reference texts kept; the verifier resends one that was dropped

    def handle(self, job: dict) -> dict:
        self.jobs += 1
        key = job.get("ref")
        if job.get("ref_brep"):
            while len(self.refs) >= self.MAX_REFS:
                self.refs.pop(next(iter(self.refs)))  # the oldest
            self.refs[key] = job.pop("ref_brep")
        elif key and job.get("judge", True) and key not in self.refs:
            return {"need_ref": key}
        jobs = self.work / "jobs"
        jobs.mkdir(exist_ok=True)
        for old in jobs.iterdir():  # the previous job's files were read by the verifier
            _rmtree(old)
        job_dir = jobs / f"j{self.jobs}"
        job_dir.mkdir(mode=0o700)
        built = _build(job, job_dir, self)
        out: dict = {"build": built, "job_dir": str(job_dir)}
        if built["outcome"] == "built" and job.get("judge", True):
            # after the build process and all it started are dead: nothing planted here
            art = None
            if job.get("artifacts"):
                art = Path(tempfile.mkdtemp(prefix="art-", dir=job_dir))
            out["judge"] = self.judge.run(job, built["brep"], art, self.refs)
        return out


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(OSError):
        path.unlink()


def warm_up(work: Path) -> None:
    """Run one judgement's whole path once, so that forks start from a primed process."""
    from verifiers.cad import judge

    d = Path(tempfile.mkdtemp(prefix="warm-", dir=work))
    import cadquery as cq
    from OCP.BRepTools import BRepTools

    part = cq.Workplane("XY").box(20, 10, 4).faces(">Z").workplane().hole(3).edges("|Z").fillet(1)
    BRepTools.Write_s(part.val().wrapped, str(d / "ref.brep"))
    ref = judge.Reference(str(d / "ref.brep"))
    job = {"mode": "absolute", "iou_pass": 0.99, "surface_pass": 0.01, "chamfer_pass": 0.002}
    ref.prime(job)
    judge.judge(job, str(d / "ref.brep"), ref, d)
    _rmtree(d)


def _next_job() -> dict | None:
    """The next job from stdin; None at its end."""
    while True:
        line = sys.stdin.readline()
        if not line:
            return None
        if line.strip():
            return json.loads(line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--result-fd", type=int, required=True)
    args = ap.parse_args(argv)
    out = os.fdopen(args.result_fd, "w")
    try:
        import cadquery
        from OCP.OSD import OSD_ThreadPool

        OSD_ThreadPool.DefaultPool_s(1)
        work = Path.cwd()
        warm_up(work)
        gc.collect()
        gc.freeze()  # forks neither scan nor touch (copy) the library's objects
    except Exception as e:
        out.write(json.dumps({"ready": False, "error": f"{type(e).__name__}: {e}"}) + "\n")
        out.flush()
        return 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    worker = Worker(work)
    ready = {"ready": True, "cadquery": cadquery.__version__, "pid": os.getpid()}
    out.write(json.dumps(ready) + "\n")
    out.flush()
    while True:
        job = _next_job()  # the raw line (it may hold a reference) is gone once parsed
        if job is None:
            break
        try:
            res = worker.handle(job)
        except Exception as e:  # a harness bug, reported as such
            res = {"harness_error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
        del job
        res["rss_mb"] = round(_status_kb("VmRSS") / 1024, 1)  # now, not the peak
        if worker.judge.pid is not None:
            res["judge_rss_mb"] = round(_status_kb("VmRSS", worker.judge.pid) / 1024, 1)
        out.write(json.dumps(res, default=str) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
