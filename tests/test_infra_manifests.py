"""The cluster manifests users start from (infra/k8s/raycluster.yaml, infra/compose.yaml)
against the domain descriptors: each node image a descriptor names runs in exactly one
worker group / service, under its `image_tag`, declaring exactly that descriptor's Ray
resource; nothing else is declared; the head (the driver, with the lake) is there.

A manifest that drifts from the descriptors fails quietly in a cluster: an actor asking for
a resource no node declares waits forever, and one landing on a node without its tools
fails every candidate as infra_error. So the checks below run on the shipped files and on
deliberately wrong copies of them, each of which must be refused."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import shlex
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import yaml

from ray_actors.cluster import RAY_NATIVE
from verifiers import domain as domains

ROOT = Path(__file__).resolve().parents[1]
RAYCLUSTER = ROOT / "infra" / "k8s" / "raycluster.yaml"
COMPOSE = ROOT / "infra" / "compose.yaml"
HEAD = "head"  # the driver's image: infra/images/head, tagged image_tag("head")
# `[registry/]crucible-<image>:<version>`: a registry prefix is the user's to add
TAG = re.compile(r"(?:.+/)?crucible-(?P<image>[a-z0-9_-]+):(?P<version>[^/]+)\Z")


@dataclass(frozen=True)
class Node:
    """What one worker group or service offers Ray."""

    where: str  # "worker group eda", "service eda"
    image: str
    resources: dict[str, float]  # custom resources it declares
    cpus: int | None  # Ray CPUs it offers; None: as many as Ray counts on the machine
    gpus: int
    cores: int | None  # the container's CPU request (Kubernetes); None: not sized here
    env: dict[str, str]
    mounts: tuple[str, ...]  # where volumes are mounted in the container


# --- the checks, shared by both manifests ---------------------------------------------------


def node_problems(
    head: Node | None, nodes: list[Node], descriptors: Mapping[str, domains.Domain]
) -> list[str]:
    """Every way `head` and `nodes` disagree with `descriptors`, one line each."""
    problems: list[str] = []
    by_image: dict[str, set[str]] = {}
    for d in descriptors.values():
        if d.image:
            by_image.setdefault(d.image, set()).add(d.resource)
    for image, resources in by_image.items():
        if len(resources) != 1:
            problems.append(
                f"descriptors give image {image!r} several resources {sorted(resources)}: "
                "a node declares one, so each image's domains share one resource"
            )
    imageless = {d.resource for d in descriptors.values() if not d.image}
    imageless -= {r for rs in by_image.values() for r in rs}

    if head is None:
        problems.append(f"no Ray head: it runs {domains.image_tag(HEAD)} with `ray start --head`")
    else:
        problems += _tag_problems(head, HEAD)
        problems += _head_problems(head)

    seen: Counter[str] = Counter()
    for n in nodes:
        m = TAG.match(n.image)
        if m is None:  # a user-supplied image: it may only serve a resource with no image
            target = _user_target(n)
            if target is None or target not in imageless:
                problems.append(
                    f"{n.where} runs {n.image}, which is no crucible image, and offers "
                    f"{_offer(n)}; only a resource whose domains have no image "
                    f"({', '.join(sorted(imageless)) or 'none'}) may come from such a node"
                )
                continue
            seen[f"resource:{target}"] += 1
            problems += _offer_problems(n, target)
            continue
        image = m["image"]
        if image == HEAD:
            problems.append(f"{n.where} runs the head image; a worker runs a node image")
            continue
        if image not in by_image:
            problems.append(
                f"{n.where} runs crucible-{image}, an image no domain descriptor names "
                f"(they name: {', '.join(sorted(by_image))}): remove it, or give a "
                f"descriptor `image={image!r}`"
            )
            continue
        seen[f"image:{image}"] += 1
        problems += _tag_problems(n, image)
        problems += _offer_problems(n, min(by_image[image]))

    for image in sorted(by_image):
        users = ", ".join(sorted(d.name for d in descriptors.values() if d.image == image))
        count = seen[f"image:{image}"]
        if count != 1:
            problems.append(
                f"{count} worker groups/services run image {image!r} ({users}); want exactly one"
            )
    for resource in sorted(imageless):
        users = ", ".join(sorted(d.name for d in descriptors.values() if d.resource == resource))
        count = seen[f"resource:{resource}"]
        if count != 1:
            problems.append(
                f"{count} worker groups/services offer {resource!r} ({users}, no image); "
                "want exactly one, with a user-supplied image"
            )
    return problems


def _tag_problems(n: Node, image: str) -> list[str]:
    want = domains.image_tag(image)
    if n.image == want or n.image.endswith("/" + want):
        return []
    return [f"{n.where} runs {n.image}; infra/build-images.sh tags it {want} (image_tag)"]


def _head_problems(head: Node) -> list[str]:
    problems = []
    if head.cpus != 0 or head.resources or head.gpus:
        problems.append(
            f"the head offers {_offer(head)}; it carries no toolchain, so it must offer "
            "nothing (num-cpus 0, no resources), or verifier actors land on it"
        )
    lake = head.env.get("CRUCIBLE_LAKE")
    if not lake:
        problems.append("the head sets no CRUCIBLE_LAKE: the driver would write its lake locally")
    elif "://" not in lake and not any(lake == m or lake.startswith(m + "/") for m in head.mounts):
        problems.append(f"the head's lake {lake} is on no volume: it would go with the container")
    if not head.env.get("PREFECT_API_URL"):
        problems.append("the head sets no PREFECT_API_URL: runs would not reach the server")
    return problems


def _user_target(n: Node) -> str | None:
    """The one resource a user-supplied node serves (a GPU, or its one custom resource)."""
    if n.gpus:
        return next((r for r, native in RAY_NATIVE.items() if native == "GPU"), None)
    if len(n.resources) == 1:
        return next(iter(n.resources))
    return None


def _offer(n: Node) -> str:
    return f"resources {n.resources}, {_cpus(n)} CPUs, {n.gpus} GPUs"


def _cpus(n: Node) -> str:
    return "all the machine's" if n.cpus is None else str(n.cpus)


def _offer_problems(n: Node, resource: str) -> list[str]:
    """Whether `n` declares exactly `resource`, the way ray_actors/cluster.py counts it."""
    native = RAY_NATIVE.get(resource)
    problems = []
    if native is None:  # a toolchain resource: one slot per core, and no CPUs besides
        count = n.resources.get(resource)
        slots = n.cores if n.cores is not None else count
        if set(n.resources) != {resource} or not count or count != slots:
            want = n.cores if n.cores is not None else "N"
            problems.append(
                f"{n.where} declares {n.resources}; its descriptor's resource is "
                f"{resource!r}: declare exactly {{{resource!r}: {want}}}, one per core "
                "of its CPU request"
            )
        if n.cpus != 0:
            problems.append(
                f"{n.where} offers {_cpus(n)} Ray CPUs: set num-cpus 0, or `cpu` actors "
                "(x86asm) land on a node without their tools"
            )
        if n.gpus:
            problems.append(f"{n.where} offers {n.gpus} GPUs it has no verifier for")
    elif native == "CPU":
        if n.resources:
            problems.append(
                f"{n.where} declares {n.resources}; `{resource}` is Ray's own CPU: offer "
                "cores with num-cpus and no custom resource"
            )
        if not n.cpus or n.cpus < 0 or (n.cores is not None and n.cpus != n.cores):
            problems.append(
                f"{n.where} offers {_cpus(n)} Ray CPUs; offer its CPU request "
                f"({n.cores if n.cores is not None else 'N > 0'}) as num-cpus"
            )
        if n.gpus:
            problems.append(f"{n.where} offers {n.gpus} GPUs it has no verifier for")
    else:  # GPU: Ray's own, from the GPU limit; a GPU actor takes one CPU with it
        if n.resources:
            problems.append(
                f"{n.where} declares {n.resources}; `{resource}` is Ray's own: offer GPUs "
                "(nvidia.com/gpu limit, --num-gpus), no custom resource"
            )
        if n.gpus < 1:
            problems.append(f"{n.where} offers no GPU for the {resource!r} resource")
        elif n.cpus is None or n.cpus < n.gpus:
            problems.append(
                f"{n.where} offers {_cpus(n)} CPUs for {n.gpus} GPUs; a GPU actor takes one "
                "CPU with its GPU (ray_actors/cluster.py actor_options)"
            )
    return problems


# --- Kubernetes: a KubeRay RayCluster -------------------------------------------------------


def raycluster_problems(
    docs: list[Any], descriptors: Mapping[str, domains.Domain] | None = None
) -> list[str]:
    descriptors = domains.domains() if descriptors is None else descriptors
    clusters = [d for d in docs if isinstance(d, dict) and d.get("kind") == "RayCluster"]
    if len(clusters) != 1:
        return [f"want one RayCluster document, found {len(clusters)}"]
    rc = clusters[0]
    problems = []
    if rc.get("apiVersion") != "ray.io/v1":
        problems.append(f"apiVersion {rc.get('apiVersion')!r}: KubeRay's current one is ray.io/v1")
    spec = rc.get("spec") or {}
    if str(spec.get("rayVersion")) != version("ray"):
        problems.append(
            f"rayVersion {spec.get('rayVersion')!r}, but the images carry ray {version('ray')}"
        )
    head = None
    if "headGroupSpec" in spec:
        head, found = _k8s_node("the head", spec["headGroupSpec"], docs)
        problems += found
    nodes = []
    names = Counter(g.get("groupName") for g in spec.get("workerGroupSpecs") or ())
    problems += [f"worker group name {n!r} used {c} times" for n, c in names.items() if c > 1]
    for group in spec.get("workerGroupSpecs") or ():
        node, found = _k8s_node(f"worker group {group.get('groupName')}", group, docs)
        problems += found
        nodes.append(node)
    return problems + node_problems(head, nodes, descriptors)


def _k8s_node(where: str, group: dict, docs: list[Any]) -> tuple[Node, list[str]]:
    problems = []
    params = group.get("rayStartParams") or {}
    for key, value in params.items():
        if not isinstance(value, str):
            problems.append(f"{where}: rayStartParams {key} is {value!r}; KubeRay takes strings")
    pod = group.get("template", {}).get("spec", {})
    ray = (pod.get("containers") or [{}])[0]  # KubeRay's Ray container is the first one
    res = ray.get("resources") or {}
    cores = _cores((res.get("requests") or {}).get("cpu", (res.get("limits") or {}).get("cpu")))
    gpus = int((res.get("limits") or {}).get("nvidia.com/gpu", 0))
    # without num-cpus KubeRay offers the container's CPUs
    cpus = int(params["num-cpus"]) if "num-cpus" in params else (cores or 0)
    custom: dict[str, float] = {}
    if "resources" in params:
        custom, problem = _kuberay_resources(str(params["resources"]))
        if problem:
            problems.append(f"{where}: {problem}")
    claims = {
        v["name"]: v["persistentVolumeClaim"]["claimName"]
        for v in pod.get("volumes") or ()
        if "persistentVolumeClaim" in v
    }
    pvcs = {
        d["metadata"]["name"]
        for d in docs
        if isinstance(d, dict) and d.get("kind") == "PersistentVolumeClaim"
    }
    problems += [
        f"{where}: volume {v} claims {c!r}, which no PersistentVolumeClaim here defines"
        for v, c in claims.items()
        if c not in pvcs
    ]
    mounts = tuple(
        m["mountPath"]
        for m in ray.get("volumeMounts") or ()
        if m.get("name") in claims  # an emptyDir is no place for the lake
    )
    env = {e["name"]: str(e.get("value", "")) for e in ray.get("env") or ()}
    node = Node(where, str(ray.get("image", "")), custom, cpus, gpus, cores, env, mounts)
    return node, problems


def _cores(value: Any) -> int | None:
    if value is None:
        return None
    text = str(value)
    return int(text[:-1]) // 1000 if text.endswith("m") else int(float(text))


def _kuberay_resources(value: str) -> tuple[dict[str, float], str]:
    """KubeRay pastes `resources` into the shell line of `ray start --resources=...`: the
    JSON object must survive that shell as one word (written '"{\\"eda\\": 4}"')."""
    hint = 'write it as \'"{\\"NAME\\": N}"\' (KubeRay pastes it into a shell line)'
    try:
        words = shlex.split(value)
        parsed = json.loads(words[0]) if len(words) == 1 else None
    except (ValueError, json.JSONDecodeError):
        parsed = None
    if not isinstance(parsed, dict) or not all(isinstance(v, int | float) for v in parsed.values()):
        return {}, f"resources {value!r} is not a JSON object after the shell reads it; {hint}"
    return parsed, ""


# --- one machine: compose -------------------------------------------------------------------


def compose_problems(
    doc: dict, descriptors: Mapping[str, domains.Domain] | None = None
) -> list[str]:
    descriptors = domains.domains() if descriptors is None else descriptors
    services = doc.get("services") or {}
    problems = []
    head_name, head, nodes = None, None, []
    for name, svc in services.items():
        problems += _ulimit_problems(name, svc)
        argv = _argv(svc.get("command"))
        if argv[:2] != ["ray", "start"]:
            m = TAG.match(str(svc.get("image", "")))
            if m and m["image"] != HEAD:
                problems.append(f"service {name} runs crucible-{m['image']} but no `ray start`")
            continue
        opts = _options(argv[2:])
        node = _compose_node(name, svc, opts)
        if "head" in opts:
            if head is not None:
                problems.append(f"services {head_name} and {name} both start a Ray head")
            head_name, head = name, node
        else:
            nodes.append((node, opts))
    for node, opts in nodes:
        host = str(opts.get("address", "")).rpartition(":")[0]
        if head_name is not None and host != head_name:
            problems.append(
                f"{node.where} joins --address={opts.get('address')}; the head is "
                f"service {head_name} (--address={head_name}:6379)"
            )
        if opts.get("block") is not True:
            problems.append(f"{node.where}: `ray start` without --block exits at once")
    return problems + node_problems(head, [n for n, _ in nodes], descriptors)


def _argv(command: Any) -> list[str]:
    if command is None:
        return []
    return [str(a) for a in command] if isinstance(command, list) else shlex.split(command)


def _options(args: list[str]) -> dict[str, str | bool]:
    opts: dict[str, str | bool] = {}
    i = 0
    while i < len(args):
        key, eq, value = args[i].removeprefix("--").partition("=")
        if eq:
            opts[key] = value
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            opts[key] = args[i + 1]
            i += 1
        else:
            opts[key] = True
        i += 1
    return opts


def _compose_node(name: str, svc: dict, opts: dict[str, str | bool]) -> Node:
    where = f"service {name}"
    custom: dict[str, float] = {}
    if "resources" in opts:
        try:
            custom = json.loads(str(opts["resources"]))
        except json.JSONDecodeError:
            custom = {f"<not JSON: {opts['resources']}>": 0}
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.partition("=")[::2] for e in env)
    mounts = tuple(
        (v.split(":")[1] if isinstance(v, str) else v.get("target", ""))
        for v in svc.get("volumes") or ()
    )
    return Node(
        where,
        str(svc.get("image", "")),
        custom,
        int(opts["num-cpus"]) if "num-cpus" in opts else None,
        int(opts.get("num-gpus", 0)),
        None,
        {k: str(v) for k, v in env.items()},
        mounts,
    )


def _ulimit_problems(name: str, svc: dict) -> list[str]:
    limits = svc.get("ulimits") or {}
    missing = [k for k in ("nofile", "nproc") if k not in limits]
    if not missing:
        return []
    return [
        f"service {name} sets no ulimits {', '.join(missing)}: podman's runtime fails to "
        "raise them (FACTS.md); give it `ulimits: *limits`"
    ]


# --- the shipped manifests ------------------------------------------------------------------


def _raycluster() -> list[Any]:
    return list(yaml.safe_load_all(RAYCLUSTER.read_text()))


def _compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_raycluster_matches_the_descriptors():
    assert raycluster_problems(_raycluster()) == []


def test_compose_matches_the_descriptors():
    assert compose_problems(_compose()) == []


def test_every_descriptor_image_and_resource_is_in_both_manifests():
    """The check is not vacuous: the shipped files run every image a descriptor names and
    offer every resource one declares."""
    rc = next(d for d in _raycluster() if d and d["kind"] == "RayCluster")
    k8s_images = {
        g["template"]["spec"]["containers"][0]["image"] for g in rc["spec"]["workerGroupSpecs"]
    }
    compose_images = {s["image"] for s in _compose()["services"].values()}
    for image in domains.by_image():
        assert domains.image_tag(image) in k8s_images
        assert domains.image_tag(image) in compose_images
    assert domains.image_tag(HEAD) in compose_images
    assert {d.resource for d in domains.domains().values()} >= {"eda", "cad", "emulator"}


def test_a_registry_prefix_is_allowed():
    docs = _raycluster()
    text = yaml.safe_dump_all(docs).replace(
        "image: crucible-", "image: reg.example.com/t/crucible-"
    )
    assert "reg.example.com/t/crucible-eda" in text
    assert raycluster_problems(list(yaml.safe_load_all(text))) == []


# --- deliberately wrong manifests: each must be refused -------------------------------------


def _group(rc: dict, name: str) -> dict:
    return next(g for g in rc["spec"]["workerGroupSpecs"] if g["groupName"] == name)


def _worker(rc: dict, name: str) -> dict:
    return _group(rc, name)["template"]["spec"]["containers"][0]


def _head(rc: dict) -> dict:
    return rc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]


def _set(path: list, value: Any) -> Callable[[dict], None]:
    def edit(rc: dict) -> None:
        where = rc
        for key in path[:-1]:
            where = where[key]
        where[path[-1]] = value

    return edit


def _drop_group(name: str) -> Callable[[dict], None]:
    def edit(rc: dict) -> None:
        rc["spec"]["workerGroupSpecs"].remove(_group(rc, name))

    return edit


def _add_group(name: str, image: str, params: dict) -> Callable[[dict], None]:
    def edit(rc: dict) -> None:
        g = copy.deepcopy(_group(rc, "eda"))
        g["groupName"], g["rayStartParams"] = name, params
        g["template"]["spec"]["containers"][0]["image"] = image
        rc["spec"]["workerGroupSpecs"].append(g)

    return edit


K8S_WRONG = {
    # (edit, a fragment the problems must contain)
    "resource misspelled": (
        lambda rc: _group(rc, "eda")["rayStartParams"].update(resources='"{\\"eda_\\": 4}"'),
        "{'eda_': 4}",
    ),
    "image tag of another version": (
        lambda rc: _worker(rc, "cad").update(image="crucible-cad:0.0.9"),
        "crucible-cad:0.0.9; infra/build-images.sh tags it crucible-cad:",
    ),
    "slots not matching the CPU request": (
        lambda rc: _group(rc, "emulator")["rayStartParams"].update(
            resources='"{\\"emulator\\": 8}"'
        ),
        "declare exactly {'emulator': 4}",
    ),
    "resources not quoted for the shell": (
        lambda rc: _group(rc, "eda")["rayStartParams"].update(resources='{"eda": 4}'),
        "is not a JSON object after the shell reads it",
    ),
    "a toolchain group offering CPUs": (
        lambda rc: _group(rc, "cad")["rayStartParams"].pop("num-cpus"),
        "worker group cad offers 4 Ray CPUs: set num-cpus 0",
    ),
    "a group missing": (_drop_group("emulator"), "0 worker groups/services run image 'emulator'"),
    "a group twice": (
        _add_group(
            "eda2", "crucible-eda:0.1.0", {"num-cpus": "0", "resources": '"{\\"eda\\": 4}"'}
        ),
        "2 worker groups/services run image 'eda'",
    ),
    "an image no descriptor names": (
        _add_group(
            "fpga", "crucible-fpga:0.1.0", {"num-cpus": "0", "resources": '"{\\"fpga\\": 4}"'}
        ),
        "crucible-fpga, an image no domain descriptor names",
    ),
    "a user image for an undeclared resource": (
        _add_group(
            "tpu", "example.invalid/tpu:1", {"num-cpus": "0", "resources": '"{\\"TPU\\": 4}"'}
        ),
        "which is no crucible image",
    ),
    "the cpu group declaring a custom cpu resource": (
        lambda rc: _group(rc, "cpu")["rayStartParams"].update(resources='"{\\"cpu\\": 4}"'),
        "`cpu` is Ray's own CPU",
    ),
    "the cpu group offering fewer CPUs than it requests": (
        lambda rc: _group(rc, "cpu")["rayStartParams"].update({"num-cpus": "2"}),
        "offer its CPU request (4) as num-cpus",
    ),
    "no GPU group": (_drop_group("gpu"), "0 worker groups/services offer 'GPU'"),
    "a GPU group without a GPU": (
        lambda rc: _worker(rc, "gpu")["resources"]["limits"].pop("nvidia.com/gpu"),
        "which is no crucible image",
    ),
    "a non-string rayStartParam": (
        lambda rc: _group(rc, "cpu")["rayStartParams"].update({"num-cpus": 4}),
        "rayStartParams num-cpus is 4; KubeRay takes strings",
    ),
    "no head": (lambda rc: rc["spec"].pop("headGroupSpec"), "no Ray head"),
    "the head on a node image": (
        lambda rc: _head(rc).update(image="crucible-eda:0.1.0"),
        "the head runs crucible-eda:0.1.0; infra/build-images.sh tags it crucible-head:",
    ),
    "the head offering CPUs": (
        lambda rc: rc["spec"]["headGroupSpec"]["rayStartParams"].pop("num-cpus"),
        "the head offers",
    ),
    "the lake on no volume": (
        lambda rc: _head(rc).pop("volumeMounts"),
        "the head's lake /lake is on no volume",
    ),
    "the lake claim undefined": (
        lambda rc: rc["spec"]["headGroupSpec"]["template"]["spec"]["volumes"][0][
            "persistentVolumeClaim"
        ].update(claimName="nope"),
        "claims 'nope', which no PersistentVolumeClaim here defines",
    ),
    "another ray version": (_set(["spec", "rayVersion"], "2.9.0"), "rayVersion '2.9.0'"),
}


@pytest.mark.parametrize("case", sorted(K8S_WRONG))
def test_a_wrong_raycluster_is_refused(case):
    edit, fragment = K8S_WRONG[case]
    docs = _raycluster()
    rc = next(d for d in docs if d and d["kind"] == "RayCluster")
    edit(rc)
    problems = raycluster_problems(docs)
    assert any(fragment in p for p in problems), problems


def _service(name: str, **changes: Any) -> Callable[[dict], None]:
    def edit(doc: dict) -> None:
        doc["services"][name].update(changes)

    return edit


def _command(name: str, old: str, new: str) -> Callable[[dict], None]:
    def edit(doc: dict) -> None:
        svc = doc["services"][name]
        svc["command"] = [new if a == old else a for a in svc["command"]]
        assert svc["command"] != _compose()["services"][name]["command"], "the edit changed nothing"

    return edit


COMPOSE_WRONG = {
    "resource misspelled": (
        _command("eda", '--resources={"eda": 4}', '--resources={"EDA": 4}'),
        "{'EDA': 4}",
    ),
    "resources not JSON": (
        _command("cad", '--resources={"cad": 4}', "--resources={cad: 4}"),
        "<not JSON",
    ),
    "image tag of another version": (
        _service("emulator", image="crucible-emulator:9.9"),
        "runs crucible-emulator:9.9",
    ),
    "a toolchain node offering CPUs": (
        _command("eda", "--num-cpus=0", "--num-cpus=4"),
        "service eda offers 4 Ray CPUs",
    ),
    "the cpu node with a custom resource": (
        _command("cpu", "--num-cpus=4", '--resources={"cpu": 4}'),
        "`cpu` is Ray's own CPU",
    ),
    "a node service missing": (
        lambda doc: doc["services"].pop("cad"),
        "0 worker groups/services run image 'cad'",
    ),
    "an image no descriptor names": (
        lambda doc: doc["services"].update(
            fpga={**doc["services"]["eda"], "image": "crucible-fpga:0.1.0"}
        ),
        "crucible-fpga, an image no domain descriptor names",
    ),
    "a node joining another address": (
        _command("emulator", "--address=head:6379", "--address=ray-head:6379"),
        "the head is service head",
    ),
    "a node without --block": (_command("cpu", "--block", "--verbose"), "without --block"),
    "a service without ulimits": (
        lambda doc: doc["services"]["postgres"].pop("ulimits"),
        "service postgres sets no ulimits nofile, nproc",
    ),
    "no head": (lambda doc: doc["services"].pop("head"), "no Ray head"),
    "the head offering CPUs": (_command("head", "--num-cpus=0", "--num-cpus=2"), "the head offers"),
    "the head without the lake": (
        lambda doc: doc["services"]["head"]["environment"].pop("CRUCIBLE_LAKE"),
        "the head sets no CRUCIBLE_LAKE",
    ),
    "a GPU node without a GPU": (
        _command("gpu", "--num-gpus=1", "--num-gpus=0"),
        "which is no crucible image",
    ),
    "a node image run outside Ray": (
        _service("cpu", command=["python", "-m", "verifiers.x86asm"]),
        "service cpu runs crucible-cpu but no `ray start`",
    ),
}


@pytest.mark.parametrize("case", sorted(COMPOSE_WRONG))
def test_a_wrong_compose_file_is_refused(case):
    edit, fragment = COMPOSE_WRONG[case]
    doc = _compose()
    edit(doc)
    problems = compose_problems(doc)
    assert any(fragment in p for p in problems), problems


def test_a_new_descriptor_image_fails_both_manifests():
    """The other direction: a domain that names an image the manifests do not run."""
    fpga = dataclasses.replace(domains.get("rtl"), name="fpga", resource="fpga", image="fpga")
    descriptors = {**domains.domains(), "fpga": fpga}
    want = ["0 worker groups/services run image 'fpga' (fpga); want exactly one"]
    assert raycluster_problems(_raycluster(), descriptors) == want
    assert compose_problems(_compose(), descriptors) == want


def test_an_image_whose_domains_want_different_resources_is_refused():
    fpga = dataclasses.replace(domains.get("rtl"), name="fpga", resource="fpga")
    descriptors = {**domains.domains(), "fpga": fpga}
    want = "descriptors give image 'eda' several resources ['eda', 'fpga']"
    assert any(p.startswith(want) for p in raycluster_problems(_raycluster(), descriptors))
    assert any(p.startswith(want) for p in compose_problems(_compose(), descriptors))
