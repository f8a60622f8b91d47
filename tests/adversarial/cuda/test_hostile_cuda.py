"""Hostile CUDA candidates on the CPU gates (nvcc compile-only for sm_90, the launch dry run).

Each case names its mechanism (issue 11). Without a GPU nothing runs the kernels, so a CUDA
candidate "passes" the CPU gates when its Python loads and its launches dry-run: the probes
raise unless the hole they look for is open, and a pass means the hole is there. The
`static` cases meet the real verifier; the `runtime` cases meet a test-only subclass with the
static anti-cheat switched off, so that the runner and the host's cache must hold alone.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import textwrap

import pytest

from tests.adversarial.harness import CANDIDATE_FAULT, REFUSED, assert_innocent_passes
from tests.adversarial.kernel_kit import (
    ROOT,
    StaticGateBypassedCudaVerifierForTests,
    fill,
    module_fixtures,
)
from tests.verifiers.test_kernels import CUDA_RELU
from verifiers.contract import Limits, Status
from verifiers.kernels.nvcc import find_nvcc, nvcc_version
from verifiers.kernels.verifier import CudaVerifier

GATES = ("parse", "anticheat", "compile", "launch")
BROKEN = CUDA_RELU.replace("y[i] = v > 0.0f ? v : 0.0f;", "y[i] = v > 0.0f ? v : 0.0f")
RAISES = CUDA_RELU.replace("        super().__init__()\n", "        raise ValueError('no')\n")

pytestmark = pytest.mark.skipif(find_nvcc() is None, reason="nvcc is not installed")

# `hole()` runs in __init__ (the load step, and the dry run): it raises unless the hole it
# probes is open, so a pass of the CPU gates means the hole is there
PROBE = '''
import torch
{IMPORTS}

CUDA_SRC = r"""
extern "C" __global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y,
                                       long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}
"""

{PROBE}

class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        if not hole():
            raise ValueError("the hole is closed")
        self.k = cuda_kernel("relu_kernel")

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        self.k(grid=((n + 255) // 256,), block=(256,), args=(x, y, n))
        return y
'''


def probe(body: str, imports: str = "") -> str:
    return PROBE.replace("{IMPORTS}", imports).replace("{PROBE}", textwrap.dedent(body))


def in_init(stmt: str) -> str:
    return CUDA_RELU.replace(
        "        super().__init__()\n", "        super().__init__()\n        " + stmt + "\n"
    )


# --- static -------------------------------------------------------------------------------
SYS_MODULES_VIA_TORCH = """
def hole():
    for name, mod in list(torch.sys.modules.items()):
        if name.startswith("crucible_problem") and getattr(mod, "Model", None) is not None:
            return True
    return False
"""

OPEN_VIA_BUILTINS = """
def hole():
    b = getattr(torch, "__builtins__")
    return "torch.relu" in b["open"]("{ROOT}/tasks/cuda/relu/problem.py").read()
"""

NUMPY_CTYPES = """
def hole():
    return np.ctypeslib.ctypes.CDLL(None).getpid() > 0
"""

TORCH_OS = """
def hole():
    return torch.os.path.exists("{ROOT}/tasks/cuda/relu/problem.py")
"""

NUMPY_FILE_READ = """
def hole():
    return np.fromfile("{ROOT}/tasks/cuda/relu/problem.py", dtype=np.uint8).size > 0
"""

STATIC = [
    pytest.param(probe(SYS_MODULES_VIA_TORCH), REFUSED, id="reference_reachable-torch_sys_modules"),
    pytest.param(probe(OPEN_VIA_BUILTINS), REFUSED, id="denylist_gap-getattr_dunder_builtins"),
    pytest.param(
        probe(NUMPY_CTYPES, "import numpy as np"), REFUSED, id="denylist_gap-numpy_ctypeslib"
    ),
    pytest.param(probe(TORCH_OS), REFUSED, id="denylist_gap-torch_os_attribute"),
    pytest.param(
        probe(NUMPY_FILE_READ, "import numpy as np"), REFUSED, id="host_paths-numpy_fromfile"
    ),
    pytest.param(
        in_init("raise OSError(28, 'No space left on device')"),
        CANDIDATE_FAULT,
        id="judge_reads_candidate_text-oserror_no_space",
    ),
    pytest.param(
        in_init("raise PermissionError('bwrap: creating new namespace failed')"),
        CANDIDATE_FAULT,
        id="judge_reads_candidate_text-permission_error_bwrap",
    ),
    pytest.param(
        in_init("raise FileNotFoundError('/usr/local/cuda/bin/nvcc: not found')"),
        CANDIDATE_FAULT,
        id="judge_reads_candidate_text-tool_missing_text",
    ),
    pytest.param(
        in_init("raise RuntimeError('CUDA error: out of memory')"),
        CANDIDATE_FAULT,
        id="judge_reads_candidate_text-cuda_oom_text",
    ),
    pytest.param(
        CUDA_RELU.replace(
            "class ModelNew",
            'print(\'{"ready": true}\')\nprint(\'{"ok": true, "seconds": {}}\')\n'
            "raise ValueError('after the fake result')\n\nclass ModelNew",
        ),
        CANDIDATE_FAULT,
        id="judge_reads_candidate_text-fake_result_json",
    ),
]

# --- runtime (static gate off) --------------------------------------------------------------
REF_VIA_SYS_MODULES = """
import sys

def hole():
    for mod in list(sys.modules.values()):
        ref = getattr(mod, "Model", None)
        if isinstance(ref, type) and "forward" in ref.__dict__:
            return True
    return False
"""

REF_VIA_GC = """
import gc

def hole():
    for o in gc.get_objects():
        if isinstance(o, type) and o.__name__ == "Model" and "forward" in o.__dict__:
            return True
        if isinstance(o, str) and "torch.re" + "lu(x)" in o:
            return True
    return False
"""

REF_VIA_FRAMES = """
import sys

def hole():
    f = sys._getframe()
    while f is not None:
        for v in [*f.f_locals.values(), *f.f_globals.values()]:
            ref = getattr(v, "Model", None)
            if isinstance(ref, type) and "forward" in ref.__dict__:
                return True
            if isinstance(v, dict) and "torch.re" + "lu(x)" in str(v.get("problem", "")):
                return True
        f = f.f_back
    return False
"""

READ_TASKS = """
def hole():
    try:
        return "torch.relu" in open("{ROOT}/tasks/cuda/relu/problem.py").read()
    except OSError:
        return False
"""

READ_GIT = """
def hole():
    try:
        return len(open("{ROOT}/.git/HEAD").read()) > 0
    except OSError:
        return False
"""

CTYPES_LIBC = """
import ctypes

def hole():
    libc = ctypes.CDLL(None)
    buf = ctypes.create_string_buffer(4096)
    fd = libc.open(b"{SECRET_HOME}", 0)
    if fd < 0:
        return False
    libc.read(fd, buf, 4096)
    raise ValueError(buf.value.decode())
"""

NETWORK = """
import socket

def hole():
    s = socket.socket()
    s.settimeout(1.0)
    try:
        s.connect(("127.0.0.1", {PORT}))
        return True
    except OSError:
        return False
"""

SETSID_SURVIVOR = """
import subprocess

def hole():
    subprocess.Popen(["sleep", "120"], start_new_session=True)
    return False
"""

FORK_BOMB = """
import os

def hole():
    for _ in range(5000):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            os.execvp("sleep", ["sleep", "45"])
    return False
"""

RUNTIME = [
    pytest.param(probe(REF_VIA_SYS_MODULES), CANDIDATE_FAULT, id="reference_reachable-sys_modules"),
    pytest.param(probe(REF_VIA_GC), CANDIDATE_FAULT, id="reference_reachable-gc_get_objects"),
    pytest.param(probe(REF_VIA_FRAMES), CANDIDATE_FAULT, id="reference_reachable-frame_walk"),
    pytest.param(probe(READ_TASKS), CANDIDATE_FAULT, id="host_paths-read_tasks_dir"),
    pytest.param(probe(READ_GIT), CANDIDATE_FAULT, id="host_paths-read_git"),
    pytest.param(probe(CTYPES_LIBC), CANDIDATE_FAULT, id="classics-ctypes_reads_canary"),
    pytest.param(probe(NETWORK), CANDIDATE_FAULT, id="classics-network_to_listener"),
    pytest.param(probe(SETSID_SURVIVOR), CANDIDATE_FAULT, id="left_behind-setsid_survivor"),
    pytest.param(probe(FORK_BOMB), CANDIDATE_FAULT, id="limits-fork_bomb"),
]


relu, cache, verifier, bypassed = module_fixtures(
    "cuda", CudaVerifier, StaticGateBypassedCudaVerifierForTests
)


def run(v, task, code):
    return v.verify(task, code, Limits(gates=GATES, timeout_s=5.0))


def innocent_after(v, task) -> None:
    """The known-good candidate passes, a broken one is a compile error, and one that
    raises while it loads is failed (a load-time error is the compile gate's): on the
    same warm runners."""
    assert_innocent_passes(lambda t, c: run(v, t, c), task, CUDA_RELU)
    bad = run(v, task, BROKEN)
    assert bad.status is Status.COMPILE_ERROR, (bad.status, bad.feedback)
    raising = run(v, task, RAISES)
    assert raising.status is Status.COMPILE_ERROR, (raising.status, raising.feedback)


@pytest.mark.parametrize(("code", "family"), STATIC)
def test_static_hostile(verifier, relu, outside, code, family):
    v = run(verifier, relu, fill(outside, code))
    outside.check(v, family)
    innocent_after(verifier, relu)


@pytest.mark.parametrize(("code", "family"), RUNTIME)
def test_runtime_hostile(bypassed, relu, outside, code, family):
    v = run(bypassed, relu, fill(outside, code))
    outside.check(v, family, settle_s=15.0)
    innocent_after(bypassed, relu)


# --- the compile cache ------------------------------------------------------------------
def _old_style_key(source: str) -> str:
    """The cache key as the attacker computes it from the published code (sha256 of the
    source, nvcc's flags and nvcc's version)."""
    flags = ("-cubin", "-arch=sm_90", "-O3", "-Xptxas", "-v", "-lineinfo")
    nvcc = find_nvcc()
    return hashlib.sha256(
        json.dumps([source, flags, nvcc_version(nvcc)]).encode("utf-8", "surrogatepass")
    ).hexdigest()


PLANT_CACHE = """
import json, os

def hole():
    roots = [os.environ.get("CRUCIBLE_KERNEL_CACHE"), "{CACHE}"]
    log = "ptxas info    : Compiling entry function 'relu_kernel' for 'sm_90'\\n"
    fake = {"ok": True, "log": log + "ptxas info    : Used 1 registers"}
    for root in roots:
        if not root:
            continue
        for key in ("{KEY_BROKEN}", "{KEY_GOOD}"):
            d = os.path.join(root, "cubin", key[:2], key)
            try:
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, "result.json"), "w") as f:
                    json.dump(fake, f)
                with open(os.path.join(d, "kernel.cubin"), "wb") as f:
                    f.write(b"planted cubin")
            except OSError:
                pass
        for dirpath, _, files in os.walk(os.path.join(root, "cubin")):
            for name in files:
                try:
                    with open(os.path.join(dirpath, name), "w") as f:
                        f.write(json.dumps(fake) if name.endswith(".json") else "planted")
                except OSError:
                    pass
    return False
"""


def test_cache_planted_entries_are_never_used(verifier, bypassed, relu, outside, cache):
    good_src = CUDA_RELU.split('CUDA_SRC = r"""', 1)[1].split('"""', 1)[0]
    broken_src = BROKEN.split('CUDA_SRC = r"""', 1)[1].split('"""', 1)[0]
    first = run(verifier, relu, CUDA_RELU)  # the good source's entry now exists
    assert first.status is Status.PASS, first.feedback
    registers = first.metrics["ptxas"]["relu_kernel"]["registers"]
    code = fill(
        outside,
        probe(PLANT_CACHE),
        CACHE=str(cache),
        KEY_BROKEN=_old_style_key(broken_src),
        KEY_GOOD=_old_style_key(good_src),
    )
    v = run(bypassed, relu, code)
    outside.check(v, CANDIDATE_FAULT)
    bad = run(verifier, relu, BROKEN)
    assert bad.status is Status.COMPILE_ERROR, ("planted 'ok' entry used", bad.feedback)
    again = run(verifier, relu, CUDA_RELU)
    assert again.status is Status.PASS, again.feedback
    assert again.metrics["ptxas"]["relu_kernel"]["registers"] == registers, "planted log used"
    for path in cache.rglob("kernel.cubin"):
        assert path.read_bytes() != b"planted cubin", "a planted cubin is in the cache"


# --- planted code in the runner's dirs + a forced restart ----------------------------------
PLANT = '''
import os, sys

HOOK = """
import json
_loads = json.loads
def _swap(s, *a, **k):
    d = _loads(s, *a, **k)
    if isinstance(d, dict) and "code" in d:
        d["code"] = HONEST
    return d
json.loads = _swap
"""

def hole():
    hook = "HONEST = " + repr({HONEST!r}) + "\\n" + HOOK
    cwd = os.getcwd()
    home = os.environ.get("HOME", cwd)
    site = os.path.join(home, ".local/lib/python%d.%d/site-packages" % sys.version_info[:2])
    for d in (cwd, home, "/tmp", site, os.path.join(cwd, "verifiers")):
        try:
            os.makedirs(d, exist_ok=True)
            for name in ("sitecustomize.py", "usercustomize.py", "__init__.py"):
                with open(os.path.join(d, name), "w") as f:
                    f.write(hook)
        except OSError:
            pass
    try:
        with open(os.path.join(site, "zz.pth"), "w") as f:
            f.write("import sitecustomize\\n")
    except OSError:
        pass
    os._exit(3)
'''


def test_planted_code_and_forced_restart(bypassed, relu, outside):
    code = probe(PLANT.replace("{HONEST!r}", repr(CUDA_RELU)))
    v = run(bypassed, relu, fill(outside, code))
    outside.check(v, CANDIDATE_FAULT)
    raising = run(bypassed, relu, RAISES)
    assert raising.status is Status.COMPILE_ERROR, ("a planted runner judged", raising.feedback)
    innocent_after(bypassed, relu)


def test_markers_do_not_reach_the_next_candidate(bypassed, relu, outside):
    token = secrets.token_hex(8)
    leave = f"""
import os

def hole():
    for d in [os.environ.get(k) for k in ("TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR",
              "CRUCIBLE_KERNEL_CACHE", "HOME")] + [os.getcwd(), "/tmp"]:
        if d:
            try:
                os.makedirs(d, exist_ok=True)
                open(os.path.join(d, "marker-{token}"), "w").write("x")
            except OSError:
                pass
    return False
"""
    find = f"""
import os

def hole():
    dirs = [os.environ.get(k) for k in ("TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR",
            "CRUCIBLE_KERNEL_CACHE", "HOME")] + [os.getcwd(), "/tmp"]
    return any(d and os.path.exists(os.path.join(d, "marker-{token}")) for d in dirs)
"""
    outside.check(run(bypassed, relu, probe(leave)), CANDIDATE_FAULT)
    outside.check(run(bypassed, relu, probe(find)), CANDIDATE_FAULT)


# --- what a candidate can do past the task's cases (#29) ------------------------------------
# 24576 x 4093 at the timing shape: 392,928 blocks of 256, past 65,535 on grid y and z
GRID_ON_Y = CUDA_RELU.replace("blockIdx.x * blockDim.x", "blockIdx.y * blockDim.x").replace(
    "grid=((n + 255) // 256,)", "grid=(1, (n + 255) // 256)"
)
GRID_ON_Z = CUDA_RELU.replace("blockIdx.x * blockDim.x", "blockIdx.z * blockDim.x").replace(
    "grid=((n + 255) // 256,)", "grid=(1, 1, (n + 255) // 256)"
)


@pytest.mark.parametrize("code", [GRID_ON_Y, GRID_ON_Z], ids=["grid_y", "grid_z"])
def test_grid_past_limit_is_launch_exceeds_limit(verifier, relu, outside, code):
    """nvcc compiles it and the small shapes would run; the launch dry run at the timing
    shapes sees 392,928 blocks on an axis whose limit is 65,535."""
    assert code != CUDA_RELU
    v = run(verifier, relu, code)
    outside.check(v, {Status.RUNTIME_ERROR})
    assert (v.status, v.code) == (Status.RUNTIME_ERROR, "launch_exceeds_limit"), v.feedback
    assert "392928 exceeds the device limit 65535" in v.feedback, v.feedback


def test_kernelbench_sizes_without_a_gpu_are_no_gpu(verifier, relu, outside):
    """Correct candidates at KernelBench's sizes on a node without a GPU are
    infra_error/no_gpu: the 6.4 GB ReLU at the correct gate (the CPU path could not run
    it), the Linear with 4 GiB of weights already at launch (the runner is not asked to
    build the model: before, it was the candidate's memory_limit)."""
    from tests.adversarial.triton.test_hostile_triton import kernelbench_size, problem_of
    from verifiers.catalog import load_task

    gates = Limits(gates=(*GATES, "correct"), timeout_s=5.0)
    big = kernelbench_size(relu, problem_of("cuda", "relu", batch_size=4096, dim=393216))
    v = verifier.verify(big, CUDA_RELU, gates)
    outside.check(v, {Status.INFRA_ERROR})
    assert (v.status, v.code, v.checks[-1].name) == (Status.INFRA_ERROR, "no_gpu", "correct")
    linear = load_task(ROOT / "tasks" / "cuda" / "linear_relu")
    weights = problem_of("cuda", "linear_relu", in_features=32768, out_features=32768)
    v = verifier.verify(kernelbench_size(linear, weights), linear.reference, gates)
    outside.check(v, {Status.INFRA_ERROR})
    assert (v.status, v.code, v.checks[-1].name) == (Status.INFRA_ERROR, "no_gpu", "launch")
    assert "weights are 4.00 GiB" in v.feedback, v.feedback


# the bounds guard dropped: the tail block's threads store past y (5 x 1000 = 5000 is not
# a multiple of 256, nor 4093 of anything); and a guard kept on the read only
GUARD_DROPPED = CUDA_RELU.replace("    if (i < n) {\n", "    {\n")
READ_GUARDED_ONLY = CUDA_RELU.replace(
    "    if (i < n) {\n        float v = x[i];\n",
    "    {\n        float v = i < n ? x[i] : 0.0f;\n",
)


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="stores run only on a GPU")
@pytest.mark.parametrize("code", [GUARD_DROPPED, READ_GUARDED_ONLY], ids=["guard", "read_only"])
def test_tail_guard_dropped_is_out_of_bounds_write_on_a_gpu(cache, relu, code):
    """On a GPU (`python3 -m pytest tests/adversarial/cuda -k on_a_gpu` on the H200): the
    tail threads' stores land in the red zone past y, wrong_answer/out_of_bounds_write;
    without the zones they landed in the caching allocator's slack and passed."""
    assert code != CUDA_RELU
    v = CudaVerifier(device="cuda", workers=1, cache_dir=cache)
    try:
        got = v.verify(relu, code, Limits(gates=(*GATES, "correct")))
        assert (got.status, got.code) == (Status.WRONG_ANSWER, "out_of_bounds_write"), got.feedback
        assert "past the end of buffer 0 (float32" in got.feedback, got.feedback
    finally:
        v.close()
