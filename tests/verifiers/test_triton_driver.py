"""What a GPU job's first Triton launch no longer pays in every child: Triton's driver
module, built once by the host and copied into each job's fresh cache
(`verifiers.kernels.tritondriver`: what a job gets is the host's, whatever an earlier
job did to its own copy; the build itself needs libcuda, shown by the H200 bench), and
Triton's own content hashes, computed once in the warm runner (`runner.prime_triton_keys`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from verifiers.kernels import runner, tritondriver
from verifiers.kernels.pool import libcuda_dir

ROOT = Path(__file__).resolve().parents[2]


def _built(root: Path) -> Path:
    d = root / "built"
    (d / "KEY").mkdir(parents=True)
    (d / "KEY" / "cuda_utils.so").write_bytes(b"the host's module")
    (d / ".built").write_text("digest")
    return d


def test_each_jobs_cache_gets_the_hosts_module_not_an_earlier_jobs_copy(tmp_path, monkeypatch):
    src = _built(tmp_path)
    monkeypatch.setenv(tritondriver.ENV, str(src))
    first = runner.job_env({"session": "a" * 32, "device": "cuda", "code": "x"}, tmp_path / "s1")
    mine = Path(first["TRITON_CACHE_DIR"]) / "KEY" / "cuda_utils.so"
    assert mine.read_bytes() == b"the host's module"
    assert not (Path(first["TRITON_CACHE_DIR"]) / ".built").exists()
    mine.write_bytes(b"planted by the candidate")  # its own copy: only its own cache
    again = runner.job_env({"session": "a" * 32, "device": "cuda", "code": "x"}, tmp_path / "s1")
    assert Path(again["TRITON_CACHE_DIR"], "KEY", "cuda_utils.so").read_bytes() == (
        b"planted by the candidate"  # the same verification's later job: left as it is
    )
    nxt = runner.job_env({"session": "b" * 32, "device": "cuda", "code": "x"}, tmp_path / "s2")
    assert Path(nxt["TRITON_CACHE_DIR"], "KEY", "cuda_utils.so").read_bytes() == (
        b"the host's module"
    )
    assert (src / "KEY" / "cuda_utils.so").read_bytes() == b"the host's module"


def test_a_cpu_job_and_a_runner_without_the_module_get_an_empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(tritondriver.ENV, str(_built(tmp_path)))
    cpu = runner.job_env({"session": "c" * 32, "device": "cpu", "code": "x"}, tmp_path / "s")
    assert not any(Path(cpu["TRITON_CACHE_DIR"]).iterdir())
    monkeypatch.setenv(tritondriver.ENV, str(tmp_path / "missing"))
    gpu = runner.job_env({"session": "d" * 32, "device": "cuda", "code": "x"}, tmp_path / "t")
    assert not any(Path(gpu["TRITON_CACHE_DIR"]).iterdir())


def test_without_libcuda_nothing_is_built_and_nothing_is_left(tmp_path):
    if libcuda_dir() is not None:  # a GPU node builds it: the bench shows that
        built = tritondriver.build(tmp_path)
        assert built is not None and list(built.rglob("cuda_utils*.so"))
        return
    assert tritondriver.build(tmp_path) is None
    assert not any((tmp_path / "triton-driver").iterdir())


FORKED_CHILD_HASHES = """
import os, sys
from triton.runtime.cache import triton_key
from verifiers.kernels.runner import prime_triton_keys
if sys.argv[1] == "primed":
    prime_triton_keys()
pid = os.fork()
if pid == 0:
    before = triton_key.cache_info().hits
    triton_key()
    os._exit(0 if triton_key.cache_info().hits == before + 1 else 3)
os._exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


@pytest.mark.parametrize(("parent", "child_hashes_again"), [("primed", False), ("plain", True)])
def test_a_job_child_inherits_tritons_own_hashes_from_the_primed_runner(parent, child_hashes_again):
    """`triton_key()` hashes libtriton (~460 MB) on a process's first compile: a runner
    primes it once, so no job's child hashes it again (the plain parent shows the check
    can fail: its child computes it itself)."""
    done = subprocess.run(
        [sys.executable, "-c", FORKED_CHILD_HASHES, parent],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == (3 if child_hashes_again else 0), done.stderr[-2000:]


def test_the_build_is_tried_once_per_process(tmp_path, monkeypatch):
    """Every runner start asks for the module (a dirty runner restarts after its job): a
    node where it cannot be built must not start an interpreter and gcc each time."""
    calls = []
    real = tritondriver.subprocess.run

    def counted(*a, **k):
        calls.append(a)
        return real(*a, **k)

    monkeypatch.setattr(tritondriver.subprocess, "run", counted)
    first = tritondriver.build(tmp_path / "once")
    assert tritondriver.build(tmp_path / "once") == first
    assert len(calls) <= 1
    assert calls or first is not None  # built now, or found built
