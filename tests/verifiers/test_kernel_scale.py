"""Kernel verification at benchmark scale, the parts a CPU can check: bounded comparison,
inputs the candidate changed, what the machine did vs what the candidate did, the speed
floor, private extension builds, and the fd channel GPU memory is handed over on.

The GPU side (exported memory mapped read-only, sandboxed runners, KernelBench's own
sizes) runs in bench/gpu_smoke.py and bench/bench_kernels.py on the device.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import socket
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from verifiers.catalog import load_task
from verifiers.contract import Limits, Status
from verifiers.kernels import compare as cmp
from verifiers.kernels import devshare, runner
from verifiers.kernels.errors import classify_python
from verifiers.kernels.nvcc import nvcc_crashed
from verifiers.kernels.verifier import (
    KernelVerifier,
    TritonVerifier,
    judge_speed,
    oom_was_the_card,
)
from verifiers.sandbox import MachineFault
from verifiers.taxonomy import CODES

ROOT = Path(__file__).resolve().parents[2]
CPU_GATES = ("parse", "anticheat", "compile", "launch", "correct")


# --- chunked comparison: the same verdicts, bounded working memory -------------------------
@pytest.fixture
def tiny_chunks(monkeypatch):
    monkeypatch.setattr(cmp, "CHUNK", 7)  # many chunks for a few hundred elements


def test_chunked_compare_names_the_worst_element_across_chunks(tiny_chunks):
    want = torch.linspace(-1, 1, 300).reshape(10, 30)
    got = want.clone()
    got[2, 3] += 0.01  # outside
    got[8, 29] += 0.5  # the worst, in a later chunk
    res = cmp.compare([got], [want], 1e-4, 1e-4)
    assert not res.ok and res.code == "numeric_mismatch"
    assert "2 of 300 elements" in res.summary and "worst at [8, 29]" in res.summary
    assert res.max_abs_err == pytest.approx(0.5, rel=1e-3)


def test_chunked_compare_reports_the_first_nan_and_counts_all(tiny_chunks):
    want = torch.ones(200)
    got = want.clone()
    got[150] = float("nan")
    got[40] = float("nan")
    got[10] += 1.0  # a plain mismatch too: NaN is the verdict
    res = cmp.compare([got], [want], 1e-4, 1e-4)
    assert res.code == "nan_output"
    assert "2 NaN element(s) (first at [40]" in res.summary


def test_chunked_compare_passes_within_tolerance(tiny_chunks):
    want = torch.rand(13, 17)
    res = cmp.compare([want + 5e-5], [want], 1e-4, 1e-4)
    assert res.ok and res.max_abs_err <= 6e-5


def test_per_dtype_tolerance_is_applied_per_output():
    a32 = torch.ones(8)
    a16 = torch.ones(8, dtype=torch.float16)
    tol = {torch.float32: (1e-4, 1e-4), torch.float16: (1e-2, 1e-2)}
    # 5e-3 off: inside fp16's row, outside fp32's
    res = cmp.compare([a32, a16 + 5e-3], [a32, a16], tol=lambda d: tol[d])
    assert res.ok
    res = cmp.compare([a32 + 5e-3, a16], [a32, a16], tol=lambda d: tol[d])
    assert not res.ok and res.summary.startswith("output 0")


def test_same_bits_sees_one_flipped_element_and_nan(tiny_chunks):
    x = torch.rand(100)
    y = x.clone()
    assert cmp.same_bits(y, x)
    y[77] = 0.0
    assert not cmp.same_bits(y, x)
    n = torch.full((9,), float("nan"))
    assert cmp.same_bits(n.clone(), n)  # NaN equals itself bitwise
    assert not cmp.same_bits(x.double(), x)


# --- inputs changed by forward: wrong_answer / inputs_mutated (CPU path, interpreter) ------
IN_PLACE = """
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(x_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, n, BLOCK=1024)
        return x  # the right values, in the input's own memory
"""


@pytest.fixture(scope="module")
def triton_v():
    v = TritonVerifier(device="cpu", workers=1)
    yield v
    v.close()


def test_a_kernel_that_writes_into_its_input_is_inputs_mutated(triton_v):
    task = load_task(ROOT / "tasks/triton/relu")
    vd = triton_v.verify(task, IN_PLACE, Limits(gates=CPU_GATES))
    assert vd.status is Status.WRONG_ANSWER and vd.code == "inputs_mutated", vd.feedback
    assert "input 0" in vd.feedback
    # the reference itself leaves its inputs alone and passes the same gates
    ok = triton_v.verify(task, task.reference, Limits(gates=CPU_GATES))
    assert ok.status is Status.PASS, ok.feedback


# --- the host's own draws: torch's random generators are the process's ---------------------
def _drawer(mine: threading.Event, other: threading.Event) -> SimpleNamespace:
    """A problem whose inputs are drawn in two steps, with a second drawer let in between
    when one can get in (it waits up to 0.5 s for it)."""

    def get_inputs():
        xs = [torch.randn(64)]
        mine.set()
        other.wait(0.5)
        time.sleep(0.05)
        xs.append(torch.randn(64))
        return xs

    return SimpleNamespace(get_inputs=get_inputs)


def test_verifiers_of_two_domains_in_one_process_draw_one_at_a_time():
    """Measured on the H100 node (bench_kernels --mixed): a CUDA and a Triton verifier in
    one process, each under a lock of its own, reseeded torch between each other's draws,
    and 7 of 43 candidates came out `inputs_mutated`, a correct (`slow`) one among them.
    Every kernel verifier's draws hold the process's one lock (`TORCH_RNG`)."""
    from verifiers.kernels.verifier import CudaVerifier

    done = threading.Event()
    done.set()
    clean = [runner.make_inputs(_drawer(threading.Event(), done), s, "cpu") for s in (1, 2)]
    cuda, triton = CudaVerifier(device="cpu", workers=1), TritonVerifier(device="cpu", workers=1)
    try:
        a, b = threading.Event(), threading.Event()
        with concurrent.futures.ThreadPoolExecutor(2) as ex:
            fa = ex.submit(cuda._inputs, _drawer(a, b), 1, "cpu")
            fb = ex.submit(triton._inputs, _drawer(b, a), 2, "cpu")
            got = [fa.result(10), fb.result(10)]
        for want, drawn in zip(clean, got, strict=True):
            assert all(cmp.same_bits(x, y) for x, y in zip(want, drawn, strict=True))
    finally:
        cuda.close()
        triton.close()


def test_inputs_mutated_stands_only_once_the_hosts_own_draw_is_the_seeds(triton_v):
    """Something else in the process (a caller's own torch code beside the reward
    service) that draws between the host's seeding and its draw leaves the host inputs
    that are not the seed's; the job's, drawn in a process of its own, then differ from
    them, and the candidate would be `inputs_mutated` for the machine's doing."""
    task = load_task(ROOT / "tasks/triton/relu")
    ctx = SimpleNamespace(task=task)
    problem, _ = triton_v._reference(task, True)
    trial = {"small": True, "seed": 5}
    seeds = triton_v._inputs(problem, 5, "cpu")
    fail = triton_v._mutated(ctx, trial, seeds, "trial 1/7", 0, seeds[0])
    assert fail.code == "inputs_mutated"  # the host's draw is the seed's: the candidate's
    disturbed = triton_v._inputs(problem, 6, "cpu")  # not seed 5's values
    with pytest.raises(MachineFault) as e:
        triton_v._mutated(ctx, trial, disturbed, "trial 1/7", 0, disturbed[0])
    assert e.value.code == "draw_disturbed" and "draw_disturbed" in CODES


def test_a_reference_built_twice_differently_is_the_machines(monkeypatch):
    """The reference's weights (seed 42, once a task) are built twice and must agree."""
    task = load_task(ROOT / "tasks/triton/linear_gelu_fp16")
    calls = []
    real = runner.build_reference

    def disturbed(problem, seed, device):
        model = real(problem, seed, device)
        calls.append(1)
        if len(calls) == 2:  # a draw elsewhere moved the generator under the second build
            with torch.no_grad():
                next(model.parameters()).add_(1.0)
        return model

    monkeypatch.setattr(runner, "build_reference", disturbed)
    v = TritonVerifier(device="cpu", workers=1)
    try:
        with pytest.raises(MachineFault) as e:
            v._reference(task, True)
        assert e.value.code == "draw_disturbed"
        monkeypatch.setattr(runner, "build_reference", real)  # two builds that agree
        _problem, model = v._reference(task, True)
        assert v._reference(task, True)[1] is model  # kept
    finally:
        v.close()


# --- speed: a time under the card's floor is rejected; no bar, never slow ------------------
def test_a_time_under_the_bandwidth_floor_is_rejected_not_a_pass():
    s = judge_speed(0.01, 5.0, 0.8, floor_ms=2.67)  # 6.4 GB ReLU "in" 10 us
    assert s.impossible and s.implausible and not s.slow
    assert "implausible speedup" in s.note
    honest = judge_speed(3.0, 3.1, 0.8, floor_ms=2.67)
    assert not honest.impossible and not honest.slow


def test_without_a_speed_bar_nothing_is_slow():
    assert not judge_speed(10.0, 1.0, None).slow
    assert not judge_speed(10.0, 1.0, 0).slow
    assert judge_speed(10.0, 1.0, 0.8).slow


def test_new_codes_are_in_the_taxonomy():
    for code in ("inputs_mutated", "implausible_speedup", "side_stream", "gpu_memory"):
        assert code in CODES


# --- the machine's faults vs the candidate's ----------------------------------------------
CARD_FULL = (
    "CUDA out of memory. Tried to allocate 6.00 GiB. GPU 0 has a total capacity of "
    "139.81 GiB of which 1.50 GiB is free. Including non-PyTorch memory, this process has "
    "2.00 GiB memory in use."
)
OWN_CAP = (
    "CUDA out of memory. Tried to allocate 64.00 GiB. GPU 0 has a total capacity of "
    "139.81 GiB of which 120.00 GiB is free. Including non-PyTorch memory, this process "
    "has 10.00 GiB memory in use. 12.00 GiB allowed;"
)


def test_a_full_card_is_the_machine_and_an_own_cap_is_the_candidate():
    assert oom_was_the_card(CARD_FULL)
    assert not oom_was_the_card(OWN_CAP)
    assert not oom_was_the_card("something else entirely")


class _Ctx:
    def __init__(self, memory_mb: int = 2048):
        self.limits = Limits(memory_mb=memory_mb)
        self.state: dict = {}


def _killed(rss_kb: int) -> dict:
    err = {"type": "CandidateDied", "types": [], "message": "killed by SIGKILL", "traceback": ""}
    return {
        "ok": False,
        "step": "load",
        "error": err,
        "died": {"signal": "SIGKILL", "peak_rss_kb": rss_kb},
    }


def test_the_oom_killer_on_a_runner_within_budget_is_infra(monkeypatch):
    import verifiers.kernels.verifier as kv

    monkeypatch.setattr(kv, "oom_kills", lambda: 8)
    v = object.__new__(KernelVerifier)
    with pytest.raises(MachineFault) as e:
        v._machine_or_candidate(_Ctx(), _killed(300 * 1024), oom_before=7)
    assert e.value.code == "killed_externally" and "300 MB" in e.value.detail
    # past its own budget: the candidate's memory, with the evidence
    res = _killed(5000 * 1024)
    v._machine_or_candidate(_Ctx(), res, oom_before=7)
    assert res["error"]["type"] == "MemoryError" and "5000 MB" in res["error"]["message"]
    # no OOM kill seen: a SIGKILL stays the candidate's
    monkeypatch.setattr(kv, "oom_kills", lambda: 7)
    res = _killed(300 * 1024)
    v._machine_or_candidate(_Ctx(), res, oom_before=7)
    assert res["error"]["type"] == "CandidateDied"


def test_a_full_card_during_a_job_is_infra():
    v = object.__new__(KernelVerifier)
    err = {"type": "OutOfMemoryError", "types": [], "message": CARD_FULL, "traceback": ""}
    with pytest.raises(MachineFault) as e:
        v._machine_or_candidate(_Ctx(), {"ok": False, "step": "outputs", "error": err}, None)
    assert e.value.code == "gpu_memory"
    err = {"type": "OutOfMemoryError", "types": [], "message": OWN_CAP, "traceback": ""}
    res = {"ok": False, "step": "outputs", "error": err}
    v._machine_or_candidate(_Ctx(), res, None)  # its own cap: no fault raised, kept as is
    assert res["error"]["type"] == "OutOfMemoryError"
    assert classify_python("outputs", res["error"]) == (Status.RESOURCE_LIMIT, "memory_limit")


def test_nvcc_dying_is_the_tools_crash_not_a_compile_error():
    assert nvcc_crashed(255, "nvcc: Segmentation fault\n")
    assert nvcc_crashed(-11, "")
    assert not nvcc_crashed(1, 'k.cu(3): error: identifier "x" is undefined\n')
    assert not nvcc_crashed(0, "")


# --- every candidate builds in its own dir ------------------------------------------------
SAME_NAME = 'mod = load_inline(name="fast_op", cpp_sources=CPP, cuda_sources={src!r})\n'


def test_same_extension_name_different_code_gets_different_build_dirs(tmp_path):
    session = tmp_path / ".session-abc"
    a = runner.job_env({"code": SAME_NAME.format(src="A")}, session)
    b = runner.job_env({"code": SAME_NAME.format(src="B")}, session)
    again = runner.job_env({"code": SAME_NAME.format(src="A")}, session)
    assert a["TORCH_EXTENSIONS_DIR"] != b["TORCH_EXTENSIONS_DIR"]
    assert a == again  # the same code, the same build (a verification's jobs share it)
    assert Path(a["TORCH_EXTENSIONS_DIR"]).is_dir() and Path(b["TORCH_EXTENSIONS_DIR"]).is_dir()
    assert runner.job_env({"code": "x"}, None) == {}


def test_a_gpu_jobs_context_gets_the_hardware_queues_its_verifier_names(tmp_path):
    """KernelSettings.gpu_connections reaches a GPU job's environment, where the child
    makes its context (`run_forked`: the job's env, then `gpu_init`); a CPU job, and a
    verifier set to null, leave the driver's default; out of CUDA's range is refused; one
    queue is the default (verifier 14)."""
    from verifiers.kernels.domain import KernelSettings
    from verifiers.settings import SettingsError

    var = "CUDA_DEVICE_MAX_CONNECTIONS"
    gpu = {"code": "x", "device": "cuda", "gpu_connections": 1}
    assert runner.job_env(gpu, tmp_path / ".session-a")[var] == "1"
    assert runner.job_env(gpu, None) == {var: "1"}
    assert var not in runner.job_env({**gpu, "device": "cpu"}, tmp_path / ".session-b")
    assert var not in runner.job_env({"code": "x", "device": "cuda"}, tmp_path / ".session-c")
    for bad in (0, 33):
        with pytest.raises(SettingsError, match="gpu_connections must be 1 to 32"):
            KernelSettings(gpu_connections=bad)
    assert KernelSettings().gpu_connections == 1
    assert KernelSettings.from_dict({"gpu_connections": None}).gpu_connections is None
    assert TritonVerifier(device="cpu", workers=1).gpu_connections == 1
    assert TritonVerifier(device="cpu", workers=1, gpu_connections=2).gpu_connections == 2


class _Recorded:
    """A pool and its runner that keep the jobs they are given (the verifier's side only)."""

    def __init__(self):
        self.jobs: list[dict] = []
        self.gpu = SimpleNamespace(attach=lambda worker: contextlib.nullcontext())

    def lease(self):
        return self

    def run(self, job, timeout_s, **kw):
        self.jobs.append(job)
        return {"ok": True, "seconds": {}}


@pytest.mark.parametrize(
    ("device", "settings", "aot", "queues"),
    [
        ("cuda", {}, False, 1),  # the default (verifier 14)
        ("cuda", {"gpu_connections": 4}, False, 4),
        ("cuda", {"gpu_connections": None}, False, None),  # the driver's own
        ("cuda", {}, True, None),  # an AOT build job makes no context
        ("cpu", {}, False, None),
    ],
)
def test_the_verifier_names_a_gpu_jobs_queues_in_the_job_and_its_metrics(
    tmp_path, device, settings, aot, queues
):
    """The verifier's half of the setting (`_job`), on CPU: the job a GPU runner gets
    carries `gpu_connections` (which `runner.job_env`, above, makes the child's
    environment), and the verdict's metrics record it; an AOT job, a CPU job and `null`
    carry none."""
    from verifiers.base import Context
    from verifiers.sandbox import Sandbox

    v = TritonVerifier(device=device, workers=1, **settings)
    rec = _Recorded()
    v.pool = lambda limits, aot=False: rec  # type: ignore[method-assign]
    task = load_task(ROOT / "tasks/triton/relu")
    ctx = Context(task, "x", Limits(), Sandbox(Limits()), tmp_path)
    v._job(ctx, ["load"], 10.0, aot=aot)
    (job,) = rec.jobs
    assert job.get("gpu_connections") == queues
    assert ctx.metrics.get("gpu_connections") == queues


# --- the fd channel: headers, fds, and what a hostile sender can do ----------------------
def test_fds_cross_the_socket_with_their_header():
    a, b = devshare.socket_pair()
    r, w = os.pipe()
    try:
        devshare.send_fds(a, {"nonce": "n1", "trial": 0}, [w])
        header, fds = devshare.recv_fds(b)
        assert header == {"nonce": "n1", "trial": 0} and len(fds) == 1
        os.write(fds[0], b"ok")  # the received fd is the pipe's write end
        assert os.read(r, 2) == b"ok"
        devshare.close_fds(fds)
    finally:
        for fd in (r, w):
            os.close(fd)
        a.close()
        b.close()


def test_garbage_on_the_socket_is_a_header_error_and_its_fds_come_back():
    a, b = devshare.socket_pair()
    r, w = os.pipe()
    try:
        a.sendmsg(
            [b"\x05\x00\x00\x00nope!"],
            [
                (
                    socket.SOL_SOCKET,
                    socket.SCM_RIGHTS,
                    bytes(memoryview(__import__("array").array("i", [r]))),
                )
            ],
        )
        header, fds = devshare.recv_fds(b)
        assert "error" in header and len(fds) == 1  # returned so the caller closes them
        devshare.close_fds(fds)
        a.close()
        assert devshare.recv_fds(b) == (None, [])  # the sender went away
    finally:
        for fd in (r, w):
            os.close(fd)
        b.close()


def test_message_limits():
    a, b = devshare.socket_pair()
    with pytest.raises(ValueError):
        devshare.send_fds(a, {"x": "y" * devshare.MAX_MESSAGE}, [])
    a.close()
    b.close()


# --- an extension's launch whose configuration the source spells out --------------------
def test_an_over_limit_extension_launch_is_launch_exceeds_limit_on_any_node():
    """The verdict comes after a real nvcc build of the extension's CUDA file (the compile
    gate runs first); the fixture asks load_inline for no implicit headers, so that file
    is the kernel and its launcher alone."""
    from verifiers.kernels.nvcc import find_nvcc
    from verifiers.kernels.verifier import CudaVerifier

    if find_nvcc() is None:
        pytest.skip("nvcc is not installed")
    # the launch in a plain launcher of the CUDA file, which holds no torch header
    code = (ROOT / "tests/verifiers/kernel_fixtures/relu_extension_launcher.py").read_text()
    assert "block = 256" in code
    task = load_task(ROOT / "tasks/cuda/relu")
    v = CudaVerifier(device="cpu", workers=1)
    try:
        bad = v.verify(task, code.replace("block = 256", "block = 2048"), Limits(gates=CPU_GATES))
        assert bad.status is Status.RUNTIME_ERROR and bad.code == "launch_exceeds_limit"
        assert "2048" in bad.feedback and "1024" in bad.feedback
        assert [c.name for c in bad.checks if c.ok][-1] == "compile"  # it built, then this
        # (a fixture at 256 threads passes compile and launch:
        # test_kernels.py::test_extension_path_compiles_against_torch_headers)
    finally:
        v.close()


def test_a_build_toolchain_the_sandbox_cannot_run_is_infra():
    msg = (
        "Error building extension 'x': [1/3] c++ -MMD main.cpp -o main.o\n"
        "FAILED: [code=127] main.o\n/bin/sh: 1: c++: Permission denied\n"
    )
    v = object.__new__(KernelVerifier)
    err = {"type": "RuntimeError", "types": [], "message": msg, "traceback": ""}
    with pytest.raises(MachineFault) as e:
        v._machine_or_candidate(_Ctx(), {"ok": False, "step": "load", "error": err}, None)
    assert e.value.code == "tool_missing"
    # the candidate's own C++ error stays its compile error
    err["message"] = "Error building extension 'x': main.cpp:3: error: expected ';'\nFAILED: main.o"
    v._machine_or_candidate(_Ctx(), {"ok": False, "step": "load", "error": err}, None)
    assert classify_python("load", err)[0] is Status.COMPILE_ERROR


def test_build_tools_are_ones_any_uid_may_run(monkeypatch):
    import shutil
    import tempfile

    from verifiers.kernels.pool import build_tool

    base = Path(tempfile.mkdtemp())  # under the temp dir (pytest's own is 0700)
    try:
        base.chmod(0o755)
        private, public = base / "private", base / "public"
        for d, mode in ((private, 0o700), (public, 0o755)):
            d.mkdir()
            (d / "c++").write_text("#!/bin/sh\n")
            (d / "c++").chmod(0o755)
            d.chmod(mode)
        # a dir only root may enter, or one outside what the sandbox binds, is never
        # taken: the system's compiler (/usr/bin, bound) is, if there is one
        monkeypatch.setenv("PATH", f"{private}:{public}")
        got = build_tool(("c++",))
        assert got is None or got.startswith("/usr/")
        monkeypatch.setattr("verifiers.kernels.pool._world_executable", lambda p: True)
        assert build_tool(("no-such-compiler",)) is None
    finally:
        shutil.rmtree(base, ignore_errors=True)
