"""A build node's compiles carried to the verifying node: `CudaVerifier.prebuild` builds
into one cache dir, `KernelVerifier.seed` writes the entries into another (each its own
host's cache), and the compile there is a hit; an entry that fails a read's checks is
refused and never written; one under a key the node never asks for changes nothing."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import pytest

from verifiers.catalog import load_task
from verifiers.contract import Limits
from verifiers.kernels import build
from verifiers.kernels.nvcc import HostCache, compile_cubin, find_nvcc
from verifiers.kernels.verifier import CudaVerifier, cuda_src
from verifiers.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    find_nvcc() is None, reason="needs nvcc (the CUDA toolkit): infra/install-toolchains.sh cuda"
)

# a load_inline call whose only unit fails in g++ at once (no torch headers): the inline
# path's build, cache and seed without the minute a CUDA unit over torch's headers costs
BROKEN_INLINE = """import torch
from torch.utils.cpp_extension import load_inline
ext = load_inline(name="broken_ext", cpp_sources="int f( { return 1; }", no_implicit_headers=True)
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x
"""


@pytest.fixture(scope="module")
def relu():
    return load_task(ROOT / "tasks/cuda/relu")


@pytest.fixture(scope="module")
def built(relu, tmp_path_factory) -> list[dict]:
    """The relu reference's cubin, prebuilt in a build node's cache dir."""
    node = CudaVerifier(device="cpu", workers=1, cache_dir=tmp_path_factory.mktemp("build"))
    arts = node.prebuild(relu, relu.reference, Limits())
    assert [a["cache"] for a in arts] == ["cubin"] and arts[0]["body"]["ok"] is True
    return arts


def _compile(relu, cache_dir: Path):
    return compile_cubin(cuda_src(relu.reference), Sandbox(Limits()), cache_dir=cache_dir)


def _entries(cache_dir: Path) -> list[Path]:
    return list((cache_dir / "cubin").glob("*/*.json"))


def test_a_seeded_cubin_is_the_verifying_nodes_cache_hit(relu, built, tmp_path):
    assert CudaVerifier(device="cpu", cache_dir=tmp_path).seed(built) == {
        "seeded": 1,
        "refused": 0,
    }
    res = _compile(relu, tmp_path)
    assert res.cached and res.ok and res.key == built[0]["key"]
    assert hashlib.sha256(res.cubin).hexdigest() == built[0]["body"]["cubin_sha256"]


def _tampered(good: dict) -> dict[str, dict]:
    body = good["body"]
    flipped = body["cubin"][:-8] + ("A" * 8 if not body["cubin"].endswith("A" * 8) else "B" * 8)
    cases = {
        "another blob than its sha256": {**body, "cubin": flipped},
        "ok not a bool": {**body, "ok": 1},
        "the log not a string": {**body, "log": ["nvcc"]},
        "the blob not base64 text": {**body, "cubin": [1, 2]},
        "a field missing": {k: v for k, v in body.items() if k != "cubin_sha256"},
        "ok with no cubin": {**body, "cubin": None, "cubin_sha256": None},
        "its own key another": {**body, "key": "0" * 64},
    }
    return {why: {**good, "body": b} for why, b in cases.items()}


def test_a_tampered_entry_is_refused_and_never_written(relu, built, tmp_path):
    good = built[0]
    bad = list(_tampered(good).values())
    bad += [
        {**good, "key": "../../escape"},  # a key is a sha256, never a path
        {**good, "key": good["key"].upper()},
        {**good, "cache": "elsewhere"},
        {**good, "body": "not a dict"},
        "not an entry",
    ]
    node = CudaVerifier(device="cpu", cache_dir=tmp_path)
    assert node.seed(bad) == {"seeded": 0, "refused": len(bad)}
    assert _entries(tmp_path) == [] and not (tmp_path.parent / "escape.json").exists()
    assert not _compile(relu, tmp_path).cached  # nothing there: it compiled itself
    # the good one, after all that, is read back by the cache's own get
    other = tmp_path / "other"
    assert CudaVerifier(device="cpu", cache_dir=other).seed([copy.deepcopy(good)])["seeded"] == 1
    hit = HostCache(other).get(good["key"])
    assert hit is not None and hit["ok"] is True and hit["cubin"]


def test_an_entry_under_a_key_the_node_never_asks_for_changes_nothing(relu, built, tmp_path):
    """A build node with another nvcc makes another key: its entry sits unread, and the
    verifying node compiles for itself."""
    other_key = hashlib.sha256(b"the same source under another nvcc").hexdigest()
    foreign = {**built[0], "key": other_key, "body": {**built[0]["body"], "key": other_key}}
    assert CudaVerifier(device="cpu", cache_dir=tmp_path).seed([foreign])["seeded"] == 1
    res = _compile(relu, tmp_path)
    assert res.ok and not res.cached and res.key != other_key


def test_a_load_inline_unit_built_elsewhere_is_the_nodes_own_cached_unit(relu, tmp_path):
    """The inline path: every unit's entry (a failed one too: it fails the same way from
    the cache) travels; the verifying node's Builder finds the unit cached."""
    arts = CudaVerifier(device="cpu", cache_dir=tmp_path / "build").prebuild(
        relu, BROKEN_INLINE, Limits()
    )
    assert [(a["cache"], a["body"]["ok"]) for a in arts] == [("inline", False)]
    assert "error" in arts[0]["body"]["log"]
    gpu = tmp_path / "gpu"
    assert CudaVerifier(device="cpu", cache_dir=gpu).seed(arts)["seeded"] == 1
    spec = build.inline_specs(BROKEN_INLINE)[0]
    res = build.Builder(Limits(), gpu).build(spec, link=False)
    assert not res.ok and res.units == {"main.cpp": True} and res.failed_unit == "main.cpp"


def test_prebuild_builds_nothing_where_the_gates_stop_before_compile(relu, tmp_path):
    node = CudaVerifier(device="cpu", cache_dir=tmp_path)
    assert node.prebuild(relu, relu.reference, Limits(gates=("parse",))) == []
    assert node.prebuild(relu, "class ModelNew: pass\n", Limits()) == []
    assert _entries(tmp_path) == []
