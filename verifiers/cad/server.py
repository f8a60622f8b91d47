"""The CAD worker servers: each imports CadQuery once, then takes one job per stdin line
and answers one JSON line on --result-fd. Two roles, two kinds of sandboxed `Worker`
(`verifiers.cad.verifier`), never the same process:

- **build** (`--role build`) runs candidate code. Per job it forks a **build process**
  from its clean, warm state; that process reads the script from the job dir the host
  made (`candidate.py`), runs it under the job's rlimits (address space, CPU, file size)
  in its own process group with no inherited descriptors and its output in a file, and
  writes what it built as BREP (`shape.brep`) and a status file. The build server itself
  never holds a script, a reference or anything a script wrote: it passes on job dirs
  and wait statuses only, so a build process that scans its own heap (a copy of its
  parent's) finds nothing of another candidate or of a reference. After every build it
  kills whatever the script left running, empties /tmp and its work dir (all but the job
  dir's three outputs, which the host reads itself, without following links) and, when
  something there cannot be removed, asks to be replaced.
- **judge** (`--role judge`) never runs candidate code. It holds the references (sent
  by the host, never through a build server) and measures a candidate's BREP against
  one (`verifiers/cad/geometry.py`): validity, IoU by exact booleans, surface distances,
  orientation diagnostics, then the picture, STEP and STL. It lives in a sandbox of its
  own (pid namespace, /tmp, work dir), so a build process can neither see, signal nor
  read it; a shape that crashes or hangs it costs that candidate its verdict and the
  host starts a fresh judge.

Both are started isolated (`python -I`, `Worker.python_argv`): nothing a candidate
writes is ever on their import path. Both make themselves non-dumpable (no ptrace or
/proc/<pid>/mem by a process of the same uid) and keep OCC's thread pool at one thread
(a fork must not inherit a pool whose threads it does not have).
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
import shutil
import signal
import stat
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from verifiers.sandbox import empty_dir, oom_kills, tree_snapshot

# one thread everywhere: forks of a process with idle pool threads deadlock
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

STATUS_CAP = 64 * 1024
JUDGE_MEMORY_MB = 4096  # the judge's address space beyond what it maps once warm
CANDIDATE_FILE = "candidate.py"
OUTPUTS = ("status.json", "output.txt", "shape.brep")  # what a build leaves for the host
KILL_WINDOW_S = 5.0  # strays that will not die in this long: the worker asks to be replaced


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
    """The OCC shape of what a script built, or None. Runs on the script's objects, so
    whatever it raises is the script's (the caller reports it as the script's error)."""
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
    """The exception as plain values. The exception is the script's: any of its methods
    may raise, so each piece falls back to a plain description."""
    info: dict = {"type": "Exception", "message": "", "line": None, "traceback": ""}
    with contextlib.suppress(BaseException):
        cls = type(e)
        mod, name = str(cls.__module__), str(cls.__name__)
        info["type"] = name if mod == "builtins" else f"{mod}.{name}"
        info["bases"] = [str(c.__name__) for c in cls.__mro__[1:4]]
    try:
        info["message"] = str(e)[:1500]
    except BaseException:
        info["message"] = "(the exception's message could not be read)"
    with contextlib.suppress(BaseException):
        frames = traceback.extract_tb(e.__traceback__)
        info["line"] = next(
            (f.lineno for f in reversed(frames) if f.filename == CANDIDATE_FILE), None
        )
        # the candidate's own frames plus the library frame that raised
        keep = [f for f in frames if f.filename == CANDIDATE_FILE]
        if frames and frames[-1].filename != CANDIDATE_FILE:
            keep.append(frames[-1])
        info["traceback"] = "".join(traceback.format_list(keep[-6:]))[-3000:]
        info["in_library"] = bool(frames) and frames[-1].filename != CANDIDATE_FILE
    return info


def _run_script(script: str, result_var: str, job_dir: Path) -> dict:
    """Run the script and write its shape; the status to report. Everything here acts on
    the script or its objects, so every failure is the script's."""
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
        code = compile(script, CANDIDATE_FILE, "exec")
    except SyntaxError as e:
        return {"error": {"type": "SyntaxError", "message": str(e.msg), "line": e.lineno}}
    except MemoryError:
        return {"limit": "memory_limit"}
    try:
        exec(code, env)
        obj = env.get(result_var) if result_var in env else (list(shown) if shown else None)
        if obj is None and result_var in env:
            return {"no_result": f"`{result_var}` is None"}
        if obj is None:
            return {"no_result": f"no `{result_var}` variable and no show_object() call"}
        shape = _to_shape(obj)
        if shape is None:
            kind = "an object"
            with contextlib.suppress(BaseException):
                kind = f"a {str(type(obj).__name__)[:60]}"
            return {"no_result": f"`{result_var}` holds {kind} with no shape in it"}
        from OCP.BRepTools import BRepTools

        BRepTools.Write_s(shape, str(job_dir / "shape.brep"))
        return {"built": True}
    except MemoryError:
        return {"limit": "memory_limit"}
    except OSError as e:
        # Python ignores SIGXFSZ: the file-size limit shows as EFBIG
        if getattr(e, "errno", None) == errno.EFBIG:
            return {"limit": "file_size_limit"}
        return {"error": _error_info(e)}
    except BaseException as e:
        return {"error": _error_info(e)}


def build_child(job: dict, job_dir: Path, started: int) -> None:
    """Runs in the forked build process; never returns. `started` is a pipe: one byte on
    it says the harness got as far as the script (what fails before is ours)."""
    status: dict = {}
    try:
        os.setpgid(0, 0)
        os.chdir(job_dir)
        with open(CANDIDATE_FILE, encoding="utf-8") as f:
            script = f.read()
        null = os.open("/dev/null", os.O_RDONLY)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        out = os.open(job_dir / "output.txt", flags, 0o600)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.dup2(started, 3)
        os.closerange(4, 65536)  # the job and result pipes are the worker's alone
        _set_limits(job["limits"], int(job["limits"]["memory_mb"]))
        os.write(3, b"S")
        os.close(3)
    except BaseException:
        os._exit(3)
    # from here on everything is the candidate's: its script, its objects, its exceptions
    with contextlib.suppress(BaseException):
        status = _run_script(script, str(job.get("result_var", "result")), job_dir)
    with contextlib.suppress(BaseException):
        data = json.dumps(status, default=str).encode()[:STATUS_CAP]
        fd = os.open(job_dir / "status.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, data)
    os._exit(0)


# --- the build server ---------------------------------------------------------------------


def _wait(pid: int, timeout_s: float, sandboxed: bool) -> tuple[int, bool, dict]:
    """(wait status, timed out, what was measured); on time-out the script's processes
    are measured (`verifiers.sandbox.Stop`: the host judges whose doing it was), then its
    process group is killed. Measured from /proc, never from anything the script says: in
    the sandbox every process but pid 1 and this server is the script's (a double-forked
    one too), unconfined the build process's own tree."""
    t0 = time.perf_counter()
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], timeout_s)
    finally:
        os.close(fd)
    timed_out = not ready
    measured: dict = {}
    if timed_out:
        snap = tree_snapshot(1, skip=(1, os.getpid())) if sandboxed else tree_snapshot(pid)
        usage = snap.since()
        measured = {"wall_s": time.perf_counter() - t0, "cpu_s": usage.cpu_s}
        measured["wait_s"] = usage.wait_s
        measured["contenders"] = usage.contenders
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    _, status, ru = os.wait4(pid, 0)
    if not timed_out:  # the build process and what it reaped
        measured = {"wall_s": time.perf_counter() - t0, "cpu_s": ru.ru_utime + ru.ru_stime}
    return status, timed_out, measured


def _kill_strays(sandboxed: bool) -> bool:
    """Kill whatever a script left running; True when none is left. In its sandbox the
    server is the only process of its uid but the ones the script started (pid 1 is the
    sandbox's root shell), in a pid namespace of its own: kill(-1) reaches every one of
    them at once (a fork bomb cannot outrun it), and as their subreaper the server reaps
    them all here (setsid'd and double-forked ones too), so no zombie counts against the
    next script's process limit. Unconfined, the build's process group was killed and
    that is all there is to do."""
    if not sandboxed:
        return True
    deadline = time.monotonic() + KILL_WINDOW_S
    while True:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)


def _clean_after_build(work: Path, job_dir: Path, sandboxed: bool) -> bool:
    """Leave nothing a script wrote for the next one: the work dir holds only the job
    dir, the job dir only the outputs the host reads (plain files), /tmp nothing. False
    when something could not be removed (the host then replaces this worker)."""
    clean = True
    places = [(str(work), [job_dir.name])]
    if sandboxed:  # /tmp and /dev/shm are the sandbox's own
        places += [("/tmp", []), ("/dev/shm", [])]
    for root, keep in places:
        if os.path.isdir(root) and not os.path.islink(root):
            clean = empty_dir(root, keep) and clean
    try:
        names = os.listdir(job_dir)
        outputs = [n for n in names if n in OUTPUTS and stat.S_ISREG(os.lstat(job_dir / n).st_mode)]
    except OSError:
        return False
    return empty_dir(job_dir, outputs) and clean


def build(job: dict, work: Path, sandboxed: bool) -> dict:
    """One build: fork, wait, kill what is left, clean. Reports what the server saw (a
    wait status), never what the script wrote (the host reads that itself)."""
    job_dir = Path(job["job_dir"])
    if not job_dir.is_dir() or job_dir.is_symlink() or job_dir.parent != work:
        return {"harness_error": f"no job dir at {job_dir}"}
    lim = job["limits"]
    r, w = os.pipe()
    oom0 = oom_kills()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        build_child(job, job_dir, w)
    os.close(w)
    status, timed_out, measured = _wait(pid, float(lim["timeout_s"]), sandboxed)
    seconds = time.perf_counter() - t0
    oom1 = oom_kills()
    if oom0 is not None and oom1 is not None:
        measured["oom_kills"] = oom1 - oom0  # the machine's OOM killer, meanwhile
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # anything the script started in its group
    reaped = _kill_strays(sandboxed)
    started = False
    with contextlib.suppress(OSError):
        os.set_blocking(r, False)
        started = os.read(r, 1) == b"S"
    os.close(r)
    clean = _clean_after_build(work, job_dir, sandboxed) and reaped
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    return {
        "seconds": round(seconds, 6),
        "timed_out": timed_out,
        "signal": sig,
        "exit": code,
        "started": started,
        "clean": clean,
        **{k: round(v, 6) if isinstance(v, float) else v for k, v in measured.items()},
    }


def warm_up_build(work: Path) -> None:
    """Build and write one part, so that forks start from a primed process."""
    import cadquery as cq
    from OCP.BRepTools import BRepTools

    d = Path(tempfile.mkdtemp(prefix="warm-", dir=work))
    part = cq.Workplane("XY").box(20, 10, 4).faces(">Z").workplane().hole(3).edges("|Z").fillet(1)
    BRepTools.Write_s(part.val().wrapped, str(d / "shape.brep"))
    shutil.rmtree(d, ignore_errors=True)


def serve_build(out, work: Path, sandboxed: bool) -> int:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    for root in [str(work), *(["/tmp", "/dev/shm"] if sandboxed else [])]:
        empty_dir(root)  # what starting up left (caches in $HOME): the first build sees none
    _ready(out)
    while True:
        job = _next_job()
        if job is None:
            return 0
        try:
            res = {"build": build(job, work, sandboxed)}
        except Exception as e:  # a harness bug, reported as such
            res = {"harness_error": f"{type(e).__name__}: {e}"}
        res["rss_mb"] = round(_status_kb("VmRSS") / 1024, 1)  # now, not the peak
        _reply(out, res)


# --- the judge server ---------------------------------------------------------------------


class Judge:
    """The judge's state: the references it was sent (loaded once, with their frames and
    surfaces kept warm for the next candidate)."""

    MAX_REFS = 256  # references kept; the verifier resends one that was dropped

    def __init__(self) -> None:
        self.refs: dict[str, Any] = {}

    def handle(self, req: dict) -> dict:
        from verifiers.cad import judge

        job, key = req["job"], req.get("ref")
        d = Path(req["dir"])
        if key and req.get("ref_file"):
            ref_path = d / req["ref_file"]
            try:
                ref = judge.Reference(str(ref_path))
            finally:
                with contextlib.suppress(OSError):
                    ref_path.unlink()
            while len(self.refs) >= self.MAX_REFS:
                self.refs.pop(next(iter(self.refs)))  # the oldest
            self.refs[key] = ref
        if key and key not in self.refs:
            return {"need_ref": key}
        ref = self.refs.get(key) if key else None
        try:
            if ref is not None:
                ref.prime(job)
            art = d if req.get("artifacts") else None
            return {"judge": judge.judge(job, str(d / "candidate.brep"), ref, art)}
        except Exception as e:  # the candidate's shape broke a measurement
            return {"judge": {"judge_error": f"{type(e).__name__}: {e}"[:500]}}


def warm_up_judge(work: Path) -> None:
    """Run one judgement's whole path once, so the first candidate's costs no more."""
    import cadquery as cq
    from OCP.BRepTools import BRepTools

    from verifiers.cad import judge

    d = Path(tempfile.mkdtemp(prefix="warm-", dir=work))
    part = cq.Workplane("XY").box(20, 10, 4).faces(">Z").workplane().hole(3).edges("|Z").fillet(1)
    BRepTools.Write_s(part.val().wrapped, str(d / "ref.brep"))
    ref = judge.Reference(str(d / "ref.brep"))
    job = {"mode": "absolute", "iou_pass": 0.99, "surface_pass": 0.01, "chamfer_pass": 0.002}
    ref.prime(job)
    judge.judge(job, str(d / "ref.brep"), ref, d)
    shutil.rmtree(d, ignore_errors=True)


def serve_judge(out) -> int:
    _limit(resource.RLIMIT_AS, _vm_bytes() + JUDGE_MEMORY_MB * 2**20)
    _ready(out)
    judge = Judge()
    while True:
        req = _next_job()
        if req is None:
            return 0
        try:
            res = judge.handle(req)
        except Exception as e:  # the reference or the request itself: ours
            res = {"harness_error": f"{type(e).__name__}: {e}"}
        res["rss_mb"] = round(_status_kb("VmRSS") / 1024, 1)
        _reply(out, res)


# --- both ---------------------------------------------------------------------------------


def _next_job() -> dict | None:
    """The next job from stdin; None at its end."""
    while True:
        line = sys.stdin.readline()
        if not line:
            return None
        if line.strip():
            return json.loads(line)


def _ready(out) -> None:
    import cadquery

    _reply(out, {"ready": True, "cadquery": cadquery.__version__, "pid": os.getpid()})


def _reply(out, res: dict) -> None:
    out.write(json.dumps(res, default=str) + "\n")
    out.flush()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--result-fd", type=int, required=True)
    ap.add_argument("--role", choices=("build", "judge"), default="build")
    ap.add_argument(
        "--sandboxed",
        action="store_true",
        help="in a sandbox of its own: /tmp is private, other processes of its uid are strays",
    )
    args = ap.parse_args(argv)
    out = os.fdopen(args.result_fd, "w")
    work = Path.cwd()
    try:
        from OCP.OSD import OSD_ThreadPool

        OSD_ThreadPool.DefaultPool_s(1)
        (warm_up_judge if args.role == "judge" else warm_up_build)(work)
        gc.collect()
        gc.freeze()  # forks neither scan nor touch (copy) the library's objects
    except Exception as e:
        _reply(out, {"ready": False, "error": f"{type(e).__name__}: {e}"})
        return 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    if args.role == "judge":
        return serve_judge(out)
    return serve_build(out, work, args.sandboxed)


if __name__ == "__main__":
    raise SystemExit(main())
