"""Why a verifier worker died: its exit status or signal, and its last stderr lines.

Ray keeps neither. The GCS says "Worker unexpectedly exits with a connection error code 2"
whatever ended the process, and its raylet, the process's parent, reaps it without a word
(Ray 2.60: an `os._exit(3)` and a SIGKILL read the same). So a verifier actor's worker is
started under a small parent of its own: `python -m ray_actors.lastwords` is the actor's
`py_executable` (`runtime_env`), which starts Ray's worker as its child, waits for it, and
appends one record of how it ended to the file Ray writes the worker's stderr to
(`<session>/logs/worker-<worker id>-<job id>-<pid>.err`). The driver finds the dead
worker's pid in Ray's actor table and reads that file's tail (`DeathWatch`): the record,
and the lines the worker printed last (a traceback, a fatal error of a native library).

The child runs in a process group of its own, as Ray's worker does without the parent:
the raylet's cleanup signals the worker's group by the worker's pid.

Only where every Ray node runs on this host (a local start, or `LocalCluster`): the
parent is this interpreter, by its path, which another host may not have. There, a death
still names its pid and node and says where that node keeps its stderr.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

RECORD = "[crucible] worker exit: "  # the parent's line, last in the worker's .err
HELD = "[crucible] verifying: "  # the worker's line as it takes a batch (`holding`)
TAIL_LINES = 12  # stderr lines a death keeps
LINE_CHARS = 300
# How long a driver that got ActorDiedError waits for the parent's record (it writes it
# the moment the worker is reaped; the GCS may tell the driver first).
RECORD_WAIT_S = 5.0
POLL_S = 1.0  # how often `DeathWatch.poll` reads the actor table
# Ray's own routing lines in a worker's .err (not the worker's words)
_RAY_MARKS = (":job_id:", ":actor_name:", ":task_name:")
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1)


# --- the parent: `python -m ray_actors.lastwords <Ray's worker arguments>` ---------------


def main(argv: list[str]) -> int:
    child = subprocess.Popen([sys.executable, *argv], process_group=0)
    for sig in _FORWARDED:  # a signal meant for the worker that reached its parent
        signal.signal(sig, lambda n, _frame: child.send_signal(n))
    status = child.wait()
    with contextlib.suppress(OSError):  # a record lost must not change how the worker ended
        _append_record(argv, child.pid, status)
    return status if status >= 0 else 128 - status


def _arg(argv: list[str], name: str) -> str:
    prefix = f"--{name}="
    return next((a[len(prefix) :] for a in argv if a.startswith(prefix)), "")


def _append_record(argv: list[str], pid: int, status: int) -> None:
    logs = Path(_arg(argv, "temp-dir")) / _arg(argv, "session-name") / "logs"
    worker = _arg(argv, "worker-id")
    found = sorted(logs.glob(f"worker-{worker}-*-{pid}.err"))
    # a worker that died before Ray opened its file: the record gets one of that name
    path = found[0] if found else logs / f"worker-{worker}-ffffffff-{pid}.err"
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"\n{RECORD}{json.dumps({'pid': pid, 'status': status})}\n")


def runtime_env() -> dict[str, Any]:
    """The actor option that puts a worker under the parent; empty where a node is on
    another host (see the module doc)."""
    import ray

    host = socket.gethostname()
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    if not nodes or any(n.get("NodeManagerHostname") != host for n in nodes):
        return {}
    return {"runtime_env": {"py_executable": f"{sys.executable} -m {__name__}"}}


def holding(candidate_id: str, n: int) -> None:
    """Say in the worker's stderr which batch it now verifies (its first candidate and how
    many): a death's record then names the batch the worker held, where Ray's retries may
    have run a dead actor's queued calls in another order than they were sent."""
    # stderr itself, not a logger: this is the file the death record is read from
    sys.stderr.write(f"{HELD}{candidate_id} +{n - 1}\n")
    sys.stderr.flush()


# --- the driver: reading a death ----------------------------------------------------------


@dataclass(frozen=True)
class WorkerDeath:
    """How one worker process ended, as kept in the run's log, its counts and the
    verdicts of the candidates it held."""

    pid: int
    node: str
    exit_status: int | None = None  # its own exit code
    signal: str | None = None  # or the signal that killed it, e.g. "SIGKILL"
    stderr_tail: tuple[str, ...] = ()
    log_file: str = ""  # the whole stderr, on `node`
    held: str = ""  # the first candidate of the batch it was verifying (`holding`)

    def how(self) -> str:
        if self.signal:
            return f"was killed by signal {self.signal}"
        if self.exit_status is not None:
            return f"exited with status {self.exit_status}"
        return "died (how it ended was not recorded)"

    def describe(self) -> str:
        text = f"verifier worker pid {self.pid} on {self.node} {self.how()}"
        if self.held:
            text += f" while verifying candidate {self.held[:12]}"
        if self.stderr_tail:
            text += "; its last stderr lines: " + " | ".join(self.stderr_tail)
        elif self.exit_status is not None or self.signal:
            text += "; it wrote nothing to stderr"
        if self.log_file:
            text += f" (its stderr: {self.log_file})"
        return text

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["stderr_tail"] = list(self.stderr_tail)
        return d


def read_death(logs: Path, pid: int, node: str) -> WorkerDeath | None:
    """The death of worker `pid` as its parent recorded it in `logs`; None while there is
    no record (not dead yet, the parent still writing, or a worker run without it)."""
    found = sorted(logs.glob(f"worker-*-{pid}.err"))
    if not found:
        return None
    path = found[-1]
    try:
        with open(path, "rb") as f:
            end = f.seek(0, os.SEEK_END)
            f.seek(max(0, end - 1024))
            if RECORD.encode() not in f.read():  # alive, the common case: read no more
                return None
            f.seek(max(0, end - 64 * 1024))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    at = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith(RECORD)), None)
    if at is None:
        return None
    try:
        status = int(json.loads(lines[at][len(RECORD) :])["status"])
    except (ValueError, KeyError, TypeError):
        return None
    held = next((ln for ln in reversed(lines[:at]) if ln.startswith(HELD)), "")
    said = [s.rstrip()[:LINE_CHARS] for s in lines[:at] if s.strip()]
    said = [s for s in said if not s.startswith((*_RAY_MARKS, HELD))]
    return WorkerDeath(
        held=held[len(HELD) :].split(" ")[0],
        pid=pid,
        node=node,
        exit_status=status if status >= 0 else None,
        signal=_signal_name(-status) if status < 0 else None,
        stderr_tail=tuple(said[-TAIL_LINES:]),
        log_file=str(path),
    )


def _signal_name(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


class DeathWatch:
    """The deaths of a pool's workers as they happen: the actor table gives each actor's
    worker pid and node (read at most every POLL_S), the worker's parent the record. A
    worker that lived less than a poll may be missed; its actor's last death, the one that
    ends it (ActorDiedError), is always found (`final`)."""

    def __init__(self, actors: list) -> None:
        self.ids = {a._actor_id.hex() for a in actors}
        self._pids: dict[int, str] = {}  # pid -> node id
        self._deaths: dict[int, WorkerDeath] = {}
        self._unsaid: list[WorkerDeath] = []
        self._next = 0.0

    def add(self, actor: Any) -> None:
        self.ids.add(actor._actor_id.hex())

    def poll(self) -> list[WorkerDeath]:
        """The deaths found since the last poll, each once."""
        if time.monotonic() >= self._next:
            self._scan()
        out, self._unsaid = self._unsaid, []
        return out

    def final(self, actor_id: str) -> WorkerDeath:
        """The death that ended `actor_id` for good (its calls raise ActorDiedError),
        waiting up to RECORD_WAIT_S for its record; `poll` returns it too."""
        pid, node = self._last_pid(actor_id)
        deadline = time.monotonic() + RECORD_WAIT_S
        while pid is not None and pid not in self._deaths:
            self._scan()
            if pid in self._deaths or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if pid is not None and pid in self._deaths:
            return self._deaths[pid]
        logs, name = _nodes().get(node or "", (None, (node or "an unknown node")[:12]))
        where = f"{logs}/worker-*-{pid}.err" if logs and pid else ""
        return WorkerDeath(pid=pid or 0, node=name, log_file=where)

    def _scan(self) -> None:
        self._next = time.monotonic() + POLL_S
        for a in _actor_table(self.ids).values():
            node = (a.get("Address") or {}).get("NodeID") or ""
            for pid in {a.get("Pid"), _death_pid(a.get("DeathCause"))} - {None, 0}:
                self._pids.setdefault(int(pid), node)
        nodes = _nodes()
        for pid, node in self._pids.items():
            if pid in self._deaths:
                continue
            logs, name = nodes.get(node, (None, node[:12]))
            death = read_death(logs, pid, name) if logs is not None else None
            if death is not None:
                self._deaths[pid] = death
                self._unsaid.append(death)

    def _last_pid(self, actor_id: str) -> tuple[int | None, str | None]:
        a = _actor_table({actor_id}).get(actor_id) or {}
        node = (a.get("Address") or {}).get("NodeID")
        pid = _death_pid(a.get("DeathCause")) or a.get("Pid")
        if pid:
            self._pids.setdefault(int(pid), node or "")
        return (int(pid) if pid else None), node


def _death_pid(cause: Any) -> int | None:
    """The pid in Ray's death cause (a protobuf ActorDeathCause), if it names one."""
    ctx = getattr(cause, "actor_died_error_context", None)
    return int(ctx.pid) if ctx is not None and ctx.pid else None


def _actor_table(ids: set[str]) -> dict[str, dict]:
    from ray._private import state

    try:
        table = state.actors()
    except Exception:  # a diagnostic only: never fail a stage over it
        log.debug("could not read Ray's actor table", exc_info=True)
        return {}
    return {aid: a for aid, a in table.items() if aid in ids}


def _nodes() -> dict[str, tuple[Path | None, str]]:
    """node id -> (its logs directory where this host can read it, its name)."""
    import ray

    out: dict[str, tuple[Path | None, str]] = {}
    for n in ray.nodes():
        sock = n.get("RayletSocketName") or ""
        logs = Path(sock).parent.parent / "logs" if sock else None
        host = n.get("NodeManagerHostname") or n.get("NodeManagerAddress") or "?"
        named = n.get("NodeName")  # as `cluster.node_label`: an unnamed node is its IP
        name = (
            f"{host}/{named}"
            if named and named not in (host, n.get("NodeManagerAddress"))
            else host
        )
        out[n.get("NodeID", "")] = (logs if logs and logs.is_dir() else None, name)
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
