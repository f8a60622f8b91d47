"""The container backend: a domain's verifier worker run inside its node image, through the
Docker API (a Docker engine, or Podman's compatible socket: `DOCKER_HOST`).

One warm container per backend runs the plain JSONL worker (`python -m verifiers.<domain>`,
`verifiers.worker`) and is fed batch after batch on its stdin (an empty line ends a
batch); verdicts come back as JSONL on its stdout. The container has no network, a
read-only root, tmpfs work dirs, memory / pids / nofile / nproc limits, and only the
capabilities the worker's own sandbox needs to start (bubblewrap as root: SYS_ADMIN for its
mounts and namespaces, SETUID/SETGID for the uid drop, KILL for a timed-out candidate of
another uid, CHOWN/DAC_OVERRIDE/FOWNER for its work dirs). Candidate code still runs in that
sandbox, as an unprivileged uid with no capability and no-new-privs, so nothing it prints
reaches the worker's stdout: the verdict stream stays the worker's own, as on the host.
Each verdict line is checked against the batch (a line for no candidate sent is refused),
and records the image it ran in (`toolchain["image"]`, tag and image id) beside the tool
versions the worker probed inside it.

A missing Docker SDK, API socket or image is `ContainerUnavailable`, whose message says
what to run; `VerifierWorker` turns it into `infra_error` verdicts, never a crash.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import re
import socket
import struct
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from verifiers import domain as domains
from verifiers.base import infra_verdict
from verifiers.contract import Candidate, Limits, Task, Verdict, content_id
from verifiers.sandbox import uid_lock_dir

log = logging.getLogger(__name__)

# What bubblewrap, started as root by the worker, needs inside the container (measured with
# podman + runc): SYS_ADMIN (mounts, namespaces), NET_ADMIN (the loopback of its own network
# namespace), SETUID/SETGID (the drop to the sandbox uid), KILL (a timed-out candidate runs
# as another uid), CHOWN/DAC_OVERRIDE/FOWNER (work dirs the sandbox uid owns). Every other
# capability is dropped, and the engine's default seccomp profile and masked /proc paths
# stay on: the sandbox starts under them. The candidate gets none of these (it runs as the
# sandbox uid, no capability, no-new-privs, its own seccomp filter).
SANDBOX_CAPS = (
    "SYS_ADMIN",
    "NET_ADMIN",
    "SETUID",
    "SETGID",
    "KILL",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
)
SECURITY_OPT = ("no-new-privileges",)
# where a container's worker finds the host's uid-range locks (`verifiers.sandbox`)
UID_LOCKS = "/run/lock/crucible-sandbox-uids"
LABEL = "org.crucible.backend"
BUILD_HINT = "infra/build-images.sh {image}"
SOCKET_HINT = (
    "start Docker, or Podman's Docker API: `podman --runtime /usr/sbin/runc system service "
    "--time=0 unix:///run/podman/podman.sock &` and `export "
    "DOCKER_HOST=unix:///run/podman/podman.sock`"
)


class ContainerUnavailable(RuntimeError):
    """The container backend cannot run here; the message says what to run."""


@dataclass(frozen=True)
class ContainerSettings:
    image: str | None = None  # default: the domain's node image (`domain.image_tag`)
    base_url: str | None = None  # default: DOCKER_HOST, as the docker CLI reads it
    memory: str = "8g"
    pids: int = 4096
    tmpfs_mb: int = 4096  # the work dirs (/tmp, /work): RAM, capped
    # no line from the worker for this long while a batch is out: the container is stuck
    # (each candidate has its own wall clock in the worker; this only catches a hang)
    stall_s: float = 900.0
    extra: dict[str, Any] = field(default_factory=dict)  # more containers.create kwargs


def _docker():
    try:
        import docker
    except ImportError:
        raise ContainerUnavailable(
            "the container backend needs the Docker SDK: pip install -e '.[containers]'"
        ) from None
    return docker


class ContainerBackend:
    """A warm container running `domain`'s worker; `verify_many` as a verifier has it."""

    def __init__(
        self,
        domain: str,
        verifier_settings: Mapping[str, Any] | None = None,
        settings: ContainerSettings | None = None,
    ):
        self.domain = domain
        self.descriptor = domains.get(domain)
        self.verifier_settings = dict(verifier_settings or {})
        self.settings = settings or ContainerSettings()
        if not self.settings.image and not self.descriptor.image:
            raise ContainerUnavailable(f"the {domain} domain has no node image to run in")
        self.image = self.settings.image or domains.image_tag(self.descriptor.image)
        self._client: Any = None
        self._container: Any = None
        self._sock: Any = None
        self._lines: queue.Queue = queue.Queue()
        self._line_no = 0  # input lines sent (the worker numbers them the same way)
        self._image_ref = ""
        self._node = ""
        self._stderr: list[str] = []
        self._lock = threading.Lock()

    # --- the container --------------------------------------------------------------------
    def client(self) -> Any:
        if self._client is None:
            docker = _docker()
            try:
                if self.settings.base_url:
                    client = docker.DockerClient(base_url=self.settings.base_url)
                else:
                    client = docker.from_env()
                client.ping()
            except docker.errors.DockerException as e:
                where = self.settings.base_url or "DOCKER_HOST"
                raise ContainerUnavailable(
                    f"no Docker API at {where} ({str(e)[:200]}): {SOCKET_HINT}"
                ) from None
            self._client = client
        return self._client

    def _image(self) -> Any:
        docker = _docker()
        try:
            return self.client().images.get(self.image)
        except docker.errors.ImageNotFound:
            hint = BUILD_HINT.format(image=self.descriptor.image or "<image>")
            raise ContainerUnavailable(
                f"the node image {self.image} is not built here: run {hint}"
            ) from None

    def container_kwargs(self) -> dict[str, Any]:
        """How the worker's container is created (the confinement, in one place)."""
        docker = _docker()
        s = self.settings
        argv = ["python", "-m", f"verifiers.{self.domain}", "--batch", "1000000"]
        if self.verifier_settings:
            argv += ["--settings", json.dumps(self.verifier_settings)]
        tmpfs = f"rw,exec,nosuid,nodev,size={s.tmpfs_mb}m,mode=1777"
        # the host's uid-range locks: the worker's sandbox uids (host uids: RLIMIT_NPROC
        # counts them machine-wide) are then no other container's or host process's
        locks = uid_lock_dir()
        return {
            "command": argv,
            "stdin_open": True,
            "tty": False,
            "network_mode": "none",
            "read_only": True,
            "tmpfs": {"/tmp": tmpfs, "/work": tmpfs},
            "working_dir": "/work",
            "environment": {"TMPDIR": "/tmp", "HOME": "/work", "CRUCIBLE_UID_LOCK_DIR": UID_LOCKS},
            "volumes": {locks: {"bind": UID_LOCKS, "mode": "rw"}},
            "mem_limit": s.memory,
            "memswap_limit": s.memory,
            "pids_limit": s.pids,
            "ulimits": [
                docker.types.Ulimit(name="nofile", soft=1024, hard=1024),
                docker.types.Ulimit(name="nproc", soft=1024, hard=1024),
            ],
            "cap_drop": ["ALL"],
            "cap_add": list(SANDBOX_CAPS),
            "security_opt": list(SECURITY_OPT),
            # gone once its worker exits: also when the actor holding it is killed (its
            # attach stream closes, the worker reads EOF) and `close` never runs
            "auto_remove": True,
            "labels": {LABEL: "container", "org.crucible.domain": self.domain},
            "name": f"crucible-{self.domain}-{uuid.uuid4().hex[:10]}",
            **s.extra,
        }

    def start(self) -> None:
        if self._container is not None:
            return
        image = self._image()
        docker = _docker()
        try:
            ctr = self.client().containers.create(image.id, **self.container_kwargs())
            sock = ctr.attach_socket(params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            ctr.start()
        except docker.errors.APIError as e:
            raise ContainerUnavailable(
                f"could not start a container of {self.image}: {str(e)[:400]}"
            ) from None
        self._container, self._sock = ctr, sock
        self._lines = queue.Queue()
        self._line_no = 0
        self._stderr = []
        self._image_ref = f"{self.image}@{image.id}"
        self._node = f"{socket.gethostname()}/{ctr.short_id}"
        threading.Thread(target=self._read, args=(sock, self._lines), daemon=True).start()
        log.info("started container %s of %s for %s", ctr.short_id, self.image, self.domain)

    def _read(self, sock: Any, lines: queue.Queue) -> None:
        """Demultiplex the attach stream (frames of an 8-byte header: stream, 0, 0, 0,
        big-endian size) into stdout lines (verdicts) and stderr lines."""
        raw = sock._sock  # the SDK's SocketIO wraps the socket the engine upgraded
        buf = {1: b"", 2: b""}
        try:
            while True:
                header = _recv_exact(raw, 8)
                if header is None:
                    break
                stream, size = header[0], struct.unpack(">I", header[4:])[0]
                data = _recv_exact(raw, size)
                if data is None:
                    break
                if stream not in buf:
                    continue
                buf[stream] += data
                *whole, buf[stream] = buf[stream].split(b"\n")
                for line in whole:
                    lines.put((stream, line.decode("utf-8", "replace")))
        except OSError as e:
            log.debug("attach stream closed: %s", e)
        lines.put((0, ""))  # the container is gone

    def close(self) -> None:
        ctr, self._container = self._container, None
        if ctr is None:
            return
        try:
            ctr.stop(timeout=5)  # the worker stops its warm workers on SIGTERM
        except Exception as e:  # already gone: nothing to stop
            log.debug("stopping %s: %s", ctr.short_id, e)
        try:
            ctr.remove(force=True)
        except Exception as e:
            log.debug("removing %s: %s", ctr.short_id, e)
        try:
            self._sock.close()
        except Exception as e:
            log.debug("closing the attach socket: %s", e)

    def __del__(self) -> None:  # a dropped actor must not leave its container running
        with contextlib.suppress(Exception):  # interpreter shutdown: its label finds it
            self.close()

    # --- batches --------------------------------------------------------------------------
    def verify_many(self, items: Sequence[tuple[Task, str]], limits: Limits) -> list[Verdict]:
        """One verdict per item, in order. Never raises for the container's faults: they
        are `infra_error` verdicts (and the container is started afresh next time);
        `ContainerUnavailable` (nothing to run in) is raised for the caller to report."""
        with self._lock:
            self.start()
            try:
                got = self._exchange(items, limits)
            except _Broken as e:
                log.warning("the %s container failed: %s; starting a new one", self.domain, e)
                self.close()
                got = {}
                reason = str(e)
            else:
                reason = ""
        out = []
        for task, code in items:
            cid = content_id(task.task_id, code)
            v = got.get(cid)
            if v is None:
                out.append(self._infra(task, cid, reason or "the worker gave no verdict"))
            else:
                toolchain = {**v.toolchain, "image": self._image_ref}
                out.append(replace(v, toolchain=toolchain, node=self._node))
        return out

    def _exchange(self, items: Sequence[tuple[Task, str]], limits: Limits) -> dict[str, Verdict]:
        want: dict[str, int] = {}  # candidate_id -> verdicts still expected
        by_line: dict[int, str] = {}
        payload = []
        for task, code in items:
            cid = content_id(task.task_id, code)
            # only the task and the code matter to the worker; the lake keeps the rest
            cand = Candidate(task.task_id, code, origin="verify", generator="container")
            line = {
                "task": task.to_dict(),
                "candidate": cand.to_dict(),
                "limits": limits.to_dict(),
            }
            payload.append(json.dumps(line, ensure_ascii=False))
            self._line_no += 1
            by_line[self._line_no] = cid
            want[cid] = want.get(cid, 0) + 1
        self._line_no += 1  # the empty line that ends the batch
        try:
            self._sock._sock.sendall(("\n".join(payload) + "\n\n").encode())
        except OSError as e:
            raise _Broken(f"could not send the batch: {e}") from None
        got: dict[str, Verdict] = {}
        left = sum(want.values())
        while left > 0:
            try:
                stream, text = self._lines.get(timeout=self.settings.stall_s)
            except queue.Empty:
                raise _Broken(f"no word from the worker in {self.settings.stall_s:.0f} s") from None
            if stream == 0:
                raise _Broken(f"the container exited: {self._tail()}")
            if stream == 2:
                self._note(text)
                m = _NO_VERDICT.match(text)
                if m and by_line.get(int(m.group(1))) in want:
                    cid = by_line[int(m.group(1))]
                    want[cid] -= 1
                    left -= 1
                continue
            if not text.strip():
                continue
            try:
                v = Verdict.from_dict(json.loads(text))
            except (ValueError, TypeError, KeyError) as e:
                raise _Broken(f"the worker wrote a line that is not a verdict: {e}") from None
            if want.get(v.candidate_id, 0) <= 0 or v.domain != self.domain:
                raise _Broken(f"the worker wrote a verdict for no candidate sent: {text[:200]}")
            want[v.candidate_id] -= 1
            left -= 1
            got[v.candidate_id] = v
        return got

    def _note(self, text: str) -> None:
        self._stderr = [*self._stderr[-40:], text]
        log.debug("%s worker: %s", self.domain, text)

    def _tail(self) -> str:
        return " | ".join(self._stderr[-5:])[-600:] or "no output"

    def _infra(self, task: Task, cid: str, reason: str) -> Verdict:
        from verifiers.registry import get_verifier

        v = get_verifier(self.domain, self.verifier_settings or None)
        return infra_verdict(
            task, cid, v.name, v.version, "sandbox_unavailable", "container", reason[:600]
        )


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    """`n` bytes, or None at the end of the stream."""
    chunks, left = [], n
    while left:
        got = sock.recv(min(left, 1 << 20))
        if not got:
            return None
        chunks.append(got)
        left -= len(got)
    return b"".join(chunks)


class _Broken(Exception):
    """The container stopped answering as a worker does."""


_NO_VERDICT = re.compile(r"line (\d+): (?:no verdict|skipped)")
