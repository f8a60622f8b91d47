"""The second simulator: Verilator (`verilator --binary --timing`) runs the task's testbench
in the same compilation unit as iverilog does (tb.sv, ref.sv, unit.sv, cand.sv), and its
report is read the same way (`waves.parse_report` with the run's nonce).

Which one decides (`choose`): `harness.simulator`; "auto" (or absent) picks verilator when
the reference's own iverilog simulation is slow (`harness.ref_cost.simulate` of at least
AUTO_ABOVE_S: there a compiled model pays back its build) and the reference writes no X
literal (below), otherwise iverilog. The decider's report judges exactly as vvp's always
has. A verilator build that fails on a design iverilog compiled is verilator's limit
(unsupported construct, a C++ compiler out of time or memory), not the candidate's fault:
iverilog judges instead and `metrics["simulator_fallback"]` says why. Where verilator
decides, a mismatch comes without a waveform (a traced model, `--trace`, would build
slower for every candidate); the mismatch table is the testbench's, as always.

Two states. Verilator has no X or Z: `--x-assign 0 --x-initial 0` makes every X (a literal,
an uninitialised variable) a 0, the same on every run, where iverilog keeps X. So where the
reference leaves bits X (a don't-care the testbench masks) the two can legitimately
differ: a candidate driving 1 there passes iverilog and fails verilator. That is why "auto"
keeps iverilog for a reference with an X literal (`formal.reference_has_x`); an X from an
uninitialised register is not visible in the text, and a task can still name verilator
itself: there its testbench is judged two-state.

The cross-check (`RtlSettings.cross_check_rate`): for a sample of candidates, chosen from
the candidate itself (`sampled`: a rerun picks the same ones), the other simulator runs
too, when the decider's run ended with a report. Where they disagree on pass / fail
(or one of them ends without the report the other printed) that is recorded as its own
finding, `sim_disagreement`: races between processes on one edge, X-pessimism or
X-optimism, event-order dependence are real design bugs that one simulator alone hides.
The decider's verdict stands: the disagreement says the design's behaviour depends on the
simulator (or, for an X the reference leaves, that the task's testbench does), not which
of the two is the candidate's true behaviour, so it is a finding, not a failure. Mismatch
counts are recorded but not compared: the two draw different `$random` streams (seeded
or not) and count X samples differently.

The build. The runtime library (verilated.cpp and friends, ~75% of a small design's
build) does not depend on the design: it is built once per verifier (`Runtime`), in a
sandbox of its own with no candidate text in it, and linked into every design's model
(`-MAKEFLAGS VM_GLOBAL_*=`), which brings a small design's build from ~6 s to ~1.2-2 s.
Every build runs in the sandbox with BUILD_CPU_S / BUILD_TIMEOUT_S: the C++ compiler's
cost grows with the design, not with the reference's simulation, and a build that does not
finish is a fallback, never the candidate's failure, so the constants only bound waste.

The trust boundary is iverilog's: tb.sv (the nonce) and ref.sv are on disk only while
verilator_bin and the C++ compiler read them (nothing of the design runs then); the
generated sources, objects and make files, which all quote them, are removed with them,
and only the linked model (`BINARY`, which holds the nonce as sim.vvp does) is left when
it runs the design.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from verifiers.rtl.formal import reference_has_x
from verifiers.sandbox import Sandbox

IVERILOG, VERILATOR = "iverilog", "verilator"
# the reference's iverilog seconds from which a compiled model pays back its build
AUTO_ABOVE_S = 2.0
BUILD_CPU_S = 60
BUILD_TIMEOUT_S = 120.0
MDIR = "vl"  # verilator's output dir: generated C++, objects, make files
BINARY = "sim.vlt"  # the linked model, moved out of MDIR before MDIR goes
RUNTIME = "vlrt.a"  # the prebuilt runtime library
# --binary: C++ with a main(), built by make + g++ (one job: a shared 2-core machine and
# the sandbox's process limit). Warnings never stop it (lint is its own gate); X and
# uninitialised values are 0, deterministically.
BUILD_ARGV = (
    "verilator_bin",
    "--binary",
    "--timing",
    "--build-jobs",
    "1",
    "-Wno-fatal",
    "-Wno-lint",
    "-Wno-style",
    "--x-assign",
    "0",
    "--x-initial",
    "0",
    "--Mdir",
    MDIR,
    "-o",
    "sim",
)
# make quiet, the runtime objects left out of the model's make (linked from RUNTIME,
# named relative to MDIR, where make runs: the sandbox's /work is not the host's path
# when unconfined)
PREBUILT = ("-MAKEFLAGS", "-s VM_GLOBAL_FAST= VM_GLOBAL_SLOW=", f"../{RUNTIME}")
NEEDS = ("make", "g++", "ar")
INSTALL = "apt-get install -y verilator make g++"
_RUNTIME_TOP = "crucible_vlrt"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def missing() -> list[str]:
    """The programs a verilator build needs that this machine lacks."""
    return [p for p in ("verilator_bin", *NEEDS) if shutil.which(p) is None]


def choose(harness: Mapping[str, Any], reference: str) -> str:
    """The simulator whose report decides: the task's choice, or for "auto" verilator
    where the reference is slow in iverilog, four-state free and verilator can build."""
    want = harness.get("simulator") or "auto"
    if want != "auto":
        return want
    cost = (harness.get("ref_cost") or {}).get("simulate") or 0.0
    slow = cost >= AUTO_ABOVE_S and not reference_has_x(reference)
    return VERILATOR if slow and not missing() else IVERILOG


def other(simulator: str) -> str:
    return IVERILOG if simulator == VERILATOR else VERILATOR


def sampled(task_id: str, code: str, rate: float) -> bool:
    """Whether this candidate is in the cross-check's sample: a uniform draw in [0, 1)
    from its content, so a rerun of the same candidate draws the same."""
    if rate <= 0:
        return False
    digest = hashlib.sha256(f"{task_id}\0{code}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def build_argv(top: str, files: list[str], prebuilt: bool) -> list[str]:
    return [*BUILD_ARGV, "--top-module", top, *(PREBUILT if prebuilt else ()), *files]


def compare(got: int, secondary: str, other_got: int | None, ran: bool, detail: str) -> dict:
    """The cross-check's record (`metrics["sim_cross_check"]`). `agree` is on pass / fail;
    a second run that ran the design to its end without the report disagrees (the first
    printed one), one that says nothing about the design (not built, out of time) is
    None."""
    agree = None if not ran else other_got is not None and (other_got == 0) == (got == 0)
    return {"simulator": secondary, "mismatches": other_got, "agree": agree, "detail": detail}


def note(primary: str, got: int, check: dict) -> str:
    """The feedback paragraph for a disagreement."""
    said = "passes" if got == 0 else f"fails ({got} mismatching sample(s))"
    if check["mismatches"] is None:
        other_said = f"ends without the testbench's report ({check['detail']})"
    elif check["mismatches"] == 0:
        other_said = "passes"
    else:
        other_said = f"fails ({check['mismatches']} mismatching sample(s))"
    return (
        f"Simulators disagree: the design {said} in {primary} and {other_said} in "
        f"{check['simulator']}. Its behaviour depends on the simulator: look for a race "
        "(a blocking assignment to a variable another always block reads on the same "
        "edge), a value read before it is set (uninitialised or X state), or a "
        "combinational loop."
    )


def put(workdir: Path, name: str, data: bytes) -> None:
    """A host-written input (the runtime library): a new file, never through a link. The
    caller removed whatever had the name."""
    fd = os.open(workdir / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), 0o644)
        f.write(data)


def keep_model(workdir: Path) -> bool:
    """Move the linked model out of MDIR, which then goes whole; False if there is none."""
    mdir = workdir / MDIR
    try:
        if not (
            stat.S_ISDIR(os.lstat(mdir).st_mode) and stat.S_ISREG(os.lstat(mdir / "sim").st_mode)
        ):
            return False
        os.replace(mdir / "sim", workdir / BINARY)
    except OSError:
        return False
    return True


class Runtime:
    """The runtime library, built once (lazily, by the first build that needs it) and
    kept in memory; a failed build is not kept (the next candidate tries again)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._archive: bytes | None = None

    def get(self, sandbox: Sandbox, cap_bytes: int) -> tuple[bytes, float] | str:
        """(the archive, the seconds this call spent building it), or why there is none."""
        with self._lock:
            if self._archive is not None:
                return self._archive, 0.0
            got = _build_runtime(sandbox, cap_bytes)
            if not isinstance(got, str):
                self._archive = got[0]
            return got


def _build_runtime(sandbox: Sandbox, cap_bytes: int) -> tuple[bytes, float] | str:
    """verilated*.o of an empty model, built with BUILD_ARGV, as one archive. Its own
    work dir holds no candidate text: nothing in it is the candidate's."""
    with tempfile.TemporaryDirectory(prefix="crucible-vlrt-") as tmp:
        work = sandbox.prepare_workdir(Path(tmp))
        src = work / "rt.sv"
        # a delay, so that the timing runtime is built too
        src.write_text(f"module {_RUNTIME_TOP};\n  initial #1 $finish;\nendmodule\n")
        src.chmod(0o644)
        build = sandbox.run(
            build_argv(_RUNTIME_TOP, ["rt.sv"], prebuilt=False),
            work,
            timeout_s=BUILD_TIMEOUT_S,
            cpu_s=BUILD_CPU_S,
        )
        if build.returncode != 0 or build.limit_hit:
            why = build.limit_hit or _first_error(build.stdout + build.stderr)
            return f"the verilator runtime did not build: {why}"
        names = os.listdir(work / MDIR) if (work / MDIR).is_dir() else []
        objs = sorted(
            f"{MDIR}/{n}" for n in names if n.startswith("verilated") and n.endswith(".o")
        )
        ar = sandbox.run(["ar", "rcs", RUNTIME, *objs], work)
        data = _read_regular(work / RUNTIME, cap_bytes)
        if ar.returncode != 0 or not objs or data is None:
            return "the verilator runtime did not archive: " + (ar.stderr.strip() or "no objects")
        return data, build.seconds + ar.seconds


def _read_regular(path: Path, cap: int) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > cap:
            return None
        return f.read(cap)


def build_error(log: str, limit: str | None) -> str:
    """One line on why a design's build failed."""
    return f"verilator build failed: {limit or _first_error(log)}"[:300]


def _first_error(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    errs = [ln for ln in lines if ln.startswith("%Error") or "error:" in ln]
    return (errs or lines[-1:] or ["no output"])[0][:240]
