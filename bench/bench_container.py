"""Container backend overhead: the rtl worker in the warm `eda` container (JSONL over the
Docker API's attach stream) against the host's own verifier, batch by batch.

The same batches (references and perturbations of the rtl catalog, --batch candidates
each, as `PoolSettings.batch_size`) go through both; the two alternate batch by batch so
a load change on a shared machine hits both alike. The container is started and warmed
with one batch first (the first batch of a cold container also pays the worker's imports,
reported apart). Reported: per-batch wall of each, the ratio container/host (median and
total), and the overhead as a share of the verification time (target: at most 10 %);
statuses are checked identical. Timings are reported, never asserted.

Needs podman + runc (infra/install-toolchains.sh containers) and the image
(infra/build-images.sh eda). Uses DOCKER_HOST when set, else starts
`podman system service` on a socket of its own for the run.
Usage: python bench/bench_container.py [--tasks 14] [--batch 8] [--out bench/results/container.txt]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generators.perturb.rtl import RtlPerturbGenerator  # noqa: E402
from ray_actors.container import ContainerBackend, ContainerSettings  # noqa: E402
from verifiers.catalog import load_catalog  # noqa: E402
from verifiers.contract import Limits  # noqa: E402
from verifiers.registry import get_verifier  # noqa: E402


def podman_socket(tmp: Path) -> tuple[str, subprocess.Popen | None]:
    if os.environ.get("DOCKER_HOST"):
        return os.environ["DOCKER_HOST"], None
    import docker

    url = f"unix://{tmp}/podman.sock"
    proc = subprocess.Popen(
        ["podman", "--runtime", "/usr/sbin/runc", "system", "service", "--time=0", url],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(300):
        try:
            docker.DockerClient(base_url=url).ping()
            return url, proc
        except docker.errors.DockerException:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"podman system service did not serve {url}")


def batches(n_tasks: int, size: int) -> list[list]:
    tasks, _ = load_catalog(ROOT / "tasks", ["rtl"])
    items = []
    for task in tasks[:n_tasks]:
        items += [(task, c.code) for c in RtlPerturbGenerator().generate(task, n=6, seed=0)]
    return [items[i : i + size] for i in range(0, len(items), size)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=14)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "container.txt"))
    args = ap.parse_args()

    limits = Limits()
    work = batches(args.tasks, args.batch)
    with tempfile.TemporaryDirectory(prefix="crucible-bench-container-") as tmp:
        url, proc = podman_socket(Path(tmp))
        backend = ContainerBackend("rtl", settings=ContainerSettings(base_url=url))
        host = get_verifier("rtl")
        try:
            t0 = time.perf_counter()
            backend.start()
            started = time.perf_counter() - t0
            t0 = time.perf_counter()
            backend.verify_many(work[0], limits)  # warm: the worker's imports, first tools
            cold = time.perf_counter() - t0
            host.verify_many(work[0], limits)
            rows, mismatches = [], 0
            for batch in work:
                t0 = time.perf_counter()
                inside = backend.verify_many(batch, limits)
                t1 = time.perf_counter()
                outside = host.verify_many(batch, limits)
                t2 = time.perf_counter()
                same = [(v.status, v.code) for v in inside] == [(v.status, v.code) for v in outside]
                mismatches += not same
                rows.append((len(batch), t1 - t0, t2 - t1))
        finally:
            backend.close()
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)

    lines = [
        "# Container backend overhead (rtl, eda image, warm container, JSONL over the "
        "Docker API attach stream)",
        f"# machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"# container start {started:.2f} s; first (cold) batch {cold:.2f} s",
        "",
        f"{'batch':>5} {'cands':>5} {'host_s':>8} {'container_s':>11} {'ratio':>6}",
    ]
    for i, (n, c, h) in enumerate(rows):
        lines.append(f"{i:>5} {n:>5} {h:>8.3f} {c:>11.3f} {c / h:>6.3f}")
    total_c = sum(c for _, c, _ in rows)
    total_h = sum(h for _, _, h in rows)
    median = statistics.median(c / h for _, c, h in rows)
    cands = sum(n for n, _, _ in rows)
    lines += [
        "",
        f"candidates {cands} in {len(rows)} batches of {args.batch}; "
        f"status+code identical in {len(rows) - mismatches}/{len(rows)} batches",
        f"total: host {total_h:.2f} s, container {total_c:.2f} s, ratio {total_c / total_h:.3f} "
        f"(overhead {100 * (total_c / total_h - 1):+.1f} % of verification time; target <= 10 %)",
        f"median per-batch ratio {median:.3f}",
    ]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
