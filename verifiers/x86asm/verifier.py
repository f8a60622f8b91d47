"""The x86asm verifier: x86-64 assembly for a C function (or a whole program), accepted only
when it is correct on every test, keeps the calling convention, and is measurably faster
than the gcc -O3 baseline the task gives.

Gates, in order (`cpu` node; every tool in the sandbox, one session per candidate):

- `assemble` (build): GNU as, limited to the task's ISA (x86-64-v3: AVX2, BMI2, FMA);
  its errors parsed (unknown mnemonic, bad operand, outside the ISA, syntax).
- `static` (build): the object, read on the host: the entry is a global function in
  .text; no constructor, IFUNC or writable-and-executable section; no writable data (a
  pure function keeps no state); calls only the library functions the task allows; and,
  from objdump's disassembly, no system call, software interrupt, cycle counter or
  valgrind client request, nothing outside the ISA. A refusal is `rejected`.
- `link` (build): every symbol the object defines renamed `cand.*` (objcopy), library
  calls sent through their stack-alignment checks, linked statically with the driver
  (driver/) and the -O3 baseline (`base.*`).
- `execute` (run): the driver runs every test case natively under its seccomp filter (write
  and exit only, once candidate code may run) with the time stamp counter off: a fault
  is `crash` (where, and which buffer the address missed), a system call
  `forbidden_syscall`, a cycle counter read (rdtsc, rdtscp, rdpmc: wherever it hid from
  the static gate) `rejected/forbidden_instruction`, a hang `timeout`.
- `abi` (judge): each call went through the ABI trampoline: callee-saved registers, the
  stack pointer, alignment at library calls, DF, MXCSR, the x87 control word, an empty
  x87 stack and the caller's frame: `abi_violation`, even when the output is right.
- `correct` (judge): return value and every window byte against the reference C's, case by
  case; the first failing input and both outputs in the feedback (`output_mismatch`, or
  `out_of_bounds_write` when bytes outside the output buffers changed: in the window's
  fill, in the red zones beyond it or anywhere else in the arena, or a write that faulted
  on the guard page past a buffer, whose SIGSEGV is this code, not `crash`). The cases
  reach every size the task allows, up to twice the perf workload's.
- `copy` (perf): the same machine code as a baseline it was given: `slow` / `copied_input`.
- `perf` (perf): wall time over rounds of three passes in one process, the candidate,
  the baseline and a second copy of it (the A/A pair), each round on inputs of its own
  and every pass on a scrubbed stack (speed.py: the median's interval must clear the
  task's bar raised to the noise floor), then the instruction count under callgrind
  (deterministic) against the baseline's, which must clear 1.01x at least. `slow` unless
  both do. The outputs of every measured pass are checked too.

Program tasks (SuperCoder layout) take the same gates with the program's tests: stdin in,
exact stdout out, its main called through the trampoline; wall time per run (process
included, as SuperCoder's hyperfine times it) and callgrind over main.

The trust boundary: the verdict comes from the driver's records on stdout, its started
line on stderr (written before any candidate code runs: a failure before it is the
harness's), the exit status the sandbox's pid 1 reports, and callgrind's output file
(truncated and written by valgrind after the measured code ended). Expected results come
from the reference, run in a separate process that never holds candidate code. A
candidate that prints is only adding lines that are not the driver's: the run is then
`abnormal_exit`, never a pass.
"""

from __future__ import annotations

import math
import re
import signal
from typing import Any

from verifiers.base import Context, GateFail, Tool, Verifier, fail_on_limit, put_input
from verifiers.contract import Artifact, Status, Task
from verifiers.elf import BadElf, Elf
from verifiers.feedback import first_line_difference, trim
from verifiers.sandbox import RunResult
from verifiers.warm import OutputRefused, read_beneath
from verifiers.x86asm import callgrind, errors, kit, objcheck, speed, toolchain
from verifiers.x86asm.cases import (
    ABI_BITS,
    DUMP_CHUNK,
    DUMP_MAX,
    FLAG_VALGRIND,
    HELPERS,
    STARTED,
    VERSION,
    Case,
    Generator,
    Output,
    Workload,
    abi_findings,
    encode,
    parse_output,
    pass_hash,
    same_result,
    started,
)
from verifiers.x86asm.domain import DOMAIN
from verifiers.x86asm.signature import Signature

INSTALL = toolchain.INSTALL
MAX_OBJECT = 8 * 2**20
MAX_BINARY = 64 * 2**20
COST_MULT = 10  # budgets: this many times the reference's own CPU seconds, with a floor
RUN_FLOOR_S, COUNT_FLOOR_S = 1.0, 5.0
EXIT_BAD_INPUT, EXIT_NO_FILTER, EXIT_ABI = 90, 91, 86
CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGTRAP}
# a fault this near an arena (its guard pages, the unmapped space up to the next arena,
# driver.c's ARENA_STRIDE apart) is named from that arena's buffers: an index gone wrong
NEAR = 2**30
NONCE = 0x43525543  # the canaries' seed: fixed, so a rerun is the same run
# timed runs at most, where one leaves the speedup inconclusive: a function's run is tens
# of milliseconds, and on a loaded 2-core host a 1.25x memory-bound reference needed 3 runs
# of 15 rounds in 1 of 3 verifications, and was left `slow` at 3 runs in one suite run
TIMED_RUNS = 8
# the orders of a round's three (candidate, baseline, its copy), one per round in turn:
# none follows another more often than the rest
ORDERS = ((0, 1, 2), (1, 2, 0), (2, 0, 1), (0, 2, 1), (2, 1, 0), (1, 0, 2))
_ENTRY_LABEL = r"^[ \t]*{name}[ \t]*:"


def _tool(name: str) -> Tool:
    return Tool(name, name, (name, "--version"), INSTALL)


class X86Verifier(Verifier):
    domain = "x86asm"
    name = "x86asm-callgrind"
    # 2: sizes up to 2x the perf workload's, red zones, TSC off, x87 stack; speed judged
    # above the noise floor on fresh inputs and scrubbed passes; whole programs' globals
    version = VERSION
    resource = DOMAIN.resource
    gates = DOMAIN.gate_names
    requires = {g: (p,) for p, g in zip(DOMAIN.gate_names, DOMAIN.gate_names[1:], strict=False)}
    # a verdict from the fast gates never stands for a measured one
    partial_versions = True
    session_sandbox = True
    threaded_batches = True  # a candidate is tool processes: threads only wait
    tools = tuple(_tool(t) for t in ("gcc", "as", "objcopy", "objdump", "valgrind"))

    # --- format -----------------------------------------------------------------------
    def check_format(self, task: Task, code: str) -> None:
        name = task.interface["function"]
        if not re.search(_ENTRY_LABEL.format(name=re.escape(name)), code, re.M):
            raise GateFail(
                Status.FORMAT_ERROR,
                "missing_entry_point",
                f"the assembly defines no label `{name}:` (the task's function"
                + (f": {task.interface['signature']})" if "signature" in task.interface else ")"),
            )

    # --- what the static gate may refuse (a test-only subclass lets all of it through to
    # prove the runtime defences on their own) -------------------------------------------
    def static_findings(self, ctx: Context, obj: Elf, disassembly: str) -> list[objcheck.Finding]:
        # a whole program is a fresh process every run: its globals start from what the
        # loader gives them each time, so they keep nothing between the runs that are judged
        # (the rule is for a function, called again and again in one process)
        stateful = bool(ctx.task.harness.get("stateful")) or _is_program(ctx.task)
        found = objcheck.section_findings(obj, stateful)
        found += objcheck.disassembly_findings(disassembly)
        for where in objcheck.client_requests(obj):
            found.append(
                objcheck.Finding(
                    "forbidden_instruction",
                    f"section {where} holds valgrind's client-request sequence: code that "
                    "talks to the instrumentation that counts it",
                )
            )
        return found

    # --- gates --------------------------------------------------------------------------
    def gate_assemble(self, ctx: Context) -> str:
        isa = ctx.task.platform.get("isa", toolchain.DEFAULT_ISA)
        put_input(ctx, "cand.s", ctx.code)
        march = toolchain.ISAS.get(isa, toolchain.ISAS[toolchain.DEFAULT_ISA])[0]
        res = ctx.run([toolchain.AS, "--64", f"-march={march}", "cand.s", "-o", "cand.o"])
        fail_on_limit(res, "as")
        log = res.stderr
        if res.returncode != 0:
            diags = errors.as_diagnostics(log)
            code = errors.as_code(diags)
            first = next((d.show() for d in diags if d.kind == "Error"), trim(log, 300))
            if code == "isa_not_allowed":
                first += f" (the target is {isa})"
            ctx.artifacts.append(Artifact("log", "assemble.log", log.encode()))
            shown = "\n".join(d.show() for d in diags[:12]) or trim(log, 2000)
            raise GateFail(Status.COMPILE_ERROR, code, first, feedback=shown)
        warnings = log.count("Warning:")
        ctx.metrics["assembler_warnings"] = warnings
        return f"assembled for {isa} ({warnings} warnings)"

    def gate_static(self, ctx: Context) -> str:
        program = _is_program(ctx.task)
        obj = _elf(ctx, "cand.o", MAX_OBJECT)
        entry = "main" if program else ctx.task.interface["function"]
        if problem := objcheck.entry_problem(obj, entry):
            raise GateFail(Status.FORMAT_ERROR, "missing_entry_point", problem)
        res = ctx.run([toolchain.OBJDUMP, "-d", "--no-show-raw-insn", "cand.o"])
        fail_on_limit(res, "objdump")
        if res.returncode != 0:
            raise GateFail(
                Status.COMPILE_ERROR, "compile_error", f"objdump: {trim(res.stderr, 300)}"
            )
        found = self.static_findings(ctx, obj, res.stdout)
        if found:
            f = found[0]
            status = Status.REJECTED if f.code != "isa_not_allowed" else Status.COMPILE_ERROR
            shown = "\n".join(x.detail for x in found[:8])
            raise GateFail(status, f.code, f.detail, feedback=shown)
        allowed = objcheck.PROGRAM_CALLS if program else objcheck.FUNCTION_CALLS
        calls = sorted(obj.undefined())
        refused = [n for n in calls if n not in allowed]
        if refused:
            known = [n for n in refused if n in objcheck.LIBC_NAMES]
            if known:
                raise GateFail(
                    Status.COMPILE_ERROR,
                    "api_not_allowed",
                    f"calls {', '.join(known)}, which this task does not allow (allowed: "
                    + ", ".join(sorted(n for n in allowed if not n.startswith("_"))[:40])
                    + ")",
                    metrics={"missing_symbol": known[0]},
                )
            raise GateFail(
                Status.COMPILE_ERROR,
                "undefined_symbol",
                f"{', '.join(refused)}: defined nowhere (not in this file, not a C library "
                "function the task allows)",
                metrics={"missing_symbol": refused[0]},
            )
        ctx.state["defined"] = objcheck.defined_names(obj)
        ctx.state["calls"] = calls
        ctx.state["fingerprint"] = objcheck.fingerprint(obj)
        return f"{len(obj.sections)} sections, calls {', '.join(calls) or 'nothing'}"

    def gate_link(self, ctx: Context) -> str:
        program = _is_program(ctx.task)
        k = self._kit(ctx)
        table = toolchain.redefine_syms(
            ctx.state["defined"], ctx.state["calls"], "cand", set() if program else set(HELPERS)
        )
        put_input(ctx, "syms.txt", table)
        drop = [f"--remove-section={name}*" for name in toolchain.BEFORE_MAIN]
        align = () if program else toolchain.ALIGN_TEXT
        argv = [toolchain.OBJCOPY, "--redefine-syms=syms.txt", *drop, *align, "cand.o", "cand2.o"]
        res = ctx.run(argv)
        fail_on_limit(res, "objcopy")
        if res.returncode != 0:
            raise GateFail(
                Status.COMPILE_ERROR, "compile_error", f"objcopy: {trim(res.stderr, 300)}"
            )
        objects = dict(toolchain.driver_objects(program))
        if program:
            defsyms, libs = {"crucible_cand_entry": "cand.main"}, ["-lm"]
            put_input(ctx, "b", k.base_bin, mode=0o755)
        else:
            objects["base.o"], objects["alt.o"] = k.base_o, k.alt_o
            defsyms, libs = kit.function_entries(ctx.task, alt=True), []
        for name, data in objects.items():
            put_input(ctx, name, data)
        argv = [
            toolchain.GCC,
            *toolchain.LINK_FLAGS,
            "-o",
            "x",
            *[n for n in objects if n not in ("base.o", "alt.o")],
            "cand2.o",
            *[n for n in ("base.o", "alt.o") if n in objects],
            *(f"-Wl,--defsym={a}={b}" for a, b in defsyms.items()),
            *libs,
        ]
        res = ctx.run(argv)
        fail_on_limit(res, "ld")
        if res.returncode != 0:
            code, summary, missing = errors.link_problem(res.stderr)
            ctx.artifacts.append(Artifact("log", "link.log", res.stderr.encode()))
            raise GateFail(
                Status.COMPILE_ERROR,
                code,
                summary,
                feedback=trim(res.stderr.replace("cand.", ""), 2000),
                metrics={"missing_symbol": missing[0]} if missing else None,
            )
        return "linked with the driver" + ("" if program else " and the -O3 baseline")

    def gate_execute(self, ctx: Context) -> str:
        if _is_program(ctx.task):
            return self._run_program(ctx)
        gen = kit.generator(ctx.task)
        work = gen.check
        ctx.state["check"] = work
        k: kit.FunctionKit = self._kit(ctx)
        put_input(ctx, "check.bin", gen.input_file("check", "check", nonce=NONCE))
        res = ctx.run(
            ["./x", "check.bin"], self_signal=True, **_budget(ctx, k.costs["check"], RUN_FLOOR_S)
        )
        out = self._outcome(ctx, res, "the function", work)
        ctx.state["out"] = out
        return f"{len(out.records)} calls returned"

    def gate_abi(self, ctx: Context) -> str:
        if _is_program(ctx.task):
            return self._abi_program(ctx)
        out: Output = ctx.state["out"]
        work: Workload = ctx.state["check"]
        _abi(ctx, out, work, "")
        return f"{len(out.records)} calls kept the calling convention"

    def gate_correct(self, ctx: Context) -> str:
        if _is_program(ctx.task):
            return self._correct_program(ctx)
        sig, _ = _function(ctx.task)
        k: kit.FunctionKit = self._kit(ctx)
        out: Output = ctx.state["out"]
        work: Workload = ctx.state["check"]
        if out.stray is not None:
            self._stray(ctx, sig, work, out)
        for i, want in enumerate(k.check):
            r = out.records[i]
            got = [r.rax, r.rdx, *r.hashes]
            if not same_result(sig, want, got):
                self._mismatch(ctx, sig, work, i, want, got, "")
        return f"all {len(k.check)} cases match the reference"

    def gate_copy(self, ctx: Context) -> str:
        mine = ctx.state["fingerprint"]
        for label, text in ctx.task.harness["baselines"].items():
            try:
                theirs = objcheck.fingerprint(Elf(toolchain.assemble_trusted(text), bits=64))
            except (toolchain.ToolchainError, BadElf):
                continue
            if mine == theirs:
                what = (
                    "the assembly the task gave" if label == "given" else f"gcc's -{label} baseline"
                )
                raise GateFail(
                    Status.SLOW,
                    "copied_input",
                    f"the candidate assembles to the same machine code as {what}: a copy, "
                    "not an optimization",
                    metrics={"copied": label},
                )
        return "differs from every baseline"

    def gate_perf(self, ctx: Context) -> str:
        wall, cand_ns, base_ns = self.measure_wall(ctx)
        instructions = self._count(ctx)
        k = self._kit(ctx)
        h = ctx.task.harness
        speedup = k.base_instructions / max(1, instructions)
        ibar = speed.instruction_bar(float(h.get("speed_bar", 1.0)))
        ctx.metrics.update(
            instructions=instructions,
            baseline_instructions=k.base_instructions,
            speedup=round(speedup, 4),
            instruction_bar_applied=round(ibar, 4),
            wall_ns=cand_ns,
            baseline_wall_ns=base_ns,
            timing_reps=int(self.settings.timing_reps),
            wall_rounds=wall.rounds,
            **wall.metrics(),
        )
        summary = (
            f"{instructions:,} instructions vs the -O3 baseline's {k.base_instructions:,} "
            f"({speedup:.3f}x); wall {wall.speedup:.3f}x, the median over {wall.rounds} rounds "
            f"measured side by side (interval {wall.low:.3f}..{wall.high:.3f}x; fastest pass "
            f"{cand_ns / 1e3:.1f} us vs {base_ns / 1e3:.1f} us); the baseline against a copy "
            f"of itself {wall.aa:.3f}x, a noise floor of {wall.noise_floor:.3f}x"
        )
        if speedup <= ibar:
            raise GateFail(
                Status.SLOW,
                "slow",
                f"not faster than the -O3 baseline in instructions: {summary}; the bar is "
                f"more than {ibar:g}x",
            )
        if not wall.clears:
            raise GateFail(
                Status.SLOW,
                "slow",
                f"fewer instructions but not measurably faster in wall time: {summary}; the "
                f"interval's low end must clear {wall.bar:.3f}x (the task's wall bar, raised to "
                "the noise floor)",
            )
        ctx.notes.append(f"measured: {summary}")
        return summary

    def measure_wall(self, ctx: Context) -> tuple[speed.Wall, int, int]:
        """The timed rounds judged (speed.judge), the fastest candidate and baseline pass
        (ns). The wall half of the perf gate on its own: what an A/A bench calls.

        An inconclusive run (the median above the task's bar, the interval's low end or the
        noise floor not clear of it: rounds disturbed by the machine's other work, or a run
        it slowed whole) is timed again, in a new process, and the rounds pooled, up to
        TIMED_RUNS runs: a busy machine costs time, not an honest candidate's label. A
        median at or under the task's own bar ends it at once (`speed.Wall.decided`)."""
        bar = float(ctx.task.harness.get("wall_bar", 1.0))
        times: list[tuple[int, int, int]] = []
        for _ in range(TIMED_RUNS):
            times += self._time_program(ctx) if _is_program(ctx.task) else self._time_function(ctx)
            wall = speed.judge(times, bar)
            if wall.decided:
                break
        return wall, min(t[0] for t in times), min(t[1] for t in times)

    # --- function tasks: the runs ------------------------------------------------------
    def _outcome(
        self, ctx: Context, res: RunResult, what: str, work: Workload, records: int | None = None
    ) -> Output:
        """The driver's records (`records` of them: default, one per case), or the GateFail
        that says how the run ended."""
        has_started = started(res.stderr)
        fail_on_limit(res, what)
        if not has_started:
            raise GateFail(
                Status.INFRA_ERROR,
                "harness_error",
                f"the driver failed before any candidate code ran (exit {res.returncode}): "
                + trim(res.stderr, 400),
            )
        out = parse_output(res.stdout, len(work.layout.sizes))
        if res.signal == signal.SIGSYS:
            last = max(out.records, default=-1)
            raise GateFail(
                Status.RUNTIME_ERROR,
                "forbidden_syscall",
                f"{what} made a system call the harness does not allow (killed by SIGSYS, "
                f"during case {last + 1}): an optimized function makes none",
            )
        crashed_by = out.crash.signal if out.crash else res.signal
        if out.crash and crashed_by == signal.SIGSEGV:
            self._refused_or_stray(ctx, out, work, what)
        if crashed_by in CRASH_SIGNALS:
            raise GateFail(
                Status.RUNTIME_ERROR, "crash", *self._crash_text(ctx, out, work, crashed_by)
            )
        n = len(work.cases)
        if out.malformed or out.end != n or len(out.records) != (n if records is None else records):
            done = len(out.records)
            why = (
                f"wrote a line that is not the driver's: {out.malformed!r}"
                if out.malformed
                else f"ended (exit {res.returncode}) after {done} of {n} calls returned"
            )
            raise GateFail(Status.RUNTIME_ERROR, "abnormal_exit", f"{what} {why}")
        return out

    def _refused_or_stray(self, ctx: Context, out: Output, work: Workload, what: str) -> None:
        """A SIGSEGV that is the rule it broke: a cycle counter read (the driver turned the
        TSC off, so rdtsc faults wherever it hides: in another instruction's bytes, jumped
        into, where the static disassembly never decodes it), or a write into the guard
        page that ends (or starts) a buffer's arena."""
        crash = out.crash
        assert crash is not None
        case = work.cases[crash.case] if 0 <= crash.case < len(work.cases) else None
        label = f"case {crash.case} ({case.why})" if case else "a call"
        where = _symbol_at(ctx, crash.rip)
        at = f" at {where}" if where else ""
        if insn := crash.counter():
            raise GateFail(
                Status.REJECTED,
                "forbidden_instruction",
                f"{what} executed {insn}{at} in {label}: it reads the CPU's cycle counters, "
                "and the timing is the harness's (the counter is off while candidate code "
                "runs, so it faulted)",
            )
        if case is None or not crash.write:
            return
        for a, base in out.arenas.items():
            size = work.layout.sizes[a] if a < len(work.layout.sizes) else 0
            if base - NEAR <= crash.addr < base + size + NEAR:
                detail = (
                    f"{label}: wrote outside its buffers{at}, "
                    f"{_address(work, case, out, crash.addr)} (the write faulted on the "
                    "unmapped memory there)"
                )
                raise GateFail(
                    Status.WRONG_ANSWER,
                    "out_of_bounds_write",
                    detail,
                    feedback=detail + "\ninputs: " + describe(_function(ctx.task)[0], case),
                )

    def _stray(self, ctx: Context, sig: Signature, work: Workload, out: Output) -> None:
        """A byte of an arena outside every window changed (the driver's red zones and
        arena scans): wrong_answer/out_of_bounds_write, naming the buffer and the offset."""
        s = out.stray
        assert s is not None
        last = work.cases[min(s.last, len(work.cases) - 1)]
        where = _address(work, last, out, out.arenas.get(s.arena, 0) + s.offset)
        names = [n for n, a in work.layout.arena_of.items() if a == s.arena]
        if s.first == s.last:
            detail = (
                f"case {s.first} ({last.why}): wrote outside its buffers (the first byte it "
                f"changed lies {where})"
            )
        else:
            # found by a scan of the whole arena: which of those calls wrote is not known
            detail = (
                f"one of cases {s.first}..{s.last} wrote outside its buffers: byte {s.offset} "
                f"of the memory that holds {', '.join(names)} changed, far from every buffer "
                "of those calls"
            )
        raise GateFail(
            Status.WRONG_ANSWER,
            "out_of_bounds_write",
            detail,
            feedback=detail + "\ninputs: " + describe(sig, last),
        )

    def _crash_text(self, ctx: Context, out: Output, work: Workload, sig: int) -> tuple[str, str]:
        name = signal.Signals(sig).name
        crash = out.crash
        if crash is None or not 0 <= crash.case < len(work.cases):
            detail = f"the function was killed by {name}"
            return detail, detail
        case = work.cases[crash.case]
        where = _symbol_at(ctx, crash.rip)
        detail = f"{name} in case {crash.case} ({case.why})" + (f" at {where}" if where else "")
        lines = [detail]
        if sig in (signal.SIGSEGV, signal.SIGBUS):
            lines.append(f"fault address 0x{crash.addr:x}: {_address(work, case, out, crash.addr)}")
        lines.append("inputs: " + describe(_function(ctx.task)[0], case))
        return detail, "\n".join(lines)

    def _mismatch(
        self, ctx: Context, sig: Signature, work: Workload, i: int, want: list[int],
        got: list[int], label: str,
    ) -> None:  # fmt: skip
        case = work.cases[i]
        lines = [f"{label}case {i} ({case.why}): " + describe(sig, case)]
        code = "output_mismatch"
        if sig.ret is not None and (want[0] ^ got[0]) & ((1 << sig.ret.bits) - 1):
            lines.append(f"returned {_show(sig.ret, got[0])}, expected {_show(sig.ret, want[0])}")
        if want[2:] != got[2:] and not label:
            diff, outside = self._diff_windows(ctx, sig, work, i, want, got)
            lines += diff
            if outside:
                code = "out_of_bounds_write"
        elif want[2:] != got[2:]:
            lines.append("the buffers it writes differ from the reference's")
        raise GateFail(Status.WRONG_ANSWER, code, lines[1] if len(lines) > 1 else lines[0],
                       feedback="\n".join(lines))  # fmt: skip

    def _diff_windows(
        self, ctx: Context, sig: Signature, work: Workload, i: int, want: list[int], got: list[int]
    ) -> tuple[list[str], bool]:
        """Both windows of case i byte by byte (the candidate's dumped in its session, the
        reference's from its own binary): what differs, and whether any of it lies outside
        the buffers the function may write. A dump holds DUMP_MAX bytes of each window and
        a hash of every DUMP_CHUNK: where the first differing chunk lies past those bytes,
        both are dumped again from there."""
        n = len(work.layout.sizes)

        def dump(skip: int) -> Output:
            put_input(ctx, "dump.bin", encode(sig, work, "dump", nonce=NONCE, arg=i, reps=skip))
            res = ctx.run(["./x", "dump.bin"], self_signal=True, **_budget(ctx, 0.1, RUN_FLOOR_S))
            return parse_output(res.stdout, n)

        mine = dump(0)
        theirs = kit.reference_dump(ctx.task, sig, work, i, ctx.limits.unconfined)
        starts = [
            j * DUMP_CHUNK
            for a in range(n)
            for j, (x, y) in enumerate(
                zip(mine.chunks.get(a, ()), theirs.chunks.get(a, ()), strict=False)
            )
            if x != y
        ]
        if starts and min(starts) + DUMP_CHUNK > DUMP_MAX:
            mine = dump(min(starts))
            theirs = kit.reference_dump(ctx.task, sig, work, i, ctx.limits.unconfined, min(starts))
        lines, outside = [], False
        case = work.cases[i]
        for a in range(n):
            if want[2 + a] == got[2 + a] or a not in mine.dumps or a not in theirs.dumps:
                continue
            (lo, cb), rb = mine.dumps[a], theirs.dumps[a][1]
            for name, b in case.buffers.items():
                if work.layout.arena_of[name] != a or b.elems is None:
                    continue
                access = ctx.task.interface["buffers"][name]["access"]
                size = b.param.type.size
                start, end = b.offset - lo, b.offset - lo + b.nbytes
                if start < 0:  # the dump begins inside the buffer: at an element's start
                    start += -(start // size) * size
                for k in range(start, min(end, len(cb), len(rb)), size):
                    if cb[k : k + size] != rb[k : k + size]:
                        idx = (k - (b.offset - lo)) // size
                        t = b.param.type
                        g = t.wrap(int.from_bytes(cb[k : k + size], "little"))
                        w = t.wrap(int.from_bytes(rb[k : k + size], "little"))
                        if access == "in":
                            outside = True
                            lines.append(f"changed its input {name}[{idx}] to {g} (it was {w})")
                        else:
                            lines.append(f"{name}[{idx}] = {g}, expected {w}")
                        break
            owned = [
                (b.offset - lo, b.offset - lo + b.nbytes)
                for n, b in case.buffers.items()
                if work.layout.arena_of[n] == a and b.elems is not None
            ]
            stray = [
                k for k in range(min(len(cb), len(rb)))
                if cb[k] != rb[k] and not any(s <= k < e for s, e in owned)
            ]  # fmt: skip
            if stray:
                outside = True
                first = case.buffers[
                    next(n for n, x in case.buffers.items() if work.layout.arena_of[n] == a)
                ]
                rel = stray[0] - (first.offset - lo)
                where = (
                    f"{-rel} bytes before {first.param.name}"
                    if rel < 0
                    else f"{rel - first.nbytes} bytes past the end of {first.param.name}"
                )
                lines.append(f"wrote {len(stray)} bytes outside its buffers (the first {where})")
        return lines or ["the buffers differ from the reference's"], outside

    def _time_function(self, ctx: Context) -> list[tuple[int, int, int]]:
        sig, gen = _function(ctx.task)
        k: kit.FunctionKit = self._kit(ctx)
        perf = gen.perf
        ctx.state["perf"] = perf
        reps = int(self.settings.timing_reps)
        put_input(ctx, "time.bin", gen.input_file("perf", "time", reps=reps, nonce=NONCE))
        variants = len(perf.cases) // max(1, perf.per_pass or len(perf.cases))
        cost = (3 * (reps + 1) + max(0, variants - 1 - reps)) * k.costs["pass"] + k.costs["check"]
        res = ctx.run(["./x", "time.bin"], self_signal=True, **_budget(ctx, cost, 2 * RUN_FLOOR_S))
        per = perf.per_pass or len(perf.cases)
        out = self._outcome(ctx, res, "the timed run", perf, records=per)
        self._perf_outputs(ctx, sig, perf.first_pass(), out, k.perf[:per], "the timed run")
        for v in range(1, variants):
            self._variant_outputs(ctx, sig, perf, out, k, v)
        if len(out.times) != reps:
            raise GateFail(Status.RUNTIME_ERROR, "abnormal_exit", "the timed run reported no times")
        return out.times

    def _variant_outputs(
        self, ctx: Context, sig: Signature, perf: Workload, out: Output, k: kit.FunctionKit, v: int
    ) -> None:
        """Variant v's pass line against the reference's calls on it; on a difference, its
        calls run again one by one to name the first wrong one and its inputs."""
        per = perf.per_pass
        what = f"the timed run (the perf workload's variant {v}, inputs drawn anew)"
        if v not in out.passes:
            raise GateFail(Status.RUNTIME_ERROR, "abnormal_exit", f"{what} reported no result")
        abi, misaligned, got = out.passes[v]
        if abi:
            found = abi_findings(abi)
            helpers = [h for bit, h in enumerate(HELPERS) if misaligned >> bit & 1]
            if helpers:
                found.append(f"(at calls to {', '.join(helpers)})")
            raise GateFail(
                Status.RUNTIME_ERROR,
                "abi_violation",
                f"{what}: " + "; ".join(found),
                metrics={"abi": [n for b, (n, _) in enumerate(ABI_BITS) if abi >> b & 1]},
            )
        want = k.perf[v * per : (v + 1) * per]
        if got == pass_hash(sig, want):
            return
        sub = Workload(perf.layout, perf.cases[v * per : (v + 1) * per])
        put_input(ctx, "variant.bin", encode(sig, sub, "check", nonce=NONCE))
        cost = k.costs["pass"] * 2
        res = ctx.run(["./x", "variant.bin"], self_signal=True, **_budget(ctx, cost, RUN_FLOOR_S))
        again = self._outcome(ctx, res, what, sub)
        self._perf_outputs(ctx, sig, sub, again, want, what)
        raise GateFail(
            Status.WRONG_ANSWER,
            "output_mismatch",
            f"{what}: its outputs differ from the reference's, though each call run again "
            "alone gives the right ones: its results depend on what ran before them",
        )

    def _perf_outputs(
        self,
        ctx: Context,
        sig: Signature,
        perf: Workload,
        out: Output,
        expected: list[list[int]],
        what: str,
    ) -> None:
        _abi(ctx, out, perf, f"{what}: ")
        for i, want in enumerate(expected):
            r = out.records[i]
            got = [r.rax, r.rdx, *r.hashes]
            if not same_result(sig, want, got):
                self._mismatch(ctx, sig, perf, i, want, got, f"{what} (the perf workload), ")

    def _count(self, ctx: Context) -> int:
        program = _is_program(ctx.task)
        k = self._kit(ctx)
        put_input(ctx, callgrind.OUT, b"", mode=0o666)
        if program:
            perf = ctx.task.harness["perf_test"]
            argv = callgrind.argv(callgrind.PROGRAM_REGION, "./x", "valgrind", f"in{perf}.txt")
            entry, calls, what = "cand.main", 1, "the program"
        else:
            sig, _ = _function(ctx.task)
            perf: Workload = ctx.state["perf"].first_pass()
            gen = kit.generator(ctx.task)
            count = gen.input_file("perf1", "count", flags=FLAG_VALGRIND, nonce=NONCE)
            put_input(ctx, "count.bin", count)
            argv = callgrind.argv(callgrind.FUNCTION_REGION, "./x", "count.bin")
            entry, calls, what = f"cand.{sig.name}", len(perf.cases), "the counted run"
        res = ctx.run(argv, self_signal=True, **_budget(ctx, k.costs["count"], COUNT_FLOOR_S))
        if program:
            fail_on_limit(res, what)
            want = ctx.task.harness["tests"][perf]["stdout"]
            if res.returncode != 0 or res.stdout != want:
                # main is entered once whatever it then does: only its output shows that
                # it ran whole under the instrumentation as it does natively
                raise GateFail(
                    Status.REJECTED,
                    "timing_games",
                    f"the counted run of the perf test printed other output (exit "
                    f"{res.returncode}) than the native runs: it did not run whole under the "
                    "instrumentation",
                )
        else:
            try:
                out = self._outcome(ctx, res, what, perf)
            except GateFail as f:
                if f.code == "crash" and "SIGILL" in f.detail:
                    # it ran natively: an instruction valgrind does not decode (the tool's)
                    raise GateFail(
                        Status.INFRA_ERROR, "tool_crash", f"valgrind cannot run it: {f.detail}"
                    ) from None
                raise
            self._perf_outputs(ctx, sig, perf, out, k.perf[: len(perf.cases)], what)
        region = callgrind.PROGRAM_REGION if program else callgrind.FUNCTION_REGION
        try:
            counted = callgrind.read(ctx.workdir, res, region, entry, calls)
        except callgrind.CountRefused as e:
            raise GateFail(Status.REJECTED, "timing_games", str(e)) from None
        if isinstance(counted, str):
            # the native runs were fine: valgrind could not measure this code (an
            # instruction it does not decode, its own failure): the tool's, retried
            raise GateFail(Status.INFRA_ERROR, "tool_crash", f"callgrind: {counted}")
        return counted

    # --- program tasks ------------------------------------------------------------------
    def _run_program(self, ctx: Context) -> str:
        k: kit.ProgramKit = self._kit(ctx)
        tests = ctx.task.harness["tests"]
        results = []
        for i, t in enumerate(tests):
            put_input(ctx, f"in{i}.txt", t["stdin"])
            res = ctx.run(
                ["./x", "native", f"in{i}.txt"],
                self_signal=True,
                **_budget(ctx, k.costs["run"], RUN_FLOOR_S),
            )
            fail_on_limit(res, f"the program on test {i}")
            if not started(res.stderr):
                raise GateFail(
                    Status.INFRA_ERROR,
                    "harness_error",
                    f"the driver failed before the program ran (exit {res.returncode}): "
                    + trim(res.stderr, 400),
                )
            if res.signal == signal.SIGSYS:
                call = errors.refused_syscall(res.stderr[len(STARTED) :])
                raise GateFail(
                    Status.RUNTIME_ERROR,
                    "forbidden_syscall",
                    f"the program made a system call the harness does not allow on test {i} "
                    f"(killed by SIGSYS{f'; it says: {call}' if call else ''})",
                )
            if res.signal in CRASH_SIGNALS:
                name = signal.Signals(res.signal).name
                raise GateFail(
                    Status.RUNTIME_ERROR,
                    "crash",
                    f"{name} on test {i}",
                    feedback=f"{name} on test {i}; its input:\n{trim(t['stdin'], 600)}",
                )
            results.append(res)
            if res.returncode not in (0, EXIT_ABI):
                raise GateFail(
                    Status.RUNTIME_ERROR,
                    "nonzero_exit",
                    f"the program exited with status {res.returncode} on test {i}",
                    feedback=f"exit status {res.returncode} on test {i}; its input:\n"
                    f"{trim(t['stdin'], 600)}\nits stderr:\n"
                    + trim(res.stderr[len(STARTED) :], 600),
                )
        ctx.state["program_runs"] = results
        return f"{len(results)} tests ran"

    def _abi_program(self, ctx: Context) -> str:
        for i, res in enumerate(ctx.state["program_runs"]):
            if res.returncode != EXIT_ABI:
                continue
            m = re.search(r"^crucible: abi ([0-9a-f]+) ([0-9a-f]+)$", res.stderr, re.M)
            bits = int(m[1], 16) if m else 0
            found = abi_findings(bits) or ["main broke the calling convention"]
            raise GateFail(
                Status.RUNTIME_ERROR,
                "abi_violation",
                f"test {i}: main " + "; ".join(found),
                metrics={"abi": [n for n, _ in ABI_BITS if bits]},
            )
        return "main kept the calling convention"

    def _correct_program(self, ctx: Context) -> str:
        tests = ctx.task.harness["tests"]
        for i, (t, res) in enumerate(zip(tests, ctx.state["program_runs"], strict=True)):
            if res.stdout == t["stdout"]:
                continue
            n, g, w = first_line_difference(res.stdout, t["stdout"])
            detail = f"test {i}: output line {n + 1} is {g!r}, expected {w!r}"
            raise GateFail(
                Status.WRONG_ANSWER,
                "output_mismatch",
                detail,
                feedback=f"{detail}\ninput:\n{trim(t['stdin'], 800)}",
            )
        return f"all {len(tests)} tests print the expected output"

    def _time_program(self, ctx: Context) -> list[tuple[int, int, int]]:
        """The candidate's program and the baseline's, twice (an A/A pair), on the perf test,
        in rounds of three in each of their orders in turn, after one untimed run of each (its pages
        cached): wall time of the whole process, as SuperCoder's harness times it. Each run
        is a fresh process: no run can keep anything for the next."""
        k: kit.ProgramKit = self._kit(ctx)
        perf = ctx.task.harness["perf_test"]
        want = ctx.task.harness["tests"][perf]["stdout"]
        budget = _budget(ctx, k.costs["run"], RUN_FLOOR_S)
        # the A/A pair's second is a file of its own: the same binary run twice in a row
        # runs warmer the second time (its pages, caches), a bias no candidate gets
        put_input(ctx, "a", k.base_bin, mode=0o755)
        binaries = ("x", "b", "a")
        rounds = []
        for r in range(-1, int(self.settings.timing_reps)):
            t = [0, 0, 0]
            for j in range(3):
                which = ORDERS[r % 6][j]
                argv = [f"./{binaries[which]}", "native", f"in{perf}.txt"]
                res = ctx.run(argv, self_signal=True, **budget)
                fail_on_limit(res, "the timed program")
                if which == 0 and (res.returncode != 0 or res.stdout != want):
                    raise GateFail(
                        Status.WRONG_ANSWER,
                        "output_mismatch",
                        f"a timed run of the perf test printed other output "
                        f"({errors.how_it_ended(res.returncode, res.signal, res.stderr)})",
                    )
                start = res.stop.setup_s if res.stop is not None else 0.0
                t[which] = int((res.seconds - start) * 1e9)
            if r >= 0:
                rounds.append((t[0], t[1], t[2]))
        return rounds

    # --- shared ---------------------------------------------------------------------------
    def _kit(self, ctx: Context) -> kit.FunctionKit | kit.ProgramKit:
        got = ctx.state.get("kit")
        if got is None:
            try:
                got = kit.get_kit(ctx.task, ctx.limits.unconfined)
            except (kit.KitError, toolchain.ToolchainError) as e:
                raise GateFail(Status.INFRA_ERROR, "harness_error", str(e)) from None
            ctx.state["kit"] = got
        return got


# --- helpers ----------------------------------------------------------------------------


def _is_program(task: Task) -> bool:
    return task.harness.get("kind") == "program"


def _function(task: Task) -> tuple[Signature, Generator]:
    gen = kit.generator(task)
    return gen.sig, gen


def _budget(ctx: Context, cost_s: float, floor_s: float) -> dict[str, Any]:
    """CPU for a run: COST_MULT times the reference's own, at least `floor_s`, at most the
    Limits' (a hang spends it and ends as the candidate's timeout); the Limits' wall."""
    cpu = min(float(ctx.limits.cpu_s), max(floor_s, COST_MULT * cost_s))
    return {"cpu_s": max(1, math.ceil(cpu)), "timeout_s": ctx.limits.timeout_s}


def _abi(ctx: Context, out: Output, work: Workload, label: str) -> None:
    for i, r in sorted(out.records.items()):
        if not r.abi:
            continue
        found = abi_findings(r.abi)
        helpers = [h for bit, h in enumerate(HELPERS) if r.misaligned >> bit & 1]
        if helpers:
            found = [
                f + f" (at calls to {', '.join(helpers)})" if "aligned" in f else f for f in found
            ]
        case = work.cases[i]
        detail = f"{label}case {i} ({case.why}): " + "; ".join(found)
        raise GateFail(
            Status.RUNTIME_ERROR,
            "abi_violation",
            detail,
            feedback=detail
            + "\ninputs: "
            + describe(_function(ctx.task)[0], case)
            + "\n(the output may be right: the caller's registers or stack are not)",
            metrics={"abi": [n for b, (n, _) in enumerate(ABI_BITS) if r.abi >> b & 1]},
        )


def describe(sig: Signature, case: Case, most: int = 8) -> str:
    parts = []
    for p in sig.params:
        if not p.pointer:
            parts.append(f"{p.name}={case.scalars[p.name]}")
            continue
        b = case.buffers[p.name]
        if b.elems is None:
            parts.append(f"{p.name}=NULL")
            continue
        shown = ", ".join(str(v) for v in b.elems[:most]) + (", ..." if len(b.elems) > most else "")
        parts.append(f"{p.name}=[{shown}] ({len(b.elems)} x {p.type.name}, {b.placement})")
    return "; ".join(parts)


def _show(t, v: int) -> str:
    x = t.wrap(v)
    return f"{x} (0x{v & ((1 << t.bits) - 1):x})"


def _address(work: Workload, case: Case, out: Output, addr: int) -> str:
    """Where a fault address lies relative to the case's buffers."""
    for a, base in out.arenas.items():
        size = work.layout.sizes[a] if a < len(work.layout.sizes) else 0
        if not base - NEAR <= addr < base + size + NEAR:
            continue
        off = addr - base
        best = None
        for name, b in case.buffers.items():
            if work.layout.arena_of[name] != a or b.elems is None:
                continue
            if b.offset <= off < b.offset + b.nbytes:
                return f"inside {name} (byte {off - b.offset} of {b.nbytes})"
            dist = b.offset - off if off < b.offset else off - (b.offset + b.nbytes)
            if best is None or dist < best[0]:
                best = (dist, name, off < b.offset, b)
        if best:
            dist, name, before, b = best
            side = (
                f"{dist} bytes before the start of" if before else f"{dist} bytes past the end of"
            )
            tail = (
                " (an unmapped page follows it)"
                if not before and b.offset + b.nbytes == size
                else ""
            )
            return f"{side} {name}{tail}"
    return "outside every buffer the function was given"


def _symbol_at(ctx: Context, rip: int) -> str | None:
    try:
        x = Elf(read_beneath(ctx.workdir, ctx.workdir / "x", MAX_BINARY), bits=64)
    except (OutputRefused, BadElf, OSError):
        return None
    where = x.function_at(rip)
    if where is None:
        return None
    if where.startswith("cand."):
        return where.removeprefix("cand.")
    return f"{where} (outside the candidate's code)"


def _elf(ctx: Context, name: str, limit: int) -> Elf:
    try:
        return Elf(read_beneath(ctx.workdir, ctx.workdir / name, limit), bits=64)
    except (OutputRefused, BadElf, OSError) as e:
        raise GateFail(Status.COMPILE_ERROR, "compile_error", f"{name}: {e}") from None
