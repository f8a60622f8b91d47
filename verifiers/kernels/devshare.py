"""GPU memory shared by file descriptor: how a runner's tensors reach the verifier without
passing through host RAM.

The runner (candidate code's process) copies a tensor into an allocation of CUDA's virtual
memory API made exportable as a POSIX file descriptor (`export`), and sends the fd over a
Unix socket (`send_fds`). The verifier imports it (`Imported`), maps it READ-ONLY at the
size *it* expects (a smaller allocation than that fails to map: never a read past its end)
and compares on the GPU. An fd crosses pid and IPC namespaces (the sandbox's), which
CUDA's legacy IPC handles do not. The memory lives until the last holder (the verifier,
once the runner is gone) releases it.

Driver API through ctypes (libcuda.so.1): no extra package. Device 0 only, the current
(torch's primary) context.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import json
import os
import socket
import threading
from dataclasses import dataclass

CU_MEM_ALLOCATION_TYPE_PINNED = 1
CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
CU_MEM_LOCATION_TYPE_DEVICE = 1
CU_MEM_ACCESS_FLAGS_PROT_READ = 1
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0
MAX_FDS = 64  # one message's fds (a trial's inputs and outputs)
MAX_MESSAGE = 1 << 16


class ShareError(RuntimeError):
    """A driver call failed (its CUresult in the message)."""


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [
        ("compressionType", ctypes.c_ubyte),
        ("gpuDirectRDMACapable", ctypes.c_ubyte),
        ("usage", ctypes.c_ushort),
        ("reserved", ctypes.c_ubyte * 4),
    ]


class _Prop(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location", _Location),
        ("win32HandleMetaData", ctypes.c_void_p),
        ("allocFlags", _AllocFlags),
    ]


class _Access(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_lib: ctypes.CDLL | None = None
_lib_lock = threading.Lock()


def _cuda() -> ctypes.CDLL:
    global _lib
    with _lib_lock:
        if _lib is None:
            lib = ctypes.CDLL("libcuda.so.1")
            u64, size, vp = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p
            sig = {
                "cuInit": [ctypes.c_uint],
                "cuMemGetAllocationGranularity": [ctypes.POINTER(size), vp, ctypes.c_int],
                "cuMemCreate": [ctypes.POINTER(u64), size, vp, u64],
                "cuMemAddressReserve": [ctypes.POINTER(u64), size, size, u64, u64],
                "cuMemMap": [u64, size, size, u64, u64],
                "cuMemSetAccess": [u64, size, vp, size],
                "cuMemExportToShareableHandle": [vp, u64, ctypes.c_int, u64],
                "cuMemImportFromShareableHandle": [ctypes.POINTER(u64), vp, ctypes.c_int],
                "cuMemRelease": [u64],
                "cuMemUnmap": [u64, size],
                "cuMemAddressFree": [u64, size],
            }
            for name, args in sig.items():
                fn = getattr(lib, name)
                fn.argtypes, fn.restype = args, ctypes.c_int
            _check(lib.cuInit(0), "cuInit")
            _lib = lib
    return _lib


def _check(res: int, what: str) -> None:
    if res != 0:
        raise ShareError(f"{what} failed: CUresult {res}")


def _prop(device: int) -> _Prop:
    p = _Prop()
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED
    p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    p.location.type, p.location.id = CU_MEM_LOCATION_TYPE_DEVICE, device
    return p


def padded(nbytes: int, device: int = 0) -> int:
    """`nbytes` rounded up to the allocation granularity (at least one granule)."""
    lib = _cuda()
    gran = ctypes.c_size_t()
    prop = _prop(device)
    _check(
        lib.cuMemGetAllocationGranularity(
            ctypes.byref(gran), ctypes.byref(prop), CU_MEM_ALLOC_GRANULARITY_MINIMUM
        ),
        "cuMemGetAllocationGranularity",
    )
    g = gran.value
    return max(g, -(-nbytes // g) * g)


class _Mapping:
    """A reserved, mapped range of `size` bytes at `ptr` backed by `handle`."""

    def __init__(self, handle: int, size: int, device: int, flags: int):
        lib = _cuda()
        self.handle, self.size, self.ptr = handle, size, 0
        ptr = ctypes.c_uint64()
        try:
            _check(lib.cuMemAddressReserve(ctypes.byref(ptr), size, 0, 0, 0), "reserve")
            self.ptr = ptr.value
            _check(lib.cuMemMap(self.ptr, size, 0, handle, 0), "cuMemMap")
            self._mapped = True
            acc = _Access()
            acc.location.type, acc.location.id = CU_MEM_LOCATION_TYPE_DEVICE, device
            acc.flags = flags
            _check(lib.cuMemSetAccess(self.ptr, size, ctypes.byref(acc), 1), "cuMemSetAccess")
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        lib = _cuda()
        if self.ptr:
            if getattr(self, "_mapped", False):
                lib.cuMemUnmap(self.ptr, self.size)
                self._mapped = False
            lib.cuMemAddressFree(self.ptr, self.size)
            self.ptr = 0
        if self.handle:
            lib.cuMemRelease(self.handle)
            self.handle = 0


class _CudaArray:
    """`__cuda_array_interface__` of a raw byte range, for torch.as_tensor."""

    def __init__(self, ptr: int, nbytes: int, readonly: bool):
        self.__cuda_array_interface__ = {
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (ptr, readonly),
            "version": 2,
        }


def _view(ptr: int, nbytes: int, dtype, shape, readonly: bool):
    import torch

    raw = torch.as_tensor(_CudaArray(ptr, nbytes, readonly), device="cuda")
    return raw.view(dtype).reshape(list(shape)) if nbytes else torch.empty(shape, dtype=dtype)


@dataclass
class Exported:
    """An exportable allocation the runner filled; `tensor` is a view of it."""

    mapping: _Mapping
    tensor: object
    nbytes: int

    def fd(self) -> int:
        """A new fd for the allocation (the caller sends and closes it)."""
        lib = _cuda()
        fd = ctypes.c_int(-1)
        _check(
            lib.cuMemExportToShareableHandle(
                ctypes.byref(fd), self.mapping.handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0
            ),
            "cuMemExportToShareableHandle",
        )
        return fd.value

    def close(self) -> None:
        self.tensor = None
        self.mapping.close()


def export_like(t, device: int = 0, sync: bool = True) -> Exported:
    """A fresh exportable allocation holding a copy of tensor `t` (contiguous bytes).
    `sync=False`: the copy is only queued; the caller synchronizes before it hands the
    allocation over (one wait for several tensors)."""
    import torch

    lib = _cuda()
    src = t.detach().contiguous()
    nbytes = src.numel() * src.element_size()
    size = padded(nbytes, device)
    handle = ctypes.c_uint64()
    prop = _prop(device)
    _check(lib.cuMemCreate(ctypes.byref(handle), size, ctypes.byref(prop), 0), "cuMemCreate")
    mapping = _Mapping(handle.value, size, device, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
    view = _view(mapping.ptr, nbytes, src.dtype, src.shape, False)
    if nbytes:
        view.copy_(src)
        if sync:
            torch.cuda.synchronize()
    return Exported(mapping, view, nbytes)


class Imported:
    """An allocation another process exported, mapped read-only here at `nbytes`
    (rounded up to the granule): `tensor(dtype, shape)` views it. An allocation smaller
    than that fails to map (ShareError): nothing past its end is ever read."""

    def __init__(self, fd: int, nbytes: int, device: int = 0):
        lib = _cuda()
        self.nbytes = nbytes
        handle = ctypes.c_uint64()
        _check(
            lib.cuMemImportFromShareableHandle(
                ctypes.byref(handle), ctypes.c_void_p(fd), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
            ),
            "cuMemImportFromShareableHandle",
        )
        size = padded(nbytes, device)
        try:
            self.mapping = _Mapping(handle.value, size, device, CU_MEM_ACCESS_FLAGS_PROT_READ)
        except ShareError:
            # some drivers map read-write only; the verifier still never writes it
            self.mapping = _Mapping(handle.value, size, device, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)

    def tensor(self, dtype, shape):
        # torch refuses the interface's read-only flag; the mapping itself is read-only
        return _view(self.mapping.ptr, self.nbytes, dtype, shape, False)

    def close(self) -> None:
        self.mapping.close()

    def __enter__(self) -> Imported:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --- fds over a Unix socket (SOCK_SEQPACKET): one JSON header and its fds per message --------
def socket_pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def send_fds(sock: socket.socket, header: dict, fds: list[int]) -> None:
    data = json.dumps(header).encode()
    if len(data) > MAX_MESSAGE or len(fds) > MAX_FDS:
        raise ValueError("message too large")
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    sock.sendmsg([len(data).to_bytes(4, "little") + data], anc)


def recv_fds(sock: socket.socket) -> tuple[dict | None, list[int]]:
    """One message: (header, fds), (None, []) at end of stream. Fds that arrive are
    always returned (the caller closes them), also with a header that does not parse."""
    fds: list[int] = []
    size = array.array("i").itemsize
    msg, anc, flags, _ = sock.recvmsg(4 + MAX_MESSAGE, socket.CMSG_SPACE(MAX_FDS * size))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            arr = array.array("i")
            arr.frombytes(data[: len(data) - (len(data) % size)])
            fds += list(arr)
    if not msg:
        return None, fds
    n = int.from_bytes(msg[:4], "little")
    body = msg[4 : 4 + n]
    if len(msg) < 4 or len(body) != n or flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
        return {"error": "a truncated message"}, fds
    try:
        header = json.loads(body.decode("utf-8"))
    except ValueError:
        return {"error": "a header that is not JSON"}, fds
    return (header if isinstance(header, dict) else {"error": "not an object"}), fds


def close_fds(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
