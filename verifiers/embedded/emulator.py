"""The emulator behind the embedded verifier, as one small interface.

An `Emulator` turns a firmware ELF into an argv to run in the sandbox, and the run's
output into an `EmulatorRun`: exit code, UART transcript, and the trace of accesses to
peripherals the emulator does not model. The verifier never looks at the emulator's
output itself.

`Qemu` is the one backend: `qemu-system-arm -M netduinoplus2` (an STM32F405, the
STM32F407's peripheral map). It models the Cortex-M4 core (NVIC, SysTick, SCB, FPU),
USART1-6, TIM2-5, ADC1-3, SPI1-3, EXTI and SYSCFG; RCC, GPIO, DMA, PWR and FLASH are
"unimplemented devices": writes are dropped, reads return 0, and `-d unimp` logs each
access, which is the register trace. The harness gives those registers values in the guest
(target/src/periph.c: MPU trap, shadow, presets); the trace still holds every access, and
`EmulatorRun.writes` replays it against the same presets. The exit code comes from
semihosting SYS_EXIT_EXTENDED, the one call served (`target=gdb` and no debugger attached:
QEMU handles the exit itself and forwards every other call to a debugger that is not
there, so opens, reads and SYS_SYSTEM come back without touching the host); USART1 is the
run's stdout; the trace is its stderr (a firmware reaches neither stream by semihosting).
`-icount shift=0,sleep=off` makes virtual time the instruction count: the same firmware
gives the same run, and a firmware waiting for an interrupt skips ahead to it instead of
sleeping.

A Renode backend (the emulator of the seed paper; not installable here) would implement
the same two methods: `argv` would start `renode --console --disable-xwt` on a script
that loads the ELF on an STM32F4 platform with a UART analyzer on stdout, and `parse`
would read Renode's peripheral access log (`sysbus LogPeripheralAccess`) instead of QEMU's
unimp lines. Renode models RCC and GPIO, so fewer firmwares would hit
`emulator_unmodelled_register`, and its `emulation RunFor` gives an instruction budget
QEMU 7.2 lacks (there the budget is the run's CPU seconds under -icount).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

FEEDER = Path(__file__).with_name("target") / "uart_feeder.py"  # copied into the work dir
PERIPH_MODEL = Path(__file__).with_name("target") / "src" / "periph.c"

# QEMU's unimp lines: "RCC: unimplemented device write (size 4, offset 0x030, value 0x1)"
_UNIMP = re.compile(
    r"^(?P<dev>[\w\[\]. -]+?): unimplemented device (?P<op>read|write)\s+"
    r"\(size (?P<size>\d+), offset 0x(?P<off>[0-9a-fA-F]+)(?:, value 0x(?P<val>[0-9a-fA-F]+))?\)$"
)
# "qemu: fatal: Lockup: can't escalate 3 to HardFault", then a register dump (R00=...)
_LOCKUP = re.compile(r"^qemu: fatal: Lockup\b")
_REGISTER = re.compile(r"\b(R1[0-5]|R0\d)=([0-9a-f]{8})\b")
# the harness's last line (harness.c crucible_state_report): the core's state at the test
# main's return, after a record separator no task prints
_STATE = re.compile(r"\x1e!state ([^\n\x1e]*)\n\Z")
_PRESET = re.compile(
    r"\{(0x[0-9A-Fa-f]{8})u, (0x[0-9A-Fa-f]{8})u, (0x[0-9A-Fa-f]{8})u\}, /\* PRESET"
)
# QEMU's names of the unimplemented devices whose registers the harness models (periph.c)
DEVICE_BASES = {
    **{f"GPIO{c}": 0x40020000 + 0x400 * i for i, c in enumerate("ABCDEFGHI")},
    "RCC": 0x40023800,
    "Flash Int": 0x40023C00,
    "DMA1": 0x40026000,
    "DMA2": 0x40026400,
    "PWR": 0x40007000,
}
# registers whose writes are actions, not values (BSRR sets / resets ODR bits, LIFCR / HIFCR
# clear flags): a write holds only the lanes it wrote, and the register keeps no value
ACTION_REGISTERS = {**{(f"GPIO{c}", 0x18): "BSRR" for c in "ABCDEFGHI"},
                    ("DMA1", 0x08): "LIFCR", ("DMA1", 0x0C): "HIFCR",
                    ("DMA2", 0x08): "LIFCR", ("DMA2", 0x0C): "HIFCR"}  # fmt: skip


@functools.cache
def presets() -> dict[int, tuple[int, int]]:
    """address -> (value before the test main, bits the hardware owns), from periph.c's
    PRESET rows: the firmware's reads and the verifier's replay start from the same values."""
    return {
        int(a, 16): (int(v, 16), int(ro, 16))
        for a, v, ro in _PRESET.findall(PERIPH_MODEL.read_text())
    }


def preset_of(device: str, offset: int) -> tuple[int, int]:
    base = DEVICE_BASES.get(device)
    if base is None:
        return 0, 0
    return presets().get(base + offset, (0, 0))


# a firmware stuck on a status bit the emulator never sets reads the same register again and
# again with nothing else in between: this many in a row at the end of the trace
SPIN_READS = 200


@dataclass(frozen=True)
class Access:
    device: str
    op: str  # "read" or "write"
    offset: int
    size: int
    value: int | None = None  # writes only

    def show(self) -> str:
        if self.op == "write":
            return f"{self.device}+0x{self.offset:03x} <- 0x{self.value or 0:08x}"
        return f"{self.device}+0x{self.offset:03x} read"


@dataclass
class EmulatorRun:
    exit_code: int | None  # None: the emulator did not exit on its own
    uart: str
    accesses: list[Access] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the emulator's own complaints
    trace_truncated: bool = False
    # the core locked up (a fault it could not take: the stack ran out of RAM, a broken
    # vector table): its registers then, {"R13": sp, "R15": pc, ...}
    lockup: dict[str, int] | None = None
    # the core's state when the test main returned (primask, basepri, vtor, ...), or None
    state: dict[str, int] | None = None

    def writes(self, device: str, offset: int) -> list[int]:
        """The register's value after each write that reaches any of its bytes (a byte or
        halfword store at offset + 1..3 is a write of that register's lanes), starting
        from the harness's preset; an action register (BSRR) gives the lanes written."""
        values, running = [], preset_of(device, offset)[0]
        action = (device, offset) in ACTION_REGISTERS
        for a in self.accesses:
            if a.op != "write" or a.device != device or not 0 <= a.offset - offset < 4:
                continue
            shift = 8 * (a.offset - offset)
            lanes = (0xFFFFFFFF if a.size >= 4 else (1 << 8 * a.size) - 1) << shift & 0xFFFFFFFF
            bits = ((a.value or 0) << shift) & lanes
            if action:
                values.append(bits)
            else:
                running = (running & ~lanes) | bits
                values.append(running)
        return values

    def final(self, device: str, offset: int) -> int:
        """The register's value at the end: its preset, then every write's lanes."""
        w = self.writes(device, offset)
        return w[-1] if w else preset_of(device, offset)[0]

    def touches(self, device: str, offset: int) -> bool:
        return any(a.device == device and 0 <= a.offset - offset < 4 for a in self.accesses)

    def spin(self) -> Access | None:
        """The unmodelled register the firmware ended polling, if it did (SPIN_READS reads
        of it in a row at the end of the trace)."""
        tail = self.accesses[-SPIN_READS:]
        if len(tail) < SPIN_READS or tail[0].op != "read":
            return None
        first = tail[0]
        if all(
            a.op == "read" and (a.device, a.offset) == (first.device, first.offset) for a in tail
        ):
            return first
        return None

    def trace_summary(self, limit: int = 40) -> str:
        """The writes of the trace, for feedback (reads are summarised by count)."""
        writes = [a.show() for a in self.accesses if a.op == "write"]
        reads = Counter(f"{a.device}+0x{a.offset:03x}" for a in self.accesses if a.op == "read")
        lines = writes[:limit]
        if len(writes) > limit:
            lines.append(f"... {len(writes) - limit} more writes")
        if reads:
            lines.append("reads: " + ", ".join(f"{k} x{n}" for k, n in reads.most_common(8)))
        return "\n".join(lines)


class Emulator(Protocol):
    name: str  # the tool, as the verifier's toolchain names it
    binary: str

    def argv(self, elf: str, *, uart_input: str | None) -> list[str]:
        """The command that boots `elf` (a path in the work dir); `uart_input`: a file in
        the work dir whose bytes arrive on the UART's receiver once the firmware calls
        `crucible_rx_ready()` (FEEDER, which the caller copies into the work dir)."""
        ...

    def parse(self, returncode: int, stdout: str, stderr: str, truncated: bool) -> EmulatorRun:
        """The run's outcome from the emulator's exit status and its two streams."""
        ...

    def probe_argv(self, elf: str, *, after_s: float) -> list[str]:
        """A second run of a firmware that hung: its core registers after `after_s`
        seconds, on stdout (for `registers_of`), then the emulator quits."""
        ...

    def registers_of(self, stdout: str) -> dict[str, int]: ...


class Qemu:
    name = "qemu-system-arm"
    binary = "qemu-system-arm"
    machine = "netduinoplus2"
    # QEMU's own seccomp, on top of the sandbox's: a semihosting SYS_SYSTEM (fork + exec)
    # kills it with SIGSYS instead of running a shell
    SANDBOX = "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"

    def argv(self, elf: str, *, uart_input: str | None) -> list[str]:
        qemu = [
            self.binary,
            "-M",
            self.machine,
            "-no-user-config",  # no /etc/qemu (the sandbox cannot read /etc)
            "-nodefaults",
            "-nographic",
            "-monitor",
            "none",
            "-serial",
            "stdio",  # USART1 <-> stdin/stdout
            "-chardev",
            "null,id=semihost",
            "-semihosting-config",
            "enable=on,target=gdb,chardev=semihost",
            "-sandbox",
            self.SANDBOX,
            "-icount",
            "shift=0,sleep=off",
            "-d",
            "unimp",
            "-kernel",
            elf,
        ]
        if uart_input is None:
            return qemu
        # the input goes in only once the firmware says it is ready (target/uart_feeder.py)
        return ["python3", "-I", "-B", FEEDER.name, uart_input, "--", *qemu]

    def probe_argv(self, elf: str, *, after_s: float) -> list[str]:
        # the monitor on stdin/stdout (no UART): `info registers` once the firmware has run
        # `after_s`, then `quit`; the firmware cannot reach the monitor
        qemu = [a for a in self.argv(elf, uart_input=None) if a not in ("-monitor", "none")]
        qemu[qemu.index("stdio")] = "null"  # -serial null
        qemu += ["-monitor", "stdio"]
        feed = f"(sleep {after_s:.2f}; echo 'info registers'; echo quit)"
        return ["/bin/sh", "-c", f'{feed} | exec "$@"', "sh", *qemu]

    def registers_of(self, stdout: str) -> dict[str, int]:
        return {r: int(v, 16) for r, v in _REGISTER.findall(stdout)}

    def parse(self, returncode: int, stdout: str, stderr: str, truncated: bool) -> EmulatorRun:
        accesses, errors = [], []
        for line in stderr.splitlines():
            m = _UNIMP.match(line.strip())
            if m:
                val = m["val"]
                accesses.append(
                    Access(
                        m["dev"],
                        m["op"],
                        int(m["off"], 16),
                        int(m["size"]),
                        int(val, 16) if val is not None else None,
                    )
                )
            elif line.strip():
                errors.append(line.strip())
        lockup = None
        if any(_LOCKUP.search(e) for e in errors):
            lockup = {r: int(v, 16) for r, v in _REGISTER.findall("\n".join(errors))}
        state = None
        if m := _STATE.search(stdout):
            stdout = stdout[: m.start()]
            state = {k: int(v, 16) for k, v in (kv.split("=", 1) for kv in m[1].split()) if v}
        return EmulatorRun(
            exit_code=returncode,
            uart=stdout,
            state=state,
            accesses=accesses,
            errors=errors,
            trace_truncated=truncated,
            lockup=lockup,
        )


BACKENDS: dict[str, Emulator] = {"qemu": Qemu()}
