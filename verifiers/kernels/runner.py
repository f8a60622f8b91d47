"""The process that runs candidate kernel code: `python -m verifiers.kernels.runner`.

Candidate code runs here and only here, never in the verifier's own process. The verifier
(the parent) keeps what must not be forged: it computes the reference outputs itself and
compares them with the output files this process writes, so nothing the candidate prints,
patches or fakes in this process can make a wrong kernel pass. Timing is measured here
(the candidate's kernels run here) under the static anti-cheat rules.

It runs warm (`--serve`, started by `verifiers.kernels.pool`): it imports torch and
Triton once, then takes jobs as JSON lines on stdin and answers on the file descriptor
`--result-fd` (not stdout, which the candidate can print to). On a CPU node it runs
Triton's interpreter, or (an `aot` worker) compiles Triton for sm_90.

The warm process never runs candidate code: every job runs in a child forked for it
(~10 ms), which exits with the job. The child never holds the result pipe (it hands its
result to the parent on a pipe of its own), and once it is gone the parent kills every
other process of the sandbox (`--reap`: all of them are the candidate's) and wipes what it
wrote, except the job's output dir and its own verification's private caches (Triton's,
torch extensions': `session` in the job, a fresh token per verification). So nothing one
candidate does (threads, patched modules, planted files, a poisoned cache, a process left
running) reaches the next one, and the reference never enters this process: the host
sends the problem with the reference's forward removed and compares the outputs itself.

Job steps (each job starts with `load`: children keep nothing between jobs):
`load` (problem + candidate, models built, Model's weights loaded into ModelNew),
`launch` (dry run of forward at the timing shapes on meta tensors: every kernel launch is
recorded and checked against the device's limits without running), `aot` (Triton: compile
every recorded launch for sm_90), `warm` (GPU, after `launch`: one forward at the timing
shapes, or the small ones past a launch limit: Triton's JIT compile), `outputs` (forward on
each trial's fresh inputs, allocations poisoned with NaN, inputs and allocations between
red zones checked after forward; on a GPU each trial's inputs and outputs handed to the
verifier as exported GPU memory, on a CPU saved as files), `time`
(CUDA events, L2 flushed, a device-wide synchronize per run, in rounds until the median
is tight; the last run's output is handed over too; after `outputs` in one job, only once
the verifier has answered the runner's ask for the GPU alone with a go).
Needs only torch, numpy, and triton or cupy: no Prefect, Ray, deltalake or DuckDB.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import hashlib
import json
import linecache
import os
import re
import select
import signal
import sys
import time
import traceback
import types
import weakref
from pathlib import Path
from typing import Any

# The interpreter is chosen before triton is first imported (CPU mode sets it in the env).
import torch

from verifiers import stats
from verifiers.kernels.domain import TIMING_MODES, TIMING_SLEEP_DEFAULT, TIMING_SLEEPS
from verifiers.kernels.limits import (
    DeviceLimits,
    KernelResources,
    LaunchLimitError,
    check_launch,
    dims3,
)
from verifiers.sandbox import empty_dir

SMALL_SEED_OFFSET = 7919
RESULT_CAP = 32 * 2**20  # a child's result line (metadata only; outputs go to files)
_SESSION = re.compile(r"^[0-9a-f]{8,64}$")
GPU_ARCH = 90  # what Triton compiles for without a GPU: the GPU nodes' H100 / H200 (sm_90)


class FakeKernelError(TypeError):
    """A function decorated like a Triton kernel that is not a Triton kernel object."""


class JobError(Exception):
    """A failure at a step, carried to the parent as data."""

    def __init__(self, step: str, exc: BaseException):
        super().__init__(f"{step}: {exc}")
        self.step, self.exc = step, exc


def describe(exc: BaseException) -> dict[str, Any]:
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    chain = []
    e: BaseException | None = exc
    while e is not None and len(chain) < 4:
        chain.append(f"{type(e).__module__}.{type(e).__qualname__}")
        e = e.__cause__ or e.__context__
    return {
        "type": type(exc).__qualname__,
        "types": chain,
        "message": str(exc)[:4000],
        "traceback": "".join(tb)[-6000:],
    }


# --- modules --------------------------------------------------------------------------------
def load_module(
    name: str, source: str, filename: str, extra: dict | None = None, register: bool = True
):
    """Execute `source` as a fresh module. Its text is registered with linecache under a
    per-content path, so tracebacks show its lines and Triton's JIT can read its source.
    Only the candidate is put in sys.modules (Triton's JIT finds its globals there)."""
    digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    filename = f"/crucible/{digest}/{filename}"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    mod = types.ModuleType(name)
    mod.__file__ = filename
    if extra:
        mod.__dict__.update(extra)
    if register:
        sys.modules[name] = mod  # triton's JIT looks functions' globals up through their module
    try:
        exec(compile(source, filename, "exec"), mod.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return mod


def problem_module(source: str, overrides: dict | None, tag: str):
    mod = load_module(f"crucible_problem_{tag}", source, "problem.py", register=False)
    for key, value in (overrides or {}).items():
        if not hasattr(mod, key):
            raise KeyError(f"[harness.small] sets {key!r}, which problem.py does not define")
        setattr(mod, key, value)
    return mod


def make_inputs(problem, seed: int, device: str, shift: float = 0.0) -> list:
    """The problem's inputs for `seed`; `shift` moves floating inputs (a trial with every
    value negative catches a max reduction started at 0 instead of -inf)."""
    torch.manual_seed(seed)
    with torch.device(device):
        inputs = problem.get_inputs()
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
    if shift:
        inputs = [
            x.add_(shift) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
            for x in inputs
        ]
    return inputs


def build_reference(problem, init_seed: int, device: str):
    torch.manual_seed(init_seed)
    model = problem.Model(*problem.get_init_inputs())
    return model.to(device).eval()


def build_candidate(problem, cand, entry: str, reference, init_seed: int, device: str):
    """`reference` is the Model, or a function that builds it (called only when the
    candidate has state to load: most kernels have no weights)."""
    cls = getattr(cand, entry, None)
    if cls is None:
        raise NameError(f"the candidate defines no `{entry}`")
    torch.manual_seed(init_seed)
    new = cls(*problem.get_init_inputs())
    if not isinstance(new, torch.nn.Module):
        raise TypeError(f"`{entry}` must be a torch.nn.Module subclass")
    if callable(reference) and not isinstance(reference, torch.nn.Module):
        reference = reference() if new.state_dict() else None
    if reference is not None:
        ref_sd, new_sd = reference.state_dict(), new.state_dict()
        if ref_sd.keys() == new_sd.keys() and all(
            ref_sd[k].shape == new_sd[k].shape for k in ref_sd
        ):
            new.load_state_dict({k: v.to("cpu") for k, v in ref_sd.items()})
    return new.to(device).eval()


def as_outputs(value) -> list:
    outs = list(value) if isinstance(value, (tuple, list)) else [value]
    for i, o in enumerate(outs):
        if not isinstance(o, torch.Tensor):
            raise TypeError(f"forward returned {type(o).__name__} as output {i}; expected tensors")
    return outs


# --- outputs to the parent: raw bytes (no pickle), dtype and shape beside them --------------
def save_raw(t, path: Path) -> dict:
    t = t.detach().to("cpu").contiguous()
    t.view(-1).view(torch.uint8).numpy().tofile(path)
    return {"file": path.name, "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}


def raw_nbytes(dtype, shape) -> int:
    import torch as _torch

    n = 1
    for d in shape:
        n *= int(d)
    return n * _torch.empty((), dtype=dtype).element_size()


def tensor_from_bytes(data: bytes, dtype, shape, device: str):
    """An output the runner wrote, read by the host (`Worker.read_output`): exactly the
    byte count of its dtype and shape."""
    if len(data) != raw_nbytes(dtype, shape):
        raise ValueError(f"output file holds {len(data)} bytes, not a {dtype}{list(shape)}")
    buf = bytearray(data)  # writable, owned: torch.frombuffer warns on read-only memory
    if not buf:
        return torch.empty(list(shape), dtype=dtype, device=device)
    return torch.frombuffer(buf, dtype=dtype).reshape(list(shape)).to(device)


# --- poisoned allocation ------------------------------------------------------------------
def _poison(t):
    if isinstance(t, torch.Tensor) and t.device.type != "meta":
        if t.is_floating_point() or t.is_complex():
            t.fill_(float("nan"))
        elif t.dtype != torch.bool:
            t.fill_(torch.iinfo(t.dtype).min)
    return t


# --- red zones -----------------------------------------------------------------------------
# a zone is as large as its buffer, within these bounds: past the last block of a tail
# store (up to 2**20 fp32 elements), a bounded overhead on many small ones. The leading zone
# is a multiple of ZONE_ALIGN, so the buffer starts as aligned as the caching allocator's
# (a kernel's 16-byte vector loads stay legal)
RED_ZONE_MIN, RED_ZONE_MAX = 64 << 10, 4 << 20
ZONE_ALIGN = 512
ZONED_DEVICES = ("cpu", "cuda")
SNAN_FP32, SNAN_PAYLOAD = 0x7F800001, 0x003FFFFF  # exponent all ones, quiet bit clear
FINITE_HALF, FINITE_SIGN = 0x7BFF, -0x8000  # 65504 in fp16; the sign bit kept random
_EMPTY = torch.empty


class OutOfBoundsWrite(RuntimeError):
    """The candidate wrote into a red zone: outside a buffer it was given or allocated."""


class RedZones:
    """Each buffer forward is given (its inputs) or allocates (torch.empty & co.) sits
    between two red zones, on the CPU or the GPU alike, checked after forward: a changed
    byte is a write outside the buffer (a dropped tail mask or bounds guard, an unmasked
    atomic_add), named with its offset. Without them such a write lands in whatever the
    heap or the caching allocator holds next: the child crashes, hangs or passes by
    chance (the same Triton candidate was wrong_answer on one run and a timeout on
    another; on the H200 most dropped guards passed). The zones' NaNs also feed a read
    past the end (an unmasked load) garbage, instead of the zeros of fresh memory that a
    sum absorbs. Buffers are held weakly (a temporary forward frees is freed, its memory
    with it): a temporary's zones are checked as it is freed (an atomic_add's
    accumulator, divided into the output and dropped), the others' after forward. The
    check runs in the candidate's process: it catches a buggy kernel's stray store, not
    one that forges the zones back (that gains nothing: the verifier judges the outputs
    and inputs it reads itself)."""

    def __init__(self, finite: bool = False) -> None:
        if finite:
            # each 16-bit half +-0x7BFF: fp16's largest finite, and as bf16, fp32 or fp64
            # words huge finite values of random sign. A read past the end that a NaN
            # cannot show (the GPU's max and a `where(x > m, ...)` drop a NaN operand) moves
            # a max, a min or a sum by them: one trial holds these zones (`_trials`)
            halves = torch.frombuffer(bytearray(os.urandom(4096)), dtype=torch.int16)
            words = (halves & FINITE_SIGN) | FINITE_HALF
        else:
            # each 32-bit word a random signalling NaN: read as data it is NaN (it never
            # passes), and an add into it, even of 0.0 (an unmasked atomic_add of a
            # masked-off lane), quiets it on the CPU and canonicalises it on the GPU: its
            # bits change
            words = torch.frombuffer(bytearray(os.urandom(4096)), dtype=torch.int32)
            words = (words & SNAN_PAYLOAD) | SNAN_FP32
        self.fill = words.view(torch.uint8).repeat(RED_ZONE_MAX // 4096)
        self._fills: dict[str, Any] = {"cpu": self.fill}
        self.zones: list[tuple[str, Any, int, int]] = []
        self.allocated = 0  # buffers forward allocated, named in that order
        self.stray: list[str] = []  # what the zones of buffers freed during forward showed

    def _fill(self, device) -> Any:
        key = str(device)
        if key not in self._fills:
            self._fills[key] = self.fill.to(device)
        return self._fills[key]

    def _zoned(self, like, what: str):
        """An uninitialised strided tensor like the meta tensor `like`, between zones."""
        from torch.multiprocessing.reductions import StorageWeakRef

        span = 1 + sum((n - 1) * st for n, st in zip(like.shape, like.stride(), strict=True))
        nbytes = span * like.element_size()
        zone = max(RED_ZONE_MIN, min(RED_ZONE_MAX, nbytes))
        zone = -(-zone // ZONE_ALIGN) * ZONE_ALIGN
        device = like.device
        buf = _EMPTY(2 * zone + nbytes, dtype=torch.uint8, device=device)  # not the patched one
        fill = self._fill(device)
        buf[:zone].copy_(fill[:zone])
        buf[zone + nbytes :].copy_(fill[:zone])
        out = buf[zone : zone + nbytes].view(like.dtype).as_strided(like.shape, like.stride())
        what += f" ({str(like.dtype).removeprefix('torch.')}{list(like.shape)})"
        self.zones.append((what, StorageWeakRef(buf.untyped_storage()), zone, nbytes))
        # a temporary forward lets go of (an atomic_add's accumulator) is judged as it goes
        weakref.finalize(out, self._freed, what, buf, zone, nbytes)
        return out

    def _freed(self, what: str, buf, zone: int, nbytes: int) -> None:
        with contextlib.suppress(Exception):  # a finalizer must never raise
            said = self._scan(what, buf.untyped_storage(), zone, nbytes)
            if said and not self.stray:
                self.stray.append(said)

    def _sides(self, storage, zone: int, nbytes: int) -> tuple | None:
        """A zoned buffer's storage as (the fill, the zone before, the zone past its end),
        bytes; None where forward resized it (`out=` of another size: new memory, no
        zones of ours), which is not judged."""
        if storage.nbytes() != 2 * zone + nbytes:
            return None
        raw = _EMPTY(0, dtype=torch.uint8, device=storage.device).set_(
            storage, 0, (storage.nbytes(),)
        )
        return self._fill(storage.device)[:zone], raw[:zone], raw[zone + nbytes :]

    def _scan(self, what: str, storage, zone: int, nbytes: int) -> str | None:
        """What was written into the zones of `storage` (a zoned buffer's), or None."""
        sides = self._sides(storage, zone, nbytes)
        if sides is None:
            return None
        fill, before, past = sides
        for side, got in (("before", before), ("past the end of", past)):
            if torch.equal(got, fill):
                continue
            bad = (got != fill).nonzero().flatten().cpu()
            lo, hi, where = int(bad[0]), int(bad[-1]), "past its end"
            if side == "before":
                lo, hi, where = zone - hi, zone - lo, "before its start"
            whose = "forward was given" if what.startswith("input") else "forward allocated"
            return (
                f"{bad.numel()} byte(s) written {side} {what}, which {whose} "
                f"(at {lo}-{hi} bytes {where}; {storage.device.type} memory)"
            )
        return None

    def allocate(self, fn, a: tuple, k: dict):
        """`fn(*a, **k)` (an allocator), in a guarded buffer when it makes a non-empty
        strided CPU or CUDA tensor (None otherwise: the caller allocates as before)."""
        if "out" in k:
            return None
        try:  # the tensor it would make, without its memory
            shape = fn(*a, **{**k, "device": "meta"})
        except Exception:
            return None
        device = k.get("device")
        if device is None and a and isinstance(a[0], torch.Tensor):
            device = a[0].device  # empty_like / new_empty: the source's device
        device = torch.device(device if device is not None else "cpu")
        if device.type not in ZONED_DEVICES or shape.layout != torch.strided:
            return None
        if shape.numel() == 0:
            return None
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        self.allocated += 1
        return self._zoned(_Layout.of(shape, device), f"buffer {self.allocated - 1}")

    def guard_inputs(self, inputs: list) -> None:
        """Each dense tensor of `inputs` replaced, in place, by a copy between zones (a
        store before or past an input is as much a stray write as one past an output)."""
        for k, x in enumerate(inputs):
            if (
                isinstance(x, torch.Tensor)
                and x.device.type in ZONED_DEVICES
                and x.layout == torch.strided
                and x.numel() > 0
                and x.is_contiguous()
            ):
                meta = torch.empty(x.shape, dtype=x.dtype, device="meta")
                guarded = self._zoned(_Layout.of(meta, x.device), f"input {k}")
                guarded.copy_(x)
                inputs[k] = guarded

    def check(self) -> None:
        """Raise OutOfBoundsWrite for the first stray write: into the zones of a buffer
        freed during forward, or of one alive now."""
        if self.stray:
            raise OutOfBoundsWrite(self.stray[0])
        alive = []
        for what, ref, zone, nbytes in self.zones:
            storage = torch.UntypedStorage._new_with_weak_ptr(ref.cdata)
            if storage is None:
                continue  # freed during forward: judged then (`_freed`)
            sides = self._sides(storage, zone, nbytes)
            if sides is not None:
                alive.append((what, storage, zone, nbytes, sides))
        # every zone compared on its device at once, one read back per device (on a shared
        # GPU each read waits for this process's turn there); a zone that differs is
        # scanned again for the bytes and offsets its message names
        changed: dict = {}
        for *_, (fill, before, past) in alive:
            side = (before != fill).any() | (past != fill).any()
            changed.setdefault(str(fill.device), []).append(side)
        if not any(any(torch.stack(flags).tolist()) for flags in changed.values()):
            return
        for what, storage, zone, nbytes, _ in alive:
            said = self._scan(what, storage, zone, nbytes)
            if said:
                raise OutOfBoundsWrite(said)


@dataclasses.dataclass(frozen=True)
class _Layout:
    """Where a zoned buffer goes and how it is laid out (a meta tensor's shape, strides
    and dtype, with the device the meta tensor cannot carry)."""

    shape: tuple
    strides: tuple
    dtype: Any
    device: Any

    @classmethod
    def of(cls, meta, device) -> _Layout:
        return cls(tuple(meta.shape), tuple(meta.stride()), meta.dtype, torch.device(device))

    def stride(self) -> tuple:
        return self.strides

    def element_size(self) -> int:
        return torch.empty((), dtype=self.dtype, device="meta").element_size()


@contextlib.contextmanager
def poisoned_allocations(zones: RedZones | None = None):
    """torch.empty & co. return NaN-filled tensors: an output element the kernel never
    writes is NaN, and NaN never passes. With `zones`, a CPU or CUDA tensor they make, or
    torch.zeros & co. make (an atomic_add accumulates into one), comes between red zones
    (`RedZones.check` after forward)."""
    empties = ("empty", "empty_like", "empty_strided")
    zeros = ("zeros", "zeros_like")
    saved = {n: getattr(torch, n) for n in (*empties, *zeros)}
    saved_new = {n: getattr(torch.Tensor, n) for n in ("new_empty", "new_zeros")}

    def wrap(fn, poison: bool):
        def alloc(*a, **k):
            t = zones.allocate(fn, a, k) if zones is not None else None
            if t is None:
                t = fn(*a, **k)
            elif not poison:
                t.zero_()
            return _poison(t) if poison else t

        return alloc

    try:
        for n, fn in saved.items():
            if n in empties or zones is not None:
                setattr(torch, n, wrap(fn, n in empties))
        for n, fn in saved_new.items():
            if n == "new_empty" or zones is not None:
                setattr(torch.Tensor, n, wrap(fn, n == "new_empty"))
        yield
    finally:
        for n, fn in saved.items():
            setattr(torch, n, fn)
        for n, fn in saved_new.items():
            setattr(torch.Tensor, n, fn)


def poison_cache(sizes) -> None:
    """Fill the blocks the caching allocator will hand out next with NaN bytes (0xFF):
    an output a C++ extension allocates (`torch::empty`, past the Python-level poison)
    and never writes is NaN, never a stale result left in reused memory."""
    if not sizes or not torch.cuda.is_available():
        return
    blocks = []
    for n in sizes:
        if int(n) > 0:
            b = torch.empty(int(n), dtype=torch.uint8, device="cuda")
            b.fill_(0xFF)
            blocks.append(b)
    # back to the allocator's cache, poisoned. No synchronize: a block goes back to the
    # stream it was made on, and is handed out again only on that stream, after the fill
    del blocks


# --- Triton launch hook -------------------------------------------------------------------
class TritonHook:
    """Wraps every Triton launch: grid and block checked against the device's limits,
    launches recorded (for the AOT compile), and skipped in dry-run mode."""

    def __init__(self, limits: DeviceLimits):
        self.limits = limits
        self.dry = False
        self.records: list[dict] = []

    def install(self) -> None:
        import inspect

        from triton.runtime.jit import JITFunction

        classes: list[type] = [JITFunction]
        with contextlib.suppress(ImportError):
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
        hook = self
        for cls in classes:
            orig = cls.run

            def run(self, *args, grid, warmup, _orig=orig, **kwargs):
                if warmup:
                    return _orig(self, *args, grid=grid, warmup=warmup, **kwargs)
                fn = getattr(self, "fn", None)
                name = getattr(fn, "__name__", "kernel")
                sig = inspect.signature(fn)
                known = {k: v for k, v in kwargs.items() if k in sig.parameters}
                bound = sig.bind_partial(*args, **known)
                bound.apply_defaults()
                meta = dict(bound.arguments)
                g = grid(meta) if callable(grid) else grid
                g3 = dims3(g, f"{name} grid")
                warps = int(kwargs.get("num_warps", 4) or 4)
                if len(hook.records) < 64:
                    hook.records.append(
                        {
                            "kernel": name,
                            "grid": list(g3),
                            "block": [32 * warps, 1, 1],
                            "args": {k: _arg_type(v) for k, v in meta.items()},
                            "options": {
                                k: kwargs[k] for k in ("num_warps", "num_stages") if k in kwargs
                            },
                        }
                    )
                check_launch(name, g3, (32 * warps, 1, 1), 0, None, hook.limits)
                if hook.dry:
                    return None
                return _orig(self, *args, grid=grid, warmup=warmup, **kwargs)

            cls.run = run


_TRITON_DTYPES = {
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float64": "fp64",
    "int32": "i32",
    "int64": "i64",
    "int16": "i16",
    "int8": "i8",
    "uint8": "u8",
    "bool": "i1",
}


def _arg_type(v) -> Any:
    """A launch argument as the AOT compile needs it: a type string or a plain value."""
    if isinstance(v, torch.Tensor):
        return {"ptr": _TRITON_DTYPES.get(str(v.dtype).removeprefix("torch."), "fp32")}
    if isinstance(v, bool) or v is None:
        return {"value": v}
    if isinstance(v, int):
        return {"value": v, "int": "i32" if -(2**31) <= v < 2**31 else "i64"}
    if isinstance(v, float):
        return {"value": v, "float": "fp32"}
    if isinstance(v, str):
        return {"value": v}
    return {"value": repr(v)}


def aot_compile(code: str, records: list[dict], arch: int = GPU_ARCH) -> list[dict]:
    """Compile each distinct recorded Triton launch for `sm_<arch>` without a GPU."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    # a process whose triton was imported without the interpreter (the two do not mix)
    mod = load_module("crucible_candidate_aot", code, "candidate.py")
    limits = DeviceLimits()
    done, out = set(), []
    for rec in records:
        jit = getattr(mod, rec["kernel"], None)
        jit = getattr(jit, "fn", jit) if not hasattr(jit, "params") else jit
        if jit is None or not hasattr(jit, "params"):
            continue
        constexpr = {p.name for p in jit.params if p.is_constexpr}
        signature, constexprs = {}, {}
        for name, t in rec["args"].items():
            if name in constexpr:
                signature[name] = "constexpr"
                constexprs[name] = t.get("value")
            elif "ptr" in t:
                signature[name] = "*" + t["ptr"]
            elif "int" in t:
                signature[name] = t["int"]
            elif "float" in t:
                signature[name] = t["float"]
            elif t.get("value") is None:
                signature[name] = "constexpr"
                constexprs[name] = None
            else:
                signature[name] = "i1"
        key = json.dumps([rec["kernel"], signature, constexprs, rec["options"]], sort_keys=True)
        if key in done:
            continue
        done.add(key)
        t0 = time.perf_counter()
        compiled = triton.compile(
            ASTSource(fn=jit, signature=signature, constexprs=constexprs),
            target=GPUTarget("cuda", arch, 32),
            options=dict(rec["options"]),
        )
        meta = compiled.metadata
        shared = int(getattr(meta, "shared", 0) or 0)
        out.append(
            {
                "kernel": rec["kernel"],
                "seconds": round(time.perf_counter() - t0, 4),
                "shared": shared,
                "num_warps": int(getattr(meta, "num_warps", 4) or 4),
                "cubin_bytes": len(compiled.asm.get("cubin", b"")),
            }
        )
        if shared > limits.shared_per_block_optin:
            raise LaunchLimitError(
                f"{rec['kernel']}: needs {shared} B of shared memory; the device has "
                f"{limits.shared_per_block_optin} B per block (sm_90)"
            )
    return out


# --- Triton ahead of time, as a GPU node's JIT compiles ----------------------------------


class Sm90Driver:
    """What Triton's JIT asks its driver for (target, device, stream) where there is no
    GPU: sm_90, device 0, stream 0. Installed only to compile (a launch's `warmup`):
    nothing through it can launch."""

    def __init__(self, arch: int = GPU_ARCH):
        from triton.backends.compiler import GPUTarget

        self.target = GPUTarget("cuda", arch, 32)

    def get_current_target(self):
        return self.target

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device=None) -> int:
        return 0

    def get_active_torch_device(self):
        return torch.device("meta")


def precompile(job: dict) -> list[dict]:
    """Every Triton kernel the candidate's forward launches, at the timing sizes and at
    the small ones, compiled for sm_90 into this job's Triton cache by Triton's own JIT:
    each launch becomes `run(..., warmup=True)` (compile, never launch) on meta tensors
    under `Sm90Driver`. That is the cache key a GPU node's JIT computes for the same
    launch (the same Triton and target; the arguments' types, values and 16-byte
    alignment: a meta tensor's address is 0, a CUDA allocation's is aligned), so there
    the first launch finds it compiled. A launch that differs there (a view at an odd
    offset, a size only real data decides) compiles there, as without this. A forward
    that stops on meta tensors (it reads a value) keeps what it compiled before."""
    from triton.runtime import driver
    from triton.runtime.jit import JITFunction

    out: list[dict] = []
    orig = JITFunction.run

    def compile_only(fn, *args, grid, warmup, **kwargs):
        t0 = time.perf_counter()
        kernel = orig(fn, *args, grid=grid, warmup=True, **kwargs)
        if kernel is not None and len(out) < 64:
            name = getattr(getattr(fn, "fn", None), "__name__", "kernel")
            out.append({"kernel": name, "hash": str(getattr(kernel, "hash", ""))[:64]})
            out[-1]["seconds"] = round(time.perf_counter() - t0, 4)

    before = getattr(driver, "_active", None)  # none yet where no GPU driver loaded
    driver.set_active(Sm90Driver())
    JITFunction.run = compile_only
    try:
        for tag, sizes in (("full", None), ("small", job.get("small"))):
            problem = problem_module(job["problem"], sizes, tag)
            try:
                with torch.device("meta"):
                    torch.manual_seed(0)
                    inputs = problem.get_inputs()
                    mod = load_module(f"crucible_precompile_{tag}", job["code"], "candidate.py")
                    torch.manual_seed(job["init_seed"])
                    model = getattr(mod, job["entry"])(*problem.get_init_inputs())
                    with torch.no_grad():
                        model(*inputs)
            except Exception as e:  # a value it reads, an unsupported op: what compiled stays
                out.append({"stopped": tag, "why": f"{type(e).__name__}: {str(e)[:200]}"})
    finally:
        JITFunction.run = orig
        driver._active = before  # (a job's child ends after it anyway)
    return out


# --- timing -------------------------------------------------------------------------------
# adaptive timing: past the floor, a look at the median's interval every TIMING_ROUND runs
# (fewer looks, fewer stops on a lucky run of samples); it stops once the interval's
# half-width is within TIMING_TOL of the median. The stop wants the median's precision,
# not a verdict's certainty: a 90% interval (each end misses with chance TIMING_ALPHA),
# which at the floor of 10 is already the 2nd sample from either end (one outlier ignored)
TIMING_ROUND = 5
TIMING_TOL = 0.02
TIMING_ALPHA = 0.05


def _series(stream: list[float], device: list[float]) -> tuple[list[float], float]:
    """The times to judge (sorted) and how much of a run was off the timed stream.

    Past the synchronize's own latency (an honest run's gap, ~10-30 us), a gap of more
    than half the stream's own time is work the timed stream never waited for: then the
    device-wide times are the times."""
    s, d = sorted(stream), sorted(device)
    off = d[len(d) // 2] - s[len(s) // 2]
    return (d if off > max(0.05, 0.5 * s[len(s) // 2]) else s), off


def timing_stop(
    times: list[float], *, budget_ms: float, min_reps: int, max_reps: int
) -> str | None:
    """Why adaptive timing stops after `times` (None: time another round): `ci` once the
    median's interval is tight, else `cap` at max_reps, else `budget` once the runs cost
    budget_ms at the median's time each (as fixed mode counts its runs: one slow run, a
    preemption, does not end it); never before min_reps."""
    if len(times) < min_reps:
        return None
    low, mid, high = stats.median_interval(times, TIMING_ALPHA)
    if mid > 0 and (high - low) / 2 <= TIMING_TOL * mid:
        return "ci"
    if len(times) >= max_reps:
        return "cap"
    return "budget" if len(times) * mid >= budget_ms else None


def timed_rounds(
    run_round, *, fixed_reps: int | None, budget_ms: float, min_reps: int, max_reps: int
) -> dict:
    """Drive `run_round(n)` (n timed runs: their (stream ms, device ms) pairs) to a stop:
    `fixed_reps` runs in one round, or (None) adaptive rounds to `timing_stop`."""
    stream: list[float] = []
    device: list[float] = []
    stop = None
    while stop is None:
        if fixed_reps is not None:
            n = fixed_reps
        else:
            n = min_reps if not stream else min(TIMING_ROUND, max(1, max_reps - len(stream)))
        for s, d in run_round(n):
            stream.append(s)
            device.append(d)
        if fixed_reps is not None:
            stop = "fixed"
        else:
            times, _ = _series(stream, device)
            kw = {"budget_ms": budget_ms, "min_reps": min_reps, "max_reps": max_reps}
            stop = timing_stop(times, **kw)
    times, off = _series(stream, device)
    low, _, high = stats.median_interval(times, TIMING_ALPHA)
    dev = sorted(device)
    return {
        "median_ms": times[len(times) // 2],
        "min_ms": times[0],
        "p90_ms": times[int(len(times) * 0.9) - 1 if len(times) > 1 else 0],
        "reps": len(times),
        "stop": stop,
        "ci_ms": [low, high],
        "device_median_ms": dev[len(dev) // 2],
        "off_stream_ms": round(max(0.0, off), 5),
    }


def time_cuda(
    fn,
    args,
    *,
    mode: str = "adaptive",
    budget_ms: float = 100.0,
    min_reps: int = 10,
    max_reps: int = 100,
    keep_last: bool = False,
    sleep: str = TIMING_SLEEP_DEFAULT,
    sleep_us: float | None = None,
):
    """Median milliseconds of `fn(*args)`, L2 flushed before each run.

    `mode`: `adaptive` times in rounds until the median's interval is tight (or max_reps,
    or budget_ms of runs at the median's time); `fixed` runs clamp(budget_ms / one run's
    estimate, min_reps, max_reps) times. Each run has two ends: an event on the timed
    stream right after `fn`, and one after a device-wide synchronize. Past the
    synchronize's own latency, the gap between them is work still running on another
    stream (a side stream, a cuBLAS handle's stream): then the device-wide time is the
    time, and `off_stream_ms` says how much was off the timed stream. `keep_last`: also
    return the last run's result (checked like a trial's). `sleep`: how long the GPU sleep
    queued before each run is (`sleep_us_for`); `sleep_us` overrides it
    (`bench/probe_timing_sleep.py`). The result says the sleep and the host-side issue
    time of one forward, and `launch_bound` where the issue outlasted the sleep: then the
    GPU waited on the host inside the timed interval, and the time includes the launch."""
    if mode not in TIMING_MODES:
        raise ValueError(f"timing mode {mode!r}: use one of {', '.join(TIMING_MODES)}")
    _check_sleep(sleep)
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = int(getattr(props, "L2_cache_size", 50 * 2**20) or 50 * 2**20)
    flush = torch.empty(2 * l2, dtype=torch.int8, device="cuda")
    out = None
    with torch.no_grad():
        for _ in range(3):  # warm-up: module load, JIT, autotune stay out of the numbers
            out = fn(*args)
        torch.cuda.synchronize()
        est0, est1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        est0.record()
        issue: list[float] = []  # the host's side of each forward: until fn returns
        for _ in range(3):
            flush.zero_()
            h0 = time.perf_counter()
            out = fn(*args)
            issue.append(1e3 * (time.perf_counter() - h0))
        torch.cuda.synchronize()
        est1.record()
        torch.cuda.synchronize()
        per = max(est0.elapsed_time(est1) / 3, 1e-3)
        # a queued sleep keeps the GPU busy while the host issues the next run, so the
        # events time the device's work, not the Python launch overhead in front of it
        gpu_sleep = getattr(torch.cuda, "_sleep", None)
        slept_us = sleep_us if sleep_us is not None else sleep_us_for(per, max(issue), sleep)
        cycles = int(slept_us * 1e-6 * SLEEP_CLOCK_HZ)

        def run_round(n: int) -> list[tuple[float, float]]:
            nonlocal out
            # each run's start, end on the timed stream, end after the device-wide sync
            marks = [[torch.cuda.Event(enable_timing=True) for _ in range(3)] for _ in range(n)]
            for start, end, synced in marks:
                flush.zero_()
                if gpu_sleep is not None:
                    gpu_sleep(cycles)
                start.record()
                out = fn(*args)
                end.record()
                torch.cuda.synchronize()  # every stream of the device, not just this one
                synced.record()
            torch.cuda.synchronize()
            return [(s.elapsed_time(e), s.elapsed_time(y)) for s, e, y in marks]

        fixed = int(min(max_reps, max(min_reps, budget_ms / per))) if mode == "fixed" else None
        timing = timed_rounds(
            run_round, fixed_reps=fixed, budget_ms=budget_ms, min_reps=min_reps, max_reps=max_reps
        )
    issue_ms = sorted(issue)[len(issue) // 2]
    timing.update(
        sleep_us=round(slept_us, 1) if gpu_sleep is not None else 0.0,
        host_issue_ms=round(issue_ms, 4),
        launch_bound=gpu_sleep is None or 1e3 * issue_ms > slept_us,
    )
    return (timing, out) if keep_last else timing


SLEEP_CLOCK_HZ = 2.0e9  # torch.cuda._sleep counts cycles: ~2 GHz, an H100/H200's boost
SLEEP_RULE_US = (50.0, 200.0)  # the rule: the run's own estimate, clamped
SLEEP_MAX_US = 2000.0  # `issue`: never longer (a forward that waits on the GPU inside)


def sleep_us_for(per_ms: float, issue_ms: float, how: str) -> float:
    """Microseconds of GPU sleep queued before each timed run. `rule`: the run's estimate
    (`per_ms`, the device time of one run with its L2 flush) clamped to 50-200 us. `issue`:
    at least that, and at least twice the slowest host-side issue of a forward seen
    (`issue_ms`) plus 50 us, up to 2 ms: long enough that the GPU is still asleep when
    the last launch of the forward arrives, so the start event waits for none of them."""
    _check_sleep(how)
    lo, hi = SLEEP_RULE_US
    rule = min(max(1e3 * per_ms, lo), hi)
    if how == "rule":
        return rule
    return min(max(rule, 2e3 * issue_ms + 50.0), SLEEP_MAX_US)


def _check_sleep(how: str) -> None:
    if how not in TIMING_SLEEPS:
        raise ValueError(f"timing sleep {how!r}: use one of {', '.join(TIMING_SLEEPS)}")


def check_kernels(mod, names: list[str]) -> None:
    """Every function the candidate decorated like a kernel (`@...jit`, `@...autotune`,
    `@...heuristics`) must be a real Triton kernel object: a home-made `jit` that returns
    the function would run plain Python (torch) as the "kernel"."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    real: list[type] = [JITFunction]
    with contextlib.suppress(ImportError):
        from triton.runtime.interpreter import InterpretedFunction

        real.append(InterpretedFunction)
    for name in names:
        obj = getattr(mod, name, None)
        for _ in range(8):  # autotune(heuristics(jit(f))) wraps a few deep
            if type(obj) in (Autotuner, Heuristics):
                obj = getattr(obj, "fn", None)
                continue
            break
        if type(obj) not in real:
            raise FakeKernelError(
                f"`{name}` is decorated like a Triton kernel but is a {type(obj).__name__}, "
                "not a triton.jit kernel: decorate kernels with the real @triton.jit"
            )


# --- the job ------------------------------------------------------------------------------
STEP_MARK = b"@step "  # a line on the child's result pipe: the step it starts now
# the child's first line once its GPU works, written before the candidate's code is read:
# a job that failed without it failed before that code ran (`run_forked`)
GPU_READY = b"@gpu ready\n"
# how long a job child's CUDA initialisation may take before the runner calls the GPU hung:
# 10x the slowest seen (1.6 s, 16 contexts at once on the H100 node), and under the
# shortest deadline the host gives a GPU job (30 s), so the runner says it first
GPU_INIT_TIMEOUT_S = 20.0
STOPPED_GAP_S = 0.5  # a longer gap between the relay's polls: its tree was stopped (a pause)


def gpu_init() -> None:
    """The job child's CUDA context and a first allocation: the driver, the device (and an
    MPS server, where the node runs one) answer here, before the candidate's code exists
    in the process, so a failure here is the machine's (`gpu_unavailable`)."""
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()


def _refused(launch: Any) -> bool:
    """Whether the launch dry run refused a launch or its arguments."""
    return isinstance(launch, dict) and bool(launch.get("violation") or launch.get("arg_error"))


class _Laps:
    """Wall seconds between laps, summed by name: `lap(name)` charges the time since the
    last lap to `name` (None: to nothing, a new start)."""

    def __init__(self) -> None:
        self.t = time.perf_counter()
        self.sum: dict[str, float] = {}

    def lap(self, name: str | None) -> None:
        now = time.perf_counter()
        if name is not None:
            self.sum[name] = self.sum.get(name, 0.0) + now - self.t
        self.t = now

    def sums(self) -> dict[str, float]:
        return {k: round(v, 4) for k, v in self.sum.items()}


class Runner:
    def __init__(self, share=None, progress_fd: int = -1) -> None:
        self.state: dict[str, Any] = {}
        self.hook: TritonHook | None = None
        self.share = share  # the socket to the verifier for exported GPU memory, or None
        self.trial_clock = _Laps()  # where the trials' time goes (`_outputs_shared`)
        # where a step's start is told (`run_forked`): a child killed mid-job (a SIGSEGV
        # reading past a buffer) is judged at the step it died in, not at the job's first
        self.progress_fd = progress_fd

    def run(self, job: dict) -> dict:
        result: dict[str, Any] = {"ok": True, "seconds": {}}
        step = "setup"
        try:
            for step in job["steps"]:
                if step in ("outputs", "time") and _refused(result.get("launch")):
                    break  # the launch gate fails it: no trial runs an over-limit launch
                if self.progress_fd >= 0:
                    os.write(self.progress_fd, STEP_MARK + step.encode()[:32] + b"\n")
                t0 = time.perf_counter()
                getattr(self, f"step_{step}")(job, result)
                result["seconds"][step] = round(time.perf_counter() - t0, 4)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # everything the candidate does is data (SystemExit too)
            result["ok"] = False
            result["step"] = step
            refused = None
            if job.get("device") == "cuda":  # a C++ launch the runtime refused, and why
                from verifiers.kernels.launchrec import refused_launch

                with contextlib.suppress(Exception):  # no limits in a broken job: as it was
                    refused = refused_launch(e, self._limits(job))
                if refused is not None:
                    refused.__cause__ = e
            result["error"] = describe(refused or e)
        return result

    # setup shared by the steps
    def _limits(self, job) -> DeviceLimits:
        return DeviceLimits.from_dict(job["device_limits"])

    def step_load(self, job: dict, result: dict) -> None:
        self.state = {}
        device = job["device"]
        if device == "cuda" and job.get("gpu_fraction"):
            # the candidate's share of the card: past it torch's allocator refuses (its
            # own excess, `memory_limit`), so concurrent jobs never exceed the card
            torch.cuda.set_per_process_memory_fraction(float(job["gpu_fraction"]))
        limits = self._limits(job)
        problem = problem_module(job["problem"], None, "full")
        small = problem_module(job["problem"], job.get("small"), "small")
        extra: dict[str, Any] = {}
        records: list[dict] = []
        if job["domain"] == "triton":
            if self.hook is None:
                self.hook = TritonHook(limits)
                self.hook.install()
            self.hook.limits, self.hook.records, self.hook.dry = limits, records, False
        elif job.get("cuda_src") is not None:
            from verifiers.kernels.cudalaunch import CudaModule

            resources = {
                k: KernelResources(**v) for k, v in (job.get("kernel_resources") or {}).items()
            }
            self.state["cuda_resources"] = resources
            cubin = None
            if job.get("cubin_b64"):  # the host's verified cubin, never a path into a cache
                cubin = str(Path(os.environ.get("TRITON_HOME", ".")) / "kernel.cubin")
                Path(cubin).write_bytes(base64.b64decode(job["cubin_b64"]))
            cm = CudaModule(job["cuda_src"], resources, limits, cubin, records)
            extra["cuda_kernel"] = cm.kernel
        self.state.update(problem=problem, small=small, records=records, device=device)
        used: list[str] = []
        if job.get("prebuilt"):  # the host built the load_inline calls it could read
            from verifiers.kernels.build import prebuilt_loader

            where = Path(os.environ.get("TORCH_EXTENSIONS_DIR") or ".")
            used = prebuilt_loader(job["prebuilt"], str(job.get("toolchain", "")), where)
        cand = load_module("crucible_candidate", job["code"], "candidate.py", extra)
        if job.get("prebuilt"):
            result["prebuilt_used"] = len(used)
        if job["domain"] == "triton":
            check_kernels(cand, job.get("kernels") or [])
        init_seed = job["init_seed"]
        self.state.update(cand=cand, entry=job["entry"], init_seed=init_seed)
        ref = lambda: build_reference(problem, init_seed, "cpu")  # noqa: E731
        self.state["model"] = build_candidate(problem, cand, job["entry"], ref, init_seed, device)

    def _model(self, small: bool):
        """The candidate built for the full or the small problem (sizes feed __init__)."""
        if not small:
            return self.state["model"]
        if "model_small" not in self.state:
            st = self.state
            ref = lambda: build_reference(st["small"], st["init_seed"], "cpu")  # noqa: E731
            st["model_small"] = build_candidate(
                st["small"], st["cand"], st["entry"], ref, st["init_seed"], st["device"]
            )
        return self.state["model_small"]

    def step_launch(self, job: dict, result: dict) -> None:
        """Dry run at the timing shapes on meta tensors: launches checked, none run."""
        records = self.state["records"]
        records.clear()
        problem = self.state["problem"]
        limits = self._limits(job)
        dry_extra: dict[str, Any] = {}
        if job["domain"] == "cuda" and job.get("cuda_src") is not None:
            from verifiers.kernels.cudalaunch import CudaModule

            dry = CudaModule(job["cuda_src"], self.state["cuda_resources"], limits, None, records)
            dry_extra["cuda_kernel"] = dry.kernel
        if self.hook is not None:
            self.hook.dry = True
        try:
            with torch.device("meta"):
                torch.manual_seed(0)
                inputs = problem.get_inputs()
                mod = load_module("crucible_candidate_dry", job["code"], "candidate.py", dry_extra)
                torch.manual_seed(job["init_seed"])
                model = getattr(mod, job["entry"])(*problem.get_init_inputs())
            try:
                with torch.no_grad():
                    model(*inputs)
                result["launch"] = {"checked": True, "launches": records[:32]}
            except LaunchLimitError as e:
                result["launch"] = {
                    "checked": True,
                    "launches": records[-8:],
                    "violation": describe(e),
                }
            except TypeError as e:
                if type(e).__name__ != "KernelArgError":
                    raise
                result["launch"] = {
                    "checked": True,
                    "launches": records[-8:],
                    "arg_error": describe(e),
                }
            except Exception as e:  # host logic that needs real data (e.g. .item())
                result["launch"] = {
                    "checked": False,
                    "launches": records[:32],
                    "why": f"the dry run stopped: {type(e).__name__}: {str(e)[:300]}",
                }
        finally:
            if self.hook is not None:
                self.hook.dry = False
        records.clear()

    def step_aot(self, job: dict, result: dict) -> None:
        """Triton ahead of time for sm_90 (CPU mode; runs in a non-interpreter worker, with
        the launches the dry run recorded)."""
        result["aot"] = aot_compile(job["code"], job.get("records") or [])

    def step_precompile(self, job: dict, result: dict) -> None:
        """A build node's prebuild (`TritonVerifier.prebuild`, an aot runner: no GPU):
        every Triton kernel the candidate's forward launches, at the timing sizes and at
        the small ones, compiled for sm_90 into this job's Triton cache (`precompile`)."""
        result["precompiled"] = precompile(job)

    def _warm(self, small: bool) -> None:
        model, device = self._model(small), self.state["device"]
        problem = self.state["small" if small else "problem"]
        with torch.no_grad():
            as_outputs(model(*make_inputs(problem, 12345, device)))
        if device == "cuda":
            torch.cuda.synchronize()

    def step_warm(self, job: dict, result: dict) -> None:
        """After `launch`: one forward at the timing shapes, or at the small ones when the
        dry run found an over-limit launch (Triton compiles here, outside the GPU lock)."""
        self._warm(bool((result.get("launch") or {}).get("violation")))

    def step_outputs(self, job: dict, result: dict) -> None:
        if self.share is not None and job.get("share"):
            return self._outputs_shared(job, result)
        device = self.state["device"]
        out_dir = Path(job["out_dir"])
        files = []
        for i, trial in enumerate(job["trials"]):
            small = bool(trial.get("small"))
            problem = self.state["small" if small else "problem"]
            model = self._model(small)
            inputs = make_inputs(problem, trial["seed"], device, trial.get("shift", 0.0))
            zones = RedZones(finite=trial.get("zones") == "finite")
            zones.guard_inputs(inputs)
            with torch.no_grad(), poisoned_allocations(zones):
                outs = as_outputs(model(*inputs))
            if device == "cuda":
                torch.cuda.synchronize()
            zones.check()
            tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
            files.append(
                {
                    "outputs": [
                        save_raw(o, out_dir / f"out_{i}_{k}.bin") for k, o in enumerate(outs)
                    ],
                    # the inputs as forward left them: the verifier checks they are unchanged
                    "inputs": [
                        save_raw(x, out_dir / f"in_{i}_{k}.bin") for k, x in enumerate(tensors)
                    ],
                }
            )
        result["outputs"] = files

    def _outputs_shared(self, job: dict, result: dict) -> None:
        """GPU: each trial's inputs and outputs handed to the verifier as exported GPU
        memory (`devshare`), one trial at a time: the verifier compares on the GPU and
        answers before the next trial starts, so one trial's tensors are alive at once
        and nothing goes through host RAM."""
        answered = []
        self.trial_clock = clock = _Laps()
        for i, trial in enumerate(job["trials"]):
            small = bool(trial.get("small"))
            problem = self.state["small" if small else "problem"]
            clock.lap(None)
            inputs = make_inputs(problem, trial["seed"], "cuda", trial.get("shift", 0.0))
            clock.lap("inputs")
            finite = trial.get("zones") == "finite"
            model = self._model(small)
            reply = self._run_shared(job, i, model, inputs, trial.get("out_bytes"), finite=finite)
            answered.append(i)
            if not reply.get("go"):
                break
        result["outputs"] = {"shared": answered}
        # where the trials' time went, summed over them (`trial_inputs` ... `trial_reply`:
        # host clocks, so a part that waits for the GPU holds the work queued before it)
        result["seconds"].update({f"trial_{k}": v for k, v in clock.sums().items()})

    def _run_shared(
        self, job: dict, trial, model, inputs: list, out_bytes, outs=None, finite: bool = False
    ) -> dict:
        """One forward on inputs between red zones, then its inputs as it left them (the
        verifier sees whether the candidate changed them) and its outputs exported; the
        verifier's answer."""
        from verifiers.kernels import devshare

        exported: list[devshare.Exported] = []
        clock = self.trial_clock
        try:
            if outs is None:
                # forward works on copies between red zones; what it left in them (its
                # inputs as it left them, its outputs) is exported after the zones' check
                zones = RedZones(finite=finite)
                zones.guard_inputs(inputs)
                poison_cache(out_bytes)
                with torch.no_grad(), poisoned_allocations(zones):
                    outs = as_outputs(model(*inputs))
                torch.cuda.synchronize()
                clock.lap("forward")
                zones.check()
                clock.lap("zones")
            for x in inputs:
                if isinstance(x, torch.Tensor) and x.is_cuda:
                    exported.append(devshare.export_like(x, sync=False))
            n_in = len(exported)
            metas = []
            for o in outs:
                metas.append({"dtype": str(o.dtype).removeprefix("torch."), "shape": list(o.shape)})
                exported.append(devshare.export_like(o if o.is_cuda else o.to("cuda"), sync=False))
            del outs
            torch.cuda.synchronize()  # every copy made before the verifier reads one
            fds = [ex.fd() for ex in exported]
            header = {"nonce": job.get("nonce"), "trial": trial, "outputs": metas}
            header["inputs"] = n_in
            try:
                devshare.send_fds(self.share, header, fds)
            finally:
                devshare.close_fds(fds)
            clock.lap("export")
            self.share.settimeout(float(job.get("reply_timeout_s", 600)))
            raw = self.share.recv(devshare.MAX_MESSAGE)
            clock.lap("reply")
            reply = json.loads(raw.decode()) if raw else {}
            return reply if isinstance(reply, dict) else {}
        finally:
            for ex in exported:
                ex.close()

    def step_time(self, job: dict, result: dict) -> None:
        shared = self.share is not None and job.get("share")
        model = self._model(False)
        # drawn before the ask: the GPU alone is for the timed runs only
        inputs = make_inputs(self.state["problem"], job.get("timing_seed", 2024), "cuda")
        if shared and job.get("timing_slot") and not self._timing_slot(job, result):
            return  # a trial failed (or the verifier said no): nothing is timed
        mode = job.get("timing_mode", "adaptive")
        how = job.get("timing_sleep", TIMING_SLEEP_DEFAULT)
        timing, last = time_cuda(model, inputs, mode=mode, keep_last=True, sleep=how)
        result["timing"] = timing
        if shared:
            # the last timed run's output is checked too: a timed run is a trial
            reply = self._run_shared(job, "timed", model, inputs, None, outs=as_outputs(last))
            result["timed_checked"] = bool(reply)

    def _timing_slot(self, job: dict, result: dict) -> bool:
        """After the correctness trials of a job that also times: ask the verifier for
        the GPU alone and wait for its answer (go once every other job has set the GPU
        down, however long that takes: the verifier's time, not this job's)."""
        from verifiers.kernels import devshare

        t0 = time.perf_counter()
        devshare.send_fds(self.share, {"nonce": job.get("nonce"), "slot": "timing"}, [])
        self.share.settimeout(None)
        raw = self.share.recv(devshare.MAX_MESSAGE)
        result["seconds"]["slot"] = round(time.perf_counter() - t0, 4)
        reply = json.loads(raw.decode()) if raw else {}
        return isinstance(reply, dict) and reply.get("go") is True


def prime(device: str, aot: bool = False) -> None:
    """What the first candidate would otherwise pay: the meta device's first math op (it
    imports torch._dynamo: 2-7 s, measured on the H200, 0.9 s here, paid inside the launch
    dry run and an `aot` runner's `precompile`, both forwards on meta tensors), and the
    imports of Triton and CuPy. Nothing here touches CUDA: children are forked from this
    process, and a CUDA context does not survive a fork (each child makes its own). An
    `aot` runner skips CuPy. Runners that compile Triton also hash Triton's own files
    here once (`prime_triton_keys`)."""
    with torch.device("meta"):
        torch.ones(2).mul(2.0)
    with contextlib.suppress(ImportError):
        import triton
        import triton.language  # noqa: F401
        from triton.runtime import autotuner, jit  # noqa: F401
    if device == "cuda" or aot:
        prime_triton_keys()
    if device == "cuda" and not aot:
        with contextlib.suppress(ImportError):
            import cupy  # noqa: F401

        from verifiers.kernels import cudalaunch  # noqa: F401


def prime_triton_keys(arch: int = GPU_ARCH) -> None:
    """Triton's own content hashes, computed once in the warm parent instead of in every
    job's child: `triton_key()` reads and hashes Triton's sources and libtriton (~460 MB,
    0.4 s here, 0.42-0.47 s of a child's first launch on the H100 node), and the backend's
    hash runs `ptxas --version`. Every compile's cache key needs both (a cache hit too).
    They hash Triton's files, nothing of a candidate's, and are lru-cached: a forked child
    inherits them. Gluon, which a first launch's argument specialization imports, is
    imported here too. No CUDA is touched."""
    try:
        from triton.runtime import cache
    except ImportError:
        return
    with contextlib.suppress(Exception):  # imported by a first launch's specialization
        import triton.experimental.gluon  # noqa: F401  (0.19 s on the H100 node)
    with contextlib.suppress(Exception):
        cache.triton_key()
    with contextlib.suppress(Exception):
        from triton.backends.nvidia.compiler import get_ptxas_version

        get_ptxas_version(arch)


def _session_dirs(job: dict) -> Path | None:
    token = str(job.get("session", ""))
    return Path.cwd() / f".session-{token}" if _SESSION.match(token) else None


def _reap_others() -> None:
    """Kill every other process of the sandbox (its own pid namespace: all of them are
    the candidate's, started by the child or its descendants) and reap them."""
    for _ in range(100):
        try:
            os.kill(-1, signal.SIGKILL)  # all we may signal but ourselves (and pid 1)
        except ProcessLookupError:
            break
        except PermissionError:
            break
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        time.sleep(0.005)
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _died(status: int, step: str, rss_kb: int = 0) -> dict:
    if os.WIFSIGNALED(status):
        sig = signal.Signals(os.WTERMSIG(status)).name
        kind = "CandidateProcessLimit" if sig in ("SIGXCPU", "SIGXFSZ") else "CandidateDied"
        msg = f"the candidate's process was killed by {sig}"
    else:
        kind, msg = "CandidateDied", "the candidate's process exited with status "
        msg += f"{os.WEXITSTATUS(status)} before it reported"
    return {
        "ok": False,
        "step": step,
        "seconds": {},
        "error": {"type": kind, "types": [kind], "message": msg, "traceback": ""},
        # what this (trusted) process saw: how it died and its peak resident set
        "died": {
            "signal": signal.Signals(os.WTERMSIG(status)).name if os.WIFSIGNALED(status) else None,
            "peak_rss_kb": rss_kb,
        },
    }


def job_env(job: dict, session: Path | None) -> dict[str, str]:
    """The private caches of one verification, made under its session dir: Triton's,
    and torch extensions' keyed by the candidate's content, so two candidates that pass
    the same `load_inline(name=...)` never share a build, whatever worker runs them. On a
    GPU, Triton's starts with the driver module the host built (`tritondriver`), and the
    context's hardware queues are the verifier's `gpu_connections` where it names them."""
    queues = {}
    if job.get("device") == "cuda" and job.get("gpu_connections") is not None:
        queues = {"CUDA_DEVICE_MAX_CONNECTIONS": str(int(job["gpu_connections"]))}
    if session is None:
        return queues
    code = str(job.get("code", "")).encode("utf-8", "surrogatepass")
    ext = session / "torch_extensions" / hashlib.sha256(code).hexdigest()[:24]
    for d in (session / "triton", ext):
        d.mkdir(parents=True, exist_ok=True)
    if job.get("device") == "cuda":  # Triton's driver module, as the host built it
        from verifiers.kernels import tritondriver

        tritondriver.seed_cache(session / "triton")
    if job.get("triton_seed"):  # this candidate's kernels, as a build node compiled them
        from verifiers.kernels import tritondriver

        tritondriver.seed_triton(session / "triton", job["triton_seed"])
    return {
        "TRITON_CACHE_DIR": str(session / "triton"),
        "TORCH_EXTENSIONS_DIR": str(ext),
        "TRITON_HOME": str(session),
        "TORCHINDUCTOR_CACHE_DIR": str(session / "inductor"),
        **queues,
    }


def peak_rss_kb(pid: int) -> int:
    """VmHWM of a live process (its peak resident set so far), 0 when unreadable."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def run_forked(job: dict, result_fd: int, reap: bool, share=None, aot: bool = False) -> dict:
    """One job in a child of its own; this process only relays what the child said, and
    says itself (`gpu_unavailable`) whether a GPU job failed before its child had a working
    GPU, so before the candidate's code was read: the machine's fault, never the
    candidate's (GPU_READY; the child writes nothing else before that code runs). A CUDA
    initialisation still running after GPU_INIT_TIMEOUT_S (the tree's stopped time not
    counted) is killed and is the machine's too."""
    session = _session_dirs(job)
    out_dir = Path(job["out_dir"]).name if job.get("out_dir") else ""
    keep = {n for n in (out_dir, session.name if session else "") if n}
    empty_dir(Path.cwd(), keep)  # a candidate's files (see verifiers.sandbox.empty_dir)
    if reap:
        empty_dir("/tmp")  # the sandbox's own tmpfs, never the host's
    env = job_env(job, session)
    steps = [str(x) for x in job.get("steps") or ["setup"]]
    gpu = job.get("device") == "cuda" and not aot  # an aot runner's sandbox has no GPU
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: candidate code runs here and only here
        status = 0
        try:
            os.close(r)
            os.close(result_fd)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.environ.update(env)
            t0 = time.perf_counter()
            if gpu:
                try:
                    gpu_init()
                except BaseException as e:
                    failed = {"ok": False, "step": steps[0], "seconds": {}, "error": describe(e)}
                    os.write(w, json.dumps(failed).encode() + b"\n")
                    os._exit(0)
                os.write(w, GPU_READY)
            init_s = round(time.perf_counter() - t0, 4)
            res = Runner(share, w).run(job)
            if gpu:  # a metric (the candidate's process wrote it): the context's cost
                res["seconds"]["gpu_init"] = init_s
            data = json.dumps(res).encode()
            view = memoryview(data + b"\n")
            while view:
                view = view[os.write(w, view) :]
        except BaseException:
            status = 1
        os._exit(status)
    os.close(w)
    chunks, size, status, rss_kb = [], 0, None, 0
    # the child's time before GPU_READY, counting only the relay's own short poll gaps: a
    # timing's pause stops this whole tree, and its length is not the GPU's
    waiting, last, waited, hung = gpu, time.monotonic(), 0.0, False
    try:
        while True:
            if status is None:  # the child's peak RSS: evidence if it is killed
                rss_kb = max(rss_kb, peak_rss_kb(pid))
            if waiting and status is None:
                now = time.monotonic()
                gap, last = now - last, now
                if gap <= STOPPED_GAP_S:
                    waited += gap
                if chunks and chunks[0].startswith(GPU_READY):  # one write: one chunk
                    waiting = False
                elif waited > GPU_INIT_TIMEOUT_S:
                    os.kill(pid, signal.SIGKILL)  # no candidate code in it yet
                    waiting, hung = False, True
            ready, _, _ = select.select([r], [], [], 0.05)
            if ready:
                data = os.read(r, 1 << 16)
                if not data:
                    break
                if size <= RESULT_CAP:
                    chunks.append(data)
                size += len(data)
            if status is None:
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = st
                    if reap:  # grandchildren holding the pipe go too
                        _reap_others()
        if status is None:
            status = os.waitpid(pid, 0)[1]
    finally:
        os.close(r)
        if reap:
            _reap_others()
    data = b"".join(chunks)
    ready = gpu and data.startswith(GPU_READY)
    if ready:
        data = data[len(GPU_READY) :]
    res = _relayed(data, size, status, rss_kb, steps)
    if hung:
        res["error"] = {
            "type": "GpuInitTimeout",
            "types": ["GpuInitTimeout"],
            "message": f"the job's CUDA initialisation did not end in {GPU_INIT_TIMEOUT_S:.0f} s",
            "traceback": "",
        }
    # this process's own word, whatever the child's result said about it (a kill for a
    # hang is the machine's even where the ready line came in the instant before it)
    res["gpu_unavailable"] = gpu and (hung or (not ready and not res.get("ok")))
    return res


def _relayed(data: bytes, size: int, status: int, rss_kb: int, steps: list[str]) -> dict:
    """The child's result from what it wrote (its step marks, then one JSON line), or how
    it died at the last step it said it started."""
    step = steps[0]
    while data.startswith(STEP_MARK):  # the steps the child started, in order
        line, _, data = data.partition(b"\n")
        said = line[len(STEP_MARK) :].decode("ascii", "replace")
        if said in steps:  # only the job's own steps: anything else is ignored
            step = said
    if size > RESULT_CAP:
        return _died(status, step, rss_kb) | {
            "error": {
                "type": "CandidateDied",
                "types": ["CandidateDied"],
                "message": f"the candidate's process wrote a {size}-byte result",
                "traceback": "",
            }
        }
    try:
        res = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        return _died(status, step, rss_kb)
    return res if isinstance(res, dict) and "ok" in res else _died(status, step, rss_kb)


def serve(
    result_fd: int, device: str = "cpu", reap: bool = False, share_fd: int = -1, aot: bool = False
) -> int:
    out = os.fdopen(result_fd, "w", buffering=1)
    share = None
    if share_fd >= 0:  # exported GPU memory goes to the verifier on this socket
        import socket

        share = socket.socket(fileno=share_fd)
    try:
        prime(device, aot)
    except Exception:  # a worker that cannot prime still verifies; the job reports errors
        traceback.print_exc()
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    reap = reap and os.getuid() != 0  # kill(-1) only as the sandbox's own uid
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        res = run_forked(job, result_fd, reap, share, aot)
        out.write(json.dumps(res) + "\n")
        out.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verifiers.kernels.runner")
    parser.add_argument("--serve", action="store_true", help="warm worker: jobs on stdin")
    parser.add_argument("--result-fd", type=int, required=True, help="where results go")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument(
        "--reap", action="store_true", help="sandboxed: kill the candidate's processes after a job"
    )
    parser.add_argument(
        "--share-fd", type=int, default=-1, help="socket for exported GPU memory (GPU nodes)"
    )
    parser.add_argument(
        "--aot", action="store_true", help="a Triton ahead-of-time compiler only (primes less)"
    )
    args = parser.parse_args(argv)
    if not args.serve:
        parser.error("the runner only serves (started by verifiers.kernels.pool)")
    return serve(args.result_fd, args.device, args.reap, args.share_fd, args.aot)


if __name__ == "__main__":
    sys.exit(main())
