"""stm32f4.h, startup.c and stm32f4.ld checked against the chip: base addresses, register
offsets and IRQ numbers against regmap.json (derived from the vendor SVD by
verifiers/embedded/svd.py), the vector table's order against the IRQ numbers, the memory map
against RM0090. The header is hand-written: a wrong offset there is a firmware that writes
the wrong register, and QEMU does not model RCC/GPIO/DMA, so nothing else would notice.

The offset and IRQ checks are `_Static_assert`s compiled by the real arm-none-eabi-gcc
(-fsyntax-only, build.py's flags), so they read the header exactly as a firmware build does."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from verifiers.embedded import build, svd

REGMAP = Path(svd.__file__).with_name("regmap.json")
HEADER = build.INCLUDE / "stm32f4.h"
STARTUP = build.HARNESS_SRC / "startup.c"
INSTALL = "install the toolchain: apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi"

# SVD peripheral -> (header struct type, header base macro, header base - SVD base)
PERIPHERALS = {
    "RCC": ("RCC_TypeDef", "RCC_BASE", 0),
    **{f"GPIO{c}": ("GPIO_TypeDef", f"GPIO{c}_BASE", 0) for c in "ABCDE"},
    **{f"USART{n}": ("USART_TypeDef", f"USART{n}_BASE", 0) for n in (1, 2, 3, 6)},
    **{f"TIM{n}": ("TIM_TypeDef", f"TIM{n}_BASE", 0) for n in (2, 3, 4, 5)},
    "ADC1": ("ADC_TypeDef", "ADC1_BASE", 0),
    "C_ADC": ("ADC_Common_TypeDef", "ADC_COMMON_BASE", 0),
    "SYSCFG": ("SYSCFG_TypeDef", "SYSCFG_BASE", 0),
    "EXTI": ("EXTI_TypeDef", "EXTI_BASE", 0),
    "DMA1": ("DMA_TypeDef", "DMA1_BASE", 0),
    "DMA2": ("DMA_TypeDef", "DMA2_BASE", 0),
    "FLASH": ("FLASH_TypeDef", "FLASH_R_BASE", 0),
    "PWR": ("PWR_TypeDef", "PWR_BASE", 0),
    # the SVD's NVIC block starts at the SCS (0xE000E000); CMSIS's NVIC_Type at ISER0 (+0x100)
    "NVIC": ("NVIC_Type", "NVIC_BASE", 0x100),
}

# Registers the header leaves out on purpose: (SVD peripheral, SVD register) -> why.
SKIP = {
    # Interrupt Controller Type Register, 0xE000E004: below NVIC_Type's base; CMSIS keeps it
    # in SCnSCB_Type, which the header does not define (no task reads it)
    ("NVIC", "ICTR"): "in CMSIS's SCnSCB, not NVIC_Type",
}

# Header enum entries >= 0 that this SVD (STM32F41x v1.5) does not list: FPU is IRQ 81 in
# RM0090 (table 61) and in ST's CMSIS device header; the SVD's list stops at 80.
IRQ_NOT_IN_SVD = {"FPU_IRQn": 81}

# startup.c's system entries (position 1..15) -> the IRQn they stand for
SYSTEM_VECTORS = {
    "NMI_Handler": "NonMaskableInt_IRQn",
    "HardFault_Handler": None,  # -13: CMSIS names no IRQn for it
    "MemManage_Handler": "MemoryManagement_IRQn",
    "BusFault_Handler": "BusFault_IRQn",
    "UsageFault_Handler": "UsageFault_IRQn",
    "SVC_Handler": "SVCall_IRQn",
    "DebugMon_Handler": "DebugMonitor_IRQn",
    "PendSV_Handler": "PendSV_IRQn",
    "SysTick_Handler": "SysTick_IRQn",
}

# SCB and SysTick are core peripherals the vendor SVD leaves out (regmap.json's not_in_svd):
# held instead to the ARMv7-M Architecture Reference Manual (B3.2.2 SCB, B3.3.2 SysTick) by
# hand. type -> (base macro, base, {member: offset})
ARMV7M_CORE = {
    "SysTick_Type": (
        "SysTick_BASE",
        0xE000E010,
        {"CTRL": 0x0, "LOAD": 0x4, "VAL": 0x8, "CALIB": 0xC},
    ),
    "SCB_Type": (
        "SCB_BASE",
        0xE000ED00,
        {
            "CPUID": 0x0,
            "ICSR": 0x4,
            "VTOR": 0x8,
            "AIRCR": 0xC,
            "SCR": 0x10,
            "CCR": 0x14,
            "SHP[0]": 0x18,  # SHPR1: priority of exception 4 (MemManage) in its low byte
            "SHP[11]": 0x23,  # SHPR3's top byte: SysTick (exception 15)
            "SHCSR": 0x24,
            "CFSR": 0x28,
            "HFSR": 0x2C,
            "DFSR": 0x30,
            "MMFAR": 0x34,
            "BFAR": 0x38,
            "AFSR": 0x3C,
            "PFR[0]": 0x40,
            "DFR": 0x48,
            "ADR": 0x4C,
            "MMFR[0]": 0x50,
            "ISAR[0]": 0x60,
            "CPACR": 0x88,
        },
    ),
}

# RM0090 section 2.3.1 (memory map): the STM32F407's flash, SRAM1+SRAM2, CCM data RAM
RM0090_MEMORY = {
    "FLASH": (0x08000000, 1024 * 1024),
    "SRAM": (0x20000000, 128 * 1024),
    "CCM": (0x10000000, 64 * 1024),
}


def header_member(periph: str, reg: str) -> str:
    """The header's member expression (offsetof's second argument) for an SVD register."""
    if periph.startswith("GPIO") and reg in ("AFRL", "AFRH"):
        return f"AFR[{'LH'.index(reg[-1])}]"
    if periph.startswith("TIM") and (m := re.fullmatch(r"(CCMR[12])_(Output|Input)", reg)):
        return m[1]  # one register, two layouts (output compare / input capture)
    if periph == "SYSCFG":
        if reg == "MEMRM":
            return "MEMRMP"
        if m := re.fullmatch(r"EXTICR([1-4])", reg):
            return f"EXTICR[{int(m[1]) - 1}]"
    if periph.startswith("DMA") and (
        m := re.fullmatch(r"S([0-7])(CR|NDTR|PAR|M0AR|M1AR|FCR)", reg)
    ):
        return f"S[{m[1]}].{m[2]}"
    if periph == "NVIC":
        if m := re.fullmatch(r"(ISER|ICER|ISPR|ICPR|IABR)(\d+)", reg):
            return f"{m[1]}[{m[2]}]"
        if m := re.fullmatch(r"IPR(\d+)", reg):
            return f"IP[{4 * int(m[1])}]"  # IPRn holds the priority bytes of IRQs 4n..4n+3
    return reg


def irq_enum_name(svd_name: str) -> str:
    """SVD `TIM1_UP_TIM10_IRQ` (or `TIM1_UP_TIM10`) -> the header's `TIM1_UP_TIM10_IRQn`."""
    return re.sub(r"_IRQ$", "", svd_name) + "_IRQn"


def header_irqs(text: str) -> dict[str, int]:
    body = re.search(r"typedef\s+enum\s*\{(.*?)\}\s*IRQn_Type\s*;", text, re.S)
    assert body, "no IRQn_Type enum in stm32f4.h"
    return {m[1]: int(m[2]) for m in re.finditer(r"(\w+)\s*=\s*(-?\d+)", body[1])}


def load_regmap() -> dict:
    return json.loads(REGMAP.read_text())


def static_asserts(regmap: dict, irq_names: set[str]) -> str:
    """The C file that holds the header to the register map: one `_Static_assert` per base,
    register and interrupt, each saying what the SVD has."""
    lines = ["#include <stddef.h>", "#include <stdint.h>", '#include "stm32f4.h"', ""]
    for name, (typ, macro, delta) in PERIPHERALS.items():
        p = regmap["peripherals"][name]
        base = int(p["base"], 16) + delta
        lines.append(f'_Static_assert({macro} == 0x{base:08X}UL, "{name} base: SVD 0x{base:08X}");')
        for reg, r in p["registers"].items():
            if (name, reg) in SKIP:
                continue
            off = int(r["offset"], 16) - delta
            member = header_member(name, reg)
            where = f"{name}.{reg} ({typ}.{member}): SVD offset 0x{off:X}"
            lines.append(f'_Static_assert(offsetof({typ}, {member}) == 0x{off:X}, "{where}");')
            if not member.startswith("IP["):  # IP is bytes; the others are whole registers
                width = f"sizeof((({typ} *)0)->{member})"
                lines.append(f'_Static_assert({width} == {r["size"] // 8}, "{where}: width");')
    lines.append("")
    for svd_name, number in regmap["interrupts"].items():
        enum = irq_enum_name(svd_name)
        if enum in irq_names:
            lines.append(f'_Static_assert({enum} == {number}, "{svd_name}: SVD IRQ {number}");')
    count = max([*regmap["interrupts"].values(), *IRQ_NOT_IN_SVD.values()]) + 1
    lines.append(f'_Static_assert(CRUCIBLE_IRQ_COUNT == {count}, "IRQ count {count}");')
    return "\n".join(lines) + "\n"


def syntax_check(c_text: str, include: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    src = tmp_path / "regmap_check.c"
    src.write_text(c_text)
    cmd = [build.CC, *build.CFLAGS, "-fsyntax-only", f"-I{include}", str(src)]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


@pytest.fixture
def cc():
    if shutil.which(build.CC) is None:
        pytest.skip(f"needs {build.CC}: {INSTALL}")


def test_regmap_is_the_svd_s():
    regmap = load_regmap()
    assert regmap["device"] == {"name": "STM32F41x", "version": "1.5"}
    assert regmap["source"] == svd.SOURCE
    assert set(regmap["peripherals"]) == set(PERIPHERALS) == set(svd.HEADER_PERIPHERALS)
    assert {"SCB", "SysTick"} <= set(regmap["not_in_svd"])
    # DMA1 and GPIOC..E are derivedFrom peripherals: they must carry their parent's registers
    assert regmap["peripherals"]["DMA1"]["derived_from"] == "DMA2"
    assert regmap["peripherals"]["DMA1"]["registers"] == regmap["peripherals"]["DMA2"]["registers"]
    assert len(regmap["peripherals"]["GPIOE"]["registers"]) == 10


def test_every_register_is_checked_or_skipped():
    """A register the SVD has is either in the generated checks or named in SKIP with why."""
    regmap = load_regmap()
    text = static_asserts(regmap, set(header_irqs(HEADER.read_text())))
    for name in PERIPHERALS:
        for reg in regmap["peripherals"][name]["registers"]:
            checked = f'"{name}.{reg} (' in text
            assert checked != ((name, reg) in SKIP), (
                f"{name}.{reg}: checked and skipped, or neither"
            )
    assert all(key[1] in regmap["peripherals"][key[0]]["registers"] for key in SKIP)


def test_every_interrupt_is_named():
    """The enum names every SVD interrupt, and every enum entry >= 0 is in the SVD (or listed)."""
    regmap = load_regmap()
    enum = header_irqs(HEADER.read_text())
    svd_names = {irq_enum_name(n) for n in regmap["interrupts"]}
    assert svd_names - set(enum) == set(), "SVD interrupts the header's enum lacks"
    device = {n for n, v in enum.items() if v >= 0}
    assert device - svd_names == set(IRQ_NOT_IN_SVD), "enum entries the SVD does not list"
    assert all(enum[n] == v for n, v in IRQ_NOT_IN_SVD.items())


def header_offsets(stderr: str, include: Path, tmp_path: Path) -> dict[str, int]:
    """For the failed offset asserts in `stderr`: the header's own offset of each member, read
    back from the compiler's diagnostic on a pointer to an array of that size."""
    found = re.findall(r'static assertion failed: "(\S+) \((\w+)\.([^)]+)\): SVD offset', stderr)
    probes = ["#include <stddef.h>", '#include "stm32f4.h"']
    for i, (_, typ, member) in enumerate(found):
        probes.append(f"char probe{i}[offsetof({typ}, {member}) + 1]; int *ptr{i} = &probe{i};")
    out = syntax_check("\n".join(probes) + "\n", include, tmp_path)
    sizes = re.findall(r"'char \(\*\)\[(\d+)\]'", out.stderr)
    return {name: int(n) - 1 for (name, _, _), n in zip(found, sizes, strict=False)}


def test_header_matches_regmap(cc, tmp_path):
    text = static_asserts(load_regmap(), set(header_irqs(HEADER.read_text())))
    out = syntax_check(text, build.INCLUDE, tmp_path)
    if out.returncode != 0:
        wrong = header_offsets(out.stderr, build.INCLUDE, tmp_path)
        offsets = ", ".join(f"{k} header 0x{v:X}" for k, v in wrong.items())
        pytest.fail(f"stm32f4.h disagrees with regmap.json ({offsets}):\n{out.stderr}")


def test_core_peripherals_match_armv7m(cc, tmp_path):
    lines = ["#include <stddef.h>", '#include "stm32f4.h"']
    for typ, (macro, base, members) in ARMV7M_CORE.items():
        lines.append(f'_Static_assert({macro} == 0x{base:08X}UL, "{typ} base 0x{base:08X}");')
        for member, off in members.items():
            where = f"{typ}.{member}: ARMv7-M offset 0x{off:X}"
            lines.append(f'_Static_assert(offsetof({typ}, {member}) == 0x{off:X}, "{where}");')
    out = syntax_check("\n".join(lines) + "\n", build.INCLUDE, tmp_path)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize(
    ("old", "new", "expect"),
    [
        # AFR one word late: GPIOx.AFRL at 0x24
        ("__IO uint32_t AFR[2];", "uint32_t RESERVEDX;\n  __IO uint32_t AFR[2];", "GPIOA.AFRL"),
        (
            "#define USART2_BASE (APB1PERIPH_BASE + 0x4400UL)",
            "#define USART2_BASE 0x40004000UL",
            "USART2 base",
        ),
        ("TIM2_IRQn = 28,", "TIM2_IRQn = 29,", "TIM2_IRQ: SVD IRQ 28"),
        ("__IO uint32_t CR, NDTR, PAR", "__IO uint32_t CR, NDTR, RESERVEDX, PAR", "DMA2.S0PAR"),
    ],
)
def test_wrong_header_fails(cc, tmp_path, old, new, expect):
    """The check can fail: a copy of the header with one thing wrong does not compile."""
    text = HEADER.read_text()
    assert text.count(old) == 1
    include = tmp_path / "include"
    include.mkdir()
    (include / "stm32f4.h").write_text(text.replace(old, new))
    checks = static_asserts(load_regmap(), set(header_irqs(text)))
    out = syntax_check(checks, include, tmp_path)
    assert out.returncode != 0
    assert expect in out.stderr
    if expect == "GPIOA.AFRL":  # the failure names the header's offset as well as the SVD's
        assert header_offsets(out.stderr, include, tmp_path)["GPIOA.AFRL"] == 0x24


def vector_table(text: str) -> list[str]:
    """startup.c's vector table initializer, one entry per element (comments removed)."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)
    m = re.search(r"crucible_vectors\s*\[[^\]]*\]\s*\)\s*\(void\)\s*=\s*\{(.*?)\};", text, re.S)
    assert m, "no crucible_vectors table in startup.c"
    return [e.strip() for e in m[1].split(",") if e.strip()]


def vector_errors(entries: list[str], enum: dict[str, int], irq_count: int) -> list[str]:
    """Where the table puts a handler somewhere else than its IRQ number says."""
    errors = []
    if len(entries) != 16 + irq_count:
        errors.append(f"{len(entries)} entries, not 16 + {irq_count}")
    if entries[:2] != ["(void (*)(void))(&_estack)", "Reset_Handler"]:
        errors.append(f"entries 0, 1 are {entries[:2]}: not the stack top and Reset_Handler")
    if entries[3:4] != ["HardFault_Handler"]:
        errors.append("entry 3 is not HardFault_Handler")
    for pos, name in enumerate(entries[2:], start=2):
        if name == "0":
            if pos >= 16 or pos not in (7, 8, 9, 10, 13):
                errors.append(f"entry {pos} is empty")
            continue
        if name in SYSTEM_VECTORS:
            irqn = SYSTEM_VECTORS[name]
        elif m := re.fullmatch(r"(\w+)_IRQHandler", name):
            irqn = f"{m[1]}_IRQn"
        else:
            errors.append(f"entry {pos}: {name} is not a handler name")
            continue
        if irqn is None:
            continue
        if irqn not in enum:
            errors.append(f"entry {pos}: {name} has no {irqn} in the enum")
        elif enum[irqn] + 16 != pos:
            errors.append(
                f"entry {pos}: {name}, but {irqn} = {enum[irqn]} (entry {enum[irqn] + 16})"
            )
    return errors


def irq_count(text: str) -> int:
    m = re.search(r"#define\s+CRUCIBLE_IRQ_COUNT\s+(\d+)", text)
    assert m
    return int(m[1])


def test_vector_table_order():
    header = HEADER.read_text()
    enum = header_irqs(header)
    assert vector_errors(vector_table(STARTUP.read_text()), enum, irq_count(header)) == []
    # and straight against the SVD's numbers, not only the enum (which the C check ties to it)
    entries = vector_table(STARTUP.read_text())
    for svd_name, number in load_regmap()["interrupts"].items():
        base = re.sub(r"_IRQ$", "", svd_name)
        assert entries[16 + number] == f"{base}_IRQHandler", svd_name


def test_vector_table_check_can_fail():
    header = HEADER.read_text()
    entries = vector_table(STARTUP.read_text())
    swapped = list(entries)
    i, j = 16 + 28, 16 + 29  # TIM2, TIM3
    swapped[i], swapped[j] = swapped[j], swapped[i]
    errors = vector_errors(swapped, header_irqs(header), irq_count(header))
    assert len(errors) == 2 and "TIM3_IRQHandler" in errors[0]
    assert vector_errors(entries[:-1], header_irqs(header), irq_count(header))


def _size(text: str) -> int:
    m = re.fullmatch(r"(0x[0-9a-fA-F]+|\d+)\s*([KM]?)", text.strip())
    assert m, text
    return int(m[1], 0) * {"": 1, "K": 1024, "M": 1024 * 1024}[m[2]]


def test_memory_map():
    """The linker script's regions and build.py's constants are RM0090's."""
    text = build.LINKER_SCRIPT.read_text()
    block = re.search(r"MEMORY\s*\{(.*?)\}", text, re.S)
    assert block
    regions = {
        m[1]: (int(m[2], 0), _size(m[3]))
        for m in re.finditer(
            r"(\w+)\s*\([a-z]+\)\s*:\s*ORIGIN\s*=\s*(\w+)\s*,\s*LENGTH\s*=\s*(\w+)", block[1]
        )
    }
    assert regions == RM0090_MEMORY
    assert tuple(RM0090_MEMORY.values()) == (build.FLASH, build.SRAM, build.CCM)
    assert re.search(r"_min_stack\s*=\s*0x800\s*;", text) and build.MIN_STACK == 0x800


SVD_SAMPLE = """<?xml version="1.0" encoding="utf-8"?>
<device><name>T</name><version>2</version><size>0x20</size><resetValue>0x0</resetValue>
<peripherals>
 <peripheral><name>A</name><baseAddress>0x1000</baseAddress>
  <interrupt><name>A_IRQ</name><value>3</value></interrupt>
  <registers>
   <register><name>CR</name><addressOffset>0x0</addressOffset><resetValue>0x83</resetValue></register>
   <register><dim>2</dim><dimIncrement>4</dimIncrement><name>EXTICR%s</name>
    <addressOffset>0x8</addressOffset></register>
   <register><dim>3</dim><dimIncrement>0x10</dimIncrement><dimIndex>A-C</dimIndex>
    <name>P%sR</name><addressOffset>0x20</addressOffset><size>16</size></register>
  </registers>
 </peripheral>
 <peripheral derivedFrom="A"><name>B</name><baseAddress>0x2000</baseAddress></peripheral>
</peripherals></device>"""


def test_svd_reader():
    """derivedFrom and <dim> arrays, on a small SVD (the real one has neither dim nor cluster)."""
    data = svd.regmap(SVD_SAMPLE, ("A", "B"))
    assert data["device"] == {"name": "T", "version": "2"}
    assert data["interrupts"] == {"A_IRQ": 3}
    a = data["peripherals"]["A"]
    assert a["base"] == "0x00001000"
    assert {k: v["offset"] for k, v in a["registers"].items()} == {
        "CR": "0x0",
        "EXTICR0": "0x8",
        "EXTICR1": "0xC",
        "PAR": "0x20",
        "PBR": "0x30",
        "PCR": "0x40",
    }
    assert a["registers"]["CR"]["reset"] == "0x00000083"
    assert a["registers"]["PBR"]["size"] == 16
    b = data["peripherals"]["B"]
    assert b["base"] == "0x00002000" and b["derived_from"] == "A"
    assert b["registers"] == a["registers"]
    with pytest.raises(KeyError):
        svd.regmap(SVD_SAMPLE, ("A", "Z"))


def test_regmap_is_current():
    """regmap.json is what svd.py makes of the SVD (when pyocd, which ships it, is installed)."""
    spec = importlib.util.find_spec("pyocd")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("needs the SVD: pip install pyocd==0.46.0 (its svd_data.zip)")
    archive = Path(spec.submodule_search_locations[0]) / "debug" / "svd" / "svd_data.zip"
    with zipfile.ZipFile(archive) as z:
        text = z.read("STM32F41x.svd")
    assert svd.regmap(text) == load_regmap()
