"""The one adapter to CANN: the gates that need Huawei's toolchain or an NPU.

NOT RUN ON AN NPU. No CANN toolkit, bisheng or Ascend device was available where this was
written: the commands below are built from pyasc's own compiler driver
(asc/runtime/compiler.py: `bisheng -c -x cce -O<n> --cce-aicore-arch=dav-c220-vec
--cce-aicore-only`, the tikcfw include dirs, `-std=c++17
--cce-disable-kernel-global-attr-check` and the stack-size `-mllvm` options, then
`ld.lld -m aicorelinux -Ttext=0`) and from public direct-launch builds (bisheng `-xcce`
with `--cce-soc-version`, the tikcfw and include dirs), and are checked as argv lists by
tests/verifiers/test_ascendc_cann.py. Everything an NPU node would decide is a pure
function here (argv, env, the precision rule, the speedup statistics), so the part that
cannot run here is only `ctx.run` of those argv on a node that has them.

- compile: the kernel (a C++ candidate's kernel file, or each lowered pyasc variant) built
  by bisheng in the sandbox; a failure is classified by errors.py (api_signature,
  type_cast, scope_lifetime, memory_object, compile_error) with the candidate's line and
  the API's declaration as feedback.
- precision: a runner on the NPU executes the kernel on every case's inputs and writes
  its outputs; each is compared with golden/case<ID>.npz (a golden whose sha256 is not the
  one the task recorded is refused: infra_error harness_error); an element fails iff
  |a - g| > atol AND |a - g| > rtol * |g|; NaN / Inf where the golden has none fail.
- speedup: the runner times candidate and expert with the NPU's own events
  (aclrtRecordEvent pairs around each launch), interleaved, `reps` times each; the
  speedup is the median ratio, its 95% CI by a seeded bootstrap, and the noise floor
  the spread of expert-vs-expert ratios; pass iff the CI's lower end is above the task's
  speed_bar and above 1 + noise.

Refusals, each naming what is missing: no bisheng / no CANN home -> no_cann (the verifier
names the gates); a CANN home without AscendC's headers -> no_cann; a SoC bisheng cannot
target -> infra_error harness_error; a golden with another hash -> harness_error.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import random
import shutil
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifiers.ascendc import errors
from verifiers.base import GateFail, fail_on_limit, put_input
from verifiers.contract import Status

CANN_GATES = ("compile", "precision", "speedup")
# SoC -> the AI core arch bisheng compiles for (pyasc: Ascend910B and Ascend910_93 -> c220)
SOC_ARCH = {"Ascend910B": "c220", "Ascend910_93": "c220"}
# the AscendC headers a direct-launch build includes, relative to the CANN home
TIKCFW = (
    "compiler/tikcpp/tikcfw",
    "compiler/tikcpp/tikcfw/impl",
    "compiler/tikcpp/tikcfw/interface",
)
KERNEL_HEADER = "compiler/tikcpp/tikcfw/kernel_operator.h"
BISHENG_OPTIONS = (
    "-std=c++17",
    "--cce-disable-kernel-global-attr-check",
    "-mllvm",
    "-cce-aicore-stack-size=0x8000",
    "-mllvm",
    "-cce-aicore-function-stack-size=0x8000",
    "-mllvm",
    "-cce-aicore-dcci-insert-for-scalar=false",
    "-DASCENDC_DUMP=0",
    "-D__NPU_TILING__",
    "-DTILING_KEY_VAR=0",
)
REPS = 50  # timed launches per kernel
NOISE_REPS = 20  # expert-vs-expert pairs for the noise floor


@dataclass(frozen=True)
class CannNode:
    bisheng: str
    home: str


def probe() -> CannNode | None:
    bisheng = shutil.which("bisheng")
    home = os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME")
    if bisheng and home and os.path.isdir(home):
        return CannNode(bisheng, home)
    return None


def missing() -> str:
    gone = []
    if shutil.which("bisheng") is None:
        gone.append("bisheng not on PATH")
    if not (os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME")):
        gone.append("no CANN toolkit (ASCEND_HOME_PATH unset: source CANN's set_env.sh)")
    return "; ".join(gone) or "nothing"


# --- pure: what would run ------------------------------------------------------------------


def missing_headers(home: str) -> list[str]:
    """AscendC's include dirs and kernel_operator.h the build needs that `home` lacks."""
    return [rel for rel in (*TIKCFW, KERNEL_HEADER) if not os.path.exists(os.path.join(home, rel))]


def arch_of(soc: str) -> str:
    if soc not in SOC_ARCH:
        raise GateFail(
            Status.INFRA_ERROR,
            "harness_error",
            f"SoC {soc} is not one this adapter can compile for ({', '.join(SOC_ARCH)})",
        )
    return SOC_ARCH[soc]


def compile_argv(node: CannNode, soc: str, src: str, obj: str, opt: int = 2) -> list[str]:
    """bisheng's device-only build of one kernel source to an AI core object (vector core:
    the elementwise / reduction kernels the catalog holds)."""
    arch = arch_of(soc)
    argv = [node.bisheng, "-c", "-x", "cce", f"-O{opt}", src]
    argv += [f"--cce-aicore-arch=dav-{arch}-vec", "--cce-aicore-only", "-o", obj]
    version = os.path.join(node.home, "include", "version", "cann_version.h")
    if os.path.exists(version):
        argv += ["-include", version]
    for rel in TIKCFW:
        argv += ["-I", os.path.join(node.home, rel)]
    return argv + list(BISHENG_OPTIONS)


def link_argv(node: CannNode, obj: str, out: str) -> list[str]:
    """ld.lld from CANN's bisheng toolchain dir (beside bisheng), as pyasc links."""
    lld = os.path.join(os.path.dirname(node.bisheng), "ld.lld")
    return [lld, "-m", "aicorelinux", "-Ttext=0", obj, "-static", "-o", out]


def cann_env(home: str) -> dict[str, str]:
    """What CANN's set_env.sh exports that bisheng and the runtime read."""
    return {
        "ASCEND_HOME_PATH": home,
        "ASCEND_TOOLKIT_HOME": home,
        "ASCEND_OPP_PATH": os.path.join(home, "opp"),
        "LD_LIBRARY_PATH": os.path.join(home, "lib64"),
    }


def runner_argv(job: str, mode: str) -> list[str]:
    """The NPU runner (python with torch_npu / acl) over a job file: `precision` writes one
    .npy per output per case, `timing` one JSON of event-timed milliseconds."""
    return ["python3", "-I", "-B", "-m", RUNNER, mode, job]


def golden(path: Path, expected_sha: str) -> bytes:
    """A golden's bytes, refused unless its sha256 is the one the task recorded."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise GateFail(Status.INFRA_ERROR, "harness_error", f"golden {path.name}: {e}") from None
    got = hashlib.sha256(data).hexdigest()
    if got != expected_sha:
        raise GateFail(
            Status.INFRA_ERROR,
            "harness_error",
            f"golden {path.name} has sha256 {got[:12]}..., the task recorded "
            f"{expected_sha[:12]}...: not the golden the task was made with",
        )
    return data


def precision(actual: Any, expected: Any, atol: float, rtol: float) -> tuple[bool, str]:
    """NPUKernelBench's rule: an element fails iff its absolute AND relative error are both
    over the tolerances; a NaN or Inf the golden does not have fails."""
    import numpy as np

    a, g = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if a.shape != g.shape:
        return False, f"shape {a.shape} != golden {g.shape}"
    finite_g, finite_a = np.isfinite(g), np.isfinite(a)
    bad_nonfinite = ~finite_a & (finite_g | (a != g) & ~(np.isnan(a) & np.isnan(g)))
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.where(finite_a & finite_g, np.abs(a - g), 0.0)
    bad = bad_nonfinite | ((err > atol) & (err > rtol * np.abs(g)))
    n = int(bad.sum())
    if n == 0:
        return True, f"{a.size} elements within abs {atol:g} or rel {rtol:g}"
    idx = np.unravel_index(int(np.argmax(bad)), a.shape)
    return False, (
        f"{n}/{a.size} elements over abs {atol:g} and rel {rtol:g}; first at "
        f"{tuple(int(i) for i in idx)}: got {a[idx]!r}, expected {g[idx]!r}"
    )


def speedup(
    cand_ms: list[float],
    expert_ms: list[float],
    noise_ms: list[tuple[float, float]],
    speed_bar: float,
    seed: int = 0,
) -> tuple[bool, dict[str, float]]:
    """Median expert/candidate ratio over paired reps, a 95% bootstrap CI, and the noise
    floor (the 95th percentile of |1 - ratio| between two expert runs)."""
    ratios = [e / c for c, e in zip(cand_ms, expert_ms, strict=True) if c > 0]
    if not ratios:
        return False, {"speedup": 0.0, "ci_low": 0.0, "ci_high": 0.0, "noise": math.inf}
    rng = random.Random(seed)
    boots = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(1000))
    lo, hi = boots[25], boots[974]
    spread = sorted(abs(1 - b / a) for a, b in noise_ms if a > 0) or [0.0]
    noise = spread[min(len(spread) - 1, int(0.95 * len(spread)))]
    med = statistics.median(ratios)
    ok = lo >= speed_bar and lo > 1 + noise if speed_bar >= 1 else lo >= speed_bar
    return ok, {"speedup": med, "ci_low": lo, "ci_high": hi, "noise": noise}


# --- the gates (ctx.run on a CANN node) ------------------------------------------------------


def _sources(ctx: Any) -> dict[str, str]:
    """The C++ to build: the lowered variants (pyasc) or the candidate's kernel file."""
    if ctx.state.get("lowered"):
        return dict(ctx.state["lowered"])
    p = ctx.state["parts"]
    return {p.kernel: p.text(p.kernel)}


def compile_gate(node: CannNode, ctx: Any, settings: Any) -> str:
    gone = missing_headers(node.home)
    if gone:
        raise GateFail(
            Status.INFRA_ERROR,
            "no_cann",
            f"CANN home {node.home} lacks AscendC's headers ({', '.join(gone)}): install "
            "the CANN toolkit's compiler package",
        )
    built = []
    for n, (name, text) in enumerate(sorted(_sources(ctx).items())):
        src, obj, out = f"k{n}.cpp", f"k{n}.o", f"k{n}.bin"
        put_input(ctx, src, text)
        res = ctx.run(compile_argv(node, settings.soc, src, obj), timeout_s=300)
        fail_on_limit(res, "bisheng")
        if res.returncode != 0:
            log = (res.stderr or "") + (res.stdout or "")
            err = errors.classify(log.replace(src, name), {name: text})
            raise GateFail(Status.COMPILE_ERROR, err.code, err.first, feedback=err.feedback())
        res = ctx.run(link_argv(node, obj, out), timeout_s=120)
        fail_on_limit(res, "ld.lld")
        if res.returncode != 0:
            raise GateFail(
                Status.COMPILE_ERROR,
                "compile_error",
                f"linking {name} failed",
                feedback=(res.stderr or res.stdout or "")[:1500],
            )
        built.append(out)
    ctx.state["cann_built"] = built
    return f"bisheng built {len(built)} kernel(s) for {settings.soc}"


def golden_dir(task: Any) -> Path:
    """The catalog's layout: tasks/ascendc/<name>/golden (spec.py's default)."""
    return Path("tasks") / task.domain / task.name / "golden"


RUNNER = "crucible_npu_runner"


def require_runner() -> None:
    """The NPU runner (loads the built kernel with CANN's runtime, runs the cases, times
    them) is not written yet: where it is absent, even on a CANN node, precision and
    speedup are the machine's gap (`no_cann`), never the candidate's crash."""
    if importlib.util.find_spec(RUNNER) is None:
        raise GateFail(
            Status.INFRA_ERROR,
            "no_cann",
            f"precision and speedup need Crucible's NPU runner ({RUNNER}), not installed on "
            "this node: these gates have not run on an NPU yet",
        )


def precision_gate(node: CannNode, ctx: Any, settings: Any) -> str:
    require_runner()
    h = ctx.task.harness
    shas = h.get("goldens", {})
    cases = h["cases"]
    if len(shas) != len(cases):
        raise GateFail(
            Status.INFRA_ERROR,
            "harness_error",
            f"{len(cases) - len(shas)} case(s) have no golden: make the task's goldens",
        )
    job = {"kernels": ctx.state.get("cann_built", []), "cases": cases, "outdir": "out"}
    for c in cases:
        cid = str(c["case_id"])
        put_input(
            ctx, f"golden{cid}.npz", golden(golden_dir(ctx.task) / f"case{cid}.npz", shas[cid])
        )
    put_input(ctx, "job.json", json.dumps(job))
    res = ctx.run(runner_argv("job.json", "precision"), timeout_s=600)
    fail_on_limit(res, "the NPU runner")
    if res.returncode != 0:
        raise GateFail(
            Status.RUNTIME_ERROR,
            "crash",
            f"the kernel failed on the NPU (exit {res.returncode})",
            feedback=(res.stderr or "")[-1500:],
        )
    import numpy as np

    for c in cases:
        cid = str(c["case_id"])
        with np.load(ctx.workdir / f"golden{cid}.npz") as g:
            for key in g.files:
                got = np.load(ctx.workdir / "out" / f"case{cid}_{key}.npy", allow_pickle=False)
                ok, detail = precision(got, g[key], h["atol"], h["rtol"])
                if not ok:
                    raise GateFail(
                        Status.WRONG_ANSWER, "numeric_mismatch", f"case {cid} {key}: {detail}"
                    )
    return f"{len(cases)} case(s) within abs {h['atol']:g} / rel {h['rtol']:g}"


def speedup_gate(node: CannNode, ctx: Any, settings: Any) -> str:
    require_runner()
    h = ctx.task.harness
    job = {"kernels": ctx.state.get("cann_built", []), "reps": REPS, "noise_reps": NOISE_REPS}
    put_input(ctx, "timing.json", json.dumps(job))
    res = ctx.run(runner_argv("timing.json", "timing"), timeout_s=600)
    fail_on_limit(res, "the NPU runner")
    try:
        t = json.loads((ctx.workdir / "out" / "timing.json").read_text())
        ok, m = speedup(t["candidate"], t["expert"], [tuple(x) for x in t["noise"]], h["speed_bar"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise GateFail(
            Status.INFRA_ERROR, "tool_crash", f"the NPU runner left no timing: {e}"
        ) from None
    ctx.metrics.update({k: round(v, 4) for k, v in m.items()})
    detail = (
        f"speedup {m['speedup']:.3f}x (95% CI {m['ci_low']:.3f}-{m['ci_high']:.3f}, "
        f"noise {m['noise']:.3f}) vs bar {h['speed_bar']:g}"
    )
    if not ok:
        raise GateFail(Status.SLOW, "slow", detail)
    return detail
