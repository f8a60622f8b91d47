"""Start Ray locally with the node resources this machine's tools support, or connect to
an existing cluster (`RAY_ADDRESS`) with no code change.

Node resources name what a node can verify: each domain's descriptor names its resource
and the tools and Python modules a node needs to offer it (`verifiers.domain`); `GPU` and
`cpu` are Ray's own. An actor asking for a resource no node has stays pending forever in
Ray, so callers check `slots` first and report the work as `infra_error` at once.

What Ray's own processes push to the driver (the raylet's "a worker died", "task failed,
retrying" lines, drawn with ANSI colours) goes to this module's logger as plain text, not
to the console: the run's summary counts the restarts (`actor_restarts`).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

import ray

from verifiers import domain as domains

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterSettings:
    address: str | None = None  # None: RAY_ADDRESS if set, else a local start
    num_cpus: int | None = None  # local start: default all cores
    temp_dir: Path | None = None  # local start: Ray's session files (default under the lake)
    object_store_mb: int = 256


def local_resources(num_cpus: int) -> dict[str, float]:
    """Custom resources for this machine: one slot per core for each toolchain resource
    that some domain using it can run here (all of that domain's tools on PATH and its
    Python modules importable). Ray's own resources (`cpu`, `GPU`) are Ray's to count."""
    res = {}
    for name, users in domains.by_resource().items():
        if name in RAY_NATIVE:
            continue
        if any(_runs_here(d) for d in users):
            res[name] = float(num_cpus)
    return res


def _runs_here(d: domains.Domain) -> bool:
    return all(shutil.which(t) for t in d.tools) and all(
        importlib.util.find_spec(m) is not None for m in d.modules
    )


def quiet_accelerator_probe(resources: dict[str, float]) -> None:
    """Ray names the type of an `NPU` resource through CANN's Python API (`acl`) and logs a
    traceback when that is not installed; a machine that declares NPU only for the gates
    that run without CANN (its verifier ends the others `no_cann`) expects exactly that."""
    if "NPU" in resources and importlib.util.find_spec("acl") is None:
        logging.getLogger("ray._private.accelerators.npu").setLevel(logging.CRITICAL)


def start(settings: ClusterSettings) -> dict[str, float]:
    """Connect to or start Ray; returns the cluster's resources."""
    route_ray_messages()
    if ray.is_initialized():
        return ray.cluster_resources()
    address = settings.address or os.environ.get("RAY_ADDRESS")
    if address:
        log.info("connecting to the Ray cluster at %s", address)
        ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
    else:
        cpus = settings.num_cpus or os.cpu_count() or 1
        kwargs = {}
        if settings.temp_dir is not None:
            settings.temp_dir.mkdir(parents=True, exist_ok=True)
            kwargs["_temp_dir"] = str(settings.temp_dir.resolve())
        resources = local_resources(cpus)
        quiet_accelerator_probe(resources)
        ray.init(
            num_cpus=cpus,
            resources=resources,
            include_dashboard=False,
            object_store_memory=settings.object_store_mb * 1024 * 1024,
            logging_level=logging.WARNING,
            log_to_driver=False,
            **kwargs,
        )
    return ray.cluster_resources()


# A build node's resource: compiles for the GPU domains run there (CPU only), their sealed
# cache entries travel to the node that verifies (`ray_actors.verify.BuildWorker`). Never
# added by `local_resources`: a machine is a build node only when started as one
# (`ray start --resources='{"BUILD": 8}'`); without one the verifying node builds itself.
BUILD = "BUILD"

# Verifier resources Ray already knows by another name: `cpu` work needs only cores, `GPU`
# is Ray's own GPU accounting (num_gpus), not a custom resource.
RAY_NATIVE = {"cpu": "CPU", "GPU": "GPU"}


def slots(resource: str) -> int:
    """How many actors needing one unit of `resource` the cluster can hold at once."""
    return int(ray.cluster_resources().get(RAY_NATIVE.get(resource, resource), 0))


def per_core(resource: str) -> bool:
    """Whether one unit of `resource` is one core (a toolchain slot, a `cpu` actor), not
    a device (a GPU): such an actor runs one warm worker, not one per core."""
    return resource != "GPU"


def actor_options(resource: str) -> dict:
    """Ray options that pin an actor to a node offering `resource`.

    A toolchain resource (any resource a descriptor names that is not Ray's own) already
    counts one slot per core of its node, so its actors take no `CPU` besides: a stage
    keeps each domain's actors warm across repair rounds, and with a CPU each the first
    domain's actors would hold every core while the next domain's waited for one forever
    (seen: two toolchain domains, one after the other, on 2 cores)."""
    if resource == "GPU":
        return {"num_gpus": 1, "num_cpus": 1}
    if resource == "cpu":
        return {"num_cpus": 1}
    return {"resources": {resource: 1}, "num_cpus": 0}


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def route_ray_messages() -> None:
    """Send the lines Ray's raylet and autoscaler push to the driver to this module's
    logger (INFO, ANSI codes stripped) instead of printing them raw on stdout; the lines
    of Ray's workers (off anyway: `log_to_driver=False`) are left to Ray. Idempotent.

    Ray has no switch for these (its error listener prints them whatever `log_to_driver`
    says), so its printer is wrapped; a Ray without that printer is left as it is."""
    try:
        from ray._private import worker as ray_worker
    except ImportError:
        return
    printer = getattr(ray_worker, "print_to_stdstream", None)
    if printer is None or getattr(printer, "_crucible", False):
        return

    def print_to_stdstream(data, *args, **kwargs):
        source = data.get("pid") if isinstance(data, dict) else None
        if source not in ("raylet", "autoscaler"):
            return printer(data, *args, **kwargs)
        for line in data.get("lines") or ():
            text = _ANSI.sub("", str(line)).strip()
            if text:
                log.info("ray %s: %s", source, text)
        return None

    print_to_stdstream._crucible = True  # type: ignore[attr-defined]
    ray_worker.print_to_stdstream = print_to_stdstream


def node_label() -> str:
    """Which Ray node this process runs on, as a verdict's `node` records it: the host
    name, plus the node's name where it was given one (`ray start --node-name`), since
    every Ray node of one host shares the host name. Outside Ray, or on a node left
    unnamed (its name is then its IP address), the host name alone."""
    host = socket.gethostname()
    if not ray.is_initialized():
        return host
    try:
        me = ray.get_runtime_context().get_node_id()
        node = next(n for n in ray.nodes() if n.get("NodeID") == me)
    except Exception:  # a label only: never fail a worker over it
        log.debug("could not read this Ray node's name", exc_info=True)
        return host
    name = node.get("NodeName") or ""
    if not name or name in (node.get("NodeManagerAddress"), host):
        return host
    return f"{host}/{name}"


def actor_restarts(class_name: str) -> dict[str, int]:
    """actor id -> how many times Ray restarted it, for this job's actors of
    `class_name` (Ray's actor table); empty when the table cannot be read."""
    if not ray.is_initialized():
        return {}
    try:
        from ray._private import state

        job = ray.get_runtime_context().get_job_id()
        table = state.actors()
    except Exception:  # a diagnostic only: never fail a stage over it
        log.debug("could not read Ray's actor table", exc_info=True)
        return {}
    return {
        aid: int(a.get("NumRestarts") or 0)
        for aid, a in table.items()
        if a.get("ActorClassName") == class_name and a.get("JobID") == job
    }


def shutdown() -> None:
    if ray.is_initialized():
        ray.shutdown()
