"""The npu node image (ascendc) and its place in the manifests: built only FROM a CANN image
the user names (no default: CANN is Huawei's to distribute), refused in one line without
one; the KubeRay worker group and the compose service declare the descriptor's `NPU`
resource, the group with Ascend's device-plugin resource (huawei.com/Ascend910), one NPU
per slot."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import yaml

from verifiers import domain as domains

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "infra" / "images" / "npu" / "Dockerfile"
DESCRIPTOR = domains.get("ascendc")


def test_the_descriptor_names_this_image_and_resource():
    assert (DESCRIPTOR.image, DESCRIPTOR.resource) == ("npu", "NPU")
    assert DOCKERFILE.is_file()


def test_building_npu_without_a_cann_base_is_refused_in_one_line():
    env = {k: v for k, v in os.environ.items() if k != "CANN_BASE_IMAGE"}
    env["CRUCIBLE_ENGINE"] = "false"  # never reached: the refusal comes first
    res = subprocess.run(
        ["bash", str(ROOT / "infra" / "build-images.sh"), "npu"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2, (res.returncode, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and res.stdout == "", res.stderr
    assert "CANN_BASE_IMAGE=" in lines[0] and "infra/build-images.sh npu" in lines[0]
    assert "AscendHub" in lines[0]  # where CANN images come from


def test_the_default_build_does_not_ask_for_cann():
    text = (ROOT / "infra" / "build-images.sh").read_text()
    default = re.search(r"^all=\((.*)\)$", text, re.M)[1].split()
    assert "npu" not in default and "head" in default


def test_the_dockerfile_starts_from_the_users_cann_image_with_no_default():
    text = DOCKERFILE.read_text()
    assert re.search(r"^ARG CANN_BASE_IMAGE\s*$", text, re.M)  # no `=default`
    assert re.search(r"^FROM \$\{CANN_BASE_IMAGE\}\s*$", text, re.M)
    assert text.index("ARG CANN_BASE_IMAGE") < text.index("FROM ")
    assert "install-toolchains.sh ascendc" in text  # pyasc and bubblewrap, as on bare metal
    assert "toolchain.py npu" in text and '"verifiers.ascendc"' in text
    assert "${PATH}" in text  # CANN's own PATH (bisheng) kept


def test_the_kuberay_group_declares_npu_and_asks_for_ascend_devices():
    docs = [d for d in yaml.safe_load_all((ROOT / "infra/k8s/raycluster.yaml").read_text()) if d]
    rc = next(d for d in docs if d["kind"] == "RayCluster")
    group = next(g for g in rc["spec"]["workerGroupSpecs"] if g["groupName"] == "npu")
    declared = json.loads(json.loads(group["rayStartParams"]["resources"]))
    assert set(declared) == {"NPU"} and group["rayStartParams"]["num-cpus"] == "0"
    container = group["template"]["spec"]["containers"][0]
    assert container["image"] == domains.image_tag("npu")
    limits = container["resources"]["limits"]
    assert int(limits["huawei.com/Ascend910"]) == declared["NPU"] == int(limits["cpu"])


def test_the_compose_service_declares_npu_with_the_hosts_devices():
    svc = yaml.safe_load((ROOT / "infra/compose.yaml").read_text())["services"]["npu"]
    assert svc["image"] == domains.image_tag("npu") and svc["profiles"] == ["npu"]
    arg = next(a for a in svc["command"] if a.startswith("--resources="))
    declared = json.loads(arg.removeprefix("--resources="))
    assert set(declared) == {"NPU"} and "--num-cpus=0" in svc["command"]
    davinci = [d for d in svc["devices"] if re.fullmatch(r"/dev/davinci\d+", d)]
    assert len(davinci) == declared["NPU"]
    assert any(v.startswith("/usr/local/Ascend/driver:") for v in svc["volumes"])
