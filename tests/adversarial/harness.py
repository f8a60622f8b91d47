"""What every hostile candidate is checked for, once, for every domain.

A hostile test plants canaries (a secret file in the host's home and temp dirs, a loopback
listener), runs its candidate, then asserts with `Outside.check(verdict)`:

- the verdict is not a pass, and its status is in the family the test expects;
- no canary was read: the secret appears nowhere in the verdict (feedback, checks, metrics,
  artifacts), the listener took no connection, the canary files are unchanged;
- nothing is left: no process of a sandbox uid is alive once the verifier is idle, no file
  of a sandbox uid appeared in the host's temp dir or home, no host file changed owner.

`assert_innocent_passes` then verifies a known-good candidate on the same verifier object
(the same warm workers), so a candidate that poisoned its worker is caught there.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from verifiers.contract import Status, Verdict
from verifiers.sandbox import SANDBOX_UID_BASE, SANDBOX_UID_SPAN, own_sandbox_uids

# the host's own temp root (the test session points TMPDIR at a dir of its own below it)
HOST_TMP = "/tmp"

# status families a hostile candidate may end in
REFUSED = {Status.REJECTED, Status.FORMAT_ERROR}
CANDIDATE_FAULT = {
    Status.REJECTED,
    Status.FORMAT_ERROR,
    Status.COMPILE_ERROR,
    Status.RUNTIME_ERROR,
    Status.WRONG_ANSWER,
    Status.TIMEOUT,
    Status.RESOURCE_LIMIT,
}
LIMITS = {Status.TIMEOUT, Status.RESOURCE_LIMIT}


def _is_sandbox_uid(uid: int) -> bool:
    return SANDBOX_UID_BASE <= uid < SANDBOX_UID_BASE + SANDBOX_UID_SPAN


def _own_uids() -> set[int]:
    """The sandbox uids of this test process (other sessions' tests on the same machine
    run their candidates under uids of their own)."""
    return own_sandbox_uids()


def sandbox_processes() -> list[tuple[int, int, str]]:
    """(pid, uid, command) of every live process owned by one of this process's
    sandbox uids; the command is the whole argv, so a warm worker started through
    `Worker.python_argv` (a long -c boot line before the module) is still recognised."""
    found = []
    own = _own_uids()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            st = os.stat(f"/proc/{name}")
            if st.st_uid not in own:
                continue
            with open(f"/proc/{name}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            cmd = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ")
        except (OSError, IndexError):
            continue
        found.append((int(name), st.st_uid, f"[{state}] {cmd.decode('utf-8', 'replace')}"))
    return found


def _sandbox_owned(root: Path, depth: int = 2) -> set[str]:
    """Paths under `root` (a few levels deep) owned by one of this process's sandbox uids."""
    own = _own_uids()
    out: set[str] = set()
    todo = [(root, 0)]
    while todo:
        d, level = todo.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_uid in own:
                out.add(e.path)
            elif e.is_dir(follow_symlinks=False) and level + 1 < depth:
                todo.append((Path(e.path), level + 1))
    return out


class Listener:
    """A loopback TCP server that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


@dataclass
class Outside:
    """The host as a hostile candidate must leave it."""

    secret: str
    home_canary: Path
    tmp_canary: Path
    listener: Listener
    owners: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    before_owned: set[str] = field(default_factory=set)

    @property
    def canaries(self) -> tuple[Path, Path]:
        return (self.home_canary, self.tmp_canary)

    def fill(self, template: str) -> str:
        """A candidate's text with {SECRET_HOME}, {SECRET_TMP}, {PORT}, {HOME}, {TMP} filled."""
        return (
            template.replace("{SECRET_HOME}", str(self.home_canary))
            .replace("{SECRET_TMP}", str(self.tmp_canary))
            .replace("{PORT}", str(self.listener.port))
            .replace("{HOME}", str(Path.home()))
            .replace("{TMP}", HOST_TMP)
        )

    def _snapshot(self) -> dict[str, tuple[int, int, int]]:
        snap = {}
        for p in (
            *self.canaries,
            Path.home(),
            Path(HOST_TMP),
            Path("/etc/passwd"),
            Path("/etc/shadow"),
        ):
            try:
                st = os.stat(p, follow_symlinks=False)
            except OSError:
                continue
            snap[str(p)] = (st.st_uid, st.st_gid, st.st_mode)
        return snap

    def check(self, verdict: Verdict, family: Iterable[Status], settle_s: float = 10.0) -> None:
        family = set(family)
        assert verdict.status != Status.PASS and not verdict.passed, _show(verdict)
        assert verdict.status in family, (
            f"status {verdict.status} not in {sorted(family)}: {_show(verdict)}"
        )
        text = json.dumps(verdict.to_dict(), default=str)
        assert self.secret not in text, "a canary's secret reached the verdict"
        for a in verdict.artifacts:
            assert self.secret.encode() not in a.data, f"a canary's secret is in artifact {a.name}"
        for p in self.canaries:
            assert p.read_text() == self.secret, f"canary {p} was changed"
        assert self.listener.accepted == 0, "the candidate reached a loopback listener"
        assert self._snapshot() == self.owners, "a host path changed owner or mode"
        self.assert_nothing_left(settle_s)

    def assert_nothing_left(self, settle_s: float = 10.0) -> None:
        """No process or new file of a sandbox uid outside the verifier's live workers.

        Warm workers (CAD servers, kernel runners) are processes of a sandbox uid by
        design: pass `allow` pids through `ignore_pids` ... they are excluded by the
        caller checking after the verifier is closed, or here by their command line."""
        deadline = time.monotonic() + settle_s
        while True:
            left = [p for p in sandbox_processes() if not _is_worker(p[2])]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert not left, f"processes of a sandbox uid are still alive: {left[:5]}"
        new = _sandbox_owned(Path(HOST_TMP)) | _sandbox_owned(Path.home())
        new -= self.before_owned
        new = {p for p in new if not _is_worker_dir(p)}
        assert not new, f"files of a sandbox uid were left on the host: {sorted(new)[:5]}"


# The long-lived processes and dirs of warm workers (alive while their verifier is open).
WORKER_MARKERS = ("verifiers.cad.server", "verifiers.kernels.runner", "crucible-worker")
WORKER_DIRS = ("crucible-cadworker", "crucible-kworker", "crucible-worker")


def _is_worker(cmd: str) -> bool:
    return any(m in cmd for m in WORKER_MARKERS)


def _is_worker_dir(path: str) -> bool:
    return any(m in path for m in WORKER_DIRS)


def _show(v: Verdict) -> str:
    return f"{v.status} {v.code}: {v.feedback[:600]}"


def make_outside() -> Outside:
    secret = "canary-" + secrets.token_hex(16)
    home = Path.home() / f".crucible-canary-{secrets.token_hex(4)}"
    tmp = Path(HOST_TMP) / f"crucible-canary-{secrets.token_hex(4)}"
    for p in (home, tmp):
        p.write_text(secret)
        p.chmod(0o644)  # readable by anyone who can reach it: the sandbox must not
    out = Outside(secret, home, tmp, Listener())
    out.owners = out._snapshot()
    out.before_owned = _sandbox_owned(Path(HOST_TMP)) | _sandbox_owned(Path.home())
    return out


def close_outside(out: Outside) -> None:
    out.listener.close()
    for p in out.canaries:
        p.unlink(missing_ok=True)


def verify_settled(verify, task, code, limits=None, tries: int = 3) -> Verdict:
    """`verify(task, code, limits)`, again while the verdict is the machine's
    (`infra_error machine_slow`: a loaded test machine starves a run of its wall clock, a
    verdict the pipeline retries too); the last one is what the caller asserts on, so a
    verifier that always blames the machine still fails."""
    for _ in range(tries):
        v = verify(task, code, limits)
        if (v.status, v.code) != (Status.INFRA_ERROR, "machine_slow"):
            break
    return v


def assert_innocent_passes(verify, task, code: str) -> Verdict:
    """The next, innocent candidate on the same verifier (and warm workers) still passes."""
    v = verify(task, code)
    assert v.status == Status.PASS, f"an innocent candidate after a hostile one: {_show(v)}"
    return v


def assert_innocent_fails(verify, task, code: str) -> Verdict:
    """A plainly wrong candidate after a hostile one is still failed (no planted judge)."""
    v = verify(task, code)
    assert v.status != Status.PASS, "a wrong candidate passed after a hostile one"
    return v


# --- verifiers with warm worker pools (CAD servers, kernel runners) ---------------------
#
# `Outside.assert_nothing_left` spares every process that looks like a warm worker, forks
# of one included. For a verifier with pools (`verifier._pools`: WorkerPools of
# `verifiers.warm.Worker`s), `check` scopes "nothing left" to that verifier's own
# sandboxes instead: below each worker's bwrap only its server may run. Domain-independent.


def _process_tree() -> tuple[dict[int, list[int]], dict[int, int]]:
    """(children by parent pid, uid by pid) of every live process."""
    children: dict[int, list[int]] = {}
    uid_of: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
                uid_of[int(name)] = os.stat(f"/proc/{name}").st_uid
            except OSError:
                continue
            children.setdefault(int(stat[1]), []).append(int(name))
    return children, uid_of


def _workers(v) -> list:
    return [w for pool in list(v._pools.values()) for w in list(pool._all) if w is not None]


def sandboxed(v) -> tuple[set[int], set[int]]:
    """(the workers' own server processes, every other process in their sandboxes): below
    each worker's bwrap, the first process of the worker's uid is its server (the
    sandbox's pid 1 may be a root shell); anything else of a sandbox uid is a stray."""
    children, uid_of = _process_tree()
    servers, others = set(), set()
    for w in _workers(v):
        if w.proc is None:
            continue
        todo = [(c, False) for c in children.get(w.proc.pid, [])]
        while todo:
            pid, below = todo.pop()
            mine = uid_of.get(pid) == w._uid
            if mine and not below:
                servers.add(pid)
            elif _is_sandbox_uid(uid_of.get(pid, 0)):
                others.add(pid)
            todo += [(c, below or mine) for c in children.get(pid, [])]
    return servers, others


def worker_uids(v) -> set[int]:
    return {w._uid for w in _workers(v)}


def assert_no_strays(v, settle_s: float = 15.0) -> None:
    """No process in this verifier's sandboxes but the workers' servers themselves (the
    harness spares anything that looks like a worker, so the forks of one are checked
    here; other suites' workers, maybe of the same uids, may run at the same time)."""
    deadline = time.monotonic() + settle_s
    while True:
        _, left = sandboxed(v)
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    info = [p for p in sandbox_processes() if p[0] in left]
    assert not left, f"processes of a sandbox uid outlived the verdict: {info[:5]}"


def check(outside: Outside, verdict: Verdict, family: Iterable[Status], v) -> None:
    """`Outside.check` for a verifier with warm pools, with "nothing left" scoped to this
    verifier's sandboxes: the harness spares every process that looks like a worker, forks
    of a server included, and other suites run their own workers on this machine at the
    same time."""

    def nothing_left(settle_s: float = 10.0) -> None:
        assert_no_strays(v, settle_s=settle_s)
        uids = worker_uids(v)
        new = _sandbox_owned(Path(HOST_TMP)) | _sandbox_owned(Path.home())
        new -= outside.before_owned
        new = {p for p in new if not _is_worker_dir(p)}
        new = {p for p in new if _owner(p) in uids}
        assert not new, f"files of a sandbox uid were left on the host: {sorted(new)[:5]}"

    outside.assert_nothing_left = nothing_left  # type: ignore[method-assign]
    outside.check(verdict, family)


def _owner(path: str) -> int | None:
    try:
        return os.lstat(path).st_uid
    except OSError:
        return None
