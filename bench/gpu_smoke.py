"""GPU smoke checks of the exported-memory path (`verifiers.kernels.devshare`), on a GPU.

    python3 bench/gpu_smoke.py

1. A child process (its own pid namespace when `unshare` works) exports a tensor and sends
   the fd over a socket; this process maps it read-only and checks every byte; a map larger
   than the allocation is refused.
2. The exported memory outlives the child that made it.
Prints one line per check and exits 1 if any failed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = r"""
import socket, sys, time
sys.path.insert(0, sys.argv[2])
import torch
from verifiers.kernels import devshare
sock = socket.socket(fileno=int(sys.argv[1]))
x = torch.arange(int(sys.argv[3]), dtype=torch.float32, device="cuda") * 0.5
ex = devshare.export_like(x)
fd = ex.fd()
devshare.send_fds(sock, {"n": x.numel()}, [fd])
devshare.close_fds([fd])
ex.close()
sock.recv(16)
"""


def main() -> int:
    import torch

    from verifiers.kernels import devshare

    ok = True
    n = 50_000_000
    parent, child = devshare.socket_pair()
    argv = [sys.executable, "-c", CHILD, str(child.fileno()), str(ROOT), str(n)]
    # a pid and IPC namespace of its own, as the sandbox's runners have (root: no user ns)
    unshare = ["unshare", "--pid", "--ipc", "--fork", "--mount-proc"]
    ns = subprocess.run([*unshare, "true"], capture_output=True)
    if ns.returncode == 0:
        argv = [*unshare, *argv]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, pass_fds=(child.fileno(),))
    child.close()
    header, fds = devshare.recv_fds(parent)
    if not fds:
        print("the exporting child sent nothing:", proc.wait(timeout=60))
        return 1
    print(f"received {header} fds={len(fds)} in {time.perf_counter() - t0:.2f}s ns={ns.returncode}")
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    want = torch.arange(n, dtype=torch.float32, device="cuda") * 0.5
    with devshare.Imported(fds[0], n * 4) as imp:
        got = imp.tensor(torch.float32, [n])
        same = bool(torch.equal(got, want))
        print(f"check 1: imported tensor equals the exported one: {same}")
        ok &= same
    try:
        devshare.Imported(fds[0], n * 4 + 64 * 2**20).close()
        print("check 2: FAILED: a map past the allocation's end was allowed")
        ok = False
    except devshare.ShareError as e:
        print(f"check 2: a map past the end is refused: {e}")
    parent.send(b"bye")
    proc.wait(timeout=60)
    with devshare.Imported(fds[0], n * 4) as imp:
        same = bool(torch.equal(imp.tensor(torch.float32, [n]), want))
        print(f"check 3: the memory outlives its exporter (exit {proc.returncode}): {same}")
        ok &= same
    devshare.close_fds(fds)
    print("devshare smoke:", "ok" if ok else "FAILED")
    return 0 if ok else 1


def sandbox_diag() -> int:
    """nvcc in the sandbox at several address-space limits; a Triton reference's
    verdict in the sandbox with its whole feedback."""
    import tempfile

    from verifiers.catalog import load_catalog
    from verifiers.contract import Limits
    from verifiers.kernels.nvcc import find_nvcc
    from verifiers.kernels.verifier import TritonVerifier
    from verifiers.sandbox import Sandbox

    nvcc = find_nvcc()
    print("nvcc:", nvcc, os.path.realpath(nvcc))
    print(
        subprocess.run(
            f"ls -la /usr/local/ | head -30; ls -la {Path(nvcc).parent}/ | head; "
            f"ls -la {Path(nvcc).parent.parent}/nvvm/bin",
            shell=True,
            capture_output=True,
            text=True,
        ).stdout[-3000:]
    )
    src = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n'
    for mem, ro in ((2048, ()), (8192, ("/opt",)), (8192, ("/opt", "/etc"))):
        with tempfile.TemporaryDirectory() as tmp:
            sb = Sandbox(Limits(memory_mb=mem))
            work = sb.prepare_workdir(Path(tmp))
            (work / "k.cu").write_text(src)
            res = sb.run(
                [nvcc, "-v", "-cubin", "-arch=sm_90", "-o", "k.cubin", "k.cu"],
                work,
                timeout_s=60,
                cpu_s=61,
                ro_dirs=ro,
                env={"PATH": f"{Path(nvcc).parent}:/usr/bin:/bin"},
            )
            out = (res.stderr + res.stdout)[-1500:]
            print(f"nvcc sandboxed, memory_mb={mem} ro={ro}: rc={res.returncode}\n{out}")
    tasks, _ = load_catalog(ROOT / "tasks", ["triton"], ["matmul_fp32"])
    v = TritonVerifier()
    try:
        vd = v.verify(tasks[0], tasks[0].reference, Limits())
        print("triton matmul_fp32 sandboxed:", vd.status.value, vd.code, vd.feedback[-3000:])
    finally:
        v.close()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    if "--sandbox" in sys.argv:
        sys.exit(sandbox_diag())
    sys.exit(main())
