"""The chip's register map, read from a CMSIS-SVD file: what stm32f4.h is checked against.

`python -m verifiers.embedded.svd SVD_FILE > verifiers/embedded/regmap.json` writes, for the
peripherals the header defines, their base addresses, each register's offset, size and reset
value, and the device's interrupt list (name -> number). The SVD itself is not committed
(it is the vendor's text, 2 MB); regmap.json is derived from it and records where it came from.

SCB and SysTick are Cortex-M4 core peripherals: the SVD does not describe them (only NVIC is
there), so the header's SCB_Type and SysTick_Type are not checked through this map.
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

# the SVD peripherals stm32f4.h defines; C_ADC is the ADC common block (ADC123_COMMON)
HEADER_PERIPHERALS = (
    "RCC",
    "GPIOA",
    "GPIOB",
    "GPIOC",
    "GPIOD",
    "GPIOE",
    "USART1",
    "USART2",
    "USART3",
    "USART6",
    "TIM2",
    "TIM3",
    "TIM4",
    "TIM5",
    "ADC1",
    "C_ADC",
    "SYSCFG",
    "EXTI",
    "DMA1",
    "DMA2",
    "FLASH",
    "PWR",
    "NVIC",
)
SOURCE = "pyocd 0.46.0 wheel, pyocd/debug/svd/svd_data.zip: STM32F41x.svd"
NOT_IN_SVD = {
    "SCB": "Cortex-M4 core peripheral (0xE000ED00): not described by the vendor SVD",
    "SysTick": "Cortex-M4 core peripheral (0xE000E010): not described by the vendor SVD",
}


@dataclass(frozen=True)
class Register:
    name: str
    offset: int
    size: int
    reset: int


@dataclass
class Peripheral:
    name: str
    base: int
    derived_from: str | None = None
    registers: list[Register] = field(default_factory=list)


def _int(text: str) -> int:
    """SVD scaled integers: 0x.., #binary, or decimal (leading zeros allowed, as the schema's
    pattern does: one SPI reset value is written 00000010)."""
    text = text.strip().lower()
    if text.startswith("#"):
        return int(text[1:], 2)
    if text.startswith("0x"):
        return int(text, 16)
    return int(text, 10)


def _dim_names(elem: ET.Element, name: str) -> list[tuple[str, int]]:
    """(name, extra offset) per element of a `<dim>` array; one entry when there is none."""
    dim = elem.findtext("dim")
    if dim is None:
        return [(name, 0)]
    count = _int(dim)
    step = _int(elem.findtext("dimIncrement") or "0")
    index = elem.findtext("dimIndex")
    if index is None:
        labels = [str(i) for i in range(count)]
    elif "-" in index and "," not in index:
        lo, hi = index.split("-")
        if lo.isdigit():
            labels = [str(i) for i in range(int(lo), int(hi) + 1)]
        else:
            labels = [chr(c) for c in range(ord(lo), ord(hi) + 1)]
    else:
        labels = [s.strip() for s in index.split(",")]
    if len(labels) != count:
        raise ValueError(f"{name}: dimIndex {index!r} does not give {count} names")
    # "X[%s]" is an array in CMSIS: X0, X1 ... here; "X%s" names each element
    pattern = name.replace("[%s]", "%s")
    return [(pattern.replace("%s", label), i * step) for i, label in enumerate(labels)]


def _registers(regs: ET.Element, size: int, reset: int, prefix: str = "") -> list[Register]:
    out: list[Register] = []
    by_name: dict[str, ET.Element] = {}
    for elem in regs:
        if elem.tag not in ("register", "cluster"):
            continue
        base_elem = by_name.get(elem.get("derivedFrom", ""))
        name = elem.findtext("name") or ""
        by_name[name] = elem

        def pick(tag: str, elem: ET.Element = elem, base_elem: ET.Element | None = base_elem):
            text = elem.findtext(tag)
            if text is None and base_elem is not None:
                text = base_elem.findtext(tag)
            return text

        offset = _int(pick("addressOffset") or "0")
        r_size = _int(pick("size") or str(size))
        r_reset = _int(pick("resetValue") or str(reset))
        for label, extra in _dim_names(elem, name):
            if elem.tag == "cluster":
                inner = elem if elem.find("register") is not None else base_elem
                for reg in _registers(inner, r_size, r_reset, prefix + label + "."):
                    out.append(Register(reg.name, offset + extra + reg.offset, reg.size, reg.reset))
            else:
                out.append(Register(prefix + label, offset + extra, r_size, r_reset))
    return out


def parse(text: str | bytes) -> tuple[dict[str, str], dict[str, Peripheral], dict[str, int]]:
    """(device name/version, peripherals by name, interrupts name -> number) of an SVD text."""
    root = ET.fromstring(text)
    device = {"name": root.findtext("name") or "", "version": root.findtext("version") or ""}
    size = _int(root.findtext("size") or "32")
    reset = _int(root.findtext("resetValue") or "0")
    elems = {p.findtext("name"): p for p in root.find("peripherals").findall("peripheral")}
    peripherals: dict[str, Peripheral] = {}
    interrupts: dict[str, int] = {}
    for name, elem in elems.items():
        parent = elem.get("derivedFrom")
        regs, up = elem.find("registers"), parent
        while regs is None and up is not None:  # a chain of derivedFrom: the first that has them
            regs, up = elems[up].find("registers"), elems[up].get("derivedFrom")
        p_size = _int(
            elem.findtext("size") or (parent and elems[parent].findtext("size")) or str(size)
        )
        p_reset = _int(
            elem.findtext("resetValue")
            or (parent and elems[parent].findtext("resetValue"))
            or str(reset)
        )
        registers = _registers(regs, p_size, p_reset) if regs is not None else []
        peripherals[name] = Peripheral(
            name, _int(elem.findtext("baseAddress") or "0"), parent, registers
        )
        for irq in elem.findall("interrupt"):
            irq_name, value = irq.findtext("name"), _int(irq.findtext("value"))
            if interrupts.setdefault(irq_name, value) != value:
                raise ValueError(
                    f"interrupt {irq_name}: numbers {interrupts[irq_name]} and {value}"
                )
    return device, peripherals, interrupts


def regmap(text: str | bytes, names: tuple[str, ...] = HEADER_PERIPHERALS) -> dict:
    """The JSON-safe map of `names` (peripherals) and of all interrupts in an SVD text."""
    device, peripherals, interrupts = parse(text)
    missing = [n for n in names if n not in peripherals]
    if missing:
        raise KeyError(f"not in the SVD: {', '.join(missing)}")
    out = {}
    for n in names:
        p = peripherals[n]
        out[n] = {
            "base": f"0x{p.base:08X}",
            "derived_from": p.derived_from,
            "registers": {
                r.name: {"offset": f"0x{r.offset:X}", "size": r.size, "reset": f"0x{r.reset:08X}"}
                for r in sorted(p.registers, key=lambda r: (r.offset, r.name))
            },
        }
    return {
        "source": SOURCE,
        "device": device,
        "not_in_svd": NOT_IN_SVD,
        "peripherals": out,
        "interrupts": dict(sorted(interrupts.items(), key=lambda kv: (kv[1], kv[0]))),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("svd", help="CMSIS-SVD file (STM32F41x.svd)")
    args = ap.parse_args(argv)
    with open(args.svd, "rb") as f:
        data = regmap(f.read())
    json.dump(data, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
