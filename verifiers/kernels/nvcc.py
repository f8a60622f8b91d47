"""nvcc: CUDA source to an sm_90 cubin with the ptxas resource report, cached by content.

The device-only path never builds a PyTorch extension: `CUDA_SRC` goes straight to a
cubin (~0.2 s) that the runner loads and launches on PyTorch tensors. Compiles of the same
source, flags and nvcc are done once: the cache key is the sha256 of all three, and a
cached entry holds the cubin and nvcc's own output (so a cached failure fails the same
way).

The cache is the host's alone (issue 11: a world-writable cache bound into the runners
let a candidate plant "compiled ok" for code that does not compile, or a cubin of its
own): its dirs are 0700, nothing of it is bound into any sandbox (the runner gets the
cubin's bytes in its job), and every entry is verified on read: one file named by its
key, holding the key, the result, the cubin and its sha256, sealed with an HMAC under a
key only this host holds. An entry that fails any check is dropped and rebuilt. nvcc
itself runs sandboxed; its cubin is read back without following links and size-capped.
Writes are atomic (temp file, then rename). Stdlib only.
"""

from __future__ import annotations

import base64
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

from verifiers.hostcache import SealedCache
from verifiers.kernels.limits import KernelResources, parse_ptxas
from verifiers.sandbox import Sandbox, SandboxUnavailable
from verifiers.warm import OutputRefused, read_beneath

CUDA_HOMES = ("/usr/local/cuda", "/usr/local/cuda-13.0")
INSTALL_HINT = (
    "install the CUDA toolkit's nvcc (e.g. apt-get install nvidia-cuda-toolkit, or NVIDIA's "
    "cuda-nvcc package) or set CUDA_HOME"
)
DEFAULT_ARCH = "sm_90"
CUBIN_MAX_BYTES = 64 * 2**20
ENTRY_MAX_BYTES = 2 * CUBIN_MAX_BYTES


def find_nvcc() -> str | None:
    """nvcc's real path: links resolved (/usr/local/cuda -> /etc/alternatives/cuda ->
    cuda-13.0), since in the sandbox, where /etc is not bound whole, nvcc finds its own
    dir from the path it was started by and crashed (`_HERE_=(null)`, a segfault)."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    for root in ([home] if home else []) + list(CUDA_HOMES):
        cand = Path(root) / "bin" / "nvcc"
        if cand.is_file() and os.access(cand, os.X_OK):
            return os.path.realpath(cand)
    found = shutil.which("nvcc")
    return os.path.realpath(found) if found else None


def default_cache_dir() -> Path:
    """The user's cache dir (XDG), where `KernelSettings.cache_dir` is not given."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "crucible" / "kernels"


@dataclass(frozen=True)
class CompileResult:
    ok: bool
    log: str  # nvcc's stderr + stdout (errors, warnings, the ptxas report)
    cubin: bytes | None
    resources: dict[str, KernelResources]
    seconds: float
    cached: bool
    timed_out: bool = False
    output_capped: bool = False  # nvcc printed more than Limits.output_bytes: stopped
    crashed: bool = False  # nvcc itself died (a signal, "Segmentation fault"): the tool's
    key: str = ""  # its entry in the HostCache (a build node hands it on: `seed`)


@functools.cache
def nvcc_version(nvcc: str) -> str:
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "unknown"


def cubin_flags(arch: str = DEFAULT_ARCH, extra_flags: tuple[str, ...] = ()) -> tuple[str, ...]:
    """nvcc's flags for a candidate's cubin (ptxas's report of each kernel's resources
    included), before its `-o` and source."""
    return ("-cubin", f"-arch={arch}", "-O3", "-Xptxas", "-v", "-lineinfo", *extra_flags)


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
    """Compile `source` to a cubin for `arch`; cached by (source, flags, nvcc version).
    `timeout_s`: nvcc's wall-clock limit (`KernelSettings.compile_timeout_s`); its CPU
    budget is as large, so a run the wall clock cut short of it is the machine's
    (`machine_slow`, raised as a MachineFault), never a candidate's time-out."""
    nvcc = nvcc or find_nvcc()
    if nvcc is None:
        raise FileNotFoundError(f"nvcc not found: {INSTALL_HINT}")
    flags = cubin_flags(arch, extra_flags)
    key = hashlib.sha256(
        json.dumps([source, flags, nvcc_version(nvcc)]).encode("utf-8", "surrogatepass")
    ).hexdigest()
    cache = HostCache(cache_dir or default_cache_dir())
    hit = cache.get(key)
    if hit is not None:
        return CompileResult(
            ok=hit["ok"],
            log=hit["log"],
            cubin=hit["cubin"],
            resources=parse_ptxas(hit["log"]),
            seconds=0.0,
            cached=True,
            key=key,
        )
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="crucible-nvcc-") as tmp:
        work = sandbox.prepare_workdir(Path(tmp))
        (work / "kernel.cu").write_text(source, encoding="utf-8")
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
        if machine := res.machine_fault("nvcc"):  # slow machine, outside kill: not cached
            raise machine
        if res.timed_out:
            return CompileResult(
                False,
                f"nvcc did not finish in {timeout_s:g}s",
                None,
                {},
                seconds,
                False,
                timed_out=True,
            )
        if res.output_capped:  # not cached: the cap is the caller's, not the source's
            return CompileResult(
                False,
                f"nvcc printed more than {sandbox.limits.output_bytes} bytes about this "
                f"source; stopped:\n{(res.stderr + res.stdout)[-2000:]}",
                None,
                {},
                seconds,
                False,
                output_capped=True,
            )
        log = res.stderr + res.stdout
        if nvcc_crashed(res.returncode, log):  # the tool's failure, never cached
            return CompileResult(False, log[-2000:], None, {}, seconds, False, crashed=True)
        cubin = None
        if res.returncode == 0:
            # the sandbox's dir: never follow a link there, never read past the cap
            with contextlib.suppress(OSError, OutputRefused):
                cubin = read_beneath(work, work / "kernel.cubin", CUBIN_MAX_BYTES)
        ok = cubin is not None
        cache.put(key, ok, log, cubin)
    return CompileResult(
        ok=ok,
        log=log,
        cubin=cubin,
        resources=parse_ptxas(log),
        seconds=seconds,
        cached=False,
        key=key,
    )


def nvcc_crashed(returncode: int, log: str) -> bool:
    """nvcc (or a stage it ran) died of a signal rather than reporting errors."""
    if returncode < 0 or returncode in (128 + 6, 128 + 11):
        return True
    return "Segmentation fault" in log and ": error" not in log


class HostCache(SealedCache):
    """nvcc results by key under `root/cubin`, written and read by the host only."""

    def __init__(self, root: Path):
        super().__init__(Path(root) / "cubin", ENTRY_MAX_BYTES)

    def get(self, key: str) -> dict | None:
        """The entry for `key`, or None (missing, or dropped because it failed a check)."""
        body = self.read(key)
        if body is None:
            return None
        entry = self._decoded(body)
        if entry is None:
            with contextlib.suppress(OSError):
                self.path(key).unlink()
        return entry

    def decode(self, body: dict) -> dict | None:
        cubin = base64.b64decode(body["cubin"]) if body["cubin"] is not None else None
        good = (
            isinstance(body["ok"], bool)
            and isinstance(body["log"], str)
            and body["ok"] == (cubin is not None)
            and (cubin is None or hashlib.sha256(cubin).hexdigest() == body["cubin_sha256"])
        )
        return {"ok": body["ok"], "log": body["log"], "cubin": cubin} if good else None

    def put(self, key: str, ok: bool, log: str, cubin: bytes | None) -> None:
        self.write(
            key,
            {
                "ok": ok,
                "log": log,
                "cubin": base64.b64encode(cubin).decode() if cubin is not None else None,
                "cubin_sha256": hashlib.sha256(cubin).hexdigest() if cubin is not None else None,
            },
        )
