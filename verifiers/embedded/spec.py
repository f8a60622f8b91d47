"""Embedded task specs: `tasks/embedded/<name>/task.toml` + ref.c (the reference) + test.c
(the task's test main, `int crucible_test_main(void)`, which calls the candidate's functions
and reports what it sees through the harness). See tasks/README.md for the format.

The Task carries every text the verifier needs (test main, expected UART transcript,
expected register writes), so an `emulator` node needs nothing but the JSONL line and the
target files shipped in this package.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from verifiers.specfields import Field, TaskSpecError, check_fields, read_task_file

FAMILIES = ("gpio", "bits", "uart", "timer", "nvic", "protocol", "hal", "clock", "dma", "adc")
# the headers a candidate may include: the target's own and the freestanding C ones
TARGET_HEADERS = ("stm32f4.h", "hal.h")
C_HEADERS = ("stdint.h", "stdbool.h", "stddef.h", "string.h", "limits.h")
DEFAULT_TIMEOUT_S = 2.0  # a busy hang spends it as CPU: kept short (references take ~0.05 s)
C_NAME = re.compile(r"[A-Za-z_]\w*\Z")
# a prototype: return type, name, (parameters)
PROTOTYPE = re.compile(r"^\s*([A-Za-z_][\w\s\*]*?)\s*\b([A-Za-z_]\w*)\s*\(([^()]*)\)\s*;?\s*\Z")


def _names(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) and C_NAME.match(x) for x in v)


def _prototypes(v: Any) -> bool:
    return (
        isinstance(v, list)
        and bool(v)
        and all(isinstance(x, str) and PROTOTYPE.match(x) for x in v)
    )


def _headers(v: Any) -> bool:
    return isinstance(v, list) and all(x in TARGET_HEADERS + C_HEADERS for x in v)


def _u32(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 0xFFFFFFFF


INTERFACE_FIELDS = (
    Field(
        "functions",
        list,
        'C prototypes of the functions the candidate defines, e.g. ["void led_init(void)"]',
        check=_prototypes,
    ),
    Field(
        "handlers",
        list,
        'interrupt handlers the candidate defines, by their vector-table names ("TIM2_IRQHandler")',
        required=False,
        check=_names,
    ),
    Field("allowed_api", list, "HAL / CMSIS function names it may call", False, _names),
    Field("required_api", list, "HAL function names it must call", False, _names),
    Field(
        "headers",
        list,
        f"headers it may include, of {', '.join(TARGET_HEADERS + C_HEADERS)}",
        required=False,
        check=_headers,
    ),
)
HARNESS_FIELDS = (
    Field("reference", str, "the known-good C file, e.g. ref.c", required=False),
    Field("test", str, "the test main's C file, e.g. test.c (defines crucible_test_main)"),
    Field("exit_code", int, "the exit code the test main returns (0..255)", False,
          lambda v: 0 <= v <= 255),
    Field("uart", str, "the expected USART1 transcript, exactly", required=False),
    Field("uart_input", str, "bytes fed to USART1's receiver", required=False),
    Field("timeout_s", (int, float), "seconds of wall clock for the emulator run", False,
          lambda v: 0 < v <= 60),
    Field("registers", list, "[[harness.registers]] tables", required=False),
    Field("max_flash", int, "a flash budget in bytes", False, lambda v: v > 0),
    Field("max_ram", int, "a RAM budget in bytes (.data + .bss)", False, lambda v: v > 0),
    Field("exit_state", dict, "what must hold of the core when the test main returns: "
          "primask, basepri, faultmask, vtor, systick_ctrl (bits 2:0)", False,
          lambda v: set(v) <= set(EXIT_STATE) and all(_u32(x) for x in v.values())),
)  # fmt: skip
EXIT_STATE = ("primask", "basepri", "faultmask", "vtor", "systick_ctrl")
REGISTER_FIELDS = (
    Field("device", str, 'the peripheral as QEMU names it in its trace ("RCC", "GPIOA")',
          check=lambda v: bool(re.fullmatch(r"[A-Za-z][\w\[\] ]*", v))),
    Field("offset", int, "the register's offset in the peripheral (0x30 for RCC AHB1ENR)",
          check=lambda v: 0 <= v < 0x10000 and v % 4 == 0),
    Field("name", str, "the register's name, for feedback (AHB1ENR)", required=False),
    Field("mask", int, "the bits checked (default: all 32)", False, _u32),
    Field("value", int, "the last value written, under the mask", False, _u32),
    Field("sequence", list, "every value written, in order, under the mask", False,
          lambda v: bool(v) and all(_u32(x) for x in v)),
    Field("absent", bool, "true: the register must never be written", required=False),
    Field("preserve", bool, "true: the bits outside `mask` end as the harness preset them "
          "(read-modify-write: other bits kept, judged by value)", required=False),
)  # fmt: skip


DEFAULT_PLATFORM = {
    "target": "STM32F407VG (Cortex-M4F, 1 MiB flash, 128 KiB SRAM), HSI 16 MHz, APB undivided",
    "emulator": "qemu-system-arm 7.2 -M netduinoplus2",
    "toolchain": "arm-none-eabi-gcc 12.2 -std=gnu11 -O2 -mcpu=cortex-m4 -mfloat-abi=hard "
    "-mfpu=fpv4-sp-d16, newlib-nano",
}
HAL_HEADER = Path(__file__).with_name("target") / "include" / "hal.h"
_HAL_PROTO = re.compile(r"^([A-Za-z_][\w \*]*\b(hal_\w+)\s*\([^)]*\))\s*;", re.M)


@functools.cache
def hal_prototypes() -> dict[str, str]:
    """name -> prototype of every function hal.h declares."""
    return {m[2]: " ".join(m[1].split()) for m in _HAL_PROTO.finditer(HAL_HEADER.read_text())}


def parse_prototype(text: str) -> tuple[str, str, str]:
    """(return type, name, parameters) of a C prototype string."""
    m = PROTOTYPE.match(text)
    if not m:
        raise ValueError(f"not a C prototype: {text!r}")
    return " ".join(m[1].split()), m[2], " ".join(m[3].split())


def load_embedded_spec(toml_path: Path, spec: dict) -> tuple[dict, dict, str | None]:
    iface_in, harness_in = spec["interface"], spec["harness"]
    check_fields(toml_path, iface_in, INTERFACE_FIELDS, "interface.")
    check_fields(toml_path, harness_in, HARNESS_FIELDS, "harness.")
    if spec["family"] not in FAMILIES:
        raise TaskSpecError(toml_path, "family", f"one of {', '.join(FAMILIES)}", spec["family"])
    names = [parse_prototype(p)[1] for p in iface_in["functions"]]
    if len(set(names)) != len(names):
        raise TaskSpecError(toml_path, "interface.functions", "each function once", names)
    registers = []
    for i, reg in enumerate(harness_in.get("registers", [])):
        where = f"harness.registers[{i}]."
        if not isinstance(reg, dict):
            raise TaskSpecError(toml_path, where[:-1], "a [[harness.registers]] table", reg)
        check_fields(toml_path, reg, REGISTER_FIELDS, where)
        if sum(k in reg for k in ("value", "sequence", "absent")) != 1:
            raise TaskSpecError(toml_path, where[:-1], "exactly one of value, sequence, absent")
        registers.append(
            {
                "device": reg["device"],
                "offset": reg["offset"],
                "name": reg.get("name", f"+0x{reg['offset']:03x}"),
                "mask": reg.get("mask", 0xFFFFFFFF),
                **{k: reg[k] for k in ("value", "sequence", "absent", "preserve") if k in reg},
            }
        )
    if "uart" not in harness_in and not registers and "exit_code" not in harness_in:
        raise TaskSpecError(
            toml_path, "harness", "at least one check: uart, registers or exit_code"
        )
    test = read_task_file(toml_path, "harness.test", harness_in["test"])
    if "crucible_test_main" not in test:
        raise TaskSpecError(toml_path, "harness.test", "a file defining crucible_test_main")
    reference = None
    if "reference" in harness_in:
        reference = read_task_file(toml_path, "harness.reference", harness_in["reference"])
    # what every embedded prompt and export says about the target (a task may add to it)
    platform = spec.setdefault("platform", {})
    if not isinstance(platform, dict):
        raise TaskSpecError(toml_path, "platform", "a [platform] table", platform)
    for key, value in DEFAULT_PLATFORM.items():
        platform.setdefault(key, value)
    iface = {
        "entry": names[0],
        "functions": [" ".join(p.split()).rstrip(";") for p in iface_in["functions"]],
        "handlers": list(iface_in.get("handlers", [])),
        "allowed_api": list(iface_in.get("allowed_api", [])),
        "required_api": list(iface_in.get("required_api", [])),
        # the allowed HAL functions' prototypes, from hal.h: the API surface a prompt shows
        "api": [
            hal_prototypes()[n] for n in iface_in.get("allowed_api", []) if n in hal_prototypes()
        ],
        "headers": list(iface_in.get("headers", ["stm32f4.h", "stdint.h"])),
        "language": "C (gnu11)",
    }
    unknown = sorted(set(iface["allowed_api"]) - set(hal_prototypes()))
    if unknown:
        raise TaskSpecError(toml_path, "interface.allowed_api", "functions hal.h declares", unknown)
    missing = sorted(set(iface["required_api"]) - set(iface["allowed_api"]))
    if missing:
        raise TaskSpecError(
            toml_path, "interface.required_api", "names also listed in allowed_api", missing
        )
    harness = {
        "test": test,
        "exit_code": harness_in.get("exit_code", 0),
        "uart_input": harness_in.get("uart_input", ""),
        "timeout_s": float(harness_in.get("timeout_s", DEFAULT_TIMEOUT_S)),
        "registers": registers,
        **({"uart": harness_in["uart"]} if "uart" in harness_in else {}),
        **{k: harness_in[k] for k in ("max_flash", "max_ram", "exit_state") if k in harness_in},
    }
    return iface, harness, reference
