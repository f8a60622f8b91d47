"""The CANN adapter's pure parts: what bisheng would be run with, the refusals, the
precision rule and the speedup statistics. NOT a test that anything compiles: no CANN
toolkit exists here. The one stand-in is `STAND_IN_BISHENG`, a script that records the
argv it was given, to check what the adapter would hand bisheng."""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from verifiers.ascendc import cann, errors
from verifiers.base import GateFail
from verifiers.contract import Status


def cann_home(tmp_path: Path) -> str:
    home = tmp_path / "cann"
    for rel in cann.TIKCFW:
        (home / rel).mkdir(parents=True)
    (home / cann.KERNEL_HEADER).write_text("// stand-in header\n")
    return str(home)


def test_compile_argv_is_pyascs_device_build(tmp_path):
    home = cann_home(tmp_path)
    node = cann.CannNode("/opt/cann/bin/bisheng", home)
    argv = cann.compile_argv(node, "Ascend910B", "k0.cpp", "k0.o")
    assert argv[:6] == ["/opt/cann/bin/bisheng", "-c", "-x", "cce", "-O2", "k0.cpp"]
    assert "--cce-aicore-arch=dav-c220-vec" in argv and "--cce-aicore-only" in argv
    assert argv[argv.index("-o") + 1] == "k0.o"
    incs = [argv[i + 1] for i, a in enumerate(argv) if a == "-I"]
    assert incs == [os.path.join(home, rel) for rel in cann.TIKCFW]
    assert "-std=c++17" in argv and "-cce-aicore-stack-size=0x8000" in argv
    assert cann.link_argv(node, "k0.o", "k0.bin") == [
        "/opt/cann/bin/ld.lld", "-m", "aicorelinux", "-Ttext=0", "k0.o", "-static", "-o", "k0.bin",
    ]  # fmt: skip
    env = cann.cann_env(home)
    assert env["ASCEND_HOME_PATH"] == home and env["LD_LIBRARY_PATH"].endswith("lib64")


def test_a_soc_it_cannot_target_is_refused_as_the_harnesss():
    with pytest.raises(GateFail) as e:
        cann.arch_of("Ascend310P")
    assert (e.value.status, e.value.code) == (Status.INFRA_ERROR, "harness_error")
    assert "Ascend910B" in e.value.detail


def test_a_cann_home_without_headers_names_what_is_missing(tmp_path):
    assert cann.missing_headers(cann_home(tmp_path)) == []
    gone = cann.missing_headers(str(tmp_path / "empty"))
    assert cann.KERNEL_HEADER in gone and len(gone) == 4


def test_no_bisheng_is_no_cann_naming_the_gates(monkeypatch):
    if cann.shutil.which("bisheng"):
        pytest.skip("this node has bisheng")
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    assert cann.probe() is None
    assert "bisheng not on PATH" in cann.missing() and "set_env.sh" in cann.missing()
    from verifiers.catalog import load_task
    from verifiers.registry import verify

    task = load_task("tasks/ascendc/add")
    v = verify(task, task.reference)
    assert (v.status, v.code) == ("infra_error", "no_cann")
    assert "compile, precision, speedup" in v.checks[-1].detail


def test_a_golden_with_another_hash_is_refused(tmp_path):
    p = tmp_path / "case1.npz"
    p.write_bytes(b"golden bytes")
    good = hashlib.sha256(b"golden bytes").hexdigest()
    assert cann.golden(p, good) == b"golden bytes"
    with pytest.raises(GateFail) as e:
        cann.golden(p, "0" * 64)
    assert (e.value.status, e.value.code) == (Status.INFRA_ERROR, "harness_error")
    with pytest.raises(GateFail):
        cann.golden(tmp_path / "none.npz", good)


def test_precision_fails_only_when_abs_and_rel_are_both_over():
    g = np.array([1000.0, 0.0, 1.0])
    assert cann.precision(g + np.array([0.5, 0.0, 0.0]), g, 1e-3, 1e-3)[0]  # rel 5e-4: fine
    assert cann.precision(g + np.array([0.0, 5e-4, 0.0]), g, 1e-3, 1e-3)[0]  # abs 5e-4: fine
    ok, detail = cann.precision(g + np.array([0.0, 0.0, 0.01]), g, 1e-3, 1e-3)
    assert not ok and "(2,)" in detail and "1/3" in detail
    assert not cann.precision(np.array([1.0, math.nan, 1.0]), np.ones(3), 1e-3, 1e-3)[0]
    assert not cann.precision(np.array([1.0, math.inf, 1.0]), np.ones(3), 1e-3, 1e-3)[0]
    assert cann.precision(np.array([math.inf]), np.array([math.inf]), 1e-3, 1e-3)[0]
    assert not cann.precision(np.ones(2), np.ones(3), 1e-3, 1e-3)[0]


def test_speedup_passes_only_above_the_bar_with_its_ci_above_noise():
    rng = np.random.default_rng(0)
    expert = list(1.0 + 0.01 * rng.standard_normal(50))
    noise = [(1.0 + 0.01 * a, 1.0 + 0.01 * b) for a, b in rng.standard_normal((20, 2))]
    fast = [e / 1.5 for e in expert]
    ok, m = cann.speedup(fast, expert, noise, 1.0)
    assert ok and 1.45 < m["speedup"] < 1.55 and m["ci_low"] <= m["speedup"] <= m["ci_high"]
    same = list(1.0 + 0.01 * rng.standard_normal(50))
    assert not cann.speedup(same, expert, noise, 1.0)[0]
    assert not cann.speedup(fast, expert, noise, 2.0)[0]


STAND_IN_BISHENG = """#!/bin/sh
# a stand-in for bisheng: records its argv and says what a failed build would
printf '%s\\n' "$@" > argv.txt
echo "k0.cpp:3:5: error: use of undeclared identifier 'zLocal'" >&2
exit 1
"""


def test_what_the_adapter_would_run_reaches_bisheng_whole(monkeypatch, tmp_path):
    """The argv the gate hands ctx.run, run against the stand-in: bisheng gets exactly
    compile_argv's arguments, and its error line is classified at the candidate's file."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "bisheng").write_text(STAND_IN_BISHENG)
    (bindir / "bisheng").chmod(0o755)
    home = cann_home(tmp_path)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("ASCEND_HOME_PATH", home)
    node = cann.probe()
    assert node == cann.CannNode(str(bindir / "bisheng"), home)
    argv = cann.compile_argv(node, "Ascend910_93", "k0.cpp", "k0.o")
    res = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert (tmp_path / "argv.txt").read_text().splitlines() == argv[1:]
    name = "lowered/float32_1024.cpp"
    err = errors.classify(res.stderr.replace("k0.cpp", name), {name: "a\nb\n    z = zLocal;\n"})
    assert (err.code, err.file, err.line) == ("scope_lifetime", name, 3)


def test_without_the_npu_runner_precision_and_speedup_are_the_machines_gap():
    """The NPU runner is not written yet: on a CANN node without it, precision and speedup
    end `no_cann` before running anything, never as the candidate's crash."""

    node = cann.CannNode("/opt/cann/bin/bisheng", "/opt/cann")
    for gate in (cann.precision_gate, cann.speedup_gate):
        with pytest.raises(GateFail) as err:
            gate(node, None, None)
        assert (err.value.status, err.value.code) == ("infra_error", "no_cann")
        assert cann.RUNNER in err.value.detail
