"""Hostile Triton candidates on the CPU gates (the interpreter and the sm_90 AOT compile).

Each case names its mechanism (issue 11). Most are written so that they *pass* exactly
when the hole they probe is open (a reference grabbed, a file read, a marker left by an
earlier candidate found): a green test means the hole is shut. The `static` cases meet the
real verifier; the `runtime` cases meet a test-only subclass with the static anti-cheat
switched off, so that the runner and the host-side reads must hold on their own.
"""

from __future__ import annotations

import os
import re
import secrets
import textwrap
from pathlib import Path

import pytest

from tests.adversarial.harness import (
    CANDIDATE_FAULT,
    LIMITS,
    REFUSED,
    assert_innocent_fails,
    assert_innocent_passes,
    check,
)
from tests.adversarial.kernel_kit import (
    ROOT,
    StaticGateBypassedTritonVerifierForTests,
    fill,
    module_fixtures,
)
from tests.verifiers.test_kernels import TRITON_RELU
from verifiers.catalog import load_task
from verifiers.contract import Limits, Status
from verifiers.kernels.verifier import TritonVerifier

CPU_GATES = ("parse", "anticheat", "compile", "launch", "correct")
WRONG = TRITON_RELU.replace("tl.maximum(x, 0.0)", "x")

# a real kernel; forward runs it only when `hole(x)` says the hole is open, otherwise it
# returns 7s (a wrong answer): a pass means the hole is there
PROBE = """
import torch
import triton
import triton.language as tl
{IMPORTS}

@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)

{PROBE}

class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if hole(x):
            relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        else:
            y.fill_(7.0)
        return y
"""


def probe(body: str, imports: str = "") -> str:
    return PROBE.replace("{IMPORTS}", imports).replace("{PROBE}", textwrap.dedent(body))


def replace_forward(body: str, imports: str = "") -> str:
    """A candidate whose forward is `body` (after allocating y), kernel left in place."""
    code = probe("def hole(x):\n    return True\n", imports)
    old = "        if hole(x):\n"
    return code.replace(old, textwrap.indent(textwrap.dedent(body), " " * 8) + old)


# --- candidates the static anti-cheat must refuse ------------------------------------------
FAKE_JIT = """
import torch
import triton

def jit(fn):
    return fn

@jit
def relu_kernel(x, y):
    y.copy_(torch.relu(x))

class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        relu_kernel(x, y)
        return y
"""

REBOUND_JIT = """
import torch
import triton
from triton import jit
jit = lambda fn: fn  # noqa: E731

@jit
def relu_kernel(x, y):
    y.copy_(torch.relu(x))

class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        relu_kernel(x, y)
        return y
"""

FAKE_TRITON_NAME = """
import torch
import triton
import triton.language as tl

class _Fake:
    @staticmethod
    def jit(fn):
        return fn

triton = _Fake()

@triton.jit
def relu_kernel(x, y):
    y.copy_(torch.relu(x))

class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        relu_kernel(x, y)
        return y
"""

SYS_MODULES_VIA_TORCH = """
import torch
import triton
import triton.language as tl

@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

def grab():
    for name, mod in list(torch.sys.modules.items()):
        if name.startswith("crucible_problem"):
            return getattr(mod, "Model", None)
    return None

class ModelNew(torch.nn.Module):
    def forward(self, x):
        ref = grab()
        if ref is not None:
            return ref()(x)
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
"""

BUILTINS_BY_LITERAL_GETATTR = """
def hole(x):
    b = getattr(torch, "__builtins__")
    src = b["open"]("{ROOT}/tasks/triton/relu/problem.py").read()
    return "torch.relu" in src
"""

NUMPY_CTYPES = """
def hole(x):
    libc = np.ctypeslib.ctypes.CDLL(None)
    return libc.getpid() > 0
"""

KERNEL_BODY_INTROSPECTS = """
import torch
import triton
import triton.language as tl

@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    mods = __import__("sys").modules
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=offs < n)

class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
"""

STATIC = [
    pytest.param(FAKE_JIT, REFUSED, id="denylist_gap-fake_jit_decorator"),
    pytest.param(REBOUND_JIT, REFUSED, id="denylist_gap-from_triton_import_jit_rebound"),
    pytest.param(FAKE_TRITON_NAME, REFUSED, id="denylist_gap-triton_name_rebound"),
    pytest.param(SYS_MODULES_VIA_TORCH, REFUSED, id="reference_reachable-torch_sys_modules"),
    pytest.param(probe(BUILTINS_BY_LITERAL_GETATTR), REFUSED, id="denylist_gap-getattr_dunder"),
    pytest.param(
        probe(NUMPY_CTYPES, "import numpy as np"), REFUSED, id="denylist_gap-numpy_ctypeslib"
    ),
    pytest.param(KERNEL_BODY_INTROSPECTS, REFUSED, id="denylist_gap-kernel_body_exempt"),
    pytest.param(
        replace_forward("raise OSError(28, 'No space left on device')\n"),
        CANDIDATE_FAULT,
        id="judge_reads_candidate_text-oserror_no_space",
    ),
    pytest.param(
        TRITON_RELU.replace(
            "class ModelNew", 'raise PermissionError("bwrap: Can\'t mount proc")\n\nclass ModelNew'
        ),
        CANDIDATE_FAULT,
        id="judge_reads_candidate_text-permission_error_at_load",
    ),
    pytest.param(
        replace_forward("raise RuntimeError('CUDA out of memory. Tried to allocate 2.00 GiB')\n"),
        CANDIDATE_FAULT,
        id="judge_reads_candidate_text-cuda_oom_text",
    ),
    pytest.param(
        WRONG.replace(
            "        return y\n",
            "        print('{\"ready\": true}')\n"
            '        print(\'{"ok": true, "outputs": [], "seconds": {}}\')\n'
            "        return y\n",
        ),
        CANDIDATE_FAULT,
        id="judge_reads_candidate_text-fake_result_json",
    ),
]


# --- candidates for the runtime defences (static gate off) -----------------------------------
REF_VIA_SYS_MODULES = """
import sys

def hole(x):
    for mod in list(sys.modules.values()):
        ref = getattr(mod, "Model", None)
        if isinstance(ref, type) and "forward" in ref.__dict__:
            return True
    return False
"""

REF_VIA_FRAMES = """
import sys

def _looks_like_reference(v):
    if isinstance(v, str) and "torch.re" + "lu(x)" in v:
        return True
    ref = getattr(v, "Model", None)
    return isinstance(ref, type) and "forward" in ref.__dict__

def hole(x):
    f = sys._getframe()
    while f is not None:
        for v in [*f.f_locals.values(), *f.f_globals.values()]:
            if _looks_like_reference(v):
                return True
            if isinstance(v, dict) and any(_looks_like_reference(w) for w in v.values()):
                return True
        f = f.f_back
    return False
"""

REF_VIA_GC = """
import gc

def hole(x):
    for o in gc.get_objects():
        if isinstance(o, type) and o.__name__ == "Model" and "forward" in o.__dict__:
            return True
        if isinstance(o, dict) and isinstance(o.get("problem"), str):
            if "torch.re" + "lu(x)" in o["problem"]:
                return True
    return False
"""

READ_TASKS = """
def hole(x):
    try:
        src = open("{ROOT}/tasks/triton/relu/problem.py").read()
    except OSError:
        return False
    return "torch.relu" in src
"""

READ_GIT = """
def hole(x):
    try:
        return len(open("{ROOT}/.git/HEAD").read()) > 0
    except OSError:
        return False
"""

NETWORK = """
import socket

def hole(x):
    s = socket.socket()
    s.settimeout(1.0)
    try:
        s.connect(("127.0.0.1", {PORT}))
        return True
    except OSError:
        return False
"""

READ_CANARIES = """
def hole(x):
    for p in ("{SECRET_HOME}", "{SECRET_TMP}"):
        try:
            raise ValueError("canary: " + open(p).read())
        except OSError:
            pass
    return False
"""

FAKE_JIT_RUNTIME = FAKE_JIT  # the same text, run with the static gate bypassed

FORK_BOMB = """
import subprocess

def hole(x):
    if x.device.type == "meta":
        return False
    for _ in range(5000):
        try:
            subprocess.Popen(["sleep", "45"])
        except OSError:
            break
    return False
"""

MEMORY_HOG = """
def hole(x):
    blob = bytearray(64 * 2**30)
    return len(blob) > 0
"""

TMPFS_HOG = """
def hole(x):
    if x.device.type == "meta":
        return False
    with open("/tmp/hog", "wb") as f:
        for _ in range(1024):
            f.write(b"x" * 2**20)
    return False
"""

SLEEP_FOREVER = """
import time

def hole(x):
    while x.device.type == "cpu":
        time.sleep(1)
    return False
"""

SETSID_SURVIVOR = """
import subprocess

def hole(x):
    subprocess.Popen(["sleep", "120"], start_new_session=True)
    return False
"""

RUNTIME = [
    pytest.param(probe(REF_VIA_SYS_MODULES), CANDIDATE_FAULT, id="reference_reachable-sys_modules"),
    pytest.param(probe(REF_VIA_FRAMES), CANDIDATE_FAULT, id="reference_reachable-frame_walk"),
    pytest.param(probe(REF_VIA_GC), CANDIDATE_FAULT, id="reference_reachable-gc_get_objects"),
    pytest.param(probe(READ_TASKS), CANDIDATE_FAULT, id="host_paths-read_tasks_dir"),
    pytest.param(probe(READ_GIT), CANDIDATE_FAULT, id="host_paths-read_git"),
    pytest.param(probe(NETWORK), CANDIDATE_FAULT, id="classics-network_to_listener"),
    pytest.param(probe(READ_CANARIES), CANDIDATE_FAULT, id="classics-read_canaries"),
    pytest.param(FAKE_JIT_RUNTIME, CANDIDATE_FAULT, id="denylist_gap-fake_jit_at_runtime"),
    pytest.param(probe(FORK_BOMB), CANDIDATE_FAULT, id="limits-process_flood"),
    pytest.param(probe(MEMORY_HOG), CANDIDATE_FAULT, id="limits-memory_hog"),
    pytest.param(probe(TMPFS_HOG), CANDIDATE_FAULT, id="limits-tmpfs_hog"),
    pytest.param(probe(SETSID_SURVIVOR), CANDIDATE_FAULT, id="left_behind-setsid_survivor"),
]


relu, cache, verifier, bypassed = module_fixtures(
    "triton", TritonVerifier, StaticGateBypassedTritonVerifierForTests
)


def run(v, task, code, **limits):
    return v.verify(task, code, Limits(gates=CPU_GATES, **limits))


@pytest.mark.parametrize(("code", "family"), STATIC)
def test_static_hostile(verifier, relu, outside, code, family):
    v = run(verifier, relu, fill(outside, code))
    outside.check(v, family)
    assert_innocent_passes(lambda t, c: run(verifier, t, c), relu, TRITON_RELU)


@pytest.mark.parametrize(("code", "family"), RUNTIME)
def test_runtime_hostile(bypassed, relu, outside, code, family):
    v = run(bypassed, relu, fill(outside, code), timeout_s=5.0)
    outside.check(v, family, settle_s=15.0)
    assert_innocent_fails(lambda t, c: run(bypassed, t, c), relu, WRONG)
    assert_innocent_passes(lambda t, c: run(bypassed, t, c), relu, TRITON_RELU)


# --- output floods: counted by the host as they pass, whatever the candidate does to its fds
FLOOD_TRUNCATING_ITS_STDOUT = """
import os

def hole(x):
    for _ in range(4096):
        os.write(1, b"x" * 4096)
        for undo in (lambda: os.ftruncate(1, 0), lambda: os.lseek(1, 0, 0)):
            try:
                undo()  # a log file's size could be reset this way; a pipe's count cannot
            except OSError:
                pass
    return False
"""

FLOOD_ON_STDERR_FOREVER = """
import os

def hole(x):
    while True:
        os.write(2, b"e" * 4096)
"""

FLOOD_FROM_A_GRANDCHILD = """
import subprocess
import time

def hole(x):
    subprocess.Popen(["yes", "flooding from a process of its own"])
    time.sleep(30)
    return False
"""

FLOODS = [
    pytest.param(probe(FLOOD_TRUNCATING_ITS_STDOUT), id="limits-output_flood_truncating_stdout"),
    pytest.param(probe(FLOOD_ON_STDERR_FOREVER), id="limits-output_flood_stderr_forever"),
    pytest.param(probe(FLOOD_FROM_A_GRANDCHILD), id="limits-output_flood_from_a_grandchild"),
]


@pytest.mark.parametrize("code", FLOODS)
def test_output_flood_is_output_limit(bypassed, relu, outside, code):
    """Past the static gate: a flood is stopped at Limits.output_bytes (not by the wall
    clock), the candidate's output_limit, and nothing of it outlives the verdict."""
    v = run(bypassed, relu, fill(outside, code), timeout_s=20.0, output_bytes=64 * 1024)
    assert (v.status, v.code) == (Status.RESOURCE_LIMIT, "output_limit"), v.feedback[:600]
    assert v.duration_ms < 25_000, v.duration_ms
    check(outside, v, {Status.RESOURCE_LIMIT}, bypassed)
    assert_innocent_passes(lambda t, c: run(bypassed, t, c), relu, TRITON_RELU)


def test_classics_sleep_forever_is_a_timeout(bypassed, relu, outside):
    v = run(bypassed, relu, fill(outside, probe(SLEEP_FOREVER)), timeout_s=1.0)
    outside.check(v, LIMITS, settle_s=15.0)
    assert_innocent_passes(lambda t, c: run(bypassed, t, c), relu, TRITON_RELU)


# --- state one candidate leaves for the next --------------------------------------------------
LEAVE_MARKERS = """
import os

def hole(x):
    token = "{TOKEN}"
    dirs = [os.environ.get(k) for k in ("TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR",
            "CRUCIBLE_KERNEL_CACHE", "HOME", "TRITON_HOME")] + [os.getcwd(), "/tmp"]
    for d in dirs:
        if d:
            try:
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, "marker-" + token), "w") as f:
                    f.write(token)
            except OSError:
                pass
    return False
"""

FIND_MARKERS = """
import os

def hole(x):
    dirs = [os.environ.get(k) for k in ("TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR",
            "CRUCIBLE_KERNEL_CACHE", "HOME", "TRITON_HOME")] + [os.getcwd(), "/tmp"]
    for d in dirs:
        if d and os.path.exists(os.path.join(d, "marker-{TOKEN}")):
            return True
    return False
"""


def test_cache_and_dirs_not_shared_between_candidates(bypassed, relu, outside):
    token = secrets.token_hex(8)
    first = run(bypassed, relu, fill(outside, probe(LEAVE_MARKERS), TOKEN=token))
    outside.check(first, CANDIDATE_FAULT)
    second = run(bypassed, relu, fill(outside, probe(FIND_MARKERS), TOKEN=token))
    outside.check(second, CANDIDATE_FAULT)  # it passes only if it found the first's marker


# --- planted code in the runner's dirs + a forced restart --------------------------------------
# the planted judge swaps every job's candidate for a known-good one: all candidates pass
PLANT = '''
import os, sys

HONEST = {HONEST!r}
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

def plant(x):
    hook = "HONEST = " + repr(HONEST) + "\\n" + HOOK
    cwd = os.getcwd()
    home = os.environ.get("HOME", cwd)
    site = os.path.join(home, ".local/lib/python%d.%d/site-packages" % sys.version_info[:2])
    for d in (cwd, home, "/tmp", site):
        try:
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "sitecustomize.py"), "w") as f:
                f.write(hook)
            with open(os.path.join(d, "usercustomize.py"), "w") as f:
                f.write(hook)
        except OSError:
            pass
    try:
        with open(os.path.join(site, "zz.pth"), "w") as f:
            f.write("import sitecustomize\\n")
        os.makedirs(os.path.join(cwd, "verifiers", "kernels"), exist_ok=True)
        with open(os.path.join(cwd, "verifiers", "__init__.py"), "w") as f:
            f.write(hook)
    except OSError:
        pass
    os._exit(3)  # the runner dies; the pool starts a fresh one in the same dirs
'''


def test_planted_code_and_forced_restart(bypassed, relu, outside):
    code = probe(
        PLANT.replace("{HONEST!r}", repr(TRITON_RELU)) + "\ndef hole(x):\n    return plant(x)\n"
    )
    v = run(bypassed, relu, fill(outside, code))
    outside.check(v, CANDIDATE_FAULT)
    assert_innocent_fails(lambda t, c: run(bypassed, t, c), relu, WRONG)
    assert_innocent_passes(lambda t, c: run(bypassed, t, c), relu, TRITON_RELU)


# --- links in place of the outputs ----------------------------------------------------------
OUTPUT_LINK = """
import glob, os

def hole(x):
    if x.device.type != "cpu":
        return True
    for d in glob.glob(os.path.join(os.getcwd(), "*")) + [os.path.join(os.getcwd(), "out")]:
        if os.path.isdir(d) and not os.path.islink(d):
            for i in range(8):
                p = os.path.join(d, "out_%d_0.bin" % i)
                if not os.path.lexists(p):
                    os.symlink("{SECRET_TMP}", p)
    return True
"""


def test_host_paths_output_file_linked_to_a_host_file(bypassed, relu, outside):
    v = run(bypassed, relu, fill(outside, probe(OUTPUT_LINK)))
    outside.check(v, CANDIDATE_FAULT)
    size = len(outside.secret)
    assert f"{size} bytes" not in v.feedback, "the host followed the link (file size shown)"
    assert_innocent_passes(lambda t, c: run(bypassed, t, c), relu, TRITON_RELU)


OUTDIR_LINK = """
import os

def hole(x):
    cwd = os.getcwd()
    for name in os.listdir(cwd):
        p = os.path.join(cwd, name)
        if os.path.isdir(p) and not os.path.islink(p):
            os.rename(p, p + ".moved")
            os.symlink("{VICTIM}", p)
    for name in ("out", "out0", "out1", "out2"):
        p = os.path.join(cwd, name)
        if not os.path.lexists(p):
            os.symlink("{VICTIM}", p)
    return True
"""


def test_host_paths_outdir_linked_to_a_host_dir(bypassed, relu, outside, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    before = os.stat(victim)
    v = run(bypassed, relu, fill(outside, probe(OUTDIR_LINK), VICTIM=str(victim)))
    after = os.stat(victim)
    assert (after.st_uid, after.st_gid, after.st_mode) == (
        before.st_uid,
        before.st_gid,
        before.st_mode,
    ), "the host chowned or chmodded the target of the candidate's link"
    assert list(Path(victim).iterdir()) == [], "the host wrote through the candidate's link"
    assert v.status is not Status.INFRA_ERROR, v.feedback
    assert v.status is Status.PASS or v.status in CANDIDATE_FAULT, v.feedback
    assert_innocent_passes(lambda t, c: run(bypassed, t, c), relu, TRITON_RELU)


# --- what a candidate can do past the task's cases (#29): stray stores, launches past a
# limit, sizes the CPU path cannot run. Each fails for its real reason, status and code.
def _relu_with(kernel_body: str, launch: str) -> str:
    """TRITON_RELU with its kernel's last lines and its launch replaced."""
    code = TRITON_RELU.replace(
        "    x = tl.load(x_ptr + offs, mask=mask, other=0.0)\n"
        "    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)\n",
        textwrap.indent(textwrap.dedent(kernel_body), "    "),
    ).replace("        relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)\n", launch)
    assert code.count("relu_kernel[") == 1 and kernel_body.split("\n")[-2] in code, code
    return code


_LOAD = "x = tl.load(x_ptr + offs, mask=mask, other=0.0)\n"
_LAUNCH = "        relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)\n"
STORE_MASK_DROPPED = _relu_with(_LOAD + "tl.store(y_ptr + offs, tl.maximum(x, 0.0))\n", _LAUNCH)
# one program per row of (rows, cols): the row's store without its column mask spills
# past the row; only the last row's spill leaves the buffer
ROWS_STORE_MASK_DROPPED = """
import torch
import triton
import triton.language as tl


@triton.jit
def relu_rows(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, tl.maximum(x, 0.0))


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        relu_rows[(rows,)](x, y, cols, BLOCK=triton.next_power_of_2(cols))
        return y
"""
STORE_BEFORE_OUTPUT = _relu_with(
    _LOAD + "tl.store(y_ptr + offs - 8, tl.maximum(x, 0.0), mask=mask)\n", _LAUNCH
)
STORE_BEFORE_INPUT = _relu_with(
    _LOAD
    + "tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)\n"
    + "tl.store(x_ptr + offs - 4, x, mask=offs < 4)\n",
    _LAUNCH,
)
# 24576 x 4093 at the timing shape: 98,232 programs of 1024, past 65,535 on axes 1 and 2
GRID_ON_AXIS_1 = TRITON_RELU.replace("tl.program_id(0)", "tl.program_id(1)").replace(
    "relu_kernel[(triton.cdiv(n, BLOCK),)]", "relu_kernel[(1, triton.cdiv(n, BLOCK))]"
)
GRID_ON_AXIS_2 = TRITON_RELU.replace("tl.program_id(0)", "tl.program_id(2)").replace(
    "relu_kernel[(triton.cdiv(n, BLOCK),)]", "relu_kernel[(1, 1, triton.cdiv(n, BLOCK))]"
)

# accumulated into a zeroed output, the atomic_add without its mask: the lanes past the
# end add 0.0 (their loads were masked), which leaves plain memory as it was
ATOMIC_MASK_DROPPED = _relu_with(
    _LOAD + "tl.atomic_add(y_ptr + offs, tl.maximum(x, 0.0))\n", _LAUNCH
).replace("y = torch.empty_like(x)", "y = torch.zeros_like(x)")

PAST_THE_CASES = [
    pytest.param(STORE_MASK_DROPPED, "past the end of buffer 0", id="store_mask_dropped-1d"),
    pytest.param(ROWS_STORE_MASK_DROPPED, "past the end of buffer 0", id="store_mask_dropped-rows"),
    pytest.param(STORE_BEFORE_OUTPUT, "before buffer 0", id="write_before-the_output"),
    pytest.param(STORE_BEFORE_INPUT, "before input 0", id="write_before-an_input"),
    pytest.param(ATOMIC_MASK_DROPPED, "past the end of buffer 0", id="atomic_mask_dropped"),
]


@pytest.mark.parametrize(("code", "says"), PAST_THE_CASES)
def test_a_store_outside_its_buffers_is_out_of_bounds_write(verifier, relu, outside, code, says):
    """A store outside every buffer forward was given or allocated lands in a red zone:
    wrong_answer/out_of_bounds_write naming the buffer and the side, before any output is
    compared (on the H200 such stores landed in the allocator's slack and passed)."""
    v = run(verifier, relu, code)
    check(outside, v, {Status.WRONG_ANSWER}, verifier)
    assert (v.status, v.code) == (Status.WRONG_ANSWER, "out_of_bounds_write"), v.feedback
    assert says in v.feedback, v.feedback


@pytest.mark.parametrize("code", [GRID_ON_AXIS_1, GRID_ON_AXIS_2], ids=["axis_1", "axis_2"])
def test_grid_past_limit_is_launch_exceeds_limit(verifier, relu, outside, code):
    """Fine at the small shapes the interpreter runs; the dry run at the timing shapes
    sees 98,232 programs on an axis whose limit is 65,535."""
    v = run(verifier, relu, code)
    check(outside, v, {Status.RUNTIME_ERROR}, verifier)
    assert (v.status, v.code) == (Status.RUNTIME_ERROR, "launch_exceeds_limit"), v.feedback
    assert "98232 exceeds the device limit 65535" in v.feedback, v.feedback


def kernelbench_size(task, problem_text: str):
    """`task` with a problem at KernelBench's own sizes and no small shapes (as an
    imported KernelBench task has)."""
    import dataclasses

    harness = {k: v for k, v in task.harness.items() if k != "small"}
    return dataclasses.replace(task, harness={**harness, "problem": problem_text}, task_id="")


def problem_of(domain: str, name: str, **sizes: int) -> str:
    text = (ROOT / "tasks" / domain / name / "problem.py").read_text()
    for k, v in sizes.items():
        text, n = re.subn(rf"^{k} = \d+$", f"{k} = {v}", text, flags=re.M)
        assert n == 1, k
    return text


def test_kernelbench_sizes_without_a_gpu_are_no_gpu(verifier, relu, outside):
    """A correct candidate on a task of KernelBench's sizes (ReLU 4096 x 393216 fp32:
    6.4 GB a tensor; a Linear of 32768 x 32768: 4 GiB of weights; ReLU 2048 x 4096: too
    many interpreted programs), on a node without a GPU: its CPU path cannot run them, so
    the verdict is infra_error/no_gpu (retried on a GPU), never the candidate's timeout
    or memory_limit."""
    big_relu = kernelbench_size(relu, problem_of("triton", "relu", batch_size=4096, dim=393216))
    v = run(verifier, big_relu, TRITON_RELU)
    check(outside, v, {Status.INFRA_ERROR}, verifier)
    assert (v.status, v.code, v.checks[-1].name) == (Status.INFRA_ERROR, "no_gpu", "correct")
    assert "past what a 2048 MB CPU runner can hold" in v.feedback, v.feedback
    linear = load_task(ROOT / "tasks" / "triton" / "linear_relu")
    weights = problem_of("triton", "linear_relu", in_features=32768, out_features=32768)
    v = run(verifier, kernelbench_size(linear, weights), linear.reference)
    check(outside, v, {Status.INFRA_ERROR}, verifier)
    assert (v.status, v.code, v.checks[-1].name) == (Status.INFRA_ERROR, "no_gpu", "launch")
    assert "weights are 4.00 GiB" in v.feedback, v.feedback
    # fits in memory (2048 x 4096: 32 MB a tensor), but ~8,000 programs a trial of the
    # interpreter: past half the job's CPU budget, so not the candidate's timeout either
    slow = kernelbench_size(relu, problem_of("triton", "relu", batch_size=2048, dim=4096))
    v = run(verifier, slow, TRITON_RELU)
    check(outside, v, {Status.INFRA_ERROR}, verifier)
    assert (v.status, v.code, v.checks[-1].name) == (Status.INFRA_ERROR, "no_gpu", "correct")
    assert "of Triton's interpreter for 5 trials" in v.feedback, v.feedback


def test_a_task_without_small_shapes_gets_a_ragged_tail_trial(verifier, relu, outside):
    """A KernelBench-style task (no [harness.small]) at power-of-two sizes: 8 x 2048 is
    16 full blocks of 1024, so a store without its mask never leaves the output there.
    Its tail trial runs at the sizes made ragged (2047: the last block partial), where the
    stray store lands in a red zone; the honest kernel passes at both."""
    pow2 = kernelbench_size(relu, problem_of("triton", "relu", batch_size=8, dim=2048))
    v = run(verifier, pow2, STORE_MASK_DROPPED)
    check(outside, v, {Status.WRONG_ANSWER}, verifier)
    assert (v.status, v.code) == (Status.WRONG_ANSWER, "out_of_bounds_write"), v.feedback
    assert "float32[8, 2047]" in v.feedback, v.feedback
    assert run(verifier, pow2, TRITON_RELU).status is Status.PASS
