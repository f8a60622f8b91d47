"""The embedded verifier: C firmware for the STM32F407, cross-compiled and booted in QEMU.

Gates, in order:

- `compile` (build): arm-none-eabi-gcc -c on the candidate's file alone, against the task's
  interface prototypes (`-include`) and the target headers; only the headers the task
  allows may be included. Errors are parsed: syntax, types, undeclared names, implicit
  declarations (a HAL or CMSIS function that does not exist: `api`).
- `link` (build): the candidate's object is read on the host first: it must define every
  interface function, hold no semihosting trap (BKPT 0xAB: only the harness exits the
  emulator), and call only what the task allows (its `allowed_api`, the C library's string
  and memory functions, the compiler's runtime), including each `required_api` function.
  Then it is linked with the task's test main, the startup code, the harness and the HAL:
  an undefined reference is `api` with the missing symbols.
- `size` (build): flash and RAM use against the chip's (and the task's budget).
- `boot` (run): QEMU runs the ELF in the sandbox, under a seccomp filter that refuses every
  file open for writing, removal and rename, and QEMU's own seccomp (no process creation).
  Semihosting serves the harness's exit and nothing else (`target=gdb` with no debugger: a
  firmware's open / read / system calls come back without effect, so it learns nothing of
  the host). Before the test main the harness (target/src) gives the peripherals QEMU does
  not model register values (periph.c: the MPU traps every access there, a shadow answers
  loads from non-zero presets, ready bits follow their enables, and the access itself still
  reaches QEMU's trace) and paints the free RAM; after it, it reads the paint back and
  reports the core's state. Its outcome: exit code (semihosting), USART1 transcript, the
  register trace of unmodelled peripherals (emulator.py). A fault, an interrupt with no
  handler, a write outside every object (`out_of_bounds_write`), a hang or a flood end here.
  A firmware that ends polling a register is the firmware's (`register_poll_hang`) where the
  model answers as the chip would or the reference never touches that register; only a
  register outside the model that the reference uses too is the emulator's limit
  (`infra_error` `emulator_unmodelled_register`).
- `exit`, `uart`, `registers` (judge): the exit code and the core's state at exit where the
  task names it (PRIMASK, BASEPRI, VTOR, SysTick), the exact transcript, and the expected
  register writes of the task, decoded by register and access size (a byte store to a
  register's upper byte is a write of that register's bits); a `preserve` register's bits
  outside the task's fields must end as the harness preset them (judged by value, so a
  dummy read before a constant write is no read-modify-write).

The trust boundary: the verdict comes from QEMU's exit status, its stdout (USART1) and
its stderr (the unimp trace), pipes the guest cannot open (the semihosting console is a
null device; the filter refuses write opens of /dev/stderr or /proc/self/fd/N), and from
the expected values of the Task, which never enter the work dir. Everything the candidate's
firmware prints is data compared with those values: a forged report line is just a wrong
transcript.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
import signal
from pathlib import Path
from typing import Any

from verifiers import seccomp
from verifiers.base import Context, GateFail, Tool, Verifier, fail_on_limit, put_input
from verifiers.contract import Artifact, Status, Task
from verifiers.elf import STT_OBJECT
from verifiers.embedded import build, errors
from verifiers.embedded.domain import DOMAIN
from verifiers.embedded.elf import SHF_ALLOC, SHT_NOBITS, STT_FUNC, BadElf, Elf, semihosting_traps
from verifiers.embedded.emulator import (
    ACTION_REGISTERS,
    BACKENDS,
    DEVICE_BASES,
    FEEDER,
    EmulatorRun,
    preset_of,
)
from verifiers.embedded.spec import C_HEADERS, TARGET_HEADERS, parse_prototype
from verifiers.feedback import first_line_difference, trim
from verifiers.sandbox import CPU_SPENT, RunResult, Sandbox, SandboxSession
from verifiers.warm import OutputRefused, read_beneath

INSTALL = "bash infra/install-toolchains.sh embedded"
# what any candidate may call besides its task's allowed_api: the C library's memory and
# string functions (GCC emits memcpy / memset calls itself) and the compiler's runtime
_LIBC_WORDS = "memcpy memset memmove memcmp memchr strlen strnlen strcmp strncmp strcpy strncpy \
strchr strrchr strcat strncat strstr abs labs"
LIBC = frozenset(_LIBC_WORDS.split())
RUNTIME = re.compile(r"__aeabi_\w+|__[a-z0-9]+[23]|__gnu_\w+")
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.M)
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
MAX_OBJECT = 4 * 1024 * 1024
# sections the linker script places first (the vector table: reset vector, initial SP)
HARNESS_SECTIONS = (".isr_vector",)
GUEST_WORK = "/fw"
PROBE_S = 0.3  # when a hung firmware's PC is read (most hang within milliseconds of boot)
_TRACE_REG = re.compile(r"^(.+?)\+0x([0-9a-f]+) ", re.M)
EXIT_FAULT, EXIT_UNHANDLED, EXIT_WAIT, EXIT_OOB, EXIT_PERIPH = 250, 251, 252, 253, 249
# what the harness reports of the core at the test main's return, and how to read a value
STATE_FIELDS = {
    "primask": "PRIMASK (1: interrupts disabled)",
    "basepri": "BASEPRI",
    "faultmask": "FAULTMASK",
    "vtor": "SCB->VTOR",
    "systick_ctrl": "SysTick->CTRL[2:0] (ENABLE, TICKINT, CLKSOURCE)",
}


class EmbeddedVerifier(Verifier):
    domain = "embedded"
    name = "embedded-qemu"
    version = "2"  # 2: register values, RAM paint, exit state, semihosting exit only (#29)
    resource = DOMAIN.resource
    gates = DOMAIN.gate_names
    session_sandbox = True  # compile + link share one sandbox; the emulator gets its own
    threaded_batches = True  # a candidate is tool processes: threads only wait
    tools = (
        Tool("arm-none-eabi-gcc", build.CC, (build.CC, "--version"), INSTALL),
        Tool("qemu-system-arm", "qemu-system-arm", ("qemu-system-arm", "--version"), INSTALL),
    )

    def __init__(self, *args: Any, emulator: str = "qemu", **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.emulator = BACKENDS[emulator]

    # --- format -----------------------------------------------------------------------
    def check_format(self, task: Task, code: str) -> None:
        body = _COMMENTS.sub(" ", code)
        missing = [
            n for n in _function_names(task) if not re.search(rf"\b{re.escape(n)}\s*\(", body)
        ]
        if missing:
            raise GateFail(
                Status.FORMAT_ERROR,
                "missing_entry_point",
                f"the candidate does not define {', '.join(missing)} (the task's interface: "
                + "; ".join(task.interface["functions"])
                + ")",
            )

    def _session(self, sandbox: Sandbox, work: Path) -> SandboxSession:
        """Compile and link share one sandbox that sees the target files and the harness's
        cached objects read-only (no copy per candidate); its work dir is GUEST_WORK, so a
        checkout under /work stays visible. The emulator's run has a sandbox of its own."""
        build.cache_root().mkdir(parents=True, exist_ok=True)
        return sandbox.session(
            work, ro_dirs=(str(build.TARGET), str(build.cache_root())), guest_work=GUEST_WORK
        )

    def refuse_traps(self, obj: Elf) -> None:
        """Only the harness traps to the emulator's host (its exit): a candidate's object
        that holds the semihosting trap is refused before it runs, with its reason. (A
        firmware that jumps to a trap elsewhere, in data or in the harness, finds only the
        exit served: the emulator's semihosting has no target but an absent debugger.)"""
        traps = semihosting_traps(obj)
        if traps:
            raise GateFail(
                Status.REJECTED,
                "semihosting_call",
                "the candidate's code holds a semihosting trap (BKPT 0xAB) at "
                + ", ".join(traps)
                + ": only the harness talks to the host",
            )

    def seeded_test(self, task: Task) -> str:
        """The task's test main with CRUCIBLE_SEED defined: its random inputs are drawn
        anew per task and verifier version (so no candidate is fitted to one draw), and the
        same for every candidate of both (so verdicts repeat)."""
        seed = hashlib.sha256(f"{task.task_id}:{self.name}:{self.version}".encode()).digest()
        return (
            f"#define CRUCIBLE_SEED 0x{int.from_bytes(seed[:4], 'big'):08x}u\n"
            + task.harness["test"]
        )

    # --- gates --------------------------------------------------------------------------
    def gate_compile(self, ctx: Context) -> str:
        iface = ctx.task.interface
        allowed = set(iface.get("headers") or ()) | {"stdint.h"}
        body = _COMMENTS.sub(" ", ctx.code)
        for header in _INCLUDE.findall(body):
            if header not in allowed:
                known = header in TARGET_HEADERS + C_HEADERS
                why = "not allowed by this task" if known else "not part of this target"
                raise GateFail(
                    Status.COMPILE_ERROR,
                    "wrong_api",
                    f"#include <{header}>: header {why} (allowed: {', '.join(sorted(allowed))})",
                )
        put_input(ctx, "cand.c", ctx.code)
        put_input(ctx, "iface.h", build.interface_header(iface["functions"]))
        res = ctx.run(
            [
                build.CC,
                *build.CFLAGS,
                "-I",
                str(build.INCLUDE),  # bound read-only into the session (`_session`)
                "-include",
                "iface.h",
                "-c",
                "cand.c",
                "-o",
                "cand.o",
            ],
        )
        fail_on_limit(res, "arm-none-eabi-gcc")
        _spent_cpu(res, ctx.limits.cpu_s, "arm-none-eabi-gcc")
        log = res.stderr
        if res.returncode != 0:
            diags = errors.compile_errors(log)
            code, name = errors.compile_code(diags)
            shown = "\n".join(d.show() for d in diags[:12]) or trim(log, 2000)
            first = diags[0].show() if diags else "the compiler failed"
            if code == "undefined_symbol" and name:
                where = "not in hal.h, stm32f4.h or the C library"
                first = f"{name} is declared nowhere ({where}): {first}"
            ctx.artifacts.append(Artifact("log", "compile.log", log.encode()))
            raise GateFail(
                Status.COMPILE_ERROR,
                code,
                first,
                feedback=shown,
                metrics={"missing_symbol": name} if code == "undefined_symbol" else None,
            )
        warnings = log.count("warning:")
        ctx.metrics["compile_warnings"] = warnings
        if warnings:
            ctx.notes.append("compiler warnings:\n" + trim(log, 1500))
        return f"compiled ({warnings} warnings)"

    def gate_link(self, ctx: Context) -> str:
        task, iface = ctx.task, ctx.task.interface
        obj = _elf(ctx, "cand.o")
        self.refuse_traps(obj)
        owned = sorted(s.name for s in obj.sections if s.name.startswith(HARNESS_SECTIONS))
        if owned:
            raise GateFail(
                Status.REJECTED,
                "testbench_tampering",
                f"the candidate's object holds {', '.join(owned)}: the vector table is the "
                "harness's (an interrupt handler is defined by its name instead)",
            )
        funcs = {s.name for s in obj.symbols if s.defined and s.is_global and s.type == STT_FUNC}
        missing = [n for n in _function_names(task) if n not in funcs]
        if missing:
            raise GateFail(
                Status.FORMAT_ERROR,
                "missing_entry_point",
                f"the object defines no function {', '.join(missing)}",
            )
        version = self.toolchain().get("arm-none-eabi-gcc", "")
        try:
            objs = build.harness_objects(version)
            objs += build.compile_trusted({"test.c": self.seeded_test(task)}, version).values()
        except build.HarnessBuildError as e:
            raise GateFail(Status.INFRA_ERROR, "harness_error", str(e)) from None
        # the harness's objects and the linker script, read where they are (bound read-only)
        script = str(build.LINKER_SCRIPT)
        res = ctx.run(
            [build.CC, *build.LDFLAGS, "-T", script, "cand.o", *map(str, objs), "-o", "fw.elf"],
        )
        fail_on_limit(res, "arm-none-eabi-ld")
        if res.returncode != 0:
            code, summary, symbols = errors.link_problem(res.stderr)
            ctx.artifacts.append(Artifact("log", "link.log", res.stderr.encode()))
            status = Status.RESOURCE_LIMIT if code == "firmware_too_large" else Status.COMPILE_ERROR
            raise GateFail(
                status,
                code,
                summary,
                feedback=trim(res.stderr, 2000),
                metrics={"missing_symbol": symbols[0]} if symbols else None,
            )
        calls = obj.undefined()
        allowed = set(iface.get("allowed_api") or ())
        refused = sorted(
            n for n in calls if n not in allowed and n not in LIBC and not RUNTIME.fullmatch(n)
        )
        if refused:
            raise GateFail(
                Status.COMPILE_ERROR,
                "api_not_allowed",
                f"calls {', '.join(refused)}, which this task does not allow "
                f"(allowed: {', '.join(sorted(allowed)) or 'register access only, no HAL'})",
            )
        unused = [n for n in iface.get("required_api") or () if n not in calls]
        if unused:
            raise GateFail(
                Status.COMPILE_ERROR,
                "api_not_used",
                f"the task requires calls to {', '.join(unused)}; the candidate makes none",
            )
        ctx.state["elf"] = _elf(ctx, "fw.elf")
        ctx.state["defined"] = obj.defined_globals()
        return f"linked; calls {', '.join(sorted(calls & allowed)) or 'no HAL function'}"

    def gate_size(self, ctx: Context) -> str:
        elf: Elf = ctx.state["elf"]
        flash, ram = _memory_use(elf)
        ctx.metrics.update(flash_bytes=flash, ram_bytes=ram)
        budget_flash = min(build.FLASH[1], ctx.task.harness.get("max_flash", build.FLASH[1]))
        budget_ram = min(
            build.SRAM[1] - build.MIN_STACK, ctx.task.harness.get("max_ram", build.SRAM[1])
        )
        if flash > budget_flash or ram > budget_ram:
            raise GateFail(
                Status.RESOURCE_LIMIT,
                "firmware_too_large",
                f"flash {flash} B of {budget_flash}, RAM {ram} B of {budget_ram}",
            )
        return f"flash {flash} B, RAM {ram} B"

    def gate_boot(self, ctx: Context) -> str:
        h = ctx.task.harness
        uart_input = None
        if h.get("uart_input"):
            put_input(ctx, "uart_in.txt", h["uart_input"].encode())
            put_input(ctx, FEEDER.name, FEEDER.read_bytes())
            uart_input = "uart_in.txt"
        timeout = float(h.get("timeout_s", 5.0))
        try:
            filt = seccomp.no_writes()
        except seccomp.SeccompUnsupported as e:
            raise GateFail(Status.INFRA_ERROR, "sandbox_unavailable", str(e)) from None
        # the task's own bound, within the run's Limits: a CPU budget, and a wall clock of
        # twice that, so a busy hang (QEMU spins even on WFI under -icount sleep=off) spends
        # its budget (SIGXCPU: the firmware's) even on a loaded machine; one starved of the
        # CPU short of that is the machine's (`_starved`)
        cpu = min(ctx.limits.cpu_s, max(1, int(timeout)))
        res = ctx.run(
            self.emulator.argv("fw.elf", uart_input=uart_input),
            timeout_s=min(ctx.limits.timeout_s, 2.0 * cpu + 1.0),
            cpu_s=cpu,
            seccomp=filt,
        )
        truncated = res.output_capped
        run = self.emulator.parse(res.returncode, res.stdout, res.stderr, truncated)
        ctx.state["run"] = run
        _record(ctx, run)
        spin = run.spin()
        if spin is not None and (truncated or res.timed_out or res.limit_hit):
            self._judge_spin(ctx, spin)
        # the signal the emulator really died of (its wait status, from the sandbox's pid 1):
        # an exit code above 128 (the harness's 250-252) is not a signal
        killed_by = res.stop.signal if res.stop is not None else None
        if killed_by == signal.SIGSYS:
            raise GateFail(
                Status.RUNTIME_ERROR,
                "forbidden_host_call",
                "the firmware asked the host to run a program (semihosting SYS_SYSTEM): refused",
            )
        if truncated and len(res.stderr.encode()) >= ctx.limits.output_bytes:
            raise GateFail(
                Status.RESOURCE_LIMIT,
                "trace_limit",
                f"more accesses to unmodelled peripherals than the trace holds "
                f"({len(run.accesses)} before the cap): a loop over RCC / GPIO / DMA registers",
                feedback=run.trace_summary(),
            )
        _starved(res)
        try:
            fail_on_limit(res, "the firmware", timeout_code="firmware_hang")
        except GateFail as hang:
            if hang.status is Status.TIMEOUT:
                self._where_it_hung(ctx, hang, filt)
            raise
        if run.lockup is not None:
            raise GateFail(Status.RUNTIME_ERROR, "hard_fault", *_lockup(ctx, run))
        own = [e for e in run.errors if e.startswith(f"{self.emulator.name}:")]
        if killed_by is not None or (res.returncode == 1 and own and not run.uart):
            # the emulator itself failed (it could not load the ELF, it crashed): the firmware
            # cannot write its stderr, so these lines are the emulator's own
            raise GateFail(
                Status.INFRA_ERROR,
                "tool_crash",
                f"{self.emulator.name} failed (exit {res.returncode}): "
                + "; ".join((own or run.errors)[:3]),
            )
        if run.exit_code == EXIT_FAULT and (fault := errors.fault_report(run.uart)):
            elf: Elf = ctx.state["elf"]
            where = elf.function_at(int(fault["pc"]))
            ctx.metrics["fault"] = {
                k: (v if isinstance(v, str) else f"0x{v:08x}") for k, v in fault.items()
            }
            text = errors.describe_fault(fault, where)
            raise GateFail(
                Status.RUNTIME_ERROR,
                "hard_fault",
                text.splitlines()[0],
                feedback=f"the firmware faulted:\n{text}\nUART before it:\n{trim(run.uart, 1200)}",
            )
        if run.exit_code == EXIT_UNHANDLED and (irq := errors.unhandled_irq(run.uart)) is not None:
            raise GateFail(
                Status.RUNTIME_ERROR,
                "unhandled_interrupt",
                _unhandled(ctx, irq),
                feedback=f"{_unhandled(ctx, irq)}\nUART:\n{trim(run.uart, 1200)}",
            )
        if run.exit_code == EXIT_OOB and (oob := errors.oob_report(run.uart)):
            elf = ctx.state["elf"]
            where = " .. ".join(
                f"0x{a:08x}" + (f" ({n})" if (n := _where_in_ram(elf, a)) else "")
                for a in dict.fromkeys((oob["first"], oob["last"]))
            )
            span = f"0x{oob['lo']:08x}-0x{oob['hi']:08x}"
            detail = (
                f"the firmware wrote past the bytes a call may write: {where} (the test's red "
                f"zone {span}, filled before the call and checked after it)"
                if oob["kind"] == "zone"
                else f"the firmware wrote RAM outside every object and below its stack's 16 "
                f"KiB: {where} (the harness painted {span} before the test main and found it "
                "changed after)"
            )
            raise GateFail(
                Status.WRONG_ANSWER,
                "out_of_bounds_write",
                detail,
                metrics={"oob_first": f"0x{oob['first']:08x}", "oob_last": f"0x{oob['last']:08x}"},
            )
        if run.exit_code == EXIT_PERIPH and (bad := errors.periph_unsupported(run.uart)):
            elf: Elf = ctx.state["elf"]
            where = elf.function_at(bad[0])
            raise GateFail(
                Status.RUNTIME_ERROR,
                "unsupported_peripheral_access",
                f"an access to 0x{bad[1]:08x} at PC=0x{bad[0]:08x}"
                + (f" ({where})" if where else "")
                + " is a multiple, doubleword, exclusive or FPU load/store of a peripheral "
                "register, which the register model does not serve (single LDR/STR of a "
                "byte, halfword or word do): an explained, final outcome, never retried",
            )
        if run.exit_code == EXIT_WAIT and "!wait_timeout" in run.uart:
            raise GateFail(
                Status.WRONG_ANSWER,
                "event_missing",
                "the test waited for an interrupt or event that never came",
                feedback=f"UART:\n{trim(run.uart, 1500)}\nregister writes:\n{run.trace_summary()}",
            )
        return f"exit {run.exit_code}, {len(run.uart)} B of UART, {len(run.accesses)} trace entries"

    def _where_it_hung(self, ctx: Context, hang: GateFail, filt: bytes) -> None:
        """The last PC of a hung firmware, for its feedback: the same firmware run again,
        its registers read through the emulator's monitor after PROBE_S (-icount: the same
        instructions, so the same loop). Diagnostic only: it never changes the verdict."""
        try:
            res = ctx.run(
                self.emulator.probe_argv("fw.elf", after_s=PROBE_S),
                timeout_s=PROBE_S + 3.0,
                cpu_s=2,
                seccomp=filt,
            )
        except GateFail:  # the machine was slow for the probe: no PC, the verdict stands
            return
        pc = self.emulator.registers_of(res.stdout).get("R15")
        if pc is None:
            return
        elf: Elf = ctx.state["elf"]
        where = elf.function_at(pc)
        ctx.metrics["hang_pc"] = f"0x{pc:08x}" + (f" {where}" if where else "")
        line = f"after {PROBE_S:g}s the firmware was at PC=0x{pc:08x}" + (
            f" ({where})" if where else ""
        )
        run: EmulatorRun = ctx.state["run"]
        hang.feedback = f"{hang.detail}\n{line}\nUART so far:\n{trim(run.uart, 1200)}"
        if run.accesses:
            hang.feedback += "\nregister writes:\n" + run.trace_summary(20)

    def _judge_spin(self, ctx: Context, spin) -> None:
        """A firmware that ended polling one peripheral register. The registers the harness
        models (periph.c) answer as the chip would after the writes the firmware made (a
        ready bit follows its enable): a bit that never comes is the firmware's. A register
        outside the model is the emulator's limit only where the reference itself touches
        it; one the reference never reads or writes is the firmware's own wait."""
        name = f"{spin.device}+0x{spin.offset:03x}"
        metrics = {"polled_register": name}
        modelled = (spin.offset & ~3) + DEVICE_BASES.get(spin.device, -1) in _modelled_words()
        if modelled or not self._reference_touches(ctx.task, spin.device, spin.offset & ~3):
            why = (
                "the register model answers as the chip would after the writes the firmware "
                "made, and the bit it waits for never comes"
                if modelled
                else "the emulator does not model it, and the task's reference never touches it"
            )
            raise GateFail(
                Status.TIMEOUT,
                "register_poll_hang",
                f"the firmware hangs polling {name}: {why}",
                metrics=metrics,
            )
        raise GateFail(
            Status.INFRA_ERROR,
            "emulator_unmodelled_register",
            f"the firmware polls {name}, a register the emulator does not model (reads return "
            f"0 forever) and the task's reference uses too: an emulator limit, not the "
            f"firmware's failure",
            metrics=metrics,
        )

    def _reference_touches(self, task: Task, device: str, offset: int) -> bool:
        """Whether the task's reference reads or writes that register (its own run, once per
        task and verifier; no reference: assumed, so the limit stays the emulator's)."""
        if not task.reference:
            return True
        key = task.task_id
        cache = self.__dict__.setdefault("_reference_regs", {})
        if key not in cache:
            v = self.verify(task, task.reference)
            if not v.passed:  # a reference that fails (or a slow machine): not known, not kept
                return True
            trace = next((a.data for a in v.artifacts if a.name == "register_trace.txt"), b"")
            cache[key] = set(_TRACE_REG.findall(trace.decode()))
        regs = cache[key]
        return any(d == device and int(o, 16) & ~3 == offset for d, o in regs)

    def gate_exit(self, ctx: Context) -> str:
        run: EmulatorRun = ctx.state["run"]
        want = int(ctx.task.harness.get("exit_code", 0))
        if run.exit_code != want:
            raise GateFail(
                Status.WRONG_ANSWER,
                "exit_code_mismatch",
                f"the test main returned {run.exit_code}; expected {want}",
                feedback=f"exit code {run.exit_code}, expected {want}\n"
                f"UART:\n{trim(run.uart, 1500)}",
            )
        want_state = ctx.task.harness.get("exit_state") or {}
        got = run.state or {}
        if want_state:
            ctx.metrics["exit_state"] = {k: got.get(k) for k in want_state}
        for key, value in want_state.items():
            if got.get(key) != value:
                shown = "none reported" if key not in got else f"0x{got[key]:x}"
                raise GateFail(
                    Status.WRONG_ANSWER,
                    "exit_state_mismatch",
                    f"when the test main returned, {STATE_FIELDS[key]} was {shown}; the task "
                    f"requires 0x{value:x}",
                    feedback=f"core state at exit: {got}\nUART:\n{trim(run.uart, 1200)}",
                )
        return f"exit code {want}" + (f", {len(want_state)} state checks" if want_state else "")

    def gate_uart(self, ctx: Context) -> str:
        want = ctx.task.harness.get("uart")
        if want is None:
            return "no transcript expected"
        run: EmulatorRun = ctx.state["run"]
        if run.uart == want:
            return f"transcript matches ({len(want.splitlines())} lines)"
        i, got_l, want_l = first_line_difference(run.uart, want)
        got_lines = run.uart.splitlines()
        detail = f"UART line {i + 1}: got {got_l!r}, expected {want_l!r}"
        if got_l == want_l:  # same lines, different bytes (line endings, a last newline)
            detail = f"UART output differs in line endings: got {run.uart[-40:]!r}"
        feedback = f"{detail}\nUART so far:\n" + "\n".join(got_lines[max(0, i - 8) : i + 3])
        raise GateFail(Status.WRONG_ANSWER, "uart_mismatch", detail, feedback=feedback)

    def gate_registers(self, ctx: Context) -> str:
        expected = ctx.task.harness.get("registers") or []
        run: EmulatorRun = ctx.state["run"]
        for reg in expected:
            writes = run.writes(reg["device"], reg["offset"])
            mask = reg["mask"]
            where = f"{reg['device']}->{reg['name']} (offset 0x{reg['offset']:02x})"
            problem = None
            if reg.get("absent"):
                if writes:
                    problem = f"{where} must not be written; it was written 0x{writes[0]:08x}"
            elif not writes:
                problem = f"{where} was never written"
            elif "value" in reg and writes[-1] & mask != reg["value"] & mask:
                problem = (
                    f"{where}: last write 0x{writes[-1]:08x}, expected 0x{reg['value'] & mask:08x}"
                    f" under mask 0x{mask:08x}"
                )
            elif "sequence" in reg:
                got = [w & mask for w in writes]
                want = [v & mask for v in reg["sequence"]]
                if got != want:
                    problem = (
                        f"{where}: writes {_hexes(got)}, expected {_hexes(want)} under mask "
                        f"0x{mask:08x}"
                    )
            if problem is None and reg.get("preserve"):
                # the task's fields of this register: every check of it names some
                fields = 0
                for r in expected:
                    if (r["device"], r["offset"]) == (reg["device"], reg["offset"]):
                        fields |= r["mask"] if not r.get("absent") else 0
                problem = _clobbered(run, reg, fields, where)
            if problem:
                raise GateFail(
                    Status.WRONG_ANSWER,
                    "register_mismatch",
                    problem,
                    feedback=f"{problem}\nregister writes (unmodelled peripherals):\n"
                    + run.trace_summary(),
                )
        return f"{len(expected)} register checks"


# --- helpers ------------------------------------------------------------------------------


def _function_names(task: Task) -> list[str]:
    return [parse_prototype(p)[1] for p in task.interface["functions"]]


def _starved(res: RunResult) -> None:
    """The machine rule for the emulator's run, with one difference: QEMU's own threads
    (its main loop, RCU, the UART feeder) are the emulator's, not the firmware's (the
    guest is one core), so their CPU waits never make the run its own contender: a run
    stopped by the wall clock short of its CPU budget, starved of the CPU, is the
    machine's."""
    stop = res.stop
    if not res.timed_out or stop is None or stop.usage is None or not res.started:
        return
    alone = dataclasses.replace(stop, usage=dataclasses.replace(stop.usage, contenders=0))
    if fault := alone.fault("the emulator"):
        raise GateFail(Status.INFRA_ERROR, fault.code, fault.detail)


def _spent_cpu(res: RunResult, budget: float, what: str) -> None:
    """The compiler proper (cc1) killed by RLIMIT_CPU while the driver exits 4 ("internal
    compiler error"): a build that spent the CPU budget (a macro bomb), judged by the CPU
    the host measured for the run's tree, never by the text of the log."""
    used = res.stop.usage.cpu_s if res.stop is not None and res.stop.usage is not None else None
    if res.returncode != 0 and used is not None and used >= CPU_SPENT * budget:
        raise GateFail(
            Status.TIMEOUT,
            "cpu_limit",
            f"{what} spent its whole CPU budget ({used:.2f}s of {budget}s) without finishing",
        )


def _clobbered(run: EmulatorRun, reg: dict, fields: int, where: str) -> str | None:
    """The bits outside the task's fields (and outside what the hardware owns) must hold the
    harness's preset after every write, the last included: judged by value, so a dummy read
    followed by a constant write fails like a plain `=`, a byte store into another field is
    seen, and so is a clobber put right again later (a glitch on the SWD pins)."""
    device, offset = reg["device"], reg["offset"]
    if (device, offset) in ACTION_REGISTERS:
        return None
    preset, ro = preset_of(device, offset)
    keep = ~(fields | ro) & 0xFFFFFFFF
    for n, value in enumerate(run.writes(device, offset)):
        changed = (value ^ preset) & keep
        if changed:
            return (
                f"{where} is 0x{value:08x} after write {n + 1}: bits 0x{changed:08x} outside "
                f"the task's fields (0x{fields:08x}) changed from their value before the test "
                f"(0x{preset:08x}); the other bits were not kept (a read-modify-write was "
                "required)"
            )
    return None


def _where_in_ram(elf: Elf, addr: int) -> str | None:
    """A RAM address by the firmware's objects: "name+0x12" inside one, else "N bytes past
    the end of X" for the nearest object below it."""
    objects = [s for s in elf.symbols if s.type == STT_OBJECT and s.defined and s.size]
    inside = [s for s in objects if s.value <= addr < s.value + s.size]
    if inside:
        return f"{inside[0].name}+0x{addr - inside[0].value:x}"
    below = [s for s in objects if s.value + s.size <= addr]
    if not below:
        return None
    best = max(below, key=lambda s: s.value + s.size)
    return f"{addr - best.value - best.size} bytes past the end of {best.name}"


def _hexes(values: list[int], most: int = 8) -> str:
    shown = ", ".join(f"0x{v:x}" for v in values[:most])
    return f"[{shown}{', ...' if len(values) > most else ''}] ({len(values)} writes)"


def _elf(ctx: Context, name: str) -> Elf:
    try:
        data = read_beneath(ctx.workdir, ctx.workdir / name, MAX_OBJECT)
        return Elf(data, bits=32)
    except (OutputRefused, BadElf, OSError) as e:
        raise GateFail(Status.COMPILE_ERROR, "compile_error", f"{name}: {e}") from None


def _memory_use(elf: Elf) -> tuple[int, int]:
    """(flash, RAM) bytes: flash holds code, constants and .data's image; RAM .data + .bss."""
    flash = ram = 0
    f0, fl = build.FLASH
    r0, rl = build.SRAM
    for s in elf.sections:
        if not s.flags & SHF_ALLOC or not s.size:
            continue
        if f0 <= s.addr < f0 + fl:
            flash += s.size
        elif r0 <= s.addr < r0 + rl:
            ram += s.size
            if s.type != SHT_NOBITS:
                flash += s.size
    return flash, ram


def _record(ctx: Context, run: EmulatorRun) -> None:
    trace = "\n".join(a.show() for a in run.accesses)
    ctx.metrics.update(
        exit_code=run.exit_code,
        uart_bytes=len(run.uart),
        trace_writes=sum(a.op == "write" for a in run.accesses),
        trace_reads=sum(a.op == "read" for a in run.accesses),
        trace_sha=hashlib.sha256(trace.encode()).hexdigest()[:16],
        emulator=ctx.task.platform.get("emulator", "qemu-system-arm -M netduinoplus2"),
    )
    ctx.artifacts.append(Artifact("log", "uart.txt", run.uart.encode()))
    if trace:
        ctx.artifacts.append(Artifact("log", "register_trace.txt", trace.encode()))


def _lockup(ctx: Context, run: EmulatorRun) -> tuple[str, str]:
    regs = run.lockup or {}
    sp, pc = regs.get("R13"), regs.get("R15")
    elf: Elf = ctx.state["elf"]
    detail = "the core locked up: a fault it could not take"
    if sp is not None and sp < build.SRAM[0]:
        detail += f" (the stack ran out of RAM: SP=0x{sp:08x}, below 0x{build.SRAM[0]:08x})"
    where = elf.function_at(pc) if pc is not None else None
    feedback = (
        detail + (f"\nPC=0x{pc:08x}" if pc is not None else "") + (f" ({where})" if where else "")
    )
    return detail, feedback + f"\nUART before it:\n{trim(run.uart, 1200)}"


@functools.cache
def _irq_names() -> tuple[str, ...]:
    """The vector table's IRQ names, in IRQ order, from startup.c."""
    src = (build.HARNESS_SRC / "startup.c").read_text()
    return tuple(re.findall(r"^\s+(\w+)_IRQHandler,$", src, re.M))


def _unhandled(ctx: Context, irq: int) -> str:
    core = {-14: "NMI", -5: "SVC", -4: "DebugMon", -2: "PendSV", -1: "SysTick"}
    names = _irq_names()
    if irq in core:
        handler = f"{core[irq]}_Handler"
    elif 0 <= irq < len(names):
        handler = f"{names[irq]}_IRQHandler"
    else:
        return f"interrupt {irq} fired with no handler"
    text = (
        f"interrupt {irq} fired and its vector is still Default_Handler: {handler} is not defined"
    )
    if handler not in ctx.state.get("defined", set()):
        near = [
            n for n in ctx.state.get("defined", set()) if n.lower().startswith(handler[:4].lower())
        ]
        if near:
            text += f" (the candidate defines {', '.join(sorted(near))}: a misspelt name?)"
    return text


@functools.cache
def _modelled_words() -> frozenset[int]:
    """Addresses of the words the harness's register model keeps (periph.c's windows)."""
    src = (build.HARNESS_SRC / "periph.c").read_text()
    body = src[src.index("windows[] = {") : src.index("};", src.index("windows[] = {"))]
    return frozenset(
        int(base, 16) + 4 * i
        for base, words in re.findall(r"\{(0x[0-9A-Fa-f]+)u, (\d+)\}", body)
        for i in range(int(words))
    )
