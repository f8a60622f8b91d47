"""How many fresh GPU jobs a second one node makes, and what caps it (issue #30).

Every verification job runs in a child forked from a warm runner that holds no CUDA
context, so each candidate pays a context of its own, its first allocations and kernel
loads, the hand-over of its tensors to the verifier (`devshare`) and the context's
teardown. The catalog batch makes ~4 candidates a second on 16 runners with the GPU idle
half the time, a candidate's context taking ~2 s there against 0.17 s alone. This runs
that skeleton without Crucible's gates: N runner processes (torch imported, no CUDA), each
forking one child after another for a fixed window; per mode, what a child does:

  ctx    its CUDA context and a first allocation (`runner.gpu_init`), then it exits
  job    that, then a 64 MB input made on the GPU and one reduction over it
  share  that, then its input and output exported to this process (devshare, as a
         runner's are), which imports both, compares on the GPU and answers

`--env K=V` runs every config again with that variable in the children's environment
(e.g. CUDA_DEVICE_MAX_CONNECTIONS=1, fewer hardware queues per context); `--prefork`
adds each config with a spare child per runner, made (context and all) while the
current one runs: whether the context's cost overlaps or is the node's serial part.

Per config: jobs finished in the window, a second (`per_s`; and `per_s_late`, its second
half only: every runner forks its first child at the same instant, a burst of contexts a
short window would measure alone), and the children's median seconds in each part. One
JSON line each. The first run (bench/results/i30_jobrate_h100.json, 5 s windows) finished
no job at 32 runners: their first contexts, made at once, took longer than the window.

    python bench/probe_job_rate.py [--modes ctx,job,share] [--workers 1,16,32]
        [--seconds 6] [--env CUDA_DEVICE_MAX_CONNECTIONS=1] [--prefork] [--out F]

Needs a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ROWS, COLS = 4096, 4096  # 64 MB of float32: the catalog's inputs are 16-268 MB


def child(mode: str, sock: socket.socket | None, go_r: int | None) -> dict:
    """One job in a fresh child; what each part took."""
    import torch

    from verifiers.kernels.runner import gpu_init  # imported by the runner, before the fork

    t = {}
    t0 = time.perf_counter()
    gpu_init()
    t["init"] = time.perf_counter() - t0
    if go_r is not None:  # a spare: made ahead, it waits for its turn here
        os.read(go_r, 1)
    t1 = time.perf_counter()
    if mode in ("job", "share"):
        g = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(ROWS, COLS, device="cuda", generator=g)
        y = x.mean(0)
        torch.cuda.synchronize()
        t["work"] = time.perf_counter() - t1
        if mode == "share":
            from verifiers.kernels import devshare

            t2 = time.perf_counter()
            ex = [devshare.export_like(x), devshare.export_like(y)]
            fds = [e.fd() for e in ex]
            devshare.send_fds(sock, {"n": [e.nbytes for e in ex]}, fds)
            devshare.close_fds(fds)
            sock.recv(16)  # the verifier's answer: compared
            for e in ex:
                e.close()
            t["share"] = time.perf_counter() - t2
    return t


def runner(mode: str, share_fd: int, prefork: bool, out) -> None:
    """Once warm, the window's start and end (wall clock) on stdin; then children forked
    one after another until the end; one JSON line each."""
    import torch  # noqa: F401  (warm, as a runner is: no CUDA context in this process)

    from verifiers.kernels import devshare  # noqa: F401  (the children's, made warm)
    from verifiers.kernels import runner as _runner  # noqa: F401

    sock = socket.socket(fileno=share_fd) if share_fd >= 0 else None
    print(json.dumps({"ready": True}), file=out, flush=True)
    start = float(sys.stdin.readline())
    until = float(sys.stdin.readline())
    while time.time() < start:
        time.sleep(0.005)

    def spawn() -> tuple[int, int, int | None, float]:
        r, w = os.pipe()
        go_r = go_w = None
        if prefork:
            go_r, go_w = os.pipe()
        t = time.time()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                res = child(mode, sock, go_r)
            except BaseException as e:  # the row says why (a context that failed, a hang-up)
                res = {"failed": True, "error": repr(e)[:300]}
            try:
                os.write(w, json.dumps(res).encode())
            finally:
                os._exit(0)
        os.close(w)
        if go_r is not None:
            os.close(go_r)
        return pid, r, go_w, t

    spare = spawn() if prefork else None
    while time.time() < until:
        cur = spare if prefork else spawn()
        pid, r, go_w, t_start = cur
        if prefork:
            os.write(go_w, b"g")
            os.close(go_w)
            spare = spawn() if time.time() < until else None
        data = b""
        while chunk := os.read(r, 1 << 16):
            data += chunk
        os.close(r)
        os.waitpid(pid, 0)
        done = time.time()
        parts = json.loads(data) if data else {"failed": True}
        print(json.dumps({"done": done, "start": t_start, **parts}), file=out, flush=True)
    if spare is not None:  # the last spare is never used
        os.write(spare[2], b"g")
        os.close(spare[2])
        os.waitpid(spare[0], 0)


def reference() -> tuple:
    """The verifying process's own input and its mean, made once and shared by every
    `host_compare` thread of a config."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(ROWS, COLS, device="cuda", generator=g)
    return x, x.mean(0)


def host_compare(sock: socket.socket, stop: threading.Event, counts: dict, ref: tuple) -> None:
    """The verifier's side of `share`: import a child's two tensors, compare on the GPU
    against the process's copy of the input and its mean (`ref`), answer."""
    import torch

    from verifiers.kernels import devshare

    x, y = ref
    sock.settimeout(0.5)
    while not stop.is_set():
        try:
            header, fds = devshare.recv_fds(sock)
        except TimeoutError:
            continue
        if header is None:
            return
        t0 = time.perf_counter()
        ok = False
        try:
            with (
                devshare.Imported(fds[0], header["n"][0]) as a,
                devshare.Imported(fds[1], header["n"][1]) as b,
            ):
                ok = torch.equal(a.tensor(torch.float32, (ROWS, COLS)), x) and torch.allclose(
                    b.tensor(torch.float32, (COLS,)), y
                )
                torch.cuda.synchronize()
        except Exception as e:  # counted, and answered: the child never waits forever
            counts["errors"].append(repr(e)[:200])
        finally:
            devshare.close_fds(fds)
        counts["compare_s"].append(time.perf_counter() - t0)
        counts["ok"] += bool(ok)
        sock.sendall(b"k")


def config(mode: str, n: int, seconds: float, env: dict, prefork: bool) -> dict:
    import torch

    from verifiers.kernels import devshare

    procs, socks, threads = [], [], []
    stop = threading.Event()
    counts: dict = {"compare_s": [], "ok": 0, "errors": []}
    for _ in range(n):
        pass_fds: tuple = ()
        fd = -1
        if mode == "share":
            mine, theirs = devshare.socket_pair()
            socks.append(mine)
            fd = theirs.fileno()
            pass_fds = (fd,)
            threads.append((mine, theirs))
        cmd = [sys.executable, __file__, "--runner", mode, "--share-fd", str(fd)]
        cmd += ["--prefork"] if prefork else []
        procs.append(
            subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                pass_fds=pass_fds,
                env={**os.environ, **env},
            )
        )
    try:
        torch.zeros(1, device="cuda")  # this process's context, before the window
        ref = reference() if mode == "share" else None
        for i, (mine, theirs) in enumerate(threads):
            theirs.close()
            th = threading.Thread(target=host_compare, args=(mine, stop, counts, ref), daemon=True)
            th.start()
            threads[i] = (th, theirs)
        for p in procs:  # every runner warm before the window opens
            assert json.loads(p.stdout.readline())["ready"]
        start = time.time() + 0.5
        until = start + seconds
        for p in procs:
            p.stdin.write(f"{start}\n{until}\n")
            p.stdin.flush()
        rows = []
        for p in procs:
            for line in p.stdout:
                rows.append(json.loads(line))
            p.wait()
        stop.set()
        for th, _ in threads:
            th.join(timeout=2)
        for s in socks:
            s.close()
    finally:  # a config that failed leaves no runner behind for the next one
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    inside = [r for r in rows if r["done"] <= until and not r.get("failed")]
    med = {
        k: round(statistics.median(r[k] for r in inside if k in r), 4)
        for k in ("init", "work", "share")
        if any(k in r for r in inside)
    }
    out = {
        "mode": mode,
        "workers": n,
        "prefork": prefork,
        "env": env,
        "jobs": len(inside),
        "failed": sum(1 for r in rows if r.get("failed")),
        "failed_errors": sorted({r["error"] for r in rows if r.get("error")})[:3],
        "per_s": round(len(inside) / seconds, 2),
        # the window's second half: past the first burst of contexts made all at once
        "per_s_late": round(
            sum(1 for r in inside if r["done"] > start + seconds / 2) / (seconds / 2), 2
        ),
        "median_s": med,
        "job_wall_median_s": round(statistics.median(r["done"] - r["start"] for r in inside), 4)
        if inside
        else None,
    }
    if mode == "share":
        out["compared"] = len(counts["compare_s"])
        out["compare_ok"] = counts["ok"]
        out["compare_errors"] = counts["errors"][:3]
        if counts["compare_s"]:
            out["compare_median_s"] = round(statistics.median(counts["compare_s"]), 4)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--modes", default="ctx,job,share")
    p.add_argument("--workers", default="1,16,32", help="runner processes, per config")
    p.add_argument("--seconds", type=float, default=6.0, help="each config's window")
    p.add_argument("--env", action="append", default=[], help="K=V: every config again with it")
    p.add_argument("--prefork", action="store_true", help="every config again with a spare child")
    p.add_argument("--out", type=Path, help="also write the JSON lines here")
    p.add_argument("--runner", help=argparse.SUPPRESS)
    p.add_argument("--share-fd", type=int, default=-1, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.runner:
        runner(args.runner, args.share_fd, args.prefork, sys.stdout)
        return 0
    envs: list[dict] = [{}]
    for kv in args.env:
        k, _, v = kv.partition("=")
        envs.append({k: v})
    pre = [False, True] if args.prefork else [False]
    lines = []
    for env in envs:
        for mode in args.modes.split(","):
            for n in (int(x) for x in args.workers.split(",")):
                for pf in pre:
                    try:
                        row = config(mode, n, args.seconds, env, pf)
                    except Exception as e:  # one config's failure is a row, not the end
                        row = {"mode": mode, "workers": n, "prefork": pf, "env": env}
                        row["error"] = repr(e)[:300]
                    print(json.dumps(row), flush=True)
                    lines.append(json.dumps(row))
                    if args.out:
                        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
