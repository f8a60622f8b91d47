"""Triton compiled where builds belong: a build node's `TritonVerifier.prebuild` runs the
candidate's forward on meta tensors in a sandboxed aot runner, each launch compiled for
sm_90 by Triton's own JIT and none launched (`runner.precompile`); the verifying node
keeps the files (`seed`) and writes them into that candidate's job cache only
(`tritondriver.seed_triton`), with the group file Triton looks them up by made for the
paths there.

What CI shows without a GPU: the JIT, given the seeded cache and the arguments a GPU
launch passes (the same types, values and alignment), finds the kernel compiled (no
compile: no IR written) where an empty cache compiles it; hostile names and links are
never written. The GPU node's first launch is shown by `bench/bench_kernels.py` on the
device."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from verifiers.base import Context
from verifiers.contract import Limits
from verifiers.kernels import tritondriver
from verifiers.kernels.verifier import TritonVerifier, triton_seed_key
from verifiers.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[2]

# the relu task's kernel launched as its forward launches it at the timing sizes (the
# tensors small: only their dtype and 16-byte alignment enter the key, and n's value)
LAUNCH = """
import importlib.util, sys, torch
sys.path.insert(0, {root!r})
from verifiers.kernels.runner import Sm90Driver
from triton.runtime import driver
driver.set_active(Sm90Driver())
spec = importlib.util.spec_from_file_location("ref", {ref!r})
ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)
x = torch.empty(1024)
y = torch.empty_like(x)
k = ref.relu_kernel.run(x, y, 24576 * 4093, BLOCK=1024, grid=(1,), warmup=True, num_warps=4)
print(k.hash)
"""


@pytest.fixture(scope="module")
def built(relu_t) -> list[dict]:
    """The relu reference, prebuilt on a "build node" (a CPU verifier, no GPU)."""
    node = TritonVerifier(device="cpu", workers=1)
    try:
        return node.prebuild(relu_t, relu_t.reference, Limits())
    finally:
        node.close()


def _launch(cache: Path) -> tuple[str, list[str]]:
    """The launch in a fresh interpreter over `cache`: the kernel's hash, and what the
    cache holds after it."""
    env = {**os.environ, "TRITON_CACHE_DIR": str(cache), "TRITON_INTERPRET": "0"}
    ref = str(ROOT / "tasks/triton/relu/ref.py")
    out = subprocess.run(
        [sys.executable, "-c", LAUNCH.format(root=str(ROOT), ref=ref)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    files = sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file())
    return out.stdout.strip(), files


def test_a_build_nodes_compile_is_the_jits_cache_hit(relu_t, built, tmp_path):
    """Seeded, the launch finds its kernel: nothing is compiled (no IR is written). In
    an empty cache the same launch compiles."""
    assert [a["cache"] for a in built] == ["triton"]
    files = built[0]["body"]["files"]
    assert built[0]["key"] == triton_seed_key(relu_t.task_id, relu_t.reference)
    # metadata and cubin only, for the timing sizes and the small ones
    assert {Path(f).suffix for f in files} == {".json", ".cubin"} and len(files) == 4
    seeded = tmp_path / "seeded"
    seeded.mkdir()
    assert tritondriver.seed_triton(seeded, files) == 4
    hit, after = _launch(seeded)
    assert not [f for f in after if f.endswith((".ttir", ".ttgir", ".ptx"))], after
    empty = tmp_path / "empty"
    empty.mkdir()
    miss, compiled = _launch(empty)
    assert miss == hit and any(f.endswith(".ttir") for f in compiled)
    # the group file names this cache's paths, not the build node's
    group = next(seeded.rglob("__grp__*.json"))
    assert all(
        p.startswith(str(seeded)) for p in json.loads(group.read_text())["child_paths"].values()
    )


def test_the_verifying_node_seeds_only_that_candidates_jobs(relu_t, built, tmp_path):
    """`seed` keeps the entry; a job of that candidate gets the files in its own cache,
    a job of another candidate gets none."""
    v = TritonVerifier(device="cpu", workers=1)
    assert v.seed(built) == {"seeded": 1, "refused": 0}
    try:
        for code, want in ((relu_t.reference, True), (relu_t.reference + "\n# other\n", False)):
            limits = Limits()
            ctx = Context(relu_t, code, limits, Sandbox(limits), tmp_path)
            try:
                v._job(ctx, ["load"], 300.0)
                cache = ctx.state["worker"].work / f".session-{ctx.state['session']}/triton"
                got = sorted(str(p.relative_to(cache)) for p in cache.rglob("*.cubin"))
                assert bool(got) is want, got
                assert ("triton_seeded_files" in ctx.metrics) is want
            finally:
                v.pool(limits).release(ctx.state.pop("worker"), dirty=False)
    finally:
        v.close()


def test_hostile_names_and_links_are_never_written(tmp_path):
    data = base64.b64encode(b"x").decode()
    key = "A" * 52
    bad = {
        "../../escape.json": data,
        "/abs/k.cubin": data,
        f"{key}/../k.json": data,
        f"{key}/__grp__k.json": data,  # a group file: made here, never taken
        f"{key}/k.so": data,  # not metadata or a cubin
        f".{key[1:]}/k.json": data,
        f"{key}/k.json": "not base64!",
    }
    assert tritondriver.seed_triton(tmp_path, bad) == 0
    assert not any(tmp_path.iterdir())
    # a key dir planted as a link (an earlier job of the same verification) is not followed
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / key).symlink_to(outside)
    good = {f"{key}/k.json": data, f"{key}/k.cubin": data}
    assert tritondriver.seed_triton(tmp_path / "cache", good) == 0
    assert not any(outside.iterdir())
    # the verifying node refuses an entry with a key not its own form, or no good name
    v = TritonVerifier(device="cpu", workers=1)
    arts = [
        {"cache": "triton", "key": "../x", "body": {"files": good}},
        {"cache": "triton", "key": "a" * 64, "body": {"files": bad}},
        {"cache": "triton", "key": "a" * 64, "body": "nothing"},
    ]
    assert v.seed(arts) == {"seeded": 0, "refused": 3}


def test_a_forward_that_reads_a_value_keeps_what_it_compiled(relu_t, tmp_path):
    """On meta tensors a forward that reads a value (`.item()`) stops there: the kernel
    launched before it is compiled, the stop is reported, and nothing is an error."""
    code = relu_t.reference.replace(
        "        return y\n",
        "        if y.sum().item() > 0:\n            return y\n        return y\n",
    )
    assert code != relu_t.reference
    node = TritonVerifier(device="cpu", workers=1)
    try:
        arts = node.prebuild(relu_t, code, Limits())
    finally:
        node.close()
    body = arts[0]["body"]
    assert [k["kernel"] for k in body["kernels"]] == ["relu_kernel", "relu_kernel"]
    assert len(body["files"]) == 4
    assert [s["stopped"] for s in body["stopped"]] == ["full", "small"]
    assert all("item" in s["why"] or "meta" in s["why"] for s in body["stopped"]), body


def test_the_seeds_kept_are_bounded_oldest_first(monkeypatch):
    from verifiers.kernels import verifier as kv

    monkeypatch.setattr(kv, "TRITON_SEEDS_BYTES", 3000)
    v = TritonVerifier(device="cpu", workers=1)
    blob = base64.b64encode(b"x" * 900).decode()  # 1200 bytes of base64
    keys = [f"{i:064x}" for i in range(3)]
    for k in keys:
        files = {f"{'K' * 52}/k.json": blob}
        assert v.seed([{"cache": "triton", "key": k, "body": {"files": files}}])["seeded"] == 1
    assert list(v._triton_seeds) == keys[1:]  # the first dropped: 3 x 1200 > 3000


def test_a_cache_of_too_many_files_is_read_and_seeded_only_so_far(tmp_path):
    """A candidate's forward on the build node can fill its cache with any number of
    files: what is read, kept and written stops at SEED_MAX_FILES."""
    from verifiers.kernels.verifier import _read_triton_cache

    cap = tritondriver.SEED_MAX_FILES
    for i in range(cap + 40):
        d = tmp_path / "cache" / f"{i:052d}"
        d.mkdir(parents=True)
        (d / "k.json").write_text("{}")
    files = _read_triton_cache(tmp_path / "cache")
    assert 0 < len(files) <= cap
    many = {f"{i:052d}/k.json": base64.b64encode(b"{}").decode() for i in range(cap + 1)}
    v = TritonVerifier(device="cpu", workers=1)
    assert v.seed([{"cache": "triton", "key": "b" * 64, "body": {"files": many}}]) == {
        "seeded": 0,
        "refused": 1,
    }
    (tmp_path / "job").mkdir()
    assert tritondriver.seed_triton(tmp_path / "job", many) == cap
