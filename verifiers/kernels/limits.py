"""Launch limits of the target device, and the check every launch goes through.

The numbers are the CUDA limits of compute capability 9.0 (H100 / H200); on a GPU they
are read from the device itself (`DeviceLimits.from_device`). A launch past any of them
fails on real hardware with `invalid configuration argument` or `too many resources
requested for launch`; here it fails before launching, naming the limit.
Stdlib only: the CPU side checks launch records with it too.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class DeviceLimits:
    name: str = "sm_90 (H100/H200 limits)"
    max_grid: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    max_block: tuple[int, int, int] = (1024, 1024, 64)
    max_threads_per_block: int = 1024
    shared_per_block: int = 48 * 1024  # without opting in
    shared_per_block_optin: int = 227 * 1024  # cudaFuncAttributeMaxDynamicSharedMemorySize
    regs_per_block: int = 65536
    max_regs_per_thread: int = 255

    def to_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        """The launch limits in one line, for feedback on a refused launch."""
        return (
            f"{self.name}: at most {self.max_threads_per_block} threads per block, blockDim "
            f"up to {self.max_block}, gridDim up to {self.max_grid}, "
            f"{self.shared_per_block // 1024} KiB shared memory per block "
            f"({self.shared_per_block_optin // 1024} KiB after cudaFuncSetAttribute(..., "
            f"cudaFuncAttributeMaxDynamicSharedMemorySize, ...)), "
            f"{self.regs_per_block} registers per block"
        )

    @classmethod
    def from_dict(cls, d: dict) -> DeviceLimits:
        d = dict(d)
        for k in ("max_grid", "max_block"):
            d[k] = tuple(d[k])
        return cls(**d)


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reported for one kernel (`-Xptxas -v`)."""

    registers: int = 0
    static_shared: int = 0  # bytes of __shared__ arrays
    stack: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    extra: dict = field(default_factory=dict)


class LaunchLimitError(RuntimeError):
    """A launch that the device would refuse; the message names the limit."""


class EmptyLaunchError(LaunchLimitError):
    """A grid or block with a zero dimension: nothing would run (often a grid size
    rounded down, `n // BLOCK` for n < BLOCK)."""


def dims3(value, what: str) -> tuple[int, int, int]:
    if isinstance(value, int):
        value = (value,)
    try:
        dims = tuple(operator.index(v) for v in value)
    except TypeError:
        raise LaunchLimitError(f"{what} must be 1 to 3 integers, got {value!r}") from None
    if not 1 <= len(dims) <= 3:
        raise LaunchLimitError(f"{what} must be 1 to 3 integers, got {value!r}")
    return (*dims, *(1,) * (3 - len(dims)))  # type: ignore[return-value]


def check_launch(
    kernel: str,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    dynamic_shared: int,
    res: KernelResources | None,
    lim: DeviceLimits,
) -> None:
    """Raise LaunchLimitError if the device would refuse this launch."""
    axes = "xyz"
    for i, (g, m) in enumerate(zip(grid, lim.max_grid, strict=True)):
        if g < 1:
            raise EmptyLaunchError(
                f"{kernel}: gridDim.{axes[i]} = {g}: an empty grid runs nothing (a size "
                "rounded down?); it must be at least 1"
            )
        if g > m:
            raise LaunchLimitError(
                f"{kernel}: gridDim.{axes[i]} = {g} exceeds the device limit {m} "
                f"({lim.name}; only gridDim.x may reach 2^31-1)"
            )
    for i, (b, m) in enumerate(zip(block, lim.max_block, strict=True)):
        if b < 1:
            raise EmptyLaunchError(f"{kernel}: blockDim.{axes[i]} = {b}; it must be at least 1")
        if b > m:
            raise LaunchLimitError(
                f"{kernel}: blockDim.{axes[i]} = {b} exceeds the device limit {m} ({lim.name})"
            )
    threads = math.prod(block)
    if threads > lim.max_threads_per_block:
        raise LaunchLimitError(
            f"{kernel}: {threads} threads per block exceed the device limit "
            f"{lim.max_threads_per_block} ({lim.name})"
        )
    static = res.static_shared if res else 0
    if dynamic_shared < 0:
        raise LaunchLimitError(f"{kernel}: negative dynamic shared memory {dynamic_shared}")
    if static + dynamic_shared > lim.shared_per_block_optin:
        raise LaunchLimitError(
            f"{kernel}: {static} B static + {dynamic_shared} B dynamic shared memory exceed "
            f"the device limit {lim.shared_per_block_optin} B per block ({lim.name})"
        )
    if res and res.registers:
        # registers are allocated per warp in units of 256
        per_warp = math.ceil(res.registers * 32 / 256) * 256
        need = per_warp * math.ceil(threads / 32)
        if need > lim.regs_per_block:
            raise LaunchLimitError(
                f"{kernel}: {res.registers} registers/thread x {threads} threads need {need} "
                f"registers per block; the device has {lim.regs_per_block} ({lim.name}): "
                "too many resources requested for launch"
            )


def parse_ptxas(report: str) -> dict[str, KernelResources]:
    """Per-kernel registers, static shared memory, stack and spills from `ptxas -v`."""
    out: dict[str, dict] = {}
    current = None
    for line in report.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            current = m.group(1)
            out.setdefault(current, {})
            continue
        m = re.search(r"Function properties for (\w+)", line)
        if m:
            current = m.group(1)
            out.setdefault(current, {})
            continue
        if current is None:
            continue
        m = re.search(
            r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line
        )
        if m:
            out[current].update(
                stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3))
            )
        m = re.search(r"Used (\d+) registers", line)
        if m:
            out[current]["registers"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            out[current]["static_shared"] = int(s.group(1)) if s else 0
    return {k: KernelResources(**v) for k, v in out.items()}
