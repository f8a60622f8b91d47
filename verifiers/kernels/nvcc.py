"""nvcc: CUDA source to an sm_90 cubin with the ptxas resource report, cached by content.

The device-only path never builds a PyTorch extension: `CUDA_SRC` goes straight to a
cubin (~0.2 s) that the runner loads and launches on PyTorch tensors. Compiles of the same
source, flags and nvcc are done once: the cache key is the sha256 of all three, and a
cached entry holds the cubin and nvcc's own output (so a cached failure fails the same
way). Writes are atomic (temp dir, then rename). Stdlib only.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from verifiers.kernels.limits import KernelResources, parse_ptxas
from verifiers.sandbox import Sandbox, SandboxUnavailable

CUDA_HOMES = ("/usr/local/cuda", "/usr/local/cuda-13.0")
INSTALL_HINT = (
    "install the CUDA toolkit's nvcc (e.g. apt-get install nvidia-cuda-toolkit, or NVIDIA's "
    "cuda-nvcc package) or set CUDA_HOME"
)
DEFAULT_ARCH = "sm_90"


def find_nvcc() -> str | None:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    for root in ([home] if home else []) + list(CUDA_HOMES):
        cand = Path(root) / "bin" / "nvcc"
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return shutil.which("nvcc")


def default_cache_dir() -> Path:
    root = os.environ.get("CRUCIBLE_KERNEL_CACHE")
    if root:
        return Path(root)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "crucible" / "kernels"


@dataclass(frozen=True)
class CompileResult:
    ok: bool
    log: str  # nvcc's stderr + stdout (errors, warnings, the ptxas report)
    cubin: Path | None
    resources: dict[str, KernelResources]
    seconds: float
    cached: bool
    timed_out: bool = False


@functools.cache
def nvcc_version(nvcc: str) -> str:
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "unknown"


def compile_cubin(
    source: str,
    sandbox: Sandbox,
    *,
    arch: str = DEFAULT_ARCH,
    nvcc: str | None = None,
    cache_dir: Path | None = None,
    timeout_s: float = 60.0,
    extra_flags: tuple[str, ...] = (),
) -> CompileResult:
    """Compile `source` to a cubin for `arch`; cached by (source, flags, nvcc version)."""
    nvcc = nvcc or find_nvcc()
    if nvcc is None:
        raise FileNotFoundError(f"nvcc not found: {INSTALL_HINT}")
    flags = ("-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v", "-lineinfo", *extra_flags)
    key = hashlib.sha256(
        json.dumps([source, flags, nvcc_version(nvcc)]).encode("utf-8", "surrogatepass")
    ).hexdigest()
    cache = (cache_dir or default_cache_dir()) / "cubin" / key[:2] / key
    meta_path = cache / "result.json"
    if meta_path.is_file():
        with contextlib.suppress(OSError, ValueError, KeyError):
            meta = json.loads(meta_path.read_text())
            cubin = cache / "kernel.cubin"
            return CompileResult(
                ok=meta["ok"],
                log=meta["log"],
                cubin=cubin if meta["ok"] else None,
                resources=parse_ptxas(meta["log"]),
                seconds=0.0,
                cached=True,
            )
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="crucible-nvcc-") as tmp:
        work = sandbox.prepare_workdir(Path(tmp))
        (work / "kernel.cu").write_text(source, encoding="utf-8")
        out = work / "kernel.cubin"
        # candidate source: compiled in the sandbox (an #include of a host file stays out)
        res = sandbox.run(
            [nvcc, *flags, "-o", "kernel.cubin", "kernel.cu"],
            work,
            timeout_s=timeout_s,
            cpu_s=int(timeout_s) + 1,
            env={"PATH": f"{Path(nvcc).parent}:/usr/bin:/bin"},
        )
        seconds = time.perf_counter() - t0
        if fault := res.sandbox_fault:
            raise SandboxUnavailable(f"nvcc could not run in the sandbox: {fault}")
        if res.timed_out:
            return CompileResult(
                False,
                f"nvcc did not finish in {timeout_s:.0f}s",
                None,
                {},
                seconds,
                False,
                timed_out=True,
            )
        log = res.stderr + res.stdout
        ok = res.returncode == 0 and out.is_file()
        # publish atomically: a half-written entry is never read
        cache.parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=".tmp-", dir=cache.parent))
        if ok:
            shutil.copyfile(out, stage / "kernel.cubin")
        (stage / "result.json").write_text(json.dumps({"ok": ok, "log": log}))
        try:
            stage.rename(cache)
        except OSError:  # a concurrent compile of the same source won the race
            shutil.rmtree(stage, ignore_errors=True)
    return CompileResult(
        ok=ok,
        log=log,
        cubin=(cache / "kernel.cubin") if ok else None,
        resources=parse_ptxas(log),
        seconds=seconds,
        cached=False,
    )
