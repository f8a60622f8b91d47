"""Triton's driver module built once by the host and copied into each job's fresh cache
(`verifiers.kernels.tritondriver`): what a job gets is the host's, whatever an earlier
job did to its own copy. The build itself needs libcuda (a GPU node: the H200 bench)."""

from __future__ import annotations

from pathlib import Path

from verifiers.kernels import runner, tritondriver
from verifiers.kernels.pool import libcuda_dir


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
