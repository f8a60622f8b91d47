"""What a task's verification needs besides the candidate, made once per task and
toolchain on each node and kept in the host's sealed cache (`toolchain.cache()`):

- function tasks: the -O3 baseline's object (symbols `base.*`) and a second copy of it
  (`alt.*`: the timed run's A/A pair), the reference C's object (`cand.*`: it stands where
  a candidate will), the reference's results on every check case and on every variant of
  the perf workload (return value and window hashes), the baseline's instruction count on
  the perf workload's first pass, and what each run cost the reference (budgets scale with
  it);
- program tasks: the -O3 baseline's binary, checked against the task's own tests, and its
  instruction count on the perf test.

The reference and the baseline are trusted text (the task's C and gcc's output for it):
they are compiled and linked on the host, and run in the sandbox all the same. Nothing
here ever sees candidate code.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifiers.contract import Limits, Task, content_id
from verifiers.elf import STT_FILE, STT_SECTION, Elf
from verifiers.sandbox import RunResult, Sandbox
from verifiers.x86asm import callgrind, errors, toolchain
from verifiers.x86asm.cases import (
    FLAG_BASE,
    FLAG_VALGRIND,
    HELPERS,
    Generator,
    Output,
    Workload,
    encode,
    parse_output,
    pass_hash,
    same_result,
    started,
)
from verifiers.x86asm.signature import Signature, parse_signature

KIT_VERSION = "2"
TRUSTED_LIMITS = Limits(timeout_s=300.0, cpu_s=240, memory_mb=4096, output_bytes=16 * 2**20)
_locks: dict[str, threading.Lock] = {}
_locks_lock = threading.Lock()


class KitError(RuntimeError):
    """The task's own reference or baseline does not hold (a task or install fault)."""


@dataclass(frozen=True)
class FunctionKit:
    base_o: bytes
    alt_o: bytes
    ref_o: bytes
    check: list[list[int]]  # per case: [rax, rdx, window hashes...]
    perf: list[list[int]]  # every variant's cases, in order
    base_instructions: int
    costs: dict[str, float]  # CPU seconds of the reference's runs: check, pass (one), count


@dataclass(frozen=True)
class ProgramKit:
    base_bin: bytes
    base_instructions: int
    costs: dict[str, float]  # CPU seconds: run (the slowest test), count


_generators: dict[str, Generator] = {}
GENERATORS_KEPT = 16  # tasks whose cases stay in memory (a perf workload is megabytes)


def generator(task: Task) -> Generator:
    """The task's case generator, its cases made once (kept for the last few tasks)."""
    with _locks_lock:
        gen = _generators.pop(task.task_id, None)
        if gen is None:
            sig = parse_signature(task.interface["signature"])
            gen = Generator(sig, task.interface, task.harness, task.task_id)
        _generators[task.task_id] = gen  # most recent last
        while len(_generators) > GENERATORS_KEPT:
            _generators.pop(next(iter(_generators)))
    return gen


def _lock(key: str) -> threading.Lock:
    with _locks_lock:
        return _locks.setdefault(key, threading.Lock())


def kit_key(task: Task) -> str:
    """The kit's cache key: the task, the toolchain, the drivers and, for a function, the
    very inputs its results were computed on (a change in how cases are made is a new kit)."""
    inputs: tuple[str, ...] = ()
    if task.harness.get("kind") != "program":
        gen = generator(task)  # its input files are made once, then kept
        inputs = (
            hashlib.sha256(gen.input_file("check", "check")).hexdigest(),
            hashlib.sha256(gen.input_file("perf", "time")).hexdigest(),
        )
    return content_id(
        "x86asm-kit",
        KIT_VERSION,
        task.task_id,
        *inputs,
        toolchain.version(toolchain.GCC),
        toolchain.version(toolchain.AS),
        toolchain.version(toolchain.VALGRIND),
        *(
            content_id(name, base64.b64encode(data).decode())
            for name, data in sorted(
                toolchain.driver_objects(task.harness.get("kind") == "program").items()
            )
        ),
    )


_kits: dict[str, FunctionKit | ProgramKit] = {}  # task_id -> its kit (the last few tasks)


def get_kit(task: Task, unconfined: bool = False) -> FunctionKit | ProgramKit:
    """The task's kit: kept in memory for the last few tasks, else read from the sealed
    cache (verified) or made now (KitError when the task does not hold)."""
    with _locks_lock:
        known = _kits.get(task.task_id)
    if known is not None:
        return known
    key = kit_key(task)
    program = task.harness.get("kind") == "program"
    with _lock(key):
        body = toolchain.cache().read(key)
        if body is None:
            body = (_make_program if program else _make_function)(task, unconfined)
            toolchain.cache().write(key, body)
    made = _program_kit(body) if program else _function_kit(body)
    with _locks_lock:
        _kits[task.task_id] = made
        while len(_kits) > GENERATORS_KEPT:
            _kits.pop(next(iter(_kits)))
    return made


def _function_kit(body: dict[str, Any]) -> FunctionKit:
    return FunctionKit(
        base64.b64decode(body["base_o"]),
        base64.b64decode(body["alt_o"]),
        base64.b64decode(body["ref_o"]),
        body["check"],
        body["perf"],
        int(body["base_instructions"]),
        body["costs"],
    )


def _program_kit(body: dict[str, Any]) -> ProgramKit:
    return ProgramKit(
        base64.b64decode(body["base_bin"]), int(body["base_instructions"]), body["costs"]
    )


# --- objects and links of trusted code ---------------------------------------------------


def rename(obj: bytes, prefix: str, helpers: bool, align: bool = False) -> bytes:
    """`obj` with every symbol it defines renamed `prefix.*` (and, for a function's object,
    its library calls sent through their alignment checks): the host's objcopy, for
    trusted objects only."""
    elf = Elf(obj, bits=64)
    defined = [
        s.name
        for s in elf.symbols
        if s.defined and s.name and s.type not in (STT_SECTION, STT_FILE)
    ]
    table = toolchain.redefine_syms(
        defined, sorted(elf.undefined()), prefix, set(HELPERS) if helpers else set()
    )
    with tempfile.TemporaryDirectory(prefix="crucible-x86asm-obj-") as tmp:
        t = Path(tmp)
        (t / "in.o").write_bytes(obj)
        (t / "syms").write_text(table)
        flags = toolchain.ALIGN_TEXT if align else ()
        _host([toolchain.OBJCOPY, "--redefine-syms=syms", *flags, "in.o", "out.o"], t,
              "renaming symbols")  # fmt: skip
        return (t / "out.o").read_bytes()


def _host(argv: list[str], cwd: Path, what: str) -> None:
    res = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        raise KitError(f"{what}: {argv[0]} failed: {res.stderr.strip()[:1500]}")


def link_trusted(objects: dict[str, bytes], out: Path, defsyms: dict[str, str], libs=()) -> None:
    for name, data in objects.items():
        (out.parent / name).write_bytes(data)
    argv = [
        toolchain.GCC,
        *toolchain.LINK_FLAGS,
        "-o",
        out.name,
        *objects,
        *(f"-Wl,--defsym={k}={v}" for k, v in defsyms.items()),
        *libs,
    ]
    _host(argv, out.parent, "linking the reference")


def function_entries(task: Task, base: bool = True, alt: bool = False) -> dict[str, str]:
    fn = task.interface["function"]
    syms = {"crucible_cand_entry": f"cand.{fn}"}
    if base:
        syms["crucible_base_entry"] = f"base.{fn}"
    if alt:
        syms["crucible_alt_entry"] = f"alt.{fn}"
    return syms


def trusted_run(work: Path, argv: list[str], unconfined: bool) -> RunResult:
    limits = (
        TRUSTED_LIMITS
        if not unconfined
        else Limits(**{**TRUSTED_LIMITS.to_dict(), "unconfined": True})
    )
    sb = Sandbox(limits)
    sb.prepare_workdir(work)
    for p in work.iterdir():
        p.chmod({"x": 0o755, "b": 0o755, callgrind.OUT: 0o666}.get(p.name, 0o644))
    return sb.run(argv, work)


def _cpu(res: RunResult) -> float:
    if res.stop is not None and res.stop.usage is not None:
        return round(res.stop.usage.cpu_s, 4)
    return round(res.seconds, 4)


def _records(
    res: RunResult, n: int, n_arenas: int, what: str, end: int | None = None
) -> list[list[int]]:
    out = parse_output(res.stdout, n_arenas)
    if res.returncode != 0 or out.end != (end or n) or len(out.records) != n or out.malformed:
        raise KitError(
            f"the reference's {what} run failed (exit {res.returncode}): "
            f"{(res.stderr or out.malformed or res.stdout)[-800:]}"
        )
    bad = [r.case for r in out.records.values() if r.abi]
    if bad:
        raise KitError(f"the reference breaks the ABI on {what} case {bad[0]}")
    if out.stray is not None:
        raise KitError(f"the reference writes outside its buffers on {what}: {out.stray}")
    return [[r.rax, r.rdx, *r.hashes] for _, r in sorted(out.records.items())]


# --- function tasks ------------------------------------------------------------------------


def _make_function(task: Task, unconfined: bool) -> dict[str, Any]:
    sig = parse_signature(task.interface["signature"])
    gen = generator(task)
    check, perf = gen.check, gen.perf
    base_raw = toolchain.assemble_trusted(task.harness["baselines"]["O3"])
    base_o, alt_o = rename(base_raw, "base", True, True), rename(base_raw, "alt", True, True)
    ref_raw = toolchain.compile_object(task.harness["reference_c"], ("-O2",))
    ref_o = rename(ref_raw, "cand", True, True)
    with tempfile.TemporaryDirectory(prefix="crucible-x86asm-kit-") as tmp:
        work = Path(tmp) / "w"
        work.mkdir()
        objs = {**toolchain.driver_objects(), "cand.o": ref_o, "base.o": base_o, "alt.o": alt_o}
        link_trusted(objs, work / "x", function_entries(task, alt=True))
        costs: dict[str, float] = {}
        (work / "check.bin").write_bytes(encode(sig, check, "check"))
        res = trusted_run(work, ["./x", "check.bin"], unconfined)
        expect_check = _records(res, len(check.cases), len(check.layout.sizes), "check")
        costs["check"] = _cpu(res)
        # every variant's every call, one by one: what a candidate's must match
        (work / "perf.bin").write_bytes(encode(sig, perf, "check"))
        res = trusted_run(work, ["./x", "perf.bin"], unconfined)
        expect_perf = _records(res, len(perf.cases), len(perf.layout.sizes), "perf")
        # the timed run itself (3 warm-up passes, 2 rounds of 3, then each variant not yet
        # met once): a pass's cost, and its pass lines agree with the calls one by one
        (work / "time.bin").write_bytes(encode(sig, perf, "time", reps=2))
        res = trusted_run(work, ["./x", "time.bin"], unconfined)
        per = perf.per_pass or len(perf.cases)
        variants = len(perf.cases) // per
        timed = parse_output(res.stdout, len(perf.layout.sizes))
        _records(res, per, len(perf.layout.sizes), "timed", end=len(perf.cases))
        for v in range(1, variants):
            want = pass_hash(sig, expect_perf[v * per : (v + 1) * per])
            if timed.passes.get(v, (0, 0, None))[2] != want:
                raise KitError(f"the reference's timed run disagrees with itself on variant {v}")
        costs["pass"] = _cpu(res) / (3 + 6 + max(0, variants - 3))
        first = perf.first_pass()
        (work / "count.bin").write_bytes(
            encode(sig, first, "count", flags=FLAG_VALGRIND | FLAG_BASE)
        )
        (work / callgrind.OUT).write_bytes(b"")
        res = trusted_run(
            work, callgrind.argv(callgrind.FUNCTION_REGION, "./x", "count.bin"), unconfined
        )
        counted = callgrind.read(
            work, res, callgrind.FUNCTION_REGION, f"base.{sig.name}", len(first.cases)
        )
        if isinstance(counted, str):
            raise KitError(f"the baseline's instruction count failed: {counted}")
        costs["count"] = _cpu(res)
        by_base = _records(res, len(first.cases), len(perf.layout.sizes), "baseline count")
        for i, (want, got) in enumerate(zip(expect_perf[: len(by_base)], by_base, strict=True)):
            if not same_result(sig, want, got):
                raise KitError(f"the -O3 baseline disagrees with the reference on perf call {i}")
    return {
        "base_o": base64.b64encode(base_o).decode(),
        "alt_o": base64.b64encode(alt_o).decode(),
        "ref_o": base64.b64encode(ref_o).decode(),
        "check": expect_check,
        "perf": expect_perf,
        "base_instructions": counted,
        "costs": costs,
    }


# --- program tasks -------------------------------------------------------------------------


def _make_program(task: Task, unconfined: bool) -> dict[str, Any]:
    base_o = rename(toolchain.assemble_trusted(task.harness["baselines"]["O3"]), "cand", False)
    tests = task.harness["tests"]
    with tempfile.TemporaryDirectory(prefix="crucible-x86asm-kit-") as tmp:
        work = Path(tmp) / "w"
        work.mkdir()
        objs = {**toolchain.driver_objects(program=True), "cand.o": base_o}
        link_trusted(objs, work / "b", {"crucible_cand_entry": "cand.main"}, ("-lm",))
        worst = 0.0
        for i, t in enumerate(tests):
            (work / f"in{i}.txt").write_text(t["stdin"])
            res = trusted_run(work, ["./b", "native", f"in{i}.txt"], unconfined)
            got = res.stdout
            if res.returncode != 0 or res.signal or not started(res.stderr):
                how = errors.how_it_ended(res.returncode, res.signal, res.stderr)
                raise KitError(
                    f"the -O3 baseline fails the task's test {i}: {how}"
                    + ("" if started(res.stderr) else " (before the program started)")
                    + f"; its stderr: {res.stderr[-300:]!r}"
                )
            if got != t["stdout"]:
                raise KitError(
                    f"the -O3 baseline fails the task's test {i}: it printed {got[:200]!r}, "
                    f"the test expects {t['stdout'][:200]!r}"
                )
            worst = max(worst, _cpu(res))
        perf = task.harness["perf_test"]
        (work / callgrind.OUT).write_bytes(b"")
        res = trusted_run(
            work,
            callgrind.argv(callgrind.PROGRAM_REGION, "./b", "valgrind", f"in{perf}.txt"),
            unconfined,
        )
        try:
            counted = callgrind.read(work, res, callgrind.PROGRAM_REGION, "cand.main", 1)
        except callgrind.CountRefused as e:
            counted = str(e)
        if isinstance(counted, str):
            raise KitError(f"the baseline's instruction count failed: {counted}")
        base_bin = (work / "b").read_bytes()
    return {
        "base_bin": base64.b64encode(base_bin).decode(),
        "base_instructions": counted,
        "costs": {"run": worst, "count": _cpu(res)},
    }


def reference_dump(
    task: Task, sig: Signature, work: Workload, case: int, unconfined: bool, skip: int = 0
) -> Output:
    """The reference's windows after `case` (for a mismatch's feedback: their chunk hashes
    and DUMP_MAX bytes from `skip`): its own binary, linked on the host, run in a sandbox
    of its own."""
    k = get_kit(task, unconfined)
    assert isinstance(k, FunctionKit)
    with tempfile.TemporaryDirectory(prefix="crucible-x86asm-ref-") as tmp:
        w = Path(tmp) / "w"
        w.mkdir()
        objs = {**toolchain.driver_objects(), "cand.o": k.ref_o, "base.o": k.base_o}
        link_trusted(objs, w / "x", function_entries(task))
        (w / "dump.bin").write_bytes(encode(sig, work, "dump", arg=case, reps=skip))
        res = trusted_run(w, ["./x", "dump.bin"], unconfined)
        return parse_output(res.stdout, len(work.layout.sizes))
