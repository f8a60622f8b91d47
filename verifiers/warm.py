"""Warm worker processes: a long-lived Python process that imports a domain's heavy
library once (torch, cadquery) and then takes jobs, one at a time.

A worker runs inside bubblewrap (no network, read-only system, a private writable dir at
GUEST_WORK), or with rlimits only when the caller opted out explicitly
(`Limits(unconfined=True)`). Jobs go in on stdin as JSON lines; results come back on a pipe
of their own, which the candidate's prints cannot reach. A job that runs past its
deadline kills the worker's whole process group. A domain subclasses `Worker` with the
command that starts its server (`command()`).

The worker's stdout and stderr are pipes the host drains while it waits for a result: it
counts what each stream carried during the job (a count the candidate cannot lower, as it
could a log file's size by truncating its own stdout) and keeps the last LOG_CAP bytes
for messages. A job given an output cap (`Worker.run(output_bytes=...)`) that prints more
on either stream is stopped there: `OutputFlood`, the candidate's `output_limit`.

Machine or candidate: the host measures the worker's process tree over each job (CPU and
CPU wait, `verifiers.sandbox.tree_snapshot`) and judges a job that ran past its deadline,
or a worker that died, by the sandbox's one rule (`Stop`): `MachineFault` where the
machine did it (slow, the OOM killer), `JobTimeout` / `WorkerDied` where the candidate did.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import json
import os
import queue
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifiers.contract import Limits
from verifiers.sandbox import (
    SANDBOX_PATH,
    Confinement,
    Sandbox,
    Stop,
    TreeSnapshot,
    claim_slot,
    confined_argv,
    continue_pids,
    limits_shell,
    oom_kills,
    release_slot,
    sandbox_uid,
    stop_tree,
    tree_snapshot,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
LOG_CAP = 64 * 1024
GUEST_WORK = "/kwork"  # the worker's private dir inside the sandbox (/work may be the repo)
START_TIMEOUT_S = 180.0  # importing torch and priming CUDA on a loaded node


class OutputRefused(ValueError):
    """A path or file a worker reported that the host will not read (a link, a path
    outside the worker's dir, too large): the candidate's doing."""


def read_beneath(root: Path, path: Path, max_bytes: int) -> bytes:
    """Read `path` (under `root`) without following links, refusing all but a regular
    file of at most `max_bytes`."""
    rel = path.relative_to(root).parts
    if not rel or any(p in (".", "..") for p in rel):
        raise OutputRefused(f"{path} is not a file under {root}")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(root, flags | os.O_DIRECTORY)
    try:
        for part in rel[:-1]:
            try:
                nxt = os.open(part, flags | os.O_DIRECTORY, dir_fd=fd)
            except OSError as e:
                raise OutputRefused(f"{path}: {part} is not a plain dir ({e.strerror})") from None
            os.close(fd)
            fd = nxt
        try:
            ffd = os.open(rel[-1], flags | os.O_NONBLOCK, dir_fd=fd)
        except OSError as e:
            raise OutputRefused(f"{path}: not a plain file ({e.strerror})") from None
    finally:
        os.close(fd)
    try:
        st = os.fstat(ffd)
        if not stat.S_ISREG(st.st_mode):
            raise OutputRefused(f"{path} is not a regular file")
        if st.st_size > max_bytes:
            raise OutputRefused(f"{path} is {st.st_size} bytes; at most {max_bytes} expected")
        with os.fdopen(ffd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)
    finally:
        os.close(ffd)
    if len(data) > max_bytes:
        raise OutputRefused(f"{path} grew past {max_bytes} bytes while read")
    return data


class WorkerDied(RuntimeError):
    pass


class OutputFlood(RuntimeError):
    """A job printed more than its output cap on one stream (the candidate's doing:
    `output_limit`); the worker was stopped at the cap."""

    def __init__(self, stream: str, printed: int, cap: int):
        super().__init__(f"the job printed over {cap} bytes on its {stream}; stopped at {printed}")
        self.stream, self.printed, self.cap = stream, printed, cap


class StopResisted(WorkerDied):
    """The job's processes kept running while the host stopped them for another job's
    timed runs (SIGCONT among its own processes; `sandbox.resisting`): the worker was
    killed, the candidate's doing."""


class WorkerStartError(WorkerDied):
    """The worker could not start (never the candidate's fault)."""


class JobTimeout(RuntimeError):
    """A job ran past its deadline and the candidate did it (`stop` says what the host
    measured); one the machine did is a `MachineFault` instead."""

    stop: Stop | None = None


@dataclass(frozen=True)
class _JobStart:
    """The worker's tree as a job began: what its deadline or death is measured from."""

    at: float
    tree: TreeSnapshot
    oom_kills: int | None
    budget_s: float


# bwrap --die-with-parent (PR_SET_PDEATHSIG) fires when the *thread* that started the
# process exits: workers are started from this pool's threads, which live as long as the
# process, never from a verify thread or a restart thread that ends.
_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="warm-spawner")


def confine(
    work: Path,
    lim: Limits,
    env: dict[str, str],
    *,
    ro: Sequence[str] = (),
    rw: Sequence[str] = (),
    gpu: bool = False,
    uid: int | None = None,
) -> list[str]:
    """The argv prefix that runs a server confined (`verifiers.sandbox.confined_argv`),
    with `work` as its private dir at GUEST_WORK and `ro` / `rw` host dirs at their own
    paths; the limits shell exec's the server. `uid`: the sandbox uid (root only)."""
    c = Confinement(work, GUEST_WORK, ro=ro, rw=rw, env=env, gpu=gpu, new_session=False)
    root = os.geteuid() == 0
    if uid is None and root:
        uid = sandbox_uid()
    # unconfined (the user's explicit opt-out) a server runs as the caller, as it always
    # did: its interpreter may sit where only the caller can read
    drop = uid if root and not lim.unconfined else None
    shell = limits_shell(lim, None, drop, status=False)
    return [*confined_argv(c, lim, root), *shell]


@dataclass
class WorkerCommand:
    """How a domain starts its server: argv, its environment, the host dirs it reads and
    writes, and the rlimits it runs under."""

    argv: list[str]
    env: dict[str, str]
    ro: list[str] = field(default_factory=list)
    rw: list[str] = field(default_factory=list)
    gpu: bool = False
    limits: Limits | None = None  # the worker's own limits, when not the candidate's
    pass_fds: tuple[int, ...] = ()  # more fds the server inherits (by number)


# the scratch dirs this process has swept (`sweep_stale`), each before its first worker
_SWEPT: set[str | None] = set()
_SWEPT_LOCK = threading.Lock()


def sweep_stale(scratch_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Remove the worker dirs (`crucible-<prefix><index>-p<pid>-*`) in `scratch_dir` (None:
    the temp dir) whose process is gone: one killed with SIGKILL never removed its own,
    and in /dev/shm they hold the node's memory. Only dirs of our uid, never a link, and
    never those of a live pid. Returns what it removed. (A process of another pid
    namespace looks dead here: such processes must not share a scratch dir.)"""
    return _sweep(scratch_dir, _pid_gone)


def sweep_own(scratch_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Remove this process's own worker dirs in `scratch_dir`: at exit, after every worker
    was closed, whatever a thread still running made meanwhile (a pool started after a
    stop, a restart under way) goes with the process instead of waiting for a sweep."""
    me = os.getpid()
    return _sweep(scratch_dir, lambda pid: pid == me)


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False


def _sweep(scratch_dir: str | os.PathLike[str] | None, remove: Callable[[int], bool]) -> list[Path]:
    """Remove the worker dirs in `scratch_dir` whose pid `remove` says: ours, never a link."""
    root = Path(scratch_dir) if scratch_dir else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        parts = entry.name.rsplit("-", 2)  # mkdtemp's suffix has no "-"
        if len(parts) != 3 or not parts[0].startswith("crucible-"):
            continue
        tag = parts[1]
        if tag[:1] != "p" or not tag[1:].isdigit() or int(tag[1:]) <= 0:
            continue
        if not remove(int(tag[1:])):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
            shutil.rmtree(entry.path, ignore_errors=True)  # fd-based: never follows a link
            removed.append(Path(entry.path))
    return removed


# Every worker not yet closed: a process that ends normally without closing its verifier
# (a script, `python -c`) still stops their servers and removes their dirs at exit
# (seen: a plain CAD verify left its worker dirs in /tmp); a killed one is swept later.
_LIVE: weakref.WeakSet[Worker] = weakref.WeakSet()


@atexit.register
def _close_live_workers() -> None:
    for w in list(_LIVE):
        with contextlib.suppress(Exception):
            w.close()
    with _SWEPT_LOCK:
        scratches = list(_SWEPT)
    for scratch in scratches:  # every scratch dir this process made worker dirs in
        with contextlib.suppress(Exception):
            sweep_own(scratch)


class Worker:
    """One warm server process. A domain subclasses it with `command()`."""

    prefix = "worker"
    recycle_after_jobs = 800  # a fresh process bounds any slow leak

    def __init__(self, limits: Limits, index: int, scratch: str | None = None):
        self.limits, self.index = limits, index
        with _SWEPT_LOCK:  # once per process and scratch dir, before its first worker
            if scratch not in _SWEPT:
                _SWEPT.add(scratch)
                sweep_stale(scratch)
        # the pid in the name: the dirs of a process that died unclosed can be swept
        prefix = f"crucible-{self.prefix}{index}-p{os.getpid()}-"
        self.home = Path(tempfile.mkdtemp(prefix=prefix, dir=scratch))
        self.proc: subprocess.Popen | None = None
        self._closed = False  # `close`: no start may make its dirs again
        _LIVE.add(self)
        try:  # a worker that never started leaves no dir behind
            self.results = None
            self.jobs_done = 0
            self.starts = 0
            # the server's stdout / stderr: read ends of the pipes the host drains, by fd
            self._streams: dict[int, str] = {}
            self._printed = {"stdout": 0, "stderr": 0}  # bytes each stream carried this job
            self._tail = bytearray()  # the last LOG_CAP bytes printed, both streams
            self._slot = self.uid_slot()
            self._sandbox = Sandbox(limits, slot=self._slot)  # probes bwrap unless unconfined
            self._uid = self._sandbox.uid
            self.work = self.home / "w0"
            self._outs = 0
            self._tree: tuple[int, ...] = ()  # the idle worker's processes (bwrap, pid 1, server)
            self._cap: int | None = None  # the running job's output cap per stream
            # more fds a job's wait serves (fd -> handler; a handler returns the seconds it
            # took, which the job's deadline does not count: the host's time, not the job's)
            self._side: dict[int, Callable[[], float]] = {}
            self._side_s = 0.0  # what they took in the running job
            self._paused_s = 0.0  # stopped from outside in the running job (`pause_began`)
            self._paused_at: float | None = None  # since when, while it is
            self._cancelled = False  # `cancel`: no start may finish any more
            self._resisted: list[int] = []  # `kill_resisting`: what still ran, in this start
            self.start()
        except BaseException:
            self.close()
            raise

    # --- what a domain supplies ---------------------------------------------------------
    def command(self, fd: int) -> WorkerCommand:
        """The server's argv (`fd` is the result pipe's number) and what it needs."""
        raise NotImplementedError

    def before_start(self) -> None:
        """Prepare host dirs the server needs (called before every start)."""

    def uid_slot(self) -> int:
        """The sandbox uid's slot (`sandbox_uid`): a uid of its own per worker, of every
        pool and domain in this process (`claim_slot`), so a fork bomb in one worker
        cannot use up another's process limit, nor can one worker's candidate signal
        another's processes. Read once, before the first start."""
        return claim_slot()

    # --- lifecycle ------------------------------------------------------------------
    def python_env(self) -> dict[str, str]:
        """The environment every Python server starts with (`python_argv` runs it with
        -I, which ignores PYTHON* variables: the flags say what they used to)."""
        return {
            "PATH": f"{Path(sys.executable).parent}:{SANDBOX_PATH}",
            "HOME": str(self.work) if self.limits.unconfined else GUEST_WORK,
            "OMP_NUM_THREADS": "1",
        }

    @staticmethod
    def python_argv(module: str, *args: str) -> list[str]:
        """argv that runs `module` as __main__ in an isolated interpreter: -I (no cwd,
        script dir, PYTHON* variables or user site on sys.path) with the repo's code
        prepended from where the host has it (a read-only bind inside the sandbox).
        Nothing the candidate writes, anywhere, is on the import path."""
        boot = (
            "import runpy, sys; "
            f"sys.path.insert(0, {str(REPO_ROOT)!r}); "
            "m = sys.argv[1]; sys.argv = [m, *sys.argv[2:]]; "
            "runpy.run_module(m, run_name='__main__', alter_sys=True)"
        )
        return [sys.executable, "-I", "-B", "-u", "-c", boot, module, *args]

    @staticmethod
    def python_paths() -> list[str]:
        """Host dirs a Python server reads: the interpreter's prefixes and the verifiers
        package (not the repo: tasks/ holds the references, .git and a lake may be there)."""
        prefixes = {sys.prefix, sys.base_prefix, os.path.realpath(sys.prefix)}
        return [*sorted(prefixes), str(REPO_ROOT / "verifiers")]

    def start(self) -> None:
        self._close_streams()  # a server that died on its own left its pipes open here
        self._fresh_work()
        self.before_start()
        r, w = os.pipe()
        spec = self.command(w)
        uid = self._sandbox.drop_uid
        lim = spec.limits or self.limits
        cmd = confine(self.work, lim, spec.env, ro=spec.ro, rw=spec.rw, gpu=spec.gpu, uid=uid)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            self.proc = _SPAWNER.submit(
                subprocess.Popen,
                [*cmd, *spec.argv],
                stdin=subprocess.PIPE,
                stdout=out_w,
                stderr=err_w,
                cwd=self.work,
                env=spec.env if self.limits.unconfined else {"PATH": SANDBOX_PATH},
                pass_fds=(w, *spec.pass_fds),  # the result pipe keeps its fd number
                start_new_session=True,
            ).result()
        except BaseException:
            for fd in (r, out_r, err_r):
                os.close(fd)
            raise
        finally:
            for fd in (w, out_w, err_w):
                os.close(fd)
        for fd in (out_r, err_r):
            os.set_blocking(fd, False)
        self._streams = {out_r: "stdout", err_r: "stderr"}
        self._tail.clear()
        self.results = os.fdopen(r, "r")
        self.jobs_done = 0
        self._resisted = []
        # `cancel` or `close` ran before this process existed: it never saw it (each sets
        # its flag before reading `proc`, this reads the flags after setting it)
        if self._cancelled or self._closed:
            self.stop()
            raise WorkerStartError("the worker was cancelled (its pool closed) as it started")
        # the server says when it has imported its library and primed itself
        try:
            ready = self._read_line(START_TIMEOUT_S, "start")
        except WorkerDied as e:
            raise WorkerStartError(str(e)) from None
        if not json.loads(ready).get("ready"):
            raise WorkerStartError(f"the worker did not start: {ready[:200]}")
        self._tree = tree_snapshot(self.proc.pid).pids

    def stop(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        with contextlib.suppress(Exception):
            self.proc.stdin.close()
        with contextlib.suppress(Exception):
            self.results.close()
        self._close_streams()
        self.proc = None

    def _close_streams(self) -> None:
        for fd in list(self._streams):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._streams.clear()

    def _fresh_work(self) -> None:
        """A new private dir for every start: nothing a candidate left in the last one
        (planted modules, links, files for the next candidate to find) carries over."""
        if self._closed:  # a restart racing `close`: its home must not come back
            raise WorkerStartError("the worker was closed as it restarted")
        old = self.work
        shutil.rmtree(old, ignore_errors=True)  # fd-based: never follows a planted link
        self.starts += 1
        self.work = self._sandbox.prepare_workdir(self.home / f"w{self.starts}")
        self._outs = 0

    @contextlib.contextmanager
    def still(self):
        """Every process of this worker stopped (SIGSTOP: the server, the job's child, and
        whatever they started, however they forked) for the block, continued after. For
        a job the host makes wait (for the GPU alone): the candidate's threads cannot
        use the machine meanwhile, and the wait is not the job's (`run`'s side handlers
        move its deadline by it)."""
        proc = self.proc
        pids = stop_tree(proc.pid) if proc is not None else ()
        try:
            yield pids
        finally:
            continue_pids(pids)

    def root_pid(self) -> int | None:
        """The pid of the worker's sandbox (every process of the worker is below it)."""
        proc = self.proc
        return proc.pid if proc is not None else None

    def pause_began(self) -> None:
        """The worker is stopped from outside now (another job's timed runs, `GpuLock`):
        until `pause_ended`, its running job's deadline and wall stand still."""
        self._paused_at = time.perf_counter()

    def pause_ended(self) -> None:
        at, self._paused_at = self._paused_at, None
        if at is not None:
            self._paused_s += time.perf_counter() - at

    def _pause_total(self) -> float:
        at = self._paused_at
        return self._paused_s + (time.perf_counter() - at if at is not None else 0.0)

    def restart(self) -> None:
        self.stop()
        self.start()

    def cancel(self) -> None:
        """Kill the server now, from any thread, and let no start under way finish: a
        restart in flight when its pool closes fails at once (`WorkerStartError`) instead
        of importing its library for a worker nobody will use. The thread that started it
        still owns its pipes and closes them."""
        self._cancelled = True
        proc = self.proc  # set before `start` reads the flag: one of the two sees the other
        if proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)

    def close(self) -> None:
        self._closed = True
        _LIVE.discard(self)
        self.stop()
        shutil.rmtree(self.home, ignore_errors=True)
        slot, self._slot = getattr(self, "_slot", 0), 0
        if slot:  # its processes are gone with the sandbox: the uid is free
            release_slot(slot)

    # --- jobs -----------------------------------------------------------------------
    def log_tail(self, n: int = 2000) -> str:
        """The last `n` bytes the server (and the candidate in it) printed."""
        return bytes(self._tail[-n:]).decode("utf-8", "replace")

    def printed(self) -> dict[str, int]:
        """Bytes each stream carried during the last job (as far as drained)."""
        return dict(self._printed)

    def _drain_ready(self, fds: Sequence[int], cap: int | None) -> None:
        """Read what the server printed on `fds` (ready or not: non-blocking); count it
        for the job. Over `cap` on a stream: the worker is stopped, `OutputFlood`."""
        for fd in fds:
            name = self._streams.get(fd)
            if name is None:
                continue
            try:
                data = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:  # the server closed it (or died): nothing more will come
                with contextlib.suppress(OSError):
                    os.close(fd)
                del self._streams[fd]
                continue
            self._printed[name] += len(data)
            self._tail += data
            if len(self._tail) > LOG_CAP:
                del self._tail[: len(self._tail) - LOG_CAP]
            if cap is not None and self._printed[name] > cap:
                printed = self._printed[name]
                self.stop()
                raise OutputFlood(name, printed, cap)

    def _drain_all(self, cap: int | None, limit_s: float = 1.0) -> None:
        """Everything the pipes hold now (the job's last prints, written before its
        result): until both are empty, or `limit_s` (a stray still printing)."""
        end = time.monotonic() + limit_s
        while self._streams and time.monotonic() < end:
            before = sum(self._printed.values())
            self._drain_ready(list(self._streams), cap)
            if sum(self._printed.values()) == before:
                return

    def fresh_outdir(self) -> Path:
        """A new dir for one job's outputs, made by the host under a name the candidate
        cannot know in advance; the previous ones (already read) are removed."""
        for old in self.work.glob("out-*"):
            shutil.rmtree(old, ignore_errors=True)
            with contextlib.suppress(OSError):
                old.unlink()  # a link or file planted under that name
        self._outs += 1
        out = self.work / f"out-{self._outs}-{os.urandom(6).hex()}"
        out.mkdir(mode=0o700)  # fails on anything already there
        return self._sandbox.prepare_workdir(out)  # owned by the uid the worker has

    def guest_path(self, host: Path) -> str:
        """A host path under the work dir as the worker sees it."""
        if self.limits.unconfined:
            return str(host)
        return f"{GUEST_WORK}/{host.relative_to(self.work)}"

    def host_path(self, guest: str) -> Path:
        """A path the worker reported, as the host sees it: only under the worker's dir,
        never with `..`; anything else is `OutputRefused`. The path may still hold links
        the candidate planted: open it with `read_output`, never by name."""
        root = str(self.work) if self.limits.unconfined else GUEST_WORK
        if not guest.startswith(root + "/"):
            raise OutputRefused(f"{guest!r} is outside the worker's dir")
        rel = guest[len(root) + 1 :]
        parts = rel.split("/")
        if any(p in ("", ".", "..") for p in parts):
            raise OutputRefused(f"{guest!r} is not a plain path under the worker's dir")
        return self.work.joinpath(*parts)

    def read_output(self, guest: str, max_bytes: int) -> bytes:
        """The bytes of a file the worker wrote, read by the host without following a
        link at any step (each component opened with O_NOFOLLOW from its parent's
        descriptor), only a regular file, at most `max_bytes`."""
        return read_beneath(self.work, self.host_path(guest), max_bytes)

    def run(
        self,
        job: dict,
        timeout_s: float,
        cpu_s: float | None = None,
        output_bytes: int | None = None,
    ) -> dict:
        """One job's result. `cpu_s`: the CPU the job may spend (its deadline, without
        one): past the deadline, short of it and starved, the machine was slow.
        `output_bytes`: what the job may print per stream; more is `OutputFlood` (None:
        counted, never capped)."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        self._drain_all(None)  # whatever the idle server printed is not this job's
        self._printed = {"stdout": 0, "stderr": 0}
        self._cap = output_bytes
        self._side_s = 0.0
        self._paused_s = 0.0
        began = _JobStart(
            time.perf_counter(),
            tree_snapshot(self.proc.pid, self._tree),
            oom_kills(),
            timeout_s if cpu_s is None else cpu_s,
        )
        try:
            self.proc.stdin.write((json.dumps(job) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerDied(f"the worker process exited: {self.log_tail()}") from None
        line = self._read_line(timeout_s, "job", began)
        self._drain_all(output_bytes)  # printed before the result: all in the pipes now
        self.jobs_done += 1
        return json.loads(line)

    def _job_stop(self, began: _JobStart, *, wall_kill: bool, code: int | None = None) -> Stop:
        """What the host measured of the job now running (before the worker is stopped)."""
        usage = None
        if wall_kill and self.proc is not None:
            usage = tree_snapshot(self.proc.pid).since(began.tree)
        now = oom_kills()
        oom = now - began.oom_kills if now is not None and began.oom_kills is not None else None
        # bwrap's status: 128+9 when the server (pid 1's child) was SIGKILLed, -9 itself
        sig = signal.SIGKILL if code in (-signal.SIGKILL, 128 + signal.SIGKILL) else None
        # the host's time in the side handlers (a wait for the GPU alone) is not the job's,
        # nor the time it was paused for another's timed runs
        wall = time.perf_counter() - began.at - self._side_s - self._pause_total()
        return Stop(wall, wall_kill, usage, began.budget_s, sig, oom, self_signal=True)

    def kill_resisting(self, pids: Sequence[int]) -> None:
        """From another thread: `pids` of this worker kept running though it was stopped
        whole (`sandbox.resisting`). The worker is killed; its job ends `StopResisted`."""
        self._resisted = list(pids)
        proc = self.proc
        if proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)

    def _died(self, code: int | None, began: _JobStart | None) -> Exception:
        with contextlib.suppress(OutputFlood):  # its last words, for the message
            self._drain_all(None)
        tail = self.log_tail()
        if self._resisted:
            return StopResisted(
                f"{len(self._resisted)} of its processes kept running while the host stopped "
                "them for another candidate's timed runs (a process of the candidate's sent "
                f"SIGCONT to another, or let its stop go): the runner was killed. {tail}"
            )
        if began is not None:
            stop = self._job_stop(began, wall_kill=False, code=code)
            if fault := stop.fault(f"the {self.prefix} worker (status {code})"):
                return fault
        return WorkerDied(f"the worker process exited (status {code}): {tail}")

    def _read_line(self, timeout_s: float, what: str, began: _JobStart | None = None) -> str:
        """The server's next result line, draining its prints meanwhile (a job's are
        capped at `self._cap`, set by `run`)."""
        deadline = time.monotonic() + timeout_s
        fd = self.results.fileno()
        cap = self._cap if began is not None else None
        while True:
            # a pause for another job's timed runs (`pause_began`, from another thread) is
            # not this job's time either
            left = deadline + (self._pause_total() if began else 0.0) - time.monotonic()
            if left <= 0:
                stop = self._job_stop(began, wall_kill=True) if began else None
                self.stop()
                if what == "start":
                    raise WorkerDied(f"the worker did not start in {timeout_s:.0f}s")
                if stop is not None and (fault := stop.fault(f"a {self.prefix} job")):
                    raise fault
                err = JobTimeout(f"no result in {timeout_s:.0f}s")
                err.stop = stop
                raise err
            side = list(self._side) if began is not None else []
            ready, _, _ = select.select([fd, *self._streams, *side], [], [], min(left, 1.0))
            for x in ready:
                if x in self._side and began is not None:
                    spent = self._side[x]()
                    deadline += spent
                    self._side_s += spent
            prints = [x for x in ready if x != fd and x in self._streams]
            if prints:
                self._drain_ready(prints, cap)  # OutputFlood: the worker is stopped
            if fd in ready:
                line = self.results.readline()
                if not line:
                    code = self.proc.wait(timeout=10) if self.proc else None
                    err = self._died(code, began)
                    self.stop()
                    raise err
                return line
            if self.proc.poll() is not None:
                err = self._died(self.proc.returncode, began)
                self.stop()
                raise err


class WorkerPool:
    """N warm workers; `lease()` hands one out, `release()` takes it back (restarted
    first when the candidate left it dirty)."""

    def __init__(self, make: Callable[[int], Worker], size: int):
        self.make, self.size = make, size
        self._free: queue.Queue[Worker] = queue.Queue()
        self._all: list[Worker | None] = []
        self._lock = threading.Lock()
        self._closed = False
        self._restarting: dict[threading.Thread, Worker] = {}  # restarts in flight
        # indices are never reused: a worker's index picks its sandbox uid, and a worker
        # started in a dropped one's place must not share a uid with a live one
        self._next = 0

    def _index(self) -> int:
        i, self._next = self._next, self._next + 1
        return i

    def lease(self) -> Worker:
        while True:
            with self._lock:
                if self._closed:
                    raise WorkerDied("the worker pool is closed")
                if self._free.empty() and len(self._all) < self.size:
                    w = self.make(self._index())  # SandboxUnavailable propagates
                    self._all.append(w)
                    return w
            try:
                # not a wait forever: a worker that failed to restart was dropped, and its
                # place is taken by a new one on the next round
                return self._free.get(timeout=1.0)
            except queue.Empty:
                continue

    def warm_up(self) -> None:
        """Start every worker now, in parallel (each imports its library: seconds)."""
        with self._lock:
            missing = self.size - len(self._all)
        threads = [threading.Thread(target=self._add_one, daemon=True) for _ in range(missing)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def _add_one(self) -> None:
        with self._lock:
            if len(self._all) >= self.size or self._closed:
                return
            index = self._index()
            self._all.append(None)  # the slot, reserved
        try:
            w = self.make(index)
        except Exception:  # lease() starts one later and reports why
            with self._lock:
                self._all.remove(None)
            return
        with self._lock:
            if self._closed:
                w.close()
                return
            self._all[self._all.index(None)] = w
        self._free.put(w)

    def release(self, w: Worker, dirty: bool) -> None:
        """Back to the pool; a dirty worker restarts in the background first (a restart
        imports the library again: the next candidate takes another worker meanwhile)."""
        if not (dirty or w.jobs_done >= w.recycle_after_jobs):
            self._free.put(w)
            return

        def restart() -> None:
            try:
                with self._lock:
                    closed = self._closed
                if not closed:
                    w.restart()
            except Exception:  # a worker that cannot restart is dropped
                closed = True
            with self._lock:
                self._restarting.pop(threading.current_thread(), None)
                drop = closed or self._closed
                if drop and w in self._all:
                    self._all.remove(w)
            if drop:
                w.close()
            else:
                self._free.put(w)

        t = threading.Thread(target=restart, daemon=True)
        with self._lock:
            self._restarting[t] = w
        t.start()

    def close(self) -> None:
        """Stop every worker and remove its dirs, restarts in flight included (cancelled:
        a restart imports the library again, seconds of CPU for a worker never used)."""
        with self._lock:
            self._closed = True
            pending = list(self._restarting.items())
        for _t, w in pending:
            w.cancel()
        for t, _w in pending:
            t.join(timeout=60)  # it sees the pool closed and closes its worker itself
        with self._lock:
            workers = [w for w in self._all if w is not None]
            self._all.clear()
        for w in workers:
            w.close()


def verify_on_pool(
    verify: Callable[..., Any],
    pool: WorkerPool,
    items: Sequence[tuple[Any, Any]],
    limits: Any,
    in_flight: int | None = None,
) -> list[Any]:
    """`verify(task, code, limits)` for every item, one per warm worker at a time, all the
    pool's workers busy (started together first); verdicts in input order. `in_flight`:
    how many verifications run at once (default: one per worker; more where a verifier
    does work of its own, a build, before it leases a worker)."""
    if len(items) <= 1:
        return [verify(t, c, limits) for t, c in items]
    pool.warm_up()
    with concurrent.futures.ThreadPoolExecutor(max_workers=in_flight or pool.size) as ex:
        return list(ex.map(lambda tc: verify(tc[0], tc[1], limits), items))
