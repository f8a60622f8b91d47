"""The lake's run lock: one writing command at a time per lake.

Two runs on one lake at once are safe for the tables (ids are content hashes, commits
are atomic) but not for the work: both select the same pending candidates and verify them
twice, and both export the same content, one of which is then left without its
`exports` row. So every command that writes (a pipeline flow, `dedup`, `export`,
`ingest`, `repair`) holds this lock for as long as it runs; readers (`sql`, `show`,
`pending`, `tasks`) never take it and are never blocked.

A local lake's lock is an `flock` on `<root>/.lake.lock`: the kernel releases it when the
holding process ends, however it ends (a SIGKILL, the OOM killer), so a dead holder
keeps nothing and there is no stale lock to clear by hand. While held the file names its
holder (command, run id, pid, host, since when), which is what a second command's error
shows. The file itself is never deleted: unlinking a locked file would let the next
opener lock a new inode while a third still waits on the old one.

The lock is per process and re-entrant: the command line takes it before starting its
flow, so a busy lake is refused in a second, and the flow (also run without the command
line: a served deployment's runs, a test calling it) takes it again in the same process,
adding its run id to the record.

An object-store lake (`s3://`) takes no lock: `lake/objectstore.py` ("Concurrent runs")
says why, and what two runs on one such lake do.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from lake import objectstore
from lake.store import LakeError
from verifiers.contract import utc_now

log = logging.getLogger(__name__)

LOCK_FILE = ".lake.lock"


class LakeBusy(LakeError):
    """Another command holds the lake's run lock; the message names it."""


@dataclass(frozen=True)
class Holder:
    """Who holds a lake: what the lock file records while it is held."""

    command: str  # e.g. "crucible run", "flow pipeline", "ingest"
    pid: int
    host: str
    since: str  # UTC, ISO 8601
    run_id: str | None = None

    def describe(self) -> str:
        if self is UNNAMED:
            return "another command (it has not written its name yet)"
        run = f"run {self.run_id}, " if self.run_id else ""
        return f"{self.command} ({run}pid {self.pid} on {self.host}, since {self.since})"


# a holder caught between taking the lock and writing its name into the file
UNNAMED = Holder("", 0, "", "")


@dataclass
class _Held:
    fd: int
    holder: Holder
    depth: int = 1


# The locks this process holds, by lock file: flock locks belong to an open file, so a
# second open in the same process would wait on itself; a re-entry counts up instead.
_HELD: dict[str, _Held] = {}
_GUARD = threading.Lock()


@contextlib.contextmanager
def hold(root: str | os.PathLike[str], command: str, run_id: str | None = None) -> Iterator[None]:
    """Hold the run lock of the lake at `root` (an existing directory) for the block, or
    raise LakeBusy naming the holder at once. Re-entrant within a process: an inner hold
    only adds its `run_id` to the record when the outer one had none."""
    if objectstore.is_url(root):
        log.info("lake %s is on an object store: no run lock is taken", root)
        yield  # lake/objectstore.py ("Concurrent runs") says why
        return
    path = str(Path(os.fspath(root)).expanduser().absolute() / LOCK_FILE)
    with _GUARD:
        held = _HELD.get(path)
        if held is not None:
            held.depth += 1
            if run_id and not held.holder.run_id:
                held.holder = replace(held.holder, run_id=run_id)
                _write(held.fd, held.holder)
        else:
            holder = Holder(command, os.getpid(), socket.gethostname(), utc_now(), run_id)
            _HELD[path] = held = _Held(_acquire(path, root), holder)
            _write(held.fd, holder)
    try:
        yield
    finally:
        with _GUARD:
            held.depth -= 1
            if held.depth == 0:
                del _HELD[path]
                _release(held.fd)


def holder_of(root: str | os.PathLike[str]) -> Holder | None:
    """Who holds the lake's lock now (None: nobody), for a message or a test; never takes
    it."""
    path = Path(os.fspath(root)) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(fd) or UNNAMED
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _acquire(path: str, root: str | os.PathLike[str]) -> int:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise LakeError(
            f"cannot open the lock file {path} of lake {root} ({exc.strerror or exc}): "
            "a command that writes the lake needs to create it there; fix the directory's "
            "permissions"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = _read(fd) or UNNAMED
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise LakeError(
                f"cannot lock lake {root} ({exc.strerror or exc}): its file system may not "
                "support flock (a network mount): put the lake on a local disk"
            ) from None
        raise LakeBusy(
            f"lake {root} is in use by {holder.describe()}: wait for it to end, or stop "
            f"that process (a command that dies releases the lake at once)"
        ) from None
    return fd


def _release(fd: int) -> None:
    try:
        os.ftruncate(fd, 0)  # no stale name in the file once it is free
    except OSError:
        log.debug("could not clear the lake's lock file", exc_info=True)
    finally:
        os.close(fd)  # closing releases the flock


def _write(fd: int, holder: Holder) -> None:
    data = (json.dumps(asdict(holder), sort_keys=True) + "\n").encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def _read(fd: int) -> Holder | None:
    try:
        data = os.pread(fd, 4096, 0)
        return Holder(**json.loads(data))
    except (OSError, ValueError, TypeError):
        return None  # the holder is between taking the lock and writing its name
