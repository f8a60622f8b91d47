"""Triton's driver module, built once per node by the host, copied into every job's cache.

On a process's first launch Triton compiles its C driver module (`cuda_utils`, its own
`driver.c`) with the C compiler into its cache. A job's Triton cache is fresh (private to
one verification: `runner.job_env`), so every GPU job paid that build again: 0.43 s of
the child's first launch on the H200 (`bench/probe_triton_start.py`). Its source is
Triton's, nothing of a candidate's, so the host builds it once per Triton, Python and
node into a dir of the kernel cache, in a process of its own that runs no candidate code;
GPU runners get that dir read-only and copy it into each job's fresh cache before the
job's child starts (`seed_cache`). A candidate may overwrite its own copy, which only its
own verification reads; never the one the next job gets. Triton finds the module by the
key it computes from the same source, so nothing else changes; where the build fails (no
libcuda, no C compiler) the runners build it per job, as before.

A candidate's own kernels, compiled for sm_90 on a build node (`runner.precompile`), seed
only that candidate's job caches (`seed_triton`): its metadata and cubin per kernel, and
the group file Triton looks them up by, made here for this cache's paths.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ENV = "CRUCIBLE_TRITON_DRIVER"  # the runner's copy source (a dir it reads only)
_BUILD = """
from triton.backends.nvidia.driver import CudaUtils
CudaUtils()
"""


def _source_digest() -> str | None:
    """Triton's version, its driver.c and this Python's platform: what the module's
    cache key is computed from (`triton.runtime.build.compile_module_from_src`)."""
    try:
        import triton
        from triton.backends.nvidia import driver
    except Exception:
        return None
    src = Path(driver.__file__).with_name("driver.c")
    if not src.is_file():
        return None
    h = hashlib.sha256(src.read_bytes())
    h.update(f"{triton.__version__}|{sys.version}|{sys.executable}".encode())
    return h.hexdigest()[:16]


def build(cache_dir: Path | str, timeout_s: float = 180.0) -> Path | None:
    """The dir holding Triton's built driver module in its cache layout, made once under
    `cache_dir`; None where it cannot be built here (the runners then build it per job).
    Asked at every runner start (a dirty runner restarts after its job): answered once
    per process, a failed build too, never a second interpreter and gcc per restart."""
    return _build(str(cache_dir), timeout_s)


@functools.lru_cache(maxsize=8)
def _build(cache_dir: str, timeout_s: float) -> Path | None:
    digest = _source_digest()
    if digest is None:
        return None
    out = Path(cache_dir) / "triton-driver" / digest
    if (out / ".built").is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out.parent))
    try:
        env = {**os.environ, "TRITON_CACHE_DIR": str(staging / "cache")}
        env["TRITON_HOME"] = str(staging)
        done = subprocess.run(
            [sys.executable, "-c", _BUILD],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        built = list((staging / "cache").rglob("cuda_utils*.so"))
        if done.returncode != 0 or not built:
            return None
        for p in (staging / "cache").rglob("*"):  # what Triton left besides the module
            if p.is_file() and not p.name.startswith("cuda_utils"):
                p.unlink()
        (staging / "cache" / ".built").write_text(digest)
        for p in [staging / "cache", *(staging / "cache").rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        try:
            os.replace(staging / "cache", out)  # whole or not at all
        except OSError:  # another process built it meanwhile
            if not (out / ".built").is_file():
                return None
        return out
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def seed_cache(cache: Path, source: str | None = None) -> int:
    """Copy the host's built driver module (`ENV`'s dir) into a job's Triton cache; the
    number of files copied (0 without one). Files the cache already has stay as they are:
    the same verification's earlier job put them there."""
    src = Path(source or os.environ.get(ENV, "") or "/nonexistent")
    if not src.is_dir():
        return 0
    n = 0
    for f in src.rglob("*"):
        if not f.is_file() or f.name == ".built" or f.is_symlink():
            continue
        dst = cache / f.relative_to(src)
        if dst.exists():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dst)
        n += 1
    return n


# the files a job's Triton cache may be seeded with (`seed_triton`): a kernel's metadata
# and its cubin, in Triton's layout (a key dir and a file in it); names only, never a
# link, a dot dir or a path. Triton's group file (`__grp__<name>.json`) names its files by
# absolute path, the build node's: it is written here for the files seeded, never copied
_SEED_DIR = re.compile(r"[A-Za-z0-9_-]{8,128}")
_SEED_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,120}\.(?:json|cubin)")
SEED_MAX_BYTES = 16 << 20  # one candidate's (mlp_block's two sizes: 0.5 MiB)
SEED_MAX_FILES = 256  # and as many files (two a kernel specialization)


def seed_name_ok(rel: str) -> bool:
    """`<key>/<name>.json` or `<key>/<name>.cubin`, in the names Triton's cache uses."""
    parts = rel.split("/")
    return (
        len(parts) == 2
        and _SEED_DIR.fullmatch(parts[0]) is not None
        and _SEED_FILE.fullmatch(parts[1]) is not None
        and not parts[1].startswith("__grp__")
    )


def seed_triton(cache: Path, files: Any) -> int:
    """Write a build node's compiles of this candidate (`runner.precompile`, {"<key>/
    <file>": base64}) into its job's Triton cache, each kernel's group file made for the
    paths here; the files written. A name not in that layout, a file or group the cache
    already has, past SEED_MAX_FILES or SEED_MAX_BYTES in all: skipped (the kernel then
    compiles here, as without them). Never through a link."""
    if not isinstance(files, dict):
        return 0
    n, total = 0, 0
    written: dict[Path, set[str]] = {}
    for rel, b64 in list(files.items())[:SEED_MAX_FILES]:
        if not (isinstance(rel, str) and isinstance(b64, str) and seed_name_ok(rel)):
            continue
        try:
            data = base64.b64decode(b64, validate=True)
        except ValueError:
            continue
        total += len(data)
        if total > SEED_MAX_BYTES:
            break
        key, name = rel.split("/")
        if _write_new(cache / key, name, data):
            written.setdefault(cache / key, set()).add(name)
            n += 1
    for d, names in written.items():  # Triton's group: the metadata and its cubin, here
        for name in names:
            stem = name.removesuffix(".json")
            if stem == name or f"{stem}.cubin" not in names:
                continue
            group = {"child_paths": {x: str(d / x) for x in (name, f"{stem}.cubin")}}
            _write_new(d, f"__grp__{name}", json.dumps(group).encode())
    return n


def _write_new(d: Path, name: str, data: bytes) -> bool:
    """`data` as the new file `d/name` (`d` made if missing); False where either is a
    link, the file exists, or the dir cannot be written."""
    try:
        d.mkdir(exist_ok=True)
        if d.is_symlink() or not d.is_dir():
            return False
        fd = os.open(d / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW)
    except OSError:
        return False
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return True
