"""The host+device path without a GPU: the extension's CUDA sources compiled for sm_90
with nvcc against the torch headers (compile only; nothing is linked or loaded).

The candidate's `load_inline(cuda_sources=...)` strings are read from the AST: string
literals, or module-level names bound to them. On a GPU the runner calls load_inline
itself (cached by content in TORCH_EXTENSIONS_DIR).
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import sysconfig
import time
from pathlib import Path

from verifiers.base import Context, GateFail
from verifiers.contract import Status
from verifiers.kernels.errors import nvcc_failure
from verifiers.kernels.nvcc import find_nvcc
from verifiers.sandbox import SANDBOX_PATH, Sandbox, SandboxUnavailable
from verifiers.warm import GUEST_WORK

PREAMBLE = "#include <torch/extension.h>\n"
EXTENSION_BUILD_S = 600.0  # the torch headers: about a minute (H200 load_inline, nvcc here)
EXTENSION_MEMORY_MB = 32768


def extension_sources(code: str) -> list[str]:
    """The `cuda_sources` the candidate hands to load_inline."""
    tree = ast.parse(code)
    names: dict[str, str] = {}
    for node in tree.body:
        literal = isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        if literal and isinstance(node.value.value, str):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names[t.id] = node.value.value

    def strings(value: ast.expr) -> list[str]:
        items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
        out = []
        for it in items:
            if isinstance(it, ast.Constant) and isinstance(it.value, str):
                out.append(it.value)
            elif isinstance(it, ast.Name) and it.id in names:
                out.append(names[it.id])
        return out

    cuda = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and (getattr(node.func, "attr", None) or getattr(node.func, "id", None))
            == "load_inline"
        ):
            for kw in node.keywords:
                if kw.arg == "cuda_sources":
                    cuda += strings(kw.value)
    return cuda


def torch_includes() -> list[str]:
    import torch

    root = Path(torch.__file__).parent / "include"
    return [
        str(root),
        str(root / "torch" / "csrc" / "api" / "include"),
        sysconfig.get_paths()["include"],
    ]


def compile_only(ctx: Context) -> str:
    cuda = extension_sources(ctx.code)
    if not cuda:
        raise GateFail(
            Status.FORMAT_ERROR,
            "missing_entry_point",
            "load_inline without literal cuda_sources",
            feedback="pass cuda_sources= as a string literal (or a module-level name bound to "
            "one) so the kernel can be compiled before anything runs",
        )
    nvcc = find_nvcc()
    t0 = time.perf_counter()
    includes = torch_includes()
    work = ctx.workdir
    # cicc over the torch headers maps far more than a candidate's budget: nvcc's own
    # address space, not the candidate's (no candidate code runs here)
    builder = Sandbox(dataclasses.replace(ctx.limits, memory_mb=EXTENSION_MEMORY_MB))
    for i, src in enumerate(cuda):
        text = src if "torch/extension.h" in src else PREAMBLE + src
        name = f"ext{i}_{hashlib.sha256(text.encode()).hexdigest()[:8]}.cu"
        (work / name).write_text(text, encoding="utf-8")
        argv = [nvcc, "-c", "-arch=sm_90", "-std=c++17", "-O2", "-Xptxas", "-v"]
        argv += ["-DTORCH_EXTENSION_NAME=crucible_ext", "-DTORCH_API_INCLUDE_EXTENSION_H"]
        argv += ["--expt-relaxed-constexpr"]
        for inc in includes:
            argv += ["-I", inc]
        argv += ["-o", name + ".o", name]
        env = {"PATH": f"{Path(nvcc).parent}:{SANDBOX_PATH}"}
        # the torch and Python headers may live where only root can reach (a pyenv under
        # /root): the sandbox binds them by path
        budget = max(ctx.limits.timeout_s, EXTENSION_BUILD_S)
        res = builder.run(
            argv,
            work,
            timeout_s=budget,
            cpu_s=int(budget) + 1,
            ro_dirs=includes,
            env=env,
            guest_work=GUEST_WORK,  # the headers may sit under /work (a venv in the repo)
        )
        if fault := res.sandbox_fault:
            raise SandboxUnavailable(f"nvcc could not run in the sandbox: {fault}")
        ctx.tool_seconds += res.seconds
        if machine := res.machine_fault("nvcc"):  # slow machine, outside kill: infra
            raise machine
        if res.timed_out:
            raise GateFail(
                Status.TIMEOUT, "tool_timeout", "nvcc did not finish compiling the extension"
            )
        if res.output_capped:  # its messages about the candidate's sources: a flood
            raise GateFail(
                Status.RESOURCE_LIMIT,
                "output_limit",
                f"nvcc printed more than {ctx.limits.output_bytes} bytes about the "
                "extension's sources; stopped",
                feedback=(res.stderr + res.stdout)[-2000:],
            )
        if res.returncode != 0:
            raise nvcc_failure(res.stderr + res.stdout)
    seconds = time.perf_counter() - t0
    return f"extension CUDA compiled for sm_90 against the torch headers in {seconds:.1f}s"
