"""The device-only CUDA path: `cuda_kernel(name)` launchers over a cubin, on torch tensors.

The candidate's `CUDA_SRC` was compiled to a cubin by nvcc (no PyTorch extension); here
its `extern "C" __global__` kernels are loaded with CuPy and launched on PyTorch's current
stream. Every launch is first checked: arguments against the kernel's parameters (pointer
dtypes, 32-bit ranges), and grid / block / shared memory / registers against the device's
limits (`LaunchLimitError`, never a launch the hardware would refuse). In dry-run mode (no
GPU, meta tensors) the same checks run and the launch is only recorded.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import Any

from verifiers.kernels.limits import (
    DeviceLimits,
    KernelResources,
    LaunchLimitError,
    check_launch,
    dims3,
)

_KERNEL = re.compile(
    r'extern\s+"C"\s+__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(\w+)\s*\(([^)]*)\)'
)
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict|signed)\b")

# C type -> torch dtype name (pointers) / scalar kind
_C_TYPES: dict[str, str] = {
    "float": "float32",
    "double": "float64",
    "__half": "float16",
    "half": "float16",
    "__nv_bfloat16": "bfloat16",
    "nv_bfloat16": "bfloat16",
    "int": "int32",
    "int32_t": "int32",
    "unsigned": "uint32",
    "unsigned int": "uint32",
    "uint32_t": "uint32",
    "long long": "int64",
    "long long int": "int64",
    "long": "int64",
    "long int": "int64",
    "int64_t": "int64",
    "unsigned long long": "uint64",
    "unsigned long": "uint64",
    "uint64_t": "uint64",
    "size_t": "uint64",
    "short": "int16",
    "int16_t": "int16",
    "char": "int8",
    "int8_t": "int8",
    "unsigned char": "uint8",
    "uint8_t": "uint8",
    "bool": "bool",
}
_INT_RANGE = {
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int8": (-128, 127),
    "uint8": (0, 255),
    "bool": (0, 1),
}
# vector pointer types read float32 / int32 tensors
_VECTOR_OF = {"float2": "float32", "float4": "float32", "int2": "int32", "int4": "int32"}


@dataclass(frozen=True)
class Param:
    name: str
    ctype: str
    pointer: bool

    @property
    def dtype(self) -> str | None:
        return _C_TYPES.get(self.ctype) or (_VECTOR_OF.get(self.ctype) if self.pointer else None)


def kernel_signatures(source: str) -> dict[str, list[Param]]:
    """The `extern "C" __global__` kernels of a CUDA source and their parameters."""
    out: dict[str, list[Param]] = {}
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S)
    for m in _KERNEL.finditer(text):
        params = []
        for i, raw in enumerate(p.strip() for p in m.group(2).split(",")):
            if not raw or raw == "void":
                continue
            pointer = "*" in raw or "[" in raw
            body = _QUALIFIERS.sub(" ", raw.replace("*", " ").replace("&", " "))
            words = body.split()
            name = words[-1] if len(words) > 1 else f"arg{i}"
            ctype = " ".join(words[:-1] if len(words) > 1 else words)
            params.append(Param(name, ctype, pointer))
        out[m.group(1)] = params
    return out


class KernelArgError(TypeError):
    """A launch whose arguments do not match the kernel's parameters."""


class Launcher:
    """One kernel: `k(grid=..., block=..., args=(...), shared_mem=0)`."""

    def __init__(
        self,
        name: str,
        params: list[Param],
        resources: KernelResources | None,
        limits: DeviceLimits,
        function: Any = None,
        stream_of: Any = None,
        record: list | None = None,
    ):
        self.name, self.params, self.resources, self.limits = name, params, resources, limits
        self._function = function  # cupy Function, None in dry-run
        self._stream_of = stream_of
        self._record = record
        self._optin = 0
        self._checked: dict = {}  # launch configs already checked against the limits
        self._packers = [self._packer(i, p) for i, p in enumerate(params)]

    def __call__(self, grid=None, block=None, args=(), shared_mem: int = 0, **extra):
        # the hot path stays short: timing sees host overhead wherever a kernel is tiny
        key = (grid, block, shared_mem) if not extra else None
        try:
            hit = self._checked.get(key) if key is not None else None
        except TypeError:  # an unhashable grid (a list) is checked every time
            key, hit = None, None
        g, b, shared = hit or self._dims(grid, block, shared_mem, extra)
        if self._record is not None and len(self._record) < 64:  # a refused launch too
            self._record.append(
                {"kernel": self.name, "grid": list(g), "block": list(b), "shared_mem": shared}
            )
        if hit is None:
            check_launch(self.name, g, b, shared, self.resources, self.limits)
            if key is not None:
                self._checked[key] = (g, b, shared)
        values = self._pack(args)
        if self._function is None:
            return None
        if shared > self.limits.shared_per_block and shared > self._optin:
            self._function.max_dynamic_shared_size_bytes = shared
            self._optin = shared
        self._function(g, b, values, shared_mem=shared, stream=self._stream_of())
        return None

    def _dims(self, grid, block, shared_mem, extra) -> tuple:
        if extra:
            raise KernelArgError(
                f"{self.name}: unknown launch option(s) {sorted(extra)}; use "
                "grid=, block=, args=, shared_mem="
            )
        if grid is None or block is None:
            raise KernelArgError(f"{self.name}: a launch needs grid= and block=")
        return dims3(grid, "grid"), dims3(block, "block"), int(shared_mem)

    def _pack(self, args) -> tuple:
        if len(args) != len(self._packers):
            sig = ", ".join(f"{p.ctype}{'*' if p.pointer else ''} {p.name}" for p in self.params)
            raise KernelArgError(
                f"{self.name} takes {len(self.params)} arguments ({sig}), got {len(args)}"
            )
        return tuple(pack(a) for pack, a in zip(self._packers, args, strict=True))

    def _packer(self, i: int, p: Param):
        np = _numpy()
        torch = _torch()
        where = f"{self.name} argument {i} ({p.name})"
        live = self._function is not None
        if p.pointer:
            want = getattr(torch, p.dtype) if p.dtype else None

            def pointer(a):
                if not isinstance(a, torch.Tensor):
                    raise KernelArgError(
                        f"{where} is a pointer: pass a tensor, not {type(a).__name__}"
                    )
                if want is not None and a.dtype != want:
                    raise KernelArgError(
                        f"{where}: {p.ctype}* needs a {p.dtype} tensor, got {a.dtype}"
                    )
                if live:
                    if a.device.type != "cuda":
                        raise KernelArgError(f"{where}: tensor is on {a.device}, not on the GPU")
                    return np.uint64(a.data_ptr())
                return None

            return pointer
        kind = p.dtype
        if kind is None or kind in ("float16", "bfloat16"):

            def unsupported(a):
                raise KernelArgError(
                    f"{where}: unsupported scalar parameter type {p.ctype!r} (pass half "
                    "values as float)"
                )

            return unsupported
        if kind in ("float32", "float64"):
            cast = np.float32 if kind == "float32" else np.float64

            def real(a):
                if isinstance(a, bool) or not isinstance(a, (int, float)):
                    raise KernelArgError(
                        f"{where} is {p.ctype}: pass a float, got {type(a).__name__}"
                    )
                return cast(a)

            return real
        lo, hi = _INT_RANGE[kind]
        cast = getattr(np, "bool_" if kind == "bool" else kind)

        def integer(a):
            if isinstance(a, (torch.Tensor, float)):
                raise KernelArgError(
                    f"{where} is {p.ctype}: pass a Python int, got {type(a).__name__}"
                )
            try:
                v = operator.index(a)
            except TypeError:
                raise KernelArgError(
                    f"{where} is {p.ctype}: pass an int, got {type(a).__name__}"
                ) from None
            if not lo <= v <= hi:
                raise KernelArgError(f"{where}: {v} does not fit {p.ctype} ({kind})")
            return cast(v)

        return integer


def _numpy():
    import numpy

    return numpy


def _torch():
    import torch

    return torch


class CudaModule:
    """The launchers of one candidate's cubin (or of its source alone, in dry-run)."""

    def __init__(
        self,
        source: str,
        resources: dict[str, KernelResources],
        limits: DeviceLimits,
        cubin: str | None,
        record: list | None = None,
    ):
        self.signatures = kernel_signatures(source)
        self.resources, self.limits, self.record = resources, limits, record
        self._module = None
        self._stream = None
        if cubin is not None:
            import cupy

            self._module = cupy.RawModule(path=cubin)
            self._cupy = cupy

    def _current_stream(self):
        import torch

        ptr = torch.cuda.current_stream().cuda_stream
        if self._stream is None or self._stream.ptr != ptr:
            self._stream = self._cupy.cuda.ExternalStream(ptr)
        return self._stream

    def kernel(self, name: str) -> Launcher:
        if not isinstance(name, str) or name not in self.signatures:
            known = ", ".join(sorted(self.signatures)) or "none"
            raise KernelArgError(
                f'cuda_kernel({name!r}): no extern "C" __global__ kernel of that name in '
                f"CUDA_SRC (found: {known})"
            )
        function = self._module.get_function(name) if self._module is not None else None
        return Launcher(
            name,
            self.signatures[name],
            self.resources.get(name),
            self.limits,
            function,
            self._current_stream,
            self.record,
        )


__all__ = ["CudaModule", "KernelArgError", "LaunchLimitError", "Launcher", "kernel_signatures"]
