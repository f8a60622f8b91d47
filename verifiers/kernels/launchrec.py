"""The launch configuration of a refused `<<<...>>>` launch in a C++ extension.

A `load_inline` extension launches through the CUDA runtime (`cudaLaunchKernel`), out of
the runner's sight: when the device refuses a launch (grid y past 65535, too many threads)
the candidate sees only "CUDA error: invalid argument", which says nothing of why. The GPU
runner therefore starts with a small shim preloaded (`LD_PRELOAD`) that passes every
`cudaLaunchKernel` on unchanged, to the runtime its caller was linked with (torch's and an
extension's may be two), and keeps the configuration of the last one the runtime refused.
After forward raises, `refused_launch` reads it and, when that configuration is past the
device's limits (`limits.check_launch`, the same rule as every other launch), the failure
is `launch_exceeds_limit` naming the real numbers; a refusal within the limits stays what
it was (a cuda_error). The shim decides nothing and holds no verdict: what it recorded
only names the limit a launch broke, checked here.

Built with the host's C compiler into the kernel cache (content-addressed), once per
node; a node without one runs without it (the error then stays a cuda_error).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from verifiers.kernels.limits import DeviceLimits, LaunchLimitError, check_launch

SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

typedef struct { unsigned int x, y, z; } dim3_t;
typedef int (*launch_fn)(const void *, dim3_t, dim3_t, void **, size_t, void *);

/* refusals, error, grid x y z, block x y z, dynamic shared bytes */
static volatile unsigned long long refused[9];

/* The runtime the caller was linked against: its own dependencies' definition (torch and
   a load_inline extension may each bring a libcudart of their own, and a launch must reach
   the one its kernels were registered with). By caller object, cached. */
/* the runtime's launch entries: the C API, and what `<<<...>>>` compiles to (CUDA 13:
   __cudaLaunchKernel), each also per-thread-default-stream */
#define ENTRIES(X) X(cudaLaunchKernel, 0) X(cudaLaunchKernel_ptsz, 1) \
                   X(__cudaLaunchKernel, 2) X(__cudaLaunchKernel_ptsz, 3)
#define DECLARE(name, i) int name(const void *, dim3_t, dim3_t, void **, size_t, void *);
ENTRIES(DECLARE)

#define CALLERS 32
static struct { void *base; launch_fn fn[4]; } seen[CALLERS];
static volatile int n_seen;

static launch_fn resolve(void *caller, int which, const char *name) {
    Dl_info info;
    if (!dladdr(caller, &info) || !info.dli_fname) return (launch_fn)dlsym(RTLD_NEXT, name);
    int n = n_seen < CALLERS ? n_seen : CALLERS;
    for (int i = 0; i < n; i++)
        if (seen[i].base == info.dli_fbase && seen[i].fn[which]) return seen[i].fn[which];
    void *lib = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
    launch_fn fn = lib ? (launch_fn)dlsym(lib, name) : NULL;
    if (lib) dlclose(lib);
#define OURS(name, i) || (void *)fn == (void *)name
    if (0 ENTRIES(OURS)) fn = NULL; /* ourselves: never call round in a circle */
    if (!fn) fn = (launch_fn)dlsym(RTLD_NEXT, name);
    if (fn) {
        int i = __sync_fetch_and_add(&n_seen, 1);
        if (i < CALLERS) { seen[i].base = info.dli_fbase; seen[i].fn[which] = fn; }
    }
    return fn;
}

static int launch(void *caller, int which, const char *name, const void *f, dim3_t g,
                  dim3_t b, void **args, size_t smem, void *stream) {
    launch_fn real = resolve(caller, which, name);
    if (!real) return 999; /* cudaErrorUnknown: no runtime to pass it to */
    int err = real(f, g, b, args, smem, stream);
    if (err) {
        refused[1] = (unsigned long long)err;
        refused[2] = g.x; refused[3] = g.y; refused[4] = g.z;
        refused[5] = b.x; refused[6] = b.y; refused[7] = b.z;
        refused[8] = smem;
        refused[0] += 1;
    }
    return err;
}

#define DEFINE(name, i)                                                              \
    int name(const void *f, dim3_t g, dim3_t b, void **a, size_t s, void *st) {     \
        return launch(__builtin_return_address(0), i, #name, f, g, b, a, s, st);      \
    }
ENTRIES(DEFINE)

void crucible_refused_launch(unsigned long long *out) {
    for (int i = 0; i < 9; i++) out[i] = refused[i];
}
"""
ENV = "CRUCIBLE_LAUNCHREC"  # the shim's path, in the runner's environment
# what the runtime says of a refused configuration: cudaErrorInvalidValue ("invalid
# argument"), cudaErrorInvalidConfiguration, cudaErrorLaunchOutOfResources
REFUSALS = {1: "invalid argument", 9: "invalid configuration argument", 701: "out of resources"}


def build(cache_dir: Path | str) -> Path | None:
    """The shim as a shared library under `cache_dir` (built once per content), or None
    where there is no C compiler (the runner then runs without it)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return None
    digest = hashlib.sha256(SHIM_C.encode()).hexdigest()[:16]
    # a dir of its own: the sandbox binds it whole (dirs only), and nothing else of the
    # cache with it
    out = Path(cache_dir) / "launchrec" / f"crucible-launchrec-{digest}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    src = out.with_suffix(f".{os.getpid()}.c")
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    try:
        src.write_text(SHIM_C)
        cmd = [cc, "-O2", "-shared", "-fPIC", "-o", str(tmp), str(src), "-ldl"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            return None
        tmp.chmod(0o755)
        os.replace(tmp, out)  # whole or not at all: another process may build it too
        return out
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        for p in (src, tmp):
            p.unlink(missing_ok=True)


def last_refusal(shim: str | None = None) -> dict | None:
    """The last launch the runtime refused in this process (through the preloaded
    shim), or None when nothing was refused or no shim is loaded."""
    path = shim or os.environ.get(ENV)
    if not path:
        return None
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return None
    vals = (ctypes.c_ulonglong * 9)()
    lib.crucible_refused_launch(vals)
    if not vals[0]:
        return None
    return {
        "refusals": vals[0],
        "error": vals[1],
        "grid": (vals[2], vals[3], vals[4]),
        "block": (vals[5], vals[6], vals[7]),
        "shared": vals[8],
    }


def refused_launch(exc: BaseException, limits: DeviceLimits) -> LaunchLimitError | None:
    """A LaunchLimitError naming the limit broken, when `exc` is the runtime's refusal of
    a launch and the configuration it refused (as the shim recorded it) is past the
    device's limits; None otherwise (the error stays as it was)."""
    said = str(exc)
    if not any(text in said for text in REFUSALS.values()):
        return None
    last = last_refusal()
    if last is None or last["error"] not in REFUSALS:
        return None
    try:
        check_launch(
            "a kernel launched from C++", last["grid"], last["block"], last["shared"], None, limits
        )
    except LaunchLimitError as e:
        return LaunchLimitError(f"{e} (the CUDA runtime said: {REFUSALS[last['error']]})")
    return None
