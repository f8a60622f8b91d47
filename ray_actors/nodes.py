"""A Ray cluster of several nodes on one host, each started with `ray start` as a real
cluster node is: a head, then worker nodes joining it with `--address`, each with its own
name, resources, core count and temp dir. For tests and benches of what a cluster does
(placement by resource, a node lost mid-run) on a single machine; a real cluster starts
the same commands on its own hosts.

What Ray 2.60 does here (found, not assumed):
- `--temp-dir` is honoured per node (a worker node without one uses the head's);
- `--node-name` (hidden in `ray start --help`) names the node in the GCS (`ray.nodes()`'s
  `NodeName`); without it the name is the node's IP, the same for every node of a host;
- the runtime-env agent, node manager, object manager and metrics ports are picked free
  per node, so several raylets share one host; but every node's dashboard agent listens
  on 52365 (all but the first fail to bind, logged, the node still up) and the head's Ray
  Client server on 10001 unless told otherwise: both are given free ports here;
- a driver on the host attaches to the head's raylet when there is one, so killing a
  worker node never kills the driver;
- `ray stop` stops every Ray process of the host (other clusters too): a node is stopped
  here by the pids of its own `ray start --block` process tree, never by name.

The GCS declares a killed node dead after its health checks fail (Ray's defaults: ~15-30
s); `HealthChecks` shortens that for the head's GCS, so a test sees a node loss in ~2 s.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil


@dataclass(frozen=True)
class HealthChecks:
    """How fast the head's GCS declares a silent node dead (Ray's `health_check_*`)."""

    period_ms: int = 500
    timeout_ms: int = 1000
    failure_threshold: int = 3

    def env(self) -> dict[str, str]:
        return {
            "RAY_health_check_initial_delay_ms": "0",
            "RAY_health_check_period_ms": str(self.period_ms),
            "RAY_health_check_timeout_ms": str(self.timeout_ms),
            "RAY_health_check_failure_threshold": str(self.failure_threshold),
        }


@dataclass(frozen=True)
class NodeSpec:
    name: str
    num_cpus: int = 1
    resources: dict[str, float] = field(default_factory=dict)
    object_store_mb: int = 80


# Ray's socket paths under a node's temp dir: /session_2026-12-02_10-29-24_338094_10744
# /sockets/plasma_store (a longer pid allowed for); a Unix socket path holds 107 bytes
SESSION_SUFFIX = 66
SOCKET_PATH_MAX = 107


class NodeStartError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_command() -> str:
    """The `ray` CLI of this interpreter's environment."""
    here = Path(sys.executable).parent / "ray"
    found = str(here) if here.exists() else shutil.which("ray")
    if not found:
        raise NodeStartError("no `ray` command: pip install 'ray[default]' (constraints.txt)")
    return found


class LocalNode:
    """One `ray start --block` process and everything it starts (raylet, agents, workers,
    and the workers' sandboxes): its process tree, killed together by pid."""

    def __init__(self, spec: NodeSpec, root: Path, head_address: str | None, env: dict):
        self.spec = spec
        self.temp_dir = root / spec.name
        self.head_address = head_address
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.address = head_address or ""
        self.starts = 0

    @property
    def is_head(self) -> bool:
        return self.head_address is None

    def command(self) -> list[str]:
        s = self.spec
        cmd = [
            ray_command(),
            "start",
            "--block",
            f"--node-name={s.name}",
            f"--num-cpus={s.num_cpus}",
            f"--temp-dir={self.temp_dir}",
            f"--object-store-memory={s.object_store_mb * 1024 * 1024}",
            "--disable-usage-stats",
            # every node's agent would listen on 52365 and all but one fail to bind
            f"--dashboard-agent-listen-port={free_port()}",
        ]
        if s.resources:
            cmd.append(f"--resources={json.dumps(s.resources)}")
        if self.is_head:
            port = free_port()
            self.address = f"127.0.0.1:{port}"
            cmd += [
                "--head",
                f"--port={port}",
                f"--ray-client-server-port={free_port()}",
                "--include-dashboard=false",
            ]
        else:
            cmd.append(f"--address={self.head_address}")
        return cmd

    def start(self) -> None:
        """Start the node (again, after a kill: the same command, a new Ray node id)."""
        self.temp_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.temp_dir / f"ray-start-{self.starts}.log", "wb")  # noqa: SIM115
        self.starts += 1
        with log:
            self.proc = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                start_new_session=True,
            )

    def pids(self) -> list[int]:
        if self.proc is None:
            return []
        try:
            top = psutil.Process(self.proc.pid)
            return [top.pid, *(p.pid for p in top.children(recursive=True))]
        except psutil.NoSuchProcess:
            return []

    def kill(self) -> int:
        """Kill the node as a machine loss does: every process of its tree at once (all
        stopped first, so no worker sees its tools die and reports on them), no graceful
        shutdown. Returns how many processes were killed."""
        procs = _processes(self.pids())
        _signal(procs, signal.SIGSTOP)
        # a process forked between the listing and the stop (a sandbox starting)
        known = {p.pid for p in procs}
        procs += _processes(p for p in self.pids() if p not in known)
        _signal(procs, signal.SIGKILL)
        psutil.wait_procs(procs, timeout=10)
        if self.proc is not None:
            self.proc.wait(timeout=10)
            self.proc = None
        return len(procs)

    def stop(self) -> None:
        """SIGTERM the tree (Ray's own shutdown of its children), SIGKILL what stays."""
        procs = _processes(self.pids())
        _signal(procs, signal.SIGTERM)
        _, alive = psutil.wait_procs(procs, timeout=5)
        _signal(alive, signal.SIGKILL)
        psutil.wait_procs(alive, timeout=5)
        if self.proc is not None:
            self.proc.wait(timeout=10)
            self.proc = None

    def started(self) -> bool:
        """Whether `ray start` says its node runs (its log's last start)."""
        log = self.temp_dir / f"ray-start-{self.starts - 1}.log"
        return log.exists() and "Ray runtime started" in log.read_text(errors="replace")


def _processes(pids) -> list[psutil.Process]:
    out = []
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            out.append(psutil.Process(pid))
    return out


def _signal(procs: list[psutil.Process], sig: int) -> None:
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.send_signal(sig)


class LocalCluster:
    """A head (no custom resources) plus worker nodes, all on this host; a context manager
    that stops every process it started, also when the block fails."""

    def __init__(
        self,
        root: Path,
        head: NodeSpec,
        workers: list[NodeSpec],
        health: HealthChecks | None = HealthChecks(),
        env: dict[str, str] | None = None,
    ):
        self.root = Path(root).resolve()
        name_len = max(len(s.name) for s in [head, *workers]) + 1
        room = SOCKET_PATH_MAX - SESSION_SUFFIX - name_len
        if len(str(self.root)) > room:
            raise NodeStartError(
                f"{self.root} is too long a root for Ray's node dirs: the socket paths "
                "Ray makes under it (<root>/<node>/session_<date>_<pid>/sockets/...) "
                f"would pass the {SOCKET_PATH_MAX}-byte limit of a Unix socket path; "
                f"give a root of at most {room} characters, e.g. "
                "tempfile.mkdtemp(dir='/tmp')"
            )
        base = dict(os.environ if env is None else env)
        base.pop("RAY_ADDRESS", None)  # the head must not join another cluster
        if health is not None:
            base.update(health.env())
        self.env = base
        self.head = LocalNode(head, self.root, None, base)
        self.workers: dict[str, LocalNode] = {}
        self._worker_specs = workers

    @property
    def address(self) -> str:
        return self.head.address

    def nodes(self) -> list[LocalNode]:
        return [self.head, *self.workers.values()]

    def start(self, timeout_s: float = 120) -> LocalCluster:
        self.head.start()
        # the GCS client blocks ~30 s on a GCS not listening yet: ask only once it is up
        self._wait(self.head.started, "the head's `ray start`", timeout_s)
        self.wait_alive({self.head.spec.name}, timeout_s)
        for spec in self._worker_specs:
            node = LocalNode(spec, self.root, self.address, self.env)
            self.workers[spec.name] = node
            node.start()
        self.wait_alive({s.name for s in self._worker_specs}, timeout_s)
        return self

    def __enter__(self) -> LocalCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        for node in reversed(self.nodes()):
            node.stop()

    def alive(self) -> dict[str, dict[str, float]]:
        """node name -> total resources, for the nodes the GCS holds alive."""
        from ray._raylet import GcsClient

        info = GcsClient(address=self.address).get_all_node_info()
        return {
            n.node_name: dict(n.resources_total)
            for n in info.values()
            if n.state == 0  # GcsNodeInfo.ALIVE
        }

    def wait_alive(self, names: set[str], timeout_s: float = 120) -> None:
        self._wait(lambda: names <= set(self.alive()), f"nodes {sorted(names)} up", timeout_s)

    def wait_dead(self, name: str, timeout_s: float = 60) -> None:
        self._wait(lambda: name not in self.alive(), f"node {name} declared dead", timeout_s)

    def _wait(self, done, what: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for node in self.nodes():
                if node.proc is not None and node.proc.poll() is not None:
                    raise NodeStartError(self._died(node))
            try:
                if done():
                    return
            except Exception:  # the GCS not up yet
                pass
            time.sleep(0.2)
        raise NodeStartError(f"timed out after {timeout_s:.0f} s waiting for {what}")

    def _died(self, node: LocalNode) -> str:
        logs = sorted(node.temp_dir.glob("ray-start-*.log"))
        tail = logs[-1].read_text(errors="replace")[-2000:] if logs else ""
        return f"`ray start` of node {node.spec.name} exited ({node.proc.returncode}):\n{tail}"

    def kill(self, name: str) -> int:
        return self.workers[name].kill()

    def restart(self, name: str, timeout_s: float = 120) -> None:
        self.workers[name].start()
        self.wait_alive({name}, timeout_s)
