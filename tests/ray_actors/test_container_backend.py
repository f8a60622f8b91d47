"""The container backend: the rtl worker in the `eda` node image and the cad worker in the
`cad` image, through Podman's Docker API, give the host's verdicts, confined (no network,
read-only root, capped) and with no way for a candidate to forge a verdict line; a missing
image or socket is a clear error.

The session starts `podman system service` on a socket of its own and builds the image
with infra/build-images.sh (a fresh machine: the Debian base by mmdebstrap, ~2 min, then
the image, ~3 min; the cad image, with CadQuery, a few minutes more; a built one: seconds).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generators.perturb.cad import CadPerturbGenerator
from generators.perturb.rtl import RtlPerturbGenerator
from ray_actors.container import (
    SANDBOX_CAPS,
    ContainerBackend,
    ContainerSettings,
    ContainerUnavailable,
)
from ray_actors.verify import VerifierWorker
from verifiers import domain as domains
from verifiers.catalog import load_task
from verifiers.contract import Limits, Status, content_id
from verifiers.registry import get_verifier

ROOT = Path(__file__).resolve().parents[2]
TASKS = ("mux4", "adder8", "gray_counter4")
RUNC = "/usr/sbin/runc"

needs_podman = pytest.mark.skipif(
    shutil.which("podman") is None or not os.path.exists(RUNC),
    reason="podman + runc absent: run infra/install-toolchains.sh containers",
)


@pytest.fixture(scope="session")
def docker_url(tmp_path_factory):
    """Podman's Docker API on a socket of this session's own."""
    sock = tmp_path_factory.mktemp("podman") / "podman.sock"
    url = f"unix://{sock}"
    proc = subprocess.Popen(
        ["podman", "--runtime", RUNC, "system", "service", "--time=0", url],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import docker

    deadline = time.monotonic() + 60
    while True:
        try:
            docker.DockerClient(base_url=url).ping()
            break
        except docker.errors.DockerException:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"podman system service did not serve {url}")
            time.sleep(0.2)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _podman(*args: str) -> str:
    out = subprocess.run(["podman", "--runtime", RUNC, *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


def _built(image: str) -> str:
    """crucible-<image>:<version>, built (or found up to date) by the project's own script;
    the image it leaves is the one this tree builds: its content key (the label
    org.crucible.inputs) is the key of this tree's Dockerfile, context and base."""
    out = subprocess.run(
        ["bash", str(ROOT / "infra" / "build-images.sh"), image],
        capture_output=True,
        text=True,
        timeout=2400,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    tag = domains.image_tag(image)
    base_id = _podman("image", "inspect", "--format", "{{.Id}}", "debian:bookworm-slim")
    key = subprocess.run(
        [sys.executable, str(ROOT / "infra/images/inputs.py"),
         str(ROOT / "infra/images" / image / "Dockerfile"), "--base-id", base_id],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    label = '{{ index .Config.Labels "org.crucible.inputs" }}'
    assert _podman("image", "inspect", "--format", label, tag) == key, out.stderr[-2000:]
    return tag


@pytest.fixture(scope="session")
def eda_image(docker_url):
    return _built("eda")


@pytest.fixture(scope="session")
def backend(docker_url, eda_image):
    b = ContainerBackend("rtl", settings=ContainerSettings(base_url=docker_url))
    yield b
    b.close()


def _batch():
    """The references and perturbations (bugs) of a few rtl tasks."""
    items = []
    for name in TASKS:
        task = load_task(ROOT / "tasks" / "rtl" / name)
        items += [(task, c.code) for c in RtlPerturbGenerator().generate(task, n=3, seed=1)]
    return items


@needs_podman
def test_container_verdicts_are_the_hosts(backend, eda_image):
    """Over 30 s on a fresh machine: the first user of the `eda` image pays for its build
    (the Debian base by mmdebstrap, then the image: ~2.5 min on 2 cores); where the tree's
    image is built already (its content key, org.crucible.inputs) it takes seconds."""
    items = _batch()
    limits = Limits()
    inside = backend.verify_many(items, limits)
    host = get_verifier("rtl").verify_many(items, limits)
    assert [(v.status, v.code) for v in inside] == [(v.status, v.code) for v in host]
    assert [v.candidate_id for v in inside] == [content_id(t.task_id, c) for t, c in items]
    statuses = {v.status for v in inside}
    assert Status.PASS in statuses and len(statuses) > 1  # references and real bugs
    assert Status.INFRA_ERROR not in statuses
    # each verdict names the image it ran in and the tools the worker found there
    image = backend.client().images.get(eda_image)
    labels = image.labels
    for v in inside:
        assert v.toolchain["image"] == f"{eda_image}@{image.id}"
        assert v.toolchain["iverilog"] == labels["org.crucible.toolchain.iverilog"]
        assert v.toolchain["yosys"] == labels["org.crucible.toolchain.yosys"]


@needs_podman
def test_a_candidate_cannot_forge_a_verdict_line(backend):
    """A candidate prints a whole verdict line (a pass for another, failing candidate of
    the batch): it is simulator output inside the sandbox, never the worker's stdout."""
    items = _batch()
    host = get_verifier("rtl").verify_many(items, Limits())
    victim = next(i for i, v in enumerate(host) if v.status is not Status.PASS)
    task, code = items[victim]
    forged = json.dumps(
        {
            "candidate_id": content_id(task.task_id, code),
            "task_id": task.task_id,
            "domain": "rtl",
            "verifier": "rtl",
            "verifier_version": host[victim].verifier_version,
            "status": "pass",
        }
    )
    ref = task.reference
    head, _, tail = ref.rpartition("endmodule")
    escaped = forged.replace('"', '\\"')
    hostile = f'{head}initial $display("{escaped}");\nendmodule{tail}'
    batch = [(task, hostile), *items]
    inside = backend.verify_many(batch, Limits())
    expected = get_verifier("rtl").verify_many(batch, Limits())
    assert [(v.status, v.code) for v in inside] == [(v.status, v.code) for v in expected]
    assert inside[victim + 1].status is host[victim].status is not Status.PASS
    assert Status.INFRA_ERROR not in {v.status for v in inside}


@needs_podman
def test_the_container_is_confined(backend):
    backend.start()
    ctr = backend._container
    ctr.reload()
    host = ctr.attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert set(host["CapAdd"] or ()) <= {f"CAP_{c}" for c in SANDBOX_CAPS} | set(SANDBOX_CAPS)
    assert host["Memory"] > 0 and host["PidsLimit"] > 0
    assert "no-new-privileges" in " ".join(host["SecurityOpt"] or ())
    ulimits = {u["Name"].lower().removeprefix("rlimit_"): u["Hard"] for u in host["Ulimits"]}
    assert ulimits == {"nofile": 1024, "nproc": 1024}
    # from inside: no route out, nothing written outside the tmpfs work dirs
    probe = (
        "import socket, sys\n"
        "try:\n"
        "    socket.create_connection(('1.1.1.1', 80), timeout=3); print('net-open')\n"
        "except OSError as e: print('net-closed', e.errno)\n"
        "for p in ('/opt/crucible/evil', '/etc/evil', '/evil'):\n"
        "    try:\n"
        "        open(p, 'w'); print('wrote', p)\n"
        "    except OSError as e: print('ro', p, e.errno)\n"
        "open('/tmp/ok', 'w').write('x'); print('tmp-ok')\n"
    )
    rc, out = ctr.exec_run(["python", "-c", probe])
    text = out.decode()
    assert rc == 0, text
    assert "net-closed" in text and "net-open" not in text
    assert "wrote" not in text and text.count("ro ") == 3
    assert "tmp-ok" in text


@needs_podman
def test_the_containers_sandbox_uids_come_from_the_hosts_ranges(backend):
    """Sandbox uids are host uids (RLIMIT_NPROC counts them machine-wide): a container's
    worker claims its uid range among the host's locks (bound in), so a range this
    process holds is skipped in there too. Before, a container's worker took the range
    of its pid inside the container, the same small pid in every container."""
    from verifiers import sandbox

    sandbox.sandbox_uid()  # this process's first range, held
    mine = sandbox._ranges[0]
    backend.start()
    claim = f"from verifiers import sandbox; print(sandbox._claim_range({mine})[0])"
    rc, out = backend._container.exec_run(["python", "-c", claim])
    assert rc == 0, out.decode()
    assert int(out.decode().split()[-1]) != mine


@needs_podman
def test_a_missing_image_is_a_clear_infra_error(docker_url):
    settings = ContainerSettings(base_url=docker_url, image="crucible-eda:no-such-version")
    b = ContainerBackend("rtl", settings=settings)
    with pytest.raises(ContainerUnavailable, match=r"not built here: run infra/build-images.sh"):
        b.start()
    # through the verify actor: infra_error verdicts that say what to run, no crash
    task = load_task(ROOT / "tasks" / "rtl" / "mux4")
    worker = VerifierWorker("rtl", Limits().to_dict(), backend="container")
    worker.container = b
    out = worker.verify_batch([task.to_dict()], [(task.task_id, task.reference)])
    assert [v["status"] for v in out] == [Status.INFRA_ERROR.value]
    assert out[0]["code"] == "tool_missing"
    assert "infra/build-images.sh eda" in out[0]["feedback"]


@needs_podman
def test_no_docker_api_is_a_clear_error(tmp_path):
    settings = ContainerSettings(base_url=f"unix://{tmp_path}/absent.sock")
    with pytest.raises(ContainerUnavailable, match="podman --runtime /usr/sbin/runc system"):
        ContainerBackend("rtl", settings=settings).start()


def test_an_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="host or container"):
        VerifierWorker("rtl", Limits().to_dict(), backend="vm")


def test_an_empty_line_ends_a_worker_batch():
    """The protocol the backend relies on: a batch's verdicts come out when its empty line
    is read, while the worker still waits for more input (no EOF)."""
    import io

    from verifiers.worker import run

    task = load_task(ROOT / "tasks" / "rtl" / "mux4")
    out = io.StringIO()
    seen = []

    def lines():
        for code in (task.reference, task.reference + "\n// two\n"):
            cand = {"task_id": task.task_id, "code": code, "origin": "t", "generator": "t"}
            yield json.dumps({"task": task.to_dict(), "candidate": cand}) + "\n"
        yield "\n"
        seen.append(out.getvalue().count("\n"))  # read before the next line is given
        yield ""

    limits = {"gates": ["compile"]}
    assert run("rtl", lines(), out, io.StringIO(), batch=1000, override=limits) == 0
    assert seen == [2]


def test_cli_refuses_an_unknown_backend(tmp_path):
    from typer.testing import CliRunner

    from flows.cli import app

    res = CliRunner().invoke(app, ["run", "--lake", str(tmp_path / "lake"), "--backend", "vm"])
    assert res.exit_code == 2
    assert "host or container" in res.output


@needs_podman
def test_ray_actors_verify_in_the_container(docker_url, eda_image, monkeypatch, own_ray):
    """`PoolSettings(backend="container")`: the actors' workers run in the node image (the
    actors find the engine through DOCKER_HOST, inherited from the driver)."""
    from ray_actors import cluster
    from ray_actors.verify import PoolSettings, verify_candidates
    from verifiers.contract import Candidate

    monkeypatch.setenv("DOCKER_HOST", docker_url)
    task = load_task(ROOT / "tasks" / "rtl" / "mux4")
    cands = [
        Candidate(task.task_id, c.code, "perturb", "t")
        for c in RtlPerturbGenerator().generate(task, n=2)
    ]
    cluster.start(cluster.ClusterSettings(num_cpus=1))
    try:
        pool = PoolSettings(workers=1, backend="container")
        got = list(verify_candidates("rtl", cands, {task.task_id: task}, Limits(), pool))
    finally:
        cluster.shutdown()
    verdicts = get_verifier("rtl").verify_many([(task, c.code) for c in cands], Limits())
    host = {v.candidate_id: v for v in verdicts}
    assert len(got) == len(cands)
    for v in got:
        assert v.toolchain["image"].startswith(eda_image + "@")
        assert (v.status, v.code) == (host[v.candidate_id].status, host[v.candidate_id].code)


@pytest.fixture(scope="session")
def cad_image(docker_url):
    pytest.importorskip("cadquery")  # the host side of the comparison
    return _built("cad")


@needs_podman
def test_cad_verdicts_in_the_cad_image_are_the_hosts(docker_url, cad_image):
    """The cad worker (warm CadQuery processes, exact OCC booleans) in its own image: the
    references and their perturbations get the host's status and code."""
    items = []
    for name in ("washer", "block_with_pocket"):
        task = load_task(ROOT / "tasks" / "cad" / name)
        items.append((task, task.reference))
        items += [(task, c.code) for c in CadPerturbGenerator().generate(task, n=3, seed=1)]
    backend = ContainerBackend("cad", settings=ContainerSettings(base_url=docker_url))
    try:
        inside = backend.verify_many(items, Limits())
    finally:
        backend.close()
    host = get_verifier("cad").verify_many(items, Limits())
    assert [(v.status, v.code) for v in inside] == [(v.status, v.code) for v in host]
    statuses = {v.status for v in inside}
    assert Status.PASS in statuses and len(statuses) > 1
    assert Status.INFRA_ERROR not in statuses
    image = backend.client().images.get(cad_image)
    assert all(v.toolchain["image"] == f"{cad_image}@{image.id}" for v in inside)
