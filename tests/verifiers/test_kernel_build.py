"""load_inline extensions built by the host (verifiers.kernels.build): what the host reads
from the source, the build with the real compilers in the sandbox, the sealed cache, and
the runner's side (a prebuilt library only for a call whose run-time arguments are the
ones the host built). The extensions here are plain CPython modules with no torch header
(no_implicit_headers, no `functions`), so each builds in about a second; the torch
headers' build and its precompiled header are exercised by test_kernels.py's extension
tests."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from verifiers.contract import Limits, Status
from verifiers.kernels import build
from verifiers.kernels.nvcc import find_nvcc

ROOT = Path(__file__).resolve().parents[2]

MODULE = r"""
#include <Python.h>
static PyObject* apply(PyObject*, PyObject* a) {
    return PyLong_FromLong(FACTOR * PyLong_AsLong(a));
}
static PyMethodDef methods[] = {{"apply", apply, METH_O, ""}, {nullptr, nullptr, 0, nullptr}};
static PyModuleDef def = {PyModuleDef_HEAD_INIT, "NAME", nullptr, -1, methods};
PyMODINIT_FUNC PyInit_NAME(void) { return PyModule_Create(&def); }
"""


def module_source(name: str, factor: int) -> str:
    return MODULE.replace("NAME", name).replace("FACTOR", str(factor))


def candidate(name: str, factor: int, extra: str = "") -> str:
    return (
        "import torch\nfrom torch.utils.cpp_extension import load_inline\n\n"
        f"SRC = {module_source(name, factor)!r}\n{extra}\n"
        f"ext = load_inline(name={name!r}, cpp_sources=SRC, no_implicit_headers=True)\n"
    )


# --- what the host reads ---------------------------------------------------------------------
def test_the_host_reads_literal_calls_and_the_runner_binds_them_to_the_same_key():
    code = candidate("ext_a", 2)
    (spec,) = build.inline_specs(code)
    assert spec["name"] == "ext_a" and spec["no_implicit_headers"] is True
    assert spec["cpp_sources"] == [module_source("ext_a", 2)] and spec["cuda_sources"] == []
    # the same call as torch would receive it at run time (positional cpp_sources too)
    from torch.utils.cpp_extension import load_inline

    sig = inspect.signature(load_inline)
    for args, kw in (
        (
            (),
            {
                "name": "ext_a",
                "cpp_sources": module_source("ext_a", 2),
                "no_implicit_headers": True,
            },
        ),
        (("ext_a", [module_source("ext_a", 2)]), {"no_implicit_headers": True, "verbose": True}),
    ):
        runtime = build.normalize(dict(sig.bind(*args, **kw).arguments))
        assert build.spec_key(runtime, "tc") == build.spec_key(spec, "tc")
    other = build.normalize(
        {"name": "ext_a", "cpp_sources": module_source("ext_a", 3), "no_implicit_headers": True}
    )
    assert build.spec_key(other, "tc") != build.spec_key(spec, "tc")
    assert build.spec_key(spec, "tc") != build.spec_key(spec, "another toolchain")


@pytest.mark.parametrize(
    "change",
    [
        ("cpp_sources=SRC,", "cpp_sources=SRC + '',"),  # made at run time
        ("cpp_sources=SRC,", "cpp_sources=open('x').read(),"),
        ("no_implicit_headers=True)", "no_implicit_headers=True, build_directory='/tmp/b')"),
        ("no_implicit_headers=True)", "no_implicit_headers=True, **{})"),
        ("no_implicit_headers=True)", "no_implicit_headers=True, sycl_sources=['x'])"),
        ("name='ext_b'", "name='ext b; rm -rf /'"),
        ("\next = ", "\nSRC = SRC.replace('2', '3')\next = "),  # a name bound twice
    ],
)
def test_a_call_the_source_does_not_spell_is_left_to_the_runner(change):
    code = candidate("ext_b", 2)
    old, new = change
    assert old in code
    assert build.inline_specs(code.replace(old, new, 1)) is None


def test_calls_are_read_in_source_order_and_a_file_without_one_has_none():
    two = candidate("ext_c", 2) + "ext2 = load_inline('ext_d', SRC, no_implicit_headers=True)\n"
    assert [s["name"] for s in build.inline_specs(two)] == ["ext_c", "ext_d"]
    assert build.inline_specs("import torch\n") == []


def test_ninja_commands_expand_as_ninja_would():
    text = (
        "cxx = c++\ncflags = -DX=1 -I/a$ b\nrule compile\n  command = $cxx $cflags -c $in -o $out\n"
        "build main.o: compile /k/main.cpp\nrule link\n  command = $cxx $in -shared -o $out\n"
        "build m.so: link main.o\n"
    )
    variables, rules, builds = build.parse_ninja(text)
    assert builds == [("main.o", "compile", ["/k/main.cpp"]), ("m.so", "link", ["main.o"])]
    assert build.expand(rules["compile"], variables, ["/k/main.cpp"], "main.o") == (
        "c++ -DX=1 -I/a$ b -c /k/main.cpp -o main.o"
    )


# --- the build, for real ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def built(tmp_path_factory):
    cache = tmp_path_factory.mktemp("inline-cache")
    b = build.Builder(Limits(), cache, pch=False, timeout_s=120)
    (spec,) = build.inline_specs(candidate("crucible_twice", 2))
    first = b.build(spec, link=True)
    return b, spec, first, cache


def test_the_host_builds_links_and_caches_a_library(built):
    b, spec, first, _ = built
    assert first.ok and not first.cached and first.library, first.log
    assert first.units == {"main.cpp": False}
    again = b.build(spec, link=True)
    assert again.cached and again.library == first.library
    # a node that cannot link compiles every unit: the object comes from the unit cache
    objects = b.build(spec, link=False)
    assert objects.ok and objects.library is None and objects.units == {"main.cpp": True}


def test_a_cpp_unit_that_does_not_compile_fails_and_fails_the_same_from_the_cache(built):
    b, _, _, _ = built
    (spec,) = build.inline_specs(
        candidate("crucible_broken", 2).replace("return PyLong", "return Py_Long")
    )
    res = b.build(spec, link=False)
    assert not res.ok and res.failed_unit == "main.cpp" and "Py_Long" in res.log
    again = b.build(spec, link=False)
    assert not again.ok and again.units == {"main.cpp": True} and "Py_Long" in again.log


def test_a_tampered_cache_entry_is_dropped_and_rebuilt(built):
    b, spec, first, _ = built
    key = build.spec_key(spec, build.toolchain())
    path = b.cache.path(key)
    entry = json.loads(path.read_text())
    entry["body"]["blob"] = entry["body"]["blob"][:-8] + "AAAAAAA="  # another library
    path.write_text(json.dumps(entry))
    res = b.build(spec, link=True)
    assert res.ok and not res.cached and res.library == first.library


RUNNER_SIDE = r"""
import base64, json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from verifiers.kernels.build import prebuilt_loader
prebuilt, tc, where, name, src2 = json.loads(sys.stdin.read())
used = prebuilt_loader(prebuilt, tc, Path(where))
from torch.utils.cpp_extension import load_inline  # as a candidate imports it
a = load_inline(name=name, cpp_sources=SRC, no_implicit_headers=True)
b = load_inline(name=name + "_rt", cpp_sources=src2, no_implicit_headers=True,
                build_directory=where)
print(json.dumps({"a": a.apply(21), "b": b.apply(21), "used": len(used)}))
"""


def test_the_runner_imports_the_prebuilt_library_only_for_the_call_it_was_built_from(
    built, tmp_path
):
    """The library is imported, not rebuilt, for the call the host read; a call whose run-time
    sources differ (here a second extension, its source made at run time) builds its own:
    the host's library never stands in for code it was not built from."""
    _, spec, first, _ = built
    key = build.spec_key(spec, build.toolchain())
    prebuilt = {
        key: {
            "name": spec["name"],
            "so_b64": __import__("base64").b64encode(first.library).decode(),
        }
    }
    src = module_source("crucible_twice", 2)
    src2 = module_source("crucible_twice_rt", 3)
    # an earlier job of the same verification plants a library where the key says
    planted = tmp_path / f"prebuilt-{key[:24]}" / "crucible_twice.so"
    planted.parent.mkdir()
    planted.write_bytes(b"not the host's library")
    code = RUNNER_SIDE.replace("SRC", repr(src), 1)
    res = subprocess.run(
        [sys.executable, "-c", code, str(ROOT)],
        input=json.dumps([prebuilt, build.toolchain(), str(tmp_path), spec["name"], src2]),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out == {"a": 42, "b": 63, "used": 1}
    assert list(tmp_path.glob(f"prebuilt-{key[:24]}-*/crucible_twice.so"))


def test_the_cpu_gate_fails_an_extension_whose_cpp_unit_does_not_compile():
    """Before, a CPU node compiled only the CUDA units: a broken C++ unit passed compile."""
    if find_nvcc() is None:
        pytest.skip("nvcc is not installed")
    from verifiers.catalog import load_task
    from verifiers.kernels.verifier import CudaVerifier

    task = load_task(ROOT / "tasks/cuda/relu")
    code = (ROOT / "tests/verifiers/kernel_fixtures/relu_extension_launcher.py").read_text()
    broken = code.replace("void relu_launch(const float* x, float* y, long long n);\n", "", 1)
    assert broken != code
    v = CudaVerifier(device="cpu", workers=1)
    try:
        verdict = v.verify(task, broken, Limits(gates=("parse", "anticheat", "compile")))
    finally:
        v.close()
    assert verdict.status is Status.COMPILE_ERROR, verdict.feedback
    assert "relu_launch" in verdict.feedback


def test_a_compiler_the_sandbox_cannot_find_is_the_machines_not_the_candidates(tmp_path):
    """On the H200 torch wrote the image's /opt/gcc g++ into build.ninja, outside the
    sandbox: the shell's "not found" was labelled compile_error. It is tool_missing."""
    from verifiers.sandbox import MachineFault

    b = build.Builder(Limits(), tmp_path / "cache", pch=False, timeout_s=30)
    work = b.sandbox.prepare_workdir(tmp_path / "w")
    res = b._run("/opt/gcc/bin/g++ -c main.cpp", work, [], 30, build.GUEST_BUILD)
    log = res.stderr + res.stdout
    with pytest.raises(MachineFault) as err:
        b._bad(res, log, "main.cpp", {}, [log], 0.0, "")
    assert err.value.code == "tool_missing"
    cxx = build.Builder(Limits(), tmp_path / "cache")._env()["CXX"]
    assert cxx.startswith("/usr/") and "++" in cxx  # the system's, which the sandbox binds


def test_the_hosts_cc_is_never_nvccs_host_compiler(tmp_path, monkeypatch):
    """On the H100 the image's CC=/opt/gcc/bin/gcc reached build.ninja as nvcc's `-ccbin`
    (torch writes CC there), outside the sandbox: every CUDA unit failed with "Failed to
    preprocess host compiler properties" and was labelled compile_error. The writer gets
    the builder's CC, one the sandbox runs, never the host's."""
    monkeypatch.setenv("CC", "/opt/gcc/bin/gcc")
    b = build.Builder(Limits(), tmp_path / "cache", pch=False, timeout_s=30)
    spec = build.normalize(
        {"name": "ext_cc", "cpp_sources": "int f();", "cuda_sources": "__global__ void k() {}"}
    )
    out = tmp_path / "b" / "build"
    build.write_build_files(spec, out, b._env())
    ninja = (out / "build.ninja").read_text()
    assert "/opt/gcc" not in ninja
    ccbin = b._env().get("CC")
    assert ccbin is None or (ccbin.startswith("/usr/") and f"-ccbin {ccbin}" in ninja)
