"""The rtl part of task.toml: interface, harness and reference, checked field by field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verifiers.rtl.hdl import module_names
from verifiers.rtl.ports import PortReadError, read_ports
from verifiers.specfields import Field, TaskSpecError, check_fields, read_task_file

DIRECTIONS = ("input", "output", "inout")
KINDS = ("combinational", "sequential")
EQUIVALENCE = ("comb", "seq", "none")
# "auto": iverilog, unless the reference's own iverilog simulation is slow (verilator.py)
SIMULATORS = ("auto", "iverilog", "verilator")
COST_GATES = ("simulate", "synthesize", "equivalence")

INTERFACE_FIELDS = (
    Field("top", str, "the module name the candidate must define", check=str.isidentifier),
    Field("kind", str, f"one of {', '.join(KINDS)}", check=lambda v: v in KINDS),
    Field("ports", list, "a list of [[interface.ports]] tables", check=bool),
    Field("clock", str, "the name of the clock input", required=False),
    Field("reset", str, "the name of the reset input", required=False),
    Field("reset_active", str, "high or low", required=False, check=lambda v: v in ("high", "low")),
    Field("reset_sync", bool, "true (synchronous) or false (asynchronous)", required=False),
)
PORT_FIELDS = (
    Field("name", str, "a Verilog identifier", check=str.isidentifier),
    Field("direction", str, f"one of {', '.join(DIRECTIONS)}", check=lambda v: v in DIRECTIONS),
    Field("width", int, "a width of at least 1 bit", check=lambda v: v >= 1),
)
HARNESS_FIELDS = (
    Field("reference", str, "the reference solution's file name"),
    Field("testbench", str, "the testbench's file name"),
    Field("equivalence", str, f"one of {', '.join(EQUIVALENCE)}", check=lambda v: v in EQUIVALENCE),
    Field(
        "sim_timeout_s",
        (int, float),
        "a positive number of seconds",
        required=False,
        check=lambda v: v > 0,
    ),
    Field(
        "sim_cpu_s",
        int,
        "a whole number of CPU seconds for one simulation",
        required=False,
        check=lambda v: v >= 1,
    ),
    Field(
        "ref_top", str, "the reference's top module name", required=False, check=str.isidentifier
    ),
    Field(
        "simulator",
        str,
        f"one of {', '.join(SIMULATORS)}",
        required=False,
        check=lambda v: v in SIMULATORS,
    ),
    Field(
        "ref_cost",
        dict,
        "a table of the reference's measured seconds per gate (simulate, synthesize, "
        "equivalence), written at ingest",
        required=False,
        check=lambda v: all(
            k in COST_GATES and isinstance(x, int | float) and x >= 0 for k, x in v.items()
        ),
    ),
)


def load_rtl_spec(toml_path: Path, spec: dict[str, Any]) -> tuple[dict, dict, str]:
    iface = spec["interface"]
    check_fields(toml_path, iface, INTERFACE_FIELDS, "interface.")
    for i, port in enumerate(iface["ports"]):
        if not isinstance(port, dict):
            raise TaskSpecError(toml_path, f"interface.ports[{i}]", "a table", port)
        check_fields(toml_path, port, PORT_FIELDS, f"interface.ports[{i}].")
    inputs = {p["name"] for p in iface["ports"] if p["direction"] == "input"}
    for role in ("clock", "reset"):
        if role in iface and iface[role] not in inputs:
            raise TaskSpecError(
                toml_path, f"interface.{role}", "the name of an input port", iface[role]
            )
    if iface["kind"] == "sequential" and "clock" not in iface:
        raise TaskSpecError(toml_path, "interface.clock", "a clock input for a sequential design")

    harness = spec["harness"]
    check_fields(toml_path, harness, HARNESS_FIELDS, "harness.")
    reference = read_task_file(toml_path, "harness.reference", harness["reference"])
    testbench = read_task_file(toml_path, "harness.testbench", harness["testbench"])
    ref_top = harness.get("ref_top", iface["top"])
    if ref_top not in module_names(reference):
        raise TaskSpecError(
            toml_path,
            "harness.reference",
            f"a file defining module {ref_top!r}",
            module_names(reference),
        )
    _check_ports_match(toml_path, iface["ports"], reference, ref_top)

    interface = {
        k: iface[k]
        for k in ("top", "kind", "clock", "reset", "reset_active", "reset_sync")
        if k in iface
    }
    interface["ports"] = [
        dict(name=p["name"], direction=p["direction"], width=p["width"]) for p in iface["ports"]
    ]
    if "reset" in interface:
        interface.setdefault("reset_active", "high")
        interface.setdefault("reset_sync", True)
    out_harness = {k: v for k, v in harness.items() if k not in ("reference", "testbench")}
    out_harness["testbench"] = testbench
    out_harness.setdefault("sim_timeout_s", 10)
    out_harness["ref_top"] = ref_top
    return interface, out_harness, reference


def _check_ports_match(toml_path: Path, declared: list[dict], reference: str, top: str) -> None:
    try:
        actual = read_ports(reference, top)
    except PortReadError as e:
        raise TaskSpecError(
            toml_path, "harness.reference", f"a reference Yosys can elaborate ({e})"
        ) from None
    want = {p["name"]: (p["direction"], p["width"]) for p in declared}
    have = {p["name"]: (p["direction"], p["width"]) for p in actual}
    if want == have:
        return
    problems = []
    for name in sorted(want.keys() - have.keys()):
        problems.append(f"{name} declared but not a port of the reference")
    for name in sorted(have.keys() - want.keys()):
        problems.append(f"reference port {name} {have[name]} is not declared")
    for name in sorted(want.keys() & have.keys()):
        if want[name] != have[name]:
            problems.append(
                f"{name}: declared {want[name][0]} [{want[name][1]}], "
                f"reference has {have[name][0]} [{have[name][1]}]"
            )
    raise TaskSpecError(
        toml_path, "interface.ports", "the reference module's ports (" + "; ".join(problems) + ")"
    )
