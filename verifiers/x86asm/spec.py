"""x86asm task specs: `tasks/x86asm/<name>/task.toml` plus its C files (format in
tasks/README.md).

A function task names a C function (`[interface] signature`), says how long each pointer
parameter's buffer is and what it may do (`[interface.buffers.<name>]`), and how its inputs
are made (`[harness.values]`, `[harness.perf]`); `ref.c` defines it plainly (the baselines
are its `gcc -O0` and `-O3` assembly, made here at load with the installed gcc, whose
version the task records) and `opt.c` a faster implementation whose `-O3 -march=<isa>`
assembly is the task's reference answer. A program task (the SuperCoder layout, imported by
`verifiers/x86asm/supercoder.py`) holds a whole C program, its tests as stdin / expected
stdout, and the candidate is the whole program's assembly.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from verifiers.specfields import Field, TaskSpecError, check_fields, read_task_file
from verifiers.x86asm import toolchain
from verifiers.x86asm.cases import CaseError, Generator, length_names
from verifiers.x86asm.signature import SignatureError, parse_signature

FAMILIES = (
    "memory", "string", "checksum", "hash", "search", "sort", "bits", "saturating",
    "fixedpoint", "matrix", "stencil", "program",
)  # fmt: skip
KINDS = ("function", "program")
ACCESS = ("in", "inout", "out")


def _pair(v: Any) -> bool:
    return (
        isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) for x in v) and v[0] <= v[1]
    )


def _ints(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)


INTERFACE_FIELDS = (
    Field("kind", str, f"one of {', '.join(KINDS)} (default function)", False,
          lambda v: v in KINDS),
    Field("signature", str, 'the C prototype, e.g. "uint32_t crc32(const uint8_t *p, size_t n)"',
          required=False),
    Field("buffers", dict, "a [interface.buffers.<param>] table per pointer parameter",
          required=False),
)  # fmt: skip
BUFFER_FIELDS = (
    Field("length", (str, int), 'its element count: a number or an expression of scalar '
          'parameters ("n", "rows * cols")', required=False),
    Field("string", bool, "true: a NUL-terminated string (its length from harness.values)",
          required=False),
    Field("access", str, f"one of {', '.join(ACCESS)} (default: in for const, else inout)",
          False, lambda v: v in ACCESS),
    Field("nullable", bool, "true: may be NULL when its length is 0", required=False),
    Field("overlaps", str, "another pointer parameter it may overlap (memmove)", required=False),
    Field("align", int, "the alignment in bytes the caller guarantees (1..64, a power of two)",
          False, lambda v: v in (1, 2, 4, 8, 16, 32, 64)),
)  # fmt: skip
HARNESS_FIELDS = (
    Field("reference", str, "the plain C definition of the function, e.g. ref.c", required=False),
    Field("optimized", str, "a faster C implementation, e.g. opt.c (its -O3 -march=<isa> "
          "assembly is the reference answer)", required=False),
    Field("answer", str, "a hand-written reference answer in assembly (instead of optimized)",
          required=False),
    Field("optimized_flags", list, 'gcc flags for opt.c (default ["-O3", "-march=<isa>"])',
          False, lambda v: all(isinstance(x, str) and x.startswith("-") for x in v)),
    Field("values", dict, "a [harness.values.<param>] table per parameter that needs one",
          required=False),
    Field("random_cases", int, "random inputs beside the edge cases (default 40)", False,
          lambda v: 0 <= v <= 2000),
    Field("perf", dict, "[harness.perf]: values (the workload's sizes) and calls", required=False),
    Field("speed_bar", (int, float), "the instruction-count speedup over -O3 a pass needs "
          "(more than this; default 1.0)", False, lambda v: v > 0),
    Field("wall_bar", (int, float), "the wall-time speedup over -O3 a pass needs (more than "
          "this; default 1.0)", False, lambda v: v > 0),
    Field("stateful", bool, "true: the function may keep writable static data", required=False),
    Field("program", str, "program tasks: the C program", required=False),
    Field("tests", str, "program tasks: a JSON file of [{stdin, stdout}]", required=False),
    Field("given", str, "program tasks: the assembly the dataset gives with the program",
          required=False),
)  # fmt: skip
VALUE_FIELDS = (
    Field("range", list, "[lo, hi] of the values drawn", False, _pair),
    Field("edges", list, "values every run tries", False, _ints),
    Field("choices", list, "the values drawn from, instead of a range", False,
          lambda v: _ints(v) and bool(v)),
    Field("specials", list, "values drawn one time in eight (a delimiter, a key that matches)",
          False, lambda v: _ints(v) and bool(v)),
    Field("sorted", bool, "true: a buffer's elements in ascending order", required=False),
    Field("length", list, "[lo, hi] of a string's length", False, _pair),
)  # fmt: skip
PERF_FIELDS = (
    Field("values", dict, "the workload's scalar values (every length parameter)", required=False),
    Field("contents", dict, "[harness.perf.contents.<buffer>]: the workload's buffer values "
          "(range, choices), where they differ from harness.values", required=False),
    Field("calls", int, "inputs per timed pass (each its own buffers)", False,
          lambda v: 1 <= v <= 4096),
)  # fmt: skip
PLATFORM_FIELDS = (
    Field("isa", str, f"the target instruction set, one of {', '.join(toolchain.ISAS)}", False,
          lambda v: v in toolchain.ISAS),
)  # fmt: skip


def platform_defaults(isa: str) -> dict[str, str]:
    return {
        "target": "x86-64 Linux, System V AMD64 ABI (static binary)",
        "isa": isa,
        "assembler": f"{toolchain.as_label()}; AT&T syntax, or .intel_syntax noprefix",
        "compiler": toolchain.gcc_label(),
        "baseline": f"{toolchain.gcc_label()} -O3 (x86-64 baseline ISA)",
        "measured": "instructions (valgrind callgrind) and wall time, side by side with the "
        "-O3 baseline",
    }


def load_x86asm_spec(toml_path: Path, spec: dict) -> tuple[dict, dict, str | None]:
    iface_in, harness_in = spec["interface"], spec["harness"]
    check_fields(toml_path, iface_in, INTERFACE_FIELDS, "interface.")
    check_fields(toml_path, harness_in, HARNESS_FIELDS, "harness.")
    if spec["family"] not in FAMILIES:
        raise TaskSpecError(toml_path, "family", f"one of {', '.join(FAMILIES)}", spec["family"])
    platform = spec.setdefault("platform", {})
    if not isinstance(platform, dict):
        raise TaskSpecError(toml_path, "platform", "a [platform] table", platform)
    check_fields(toml_path, platform, PLATFORM_FIELDS, "platform.")
    isa = platform.get("isa", toolchain.DEFAULT_ISA)
    try:
        for key, value in platform_defaults(isa).items():
            platform.setdefault(key, value)
        if iface_in.get("kind", "function") == "program":
            return _program(toml_path, iface_in, harness_in)
        return _function(toml_path, iface_in, harness_in, isa)
    except toolchain.ToolchainError as e:
        raise TaskSpecError(toml_path, "harness", f"C that gcc builds ({e})") from None


def _function(
    toml_path: Path, iface_in: dict, harness_in: dict, isa: str
) -> tuple[dict, dict, str]:
    if "signature" not in iface_in:
        raise TaskSpecError(toml_path, "interface.signature", "the C prototype (missing)")
    try:
        sig = parse_signature(iface_in["signature"])
    except SignatureError as e:
        raise TaskSpecError(
            toml_path, "interface.signature", str(e), iface_in["signature"]
        ) from None
    buffers = {}
    raw = iface_in.get("buffers", {})
    unknown = sorted(set(raw) - {p.name for p in sig.pointers})
    if unknown:
        raise TaskSpecError(
            toml_path, "interface.buffers", "a table per pointer parameter", unknown
        )
    for p in sig.pointers:
        where = f"interface.buffers.{p.name}"
        conf = raw.get(p.name)
        if not isinstance(conf, dict):
            raise TaskSpecError(toml_path, where, "a table saying how long the buffer is (missing)")
        check_fields(toml_path, conf, BUFFER_FIELDS, where + ".")
        if ("length" in conf) == bool(conf.get("string")):
            raise TaskSpecError(toml_path, where, "exactly one of length or string = true")
        for name in length_names(conf.get("length", 0)):
            if name not in {s.name for s in sig.scalars}:
                raise TaskSpecError(toml_path, where + ".length", "scalar parameter names", name)
        other = conf.get("overlaps")
        if other is not None and other not in {q.name for q in sig.pointers if q.name != p.name}:
            raise TaskSpecError(toml_path, where + ".overlaps", "another pointer parameter", other)
        access = conf.get("access", "in" if p.const else "inout")
        if p.const and access != "in":
            raise TaskSpecError(toml_path, where + ".access", "in (the parameter is const)", access)
        buffers[p.name] = {
            **({"length": conf["length"]} if "length" in conf else {"string": True}),
            "access": access,
            "align": conf.get("align", p.type.size),
            **{k: conf[k] for k in ("nullable", "overlaps") if k in conf},
        }
    values = harness_in.get("values", {})
    for name, table in values.items():
        if name not in {p.name for p in sig.params}:
            raise TaskSpecError(toml_path, f"harness.values.{name}", "a parameter's name", name)
        if not isinstance(table, dict):
            raise TaskSpecError(toml_path, f"harness.values.{name}", "a table", table)
        check_fields(toml_path, table, VALUE_FIELDS, f"harness.values.{name}.")
    perf = harness_in.get("perf", {})
    check_fields(toml_path, perf, PERF_FIELDS, "harness.perf.")
    for name, table in perf.get("contents", {}).items():
        where = f"harness.perf.contents.{name}"
        if name not in {p.name for p in sig.pointers} or not isinstance(table, dict):
            raise TaskSpecError(toml_path, where, "a table for a pointer parameter", name)
        check_fields(toml_path, table, VALUE_FIELDS, where + ".")
    sizes = {n for b in buffers.values() for n in length_names(b.get("length", 0))}
    missing = sorted(sizes - set(perf.get("values", {})))
    if sig.pointers and missing:
        raise TaskSpecError(toml_path, "harness.perf.values", "a value for every length parameter",
                            missing)  # fmt: skip
    reference_c = read_task_file(toml_path, "harness.reference", harness_in.get("reference"))
    if not re.search(rf"\b{re.escape(sig.name)}\s*\(", reference_c):
        raise TaskSpecError(toml_path, "harness.reference", f"a C file defining {sig.name}")
    ref_name = Path(harness_in["reference"]).name
    o0 = toolchain.compile_asm(reference_c, ("-O0",), ref_name)
    o3 = toolchain.compile_asm(reference_c, ("-O3",), ref_name)
    answer, optimized = _answer(toml_path, harness_in, isa)
    interface = {
        "kind": "function",
        "function": sig.name,
        "signature": sig.text,
        "buffers": buffers,
        "abi": "System V AMD64: integer arguments in rdi, rsi, rdx, rcx, r8, r9; result in "
        "rax; rbx, rbp, r12-r15 callee-saved; rsp 16-byte aligned at every call",
        "listings": _listings("The function (C)", reference_c, o3),
    }
    harness = {
        "kind": "function",
        "reference_c": reference_c,
        "baselines": {"O0": o0, "O3": o3},
        "values": {k: dict(v) for k, v in values.items()},
        "random_cases": harness_in.get("random_cases", 40),
        "perf": {
            "values": dict(perf.get("values", {})),
            "calls": perf.get("calls", 1),
            **({"contents": perf["contents"]} if "contents" in perf else {}),
        },
        "speed_bar": float(harness_in.get("speed_bar", 1.0)),
        "wall_bar": float(harness_in.get("wall_bar", 1.0)),
        "stateful": bool(harness_in.get("stateful", False)),
        **optimized,
    }
    try:
        gen = Generator(sig, interface, harness)
        gen.check_cases()
    except CaseError as e:
        raise TaskSpecError(toml_path, "harness.values", str(e)) from None
    return interface, harness, answer


def _listings(title: str, c_text: str, o3: str) -> list[dict[str, str]]:
    """What a prompt shows whole: the C, and the -O3 assembly to beat."""
    return [
        {"title": title, "fence": "c", "text": c_text},
        {"title": f"Baseline to beat: {toolchain.gcc_label()} -O3", "fence": "asm", "text": o3},
    ]


def _answer(toml_path: Path, harness_in: dict, isa: str) -> tuple[str | None, dict]:
    """The reference answer, and what the harness keeps of its source (the optimized C and
    its flags: the offline generator compiles it at other levels for a speed ladder)."""
    if "answer" in harness_in:
        return read_task_file(toml_path, "harness.answer", harness_in["answer"]), {}
    if "optimized" not in harness_in:
        return None, {}
    opt_c = read_task_file(toml_path, "harness.optimized", harness_in["optimized"])
    flags = tuple(harness_in.get("optimized_flags", ["-O3", f"-march={toolchain.ISAS[isa][1]}"]))
    name = Path(harness_in["optimized"]).name
    kept = {"optimized_c": opt_c, "optimized_flags": list(flags), "optimized_name": name}
    return toolchain.compile_asm(opt_c, flags, name), kept


def _program(toml_path: Path, iface_in: dict, harness_in: dict) -> tuple[dict, dict, None]:
    program = read_task_file(toml_path, "harness.program", harness_in.get("program"))
    tests_text = read_task_file(toml_path, "harness.tests", harness_in.get("tests"))
    try:
        tests = json.loads(tests_text)
        ok = (
            isinstance(tests, list)
            and tests
            and all(
                isinstance(t, dict)
                and isinstance(t.get("stdin"), str)
                and isinstance(t.get("stdout"), str)
                for t in tests
            )
        )
    except ValueError:
        ok = False
    if not ok:
        raise TaskSpecError(
            toml_path, "harness.tests", 'a JSON list of {"stdin": ..., "stdout": ...}'
        )
    given = (
        read_task_file(toml_path, "harness.given", harness_in["given"])
        if "given" in harness_in
        else None
    )
    name = Path(harness_in["program"]).name
    o0 = toolchain.compile_asm(program, ("-O0",), name)
    o3 = toolchain.compile_asm(program, ("-O3",), name)
    perf = max(range(len(tests)), key=lambda i: (len(tests[i]["stdin"]), -i))
    interface = {
        "kind": "program",
        "function": "main",
        "abi": "System V AMD64; the whole program (main and what it calls), linked statically "
        "with the C library",
        "listings": _listings("The program (C)", program, o3),
    }
    harness = {
        "kind": "program",
        "program_c": program,
        "baselines": {"O0": o0, "O3": o3, **({"given": given} if given else {})},
        "tests": tests,
        "perf_test": perf,
        "speed_bar": float(harness_in.get("speed_bar", 1.0)),
        "wall_bar": float(harness_in.get("wall_bar", 1.0)),
    }
    return interface, harness, None
