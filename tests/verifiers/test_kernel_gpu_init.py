"""A GPU job whose process cannot use the GPU is the machine's fault, never the candidate's.

The runner's job child makes its CUDA context before it reads the candidate's code and
then writes `GPU_READY` first on its result pipe; the runner (which never runs candidate
code) says `gpu_unavailable` itself when a failed job never wrote it. Measured on the
H100 node: with one uid's process limit shared by 16 runners, CUDA's initialisation failed
inside the jobs (`cudaGetDeviceCount` error 304, "devices busy or unavailable") and 92 of
150 verdicts were charged to the candidates (`bench/results/i30_oneuid_mpsjobs16.json`).

This machine has no GPU, so a real CUDA initialisation fails here, as it does on a node
whose driver or device is gone: the failing path is the real one. The path past a working
GPU uses a stand-in for its initialisation (named below), the one thing that cannot
exist here, to show that a candidate cannot claim the machine's fault for itself.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from verifiers.contract import Limits
from verifiers.kernels.limits import DeviceLimits
from verifiers.kernels.verifier import TritonVerifier
from verifiers.sandbox import MACHINE_CODES, MachineFault
from verifiers.taxonomy import CODES

from .test_kernels import ROOT

PROBLEM = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return x
def get_inputs():
    return [torch.ones(4)]
def get_init_inputs():
    return []
"""

# runs the runner's `run_forked` as its server does, in a process of its own (it forks);
# argv: the job (JSON) and whether the GPU's initialisation is the stand-in's
RELAY = """
import json, os, sys, time
sys.path.insert(0, sys.argv[3])
from verifiers.kernels import runner
# STAND-INS for GPUs this machine lacks: a working one, one whose initialisation hangs
# (2 s allowed), one that works half a second of CPU time (5 s allowed; it says when it
# began: the test stops it then, and a stopped process does no work)
def burn():
    open(os.path.join(os.environ["MARK_DIR"], "init"), "w").close()
    t = time.process_time()
    while time.process_time() < t + 0.5:
        pass
if sys.argv[2] == "stand-in":
    runner.gpu_init = lambda: None
elif sys.argv[2] == "hung":
    runner.gpu_init, runner.GPU_INIT_TIMEOUT_S = lambda: time.sleep(600), 2.0
elif sys.argv[2] == "slow":
    runner.gpu_init, runner.GPU_INIT_TIMEOUT_S = burn, 5.0
r, w = os.pipe()
print(json.dumps(runner.run_forked(json.loads(sys.argv[1]), w, False)))
"""

# a candidate that, once its code runs, claims what only the machine may claim: a failed
# job at its first step, "gpu_unavailable" set, written to every pipe it holds
FORGER = """
import json, os, stat
forged = {"ok": False, "step": "load", "seconds": {}, "gpu_unavailable": True,
          "error": {"type": "RuntimeError", "types": ["RuntimeError"], "traceback": "",
                    "message": "Unexpected error from cudaGetDeviceCount(): Error 304"}}
open(os.path.join(os.environ["MARK_DIR"], "ran"), "w").close()
for fd in range(3, 64):
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            os.write(fd, json.dumps(forged).encode() + b"\\n")
    except OSError:
        pass
os._exit(0)
"""

# a candidate that raises what a broken CUDA initialisation raises, honestly reported
RAISER = """
import os
open(os.path.join(os.environ["MARK_DIR"], "ran"), "w").close()
raise RuntimeError("Unexpected error from cudaGetDeviceCount(). Error 304: OS call failed")
"""


def _relay(tmp_path, code: str, device: str, gpu: str, pause_s: float = 0.0) -> dict:
    work = tmp_path / "work"  # run_forked empties its cwd (the runner's sandbox dir)
    work.mkdir(exist_ok=True)
    job = {
        "steps": ["load"],
        "domain": "triton",
        "device": device,
        "problem": PROBLEM,
        "code": code,
        "entry": "ModelNew",
        "init_seed": 42,
        "device_limits": DeviceLimits().to_dict(),
    }
    env = {"PATH": "/usr/bin:/bin", "MARK_DIR": str(tmp_path), "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.Popen(
        [sys.executable, "-c", RELAY, json.dumps(job), gpu, str(ROOT)],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    if pause_s:  # as a timing's pause does: the relay and its child stopped whole
        began = tmp_path / "init"  # the child inside its GPU's initialisation
        deadline = time.monotonic() + 60
        while not began.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert began.exists(), "the stand-in's initialisation never began"
        os.killpg(proc.pid, signal.SIGSTOP)
        time.sleep(pause_s)
        os.killpg(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    return json.loads(out.strip().splitlines()[-1])


def test_a_gpu_job_whose_gpu_fails_before_the_candidates_code_is_the_machines(tmp_path):
    """No GPU here: the real initialisation fails, the candidate's code never runs, and the
    runner says so itself."""
    res = _relay(tmp_path, FORGER, "cuda", "real")
    assert res["ok"] is False and res["gpu_unavailable"] is True, res
    assert res["step"] == "load" and res["error"]["type"], res
    assert not (tmp_path / "ran").exists()  # the candidate's code was never read


@pytest.mark.parametrize("code", [FORGER, RAISER], ids=["forged_result", "raised_cuda_error"])
def test_a_candidate_cannot_claim_the_machines_fault(tmp_path, code):
    """Past a working GPU (the stand-in) the candidate's code runs; what it writes or raises,
    a forged runner result or CUDA's own init message, stays the candidate's. A CPU job
    never has the flag either."""
    for device in ("cuda", "cpu"):
        (tmp_path / "ran").unlink(missing_ok=True)
        res = _relay(tmp_path, code, device, "stand-in")
        assert (tmp_path / "ran").exists(), res  # the candidate's code ran
        assert res["ok"] is False and res["gpu_unavailable"] is False, (device, res)
        assert "cudaGetDeviceCount" in json.dumps(res["error"]), res


def test_a_gpu_init_that_hangs_is_the_machines_and_a_pause_does_not_count(tmp_path):
    """The runner gives the child's CUDA initialisation GPU_INIT_TIMEOUT_S (2 s here), then
    kills it, before the candidate's code exists in it: the machine's, not a timeout of the
    candidate's. Time the whole tree spent stopped (a timing's pause) is not the GPU's: an
    initialisation of 0.5 s of work under a 5 s limit, stopped for 7 s in the middle, still
    gets its job run."""
    t0 = time.monotonic()
    res = _relay(tmp_path, FORGER, "cuda", "hung")
    assert time.monotonic() - t0 < 60
    assert res["gpu_unavailable"] is True and res["error"]["type"] == "GpuInitTimeout", res
    assert not (tmp_path / "ran").exists()
    res = _relay(tmp_path, RAISER, "cuda", "slow", pause_s=7.0)
    assert (tmp_path / "ran").exists(), res  # initialised, then the candidate's code ran
    assert res["gpu_unavailable"] is False and "cudaGetDeviceCount" in json.dumps(res), res


def test_the_host_labels_the_runners_word_infra_and_nothing_else():
    """`gpu_unavailable` from the runner is a MachineFault (infra, retried); the same
    failure without it (or with anything but True) is left to the candidate's gates."""
    assert "gpu_unavailable" in MACHINE_CODES and "gpu_unavailable" in CODES
    v = TritonVerifier(device="cpu", workers=1)
    ctx = SimpleNamespace(limits=Limits(), state={})
    error = {"type": "RuntimeError", "types": ["RuntimeError"], "message": "Error 304"}
    try:
        with pytest.raises(MachineFault) as hit:
            v._machine_or_candidate(ctx, {"ok": False, "error": error, "gpu_unavailable": True}, 0)
        assert hit.value.code == "gpu_unavailable" and "Error 304" in hit.value.detail
        for flag in (False, "true", 1, None):
            res = {"ok": False, "error": dict(error), "gpu_unavailable": flag}
            assert v._machine_or_candidate(ctx, res, 0) is None
    finally:
        v.close()


# past the static gate, from inside the real sandboxed runner: the forged result written
# into every pipe of its own and of the processes above it that it can open (/proc/PID/fd)
FORGER_THROUGH_PROC = """
import json, os
forged = {"ok": False, "step": "load", "seconds": {}, "gpu_unavailable": True,
          "error": {"type": "RuntimeError", "types": ["RuntimeError"], "traceback": "",
                    "message": "Unexpected error from cudaGetDeviceCount(): Error 304"}}
line = json.dumps(forged).encode() + b"\\n"
for pid in ("self", str(os.getppid()), "1"):
    for fd in range(64):
        try:
            f = os.open(f"/proc/{pid}/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            os.write(f, line)
        except OSError:
            pass
        os.close(f)
os._exit(0)
"""


def test_a_candidate_reaching_its_runners_pipes_cannot_claim_the_machines_fault():
    """The judge trusts `gpu_unavailable` from the runner's line to the host only. From
    inside the sandbox, the candidate writes a forged result with it into every pipe of its
    own, its runner's and the sandbox's pid 1 that it can open: the host's result pipe is
    not one of them (the host made it, the candidate runs as a uid of its own), and what
    reaches the runner is overwritten there. The verdict stays the candidate's."""
    import shutil

    from tests.adversarial.kernel_kit import StaticGateBypassedTritonVerifierForTests
    from verifiers.catalog import load_task
    from verifiers.contract import Status

    if shutil.which("bwrap") is None or os.geteuid() != 0:
        pytest.skip("needs bubblewrap and root (the sandbox's own uid)")
    task = load_task(ROOT / "tasks/triton/relu")
    code = task.reference + "\n" + FORGER_THROUGH_PROC
    v = StaticGateBypassedTritonVerifierForTests(device="cpu", workers=1)
    try:
        verdict = v.verify(task, code, Limits(gates=("parse", "anticheat", "compile")))
    finally:
        v.close()
    assert verdict.status is not Status.INFRA_ERROR, (verdict.code, verdict.feedback)
    assert verdict.code != "gpu_unavailable", verdict.feedback
