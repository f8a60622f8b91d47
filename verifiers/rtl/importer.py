"""Import VerilogEval-layout problems as RTL task directories.

One problem is three files sharing a stem: `<stem>_prompt.txt` (the spec), `<stem>_ref.sv`
(module `RefModule`) and `<stem>_test.sv` (module `tb`, which instantiates `RefModule` and
`TopModule` and prints `Mismatches: N in M samples`). Each becomes `dest/<stem>/` with a
task.toml, ref.sv (verbatim) and tb.sv (the test with its result lines token-prefixed, so
the harness can tell them from anything a candidate prints).

Importing is deterministic: the same sources always give byte-identical task directories.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import re
import shutil
import sys
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from verifiers.rtl.hdl import REF_TOP, REPORT_TOKEN, module_names, rename_modules, strip_comments
from verifiers.rtl.ports import PortReadError, read_ports
from verifiers.specfields import ImportProblems, TaskSpecError

log = logging.getLogger(__name__)

CANDIDATE_TOP = "TopModule"
SUFFIXES = {"prompt": "_prompt.txt", "ref": "_ref.sv", "test": "_test.sv"}
PLATFORM = {"language": "SystemVerilog-2012", "simulator": "iverilog -g2012"}
SIM_TIMEOUT_S = 20

# VerilogEval's result lines; already-prefixed strings no longer start with the quote+word,
# so prefixing twice is a no-op.
_RESULT_STRING = re.compile(r'"(Mismatches:|Hint:)')
_RESET_NAME = re.compile(r"^(?:a?reset|a?rst)(?:_?n|_b)?$", re.I)
_ACTIVE_LOW_NAME = re.compile(r"(?:_n|_b|resetn|rstn)$", re.I)


class PortParseError(ValueError):
    """The reference's port list could not be read."""


# ---------------------------------------------------------------------------------------
# task.toml rendering (shared by the importer and anyone writing RTL tasks from code)


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _toml_multiline(value: str) -> str:
    """A multi-line basic string holding `value` exactly (value must end with a newline)."""
    text = value.replace("\r\n", "\n").replace("\\", "\\\\").replace('"""', '""\\"')
    text = re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", lambda m: f"\\u{ord(m.group(0)):04x}", text)
    return '"""\n' + text + '"""'


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, Sequence):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _toml_entry(key: str, value: Any) -> str:
    """`key = value`, with an array of tables one table a line so it stays readable."""
    tables = isinstance(value, Sequence) and not isinstance(value, str) and len(value) > 1
    if tables and all(isinstance(v, Mapping) for v in value):
        rows = "".join(f"    {_toml_value(v)},\n" for v in value)
        return f"{key} = [\n{rows}]"
    return f"{key} = {_toml_value(value)}"


def render_task_toml(spec: Mapping[str, Any]) -> str:
    """task.toml text in the catalog's layout (tasks/README.md): top-level keys, then
    [interface] with its [[interface.ports]], [platform], [harness], [harness.stimulus]."""
    out = []
    for key in ("name", "family", "level", "split", "source"):
        out.append(f"{key} = {_toml_value(spec[key])}")
    requirement = spec["requirement"].replace("\r\n", "\n").rstrip() + "\n"
    out.append(f"requirement = {_toml_multiline(requirement)}")
    interface = dict(spec["interface"])
    ports = interface.pop("ports")
    out += ["", "[interface]"]
    out += [f"{k} = {_toml_value(v)}" for k, v in interface.items()]
    for port in ports:
        out += ["", "[[interface.ports]]"]
        out += [f"{k} = {_toml_value(port[k])}" for k in ("name", "direction", "width")]
    out += ["", "[platform]"]
    out += [f"{k} = {_toml_value(v)}" for k, v in spec["platform"].items()]
    harness = dict(spec["harness"])
    stimulus = harness.pop("stimulus", None)
    out += ["", "[harness]"]
    out += [f"{k} = {_toml_value(v)}" for k, v in harness.items()]
    if stimulus:
        out += ["", "[harness.stimulus]"]
        out += [_toml_entry(k, v) for k, v in stimulus.items()]
    text = "\n".join(out) + "\n"
    tomllib.loads(text)  # a writer bug must not reach the catalog
    return text


# ---------------------------------------------------------------------------------------
# ports of the reference


_HEADER = re.compile(
    r"\bmodule\s+(\w+)\s*(?:#\s*\((?P<params>.*?)\)\s*)?\((?P<ports>.*?)\)\s*;", re.S
)
_ANSI_PORT = re.compile(
    r"^(?:(?P<dir>input|output|inout)\b)?\s*"
    r"(?:(?:wire|reg|logic|var|bit|tri)\b\s*)?(?:(?:signed|unsigned)\b\s*)?"
    r"(?:\[\s*(?P<msb>\d+)\s*:\s*(?P<lsb>\d+)\s*\]\s*)?(?P<name>[A-Za-z_]\w*)\s*$"
)


def ports_from_header(source: str, top: str) -> list[dict[str, Any]]:
    """The same from an ANSI header with constant ranges: for when yosys is absent or
    cannot read the file."""
    for m in _HEADER.finditer(strip_comments(source)):
        if m.group(1) != top:
            continue
        ports: list[dict[str, Any]] = []
        direction, width = None, 1
        for item in m.group("ports").split(","):
            pm = _ANSI_PORT.match(" ".join(item.split()))
            if not pm:
                raise PortParseError(f"cannot read port declaration {item.strip()!r}")
            if pm.group("dir"):
                direction = pm.group("dir")
                msb, lsb = pm.group("msb"), pm.group("lsb")
                width = abs(int(msb) - int(lsb)) + 1 if msb is not None else 1
            elif pm.group("msb") is not None:
                raise PortParseError(f"range without a direction in {item.strip()!r}")
            if direction is None:
                raise PortParseError(f"non-ANSI port list (no direction for {item.strip()!r})")
            ports.append({"name": pm.group("name"), "direction": direction, "width": width})
        return ports
    raise PortParseError(f"no ANSI header for module {top}")


def reference_ports(source: str, top: str = REF_TOP) -> list[dict[str, Any]]:
    """The ports as yosys elaborates them; from the ANSI header where yosys is absent or
    cannot read the file (VerilogEval references use SystemVerilog it may not know)."""
    try:
        return read_ports(source, top)
    except PortReadError as e:
        log.warning("yosys could not read %s (%s); reading the header instead", top, e)
    return ports_from_header(source, top)


# ---------------------------------------------------------------------------------------
# one problem


def infer_interface(ports: list[dict[str, Any]], ref_source: str) -> dict[str, Any]:
    """[interface] from the ports: a `clk` input makes it sequential; a reset-named input
    is the reset, async if the reference's sensitivity lists name it, active-low if it
    falls on negedge or its name says so."""
    inputs = [p["name"] for p in ports if p["direction"] == "input"]
    interface: dict[str, Any] = {"top": CANDIDATE_TOP}
    if "clk" not in inputs:
        interface["kind"] = "combinational"
    else:
        interface["kind"] = "sequential"
        interface["clock"] = "clk"
        reset = next((n for n in inputs if _RESET_NAME.match(n)), None)
        if reset:
            code = strip_comments(ref_source)
            edge = re.search(rf"\b(posedge|negedge)\s+{re.escape(reset)}\b", code)
            low = (edge and edge.group(1) == "negedge") or (
                not edge and bool(_ACTIVE_LOW_NAME.search(reset))
            )
            interface["reset"] = reset
            interface["reset_active"] = "low" if low else "high"
            interface["reset_sync"] = edge is None
    interface["ports"] = ports
    return interface


def prefix_results(test_source: str) -> str:
    """VerilogEval's result strings, token-prefixed (`"Mismatches:` -> `"<token> Mismatches:`)."""
    return _RESULT_STRING.sub(lambda m: f'"{REPORT_TOKEN} {m.group(1)}', test_source)


def _problem_files(src_dir: Path) -> dict[str, dict[str, Path]]:
    problems: dict[str, dict[str, Path]] = {}
    for path in sorted(src_dir.iterdir()):
        for kind, suffix in SUFFIXES.items():
            if path.is_file() and path.name.endswith(suffix) and len(path.name) > len(suffix):
                problems.setdefault(path.name[: -len(suffix)], {})[kind] = path
    return problems


def import_problem(
    stem: str,
    files: Mapping[str, Path],
    dest_dir: Path,
    *,
    split: str,
    source: str,
    ref_cost: Mapping[str, float] | None = None,
    simulator: str | None = None,
) -> Path:
    prompt = files["prompt"].read_text(encoding="utf-8")
    ref = files["ref"].read_text(encoding="utf-8")
    test = files["test"].read_text(encoding="utf-8")
    if REF_TOP not in module_names(ref):
        raise PortParseError(f"{files['ref'].name}: no module {REF_TOP}")
    interface = infer_interface(reference_ports(ref), ref)
    spec = {
        "name": stem,
        "family": "imported",
        "level": 2,
        "split": split,
        "source": source,
        "requirement": prompt,
        "interface": interface,
        "platform": PLATFORM,
        "harness": {
            "reference": "ref.sv",
            "testbench": "tb.sv",
            "equivalence": "seq" if interface["kind"] == "sequential" else "comb",
            "sim_timeout_s": SIM_TIMEOUT_S,
            "ref_top": REF_TOP,
        },
    }
    if ref_cost:
        spec["harness"]["ref_cost"] = dict(sorted(ref_cost.items()))
    if simulator:
        spec["harness"]["simulator"] = simulator
    task_dir = dest_dir / stem
    task_dir.mkdir(parents=True, exist_ok=True)
    (task_dir / "task.toml").write_text(render_task_toml(spec), encoding="utf-8")
    (task_dir / "ref.sv").write_text(ref, encoding="utf-8")
    (task_dir / "tb.sv").write_text(prefix_results(test), encoding="utf-8")
    return task_dir


# ---------------------------------------------------------------------------------------
# the reference through the catalog's checks and its own testbench

# generous budgets for the reference's own run: it is measured, not judged by them
CHECK_LIMITS = {"timeout_s": 300.0, "cpu_s": 300, "formal_timeout_s": 60.0}
CHECK_SIM_CPU_S = 120
# a gate's cost below this is not recorded (every budget's floor covers it); above, it is
# rounded up to a power of two, so that re-importing on another machine or under another
# load writes the same task.toml (and the same task_id) but for a real change of cost
COST_FLOOR_S = 0.5


def quantize_cost(seconds: float) -> float:
    if seconds < COST_FLOOR_S:
        return 0.0
    return float(2 ** math.ceil(math.log2(seconds)))


class ReferenceFails(ValueError):
    """The problem's own reference does not pass its own testbench (or the catalog's
    checks): no candidate could be judged fairly against it."""


def check_reference(task_dir: Path) -> tuple[dict[str, float], float]:
    """Load the task as the catalog does and verify its reference with every gate, as a
    candidate would be: the reference's CPU seconds per gate (its tool runs', quantized,
    only those worth recording) and its simulation's own wall seconds. Raises
    TaskSpecError (the loader refuses it), ReferenceFails (it fails its own harness) or
    RuntimeError (the machine could not check it)."""
    from verifiers.catalog import load_task
    from verifiers.contract import Limits
    from verifiers.rtl.spec import COST_GATES
    from verifiers.rtl.verifier import RtlVerifier

    task = load_task(task_dir, "rtl")
    harness = {**task.harness, "sim_cpu_s": CHECK_SIM_CPU_S}
    harness.pop("ref_cost", None)
    task = dataclasses.replace(task, harness=harness)
    code = rename_modules(task.reference or "", {REF_TOP: task.interface["top"]})
    verifier = RtlVerifier()
    verifier.trace = []  # every tool run, with its CPU seconds
    v = verifier.verify(task, code, Limits(**CHECK_LIMITS))
    if v.status.is_infra:
        raise RuntimeError(f"could not check the reference ({v.code}): {v.checks[-1].detail}")
    if not v.passed:
        detail = v.checks[-1].detail if v.checks else v.feedback
        raise ReferenceFails(
            f"its own reference fails its own harness: {v.status.value}/{v.code}: {detail}"[:300]
        )
    # a gate's cost is the CPU its tool runs took, not its wall time: a loaded machine
    # stretches the wall (2x on a busy 2-core one) and would change the task.toml
    cpu: dict[str, float] = {}
    for run in verifier.trace:
        took = run["cpu_s"] if run["cpu_s"] is not None else run["seconds"]
        cpu[run["gate"]] = cpu.get(run["gate"], 0.0) + took
    # an undecided proof's time is the solver's limit, not the reference's cost
    decided = v.metrics.get("equivalence") == "proven"
    costs = {
        c.name: quantize_cost(cpu.get(c.name, 0.0))
        for c in v.checks
        if c.name in COST_GATES and (c.name != "equivalence" or decided)
    }
    raw = {c.name: c.seconds for c in v.checks}
    return {k: x for k, x in costs.items() if x}, raw.get("simulate", 0.0)


def pick_simulator(
    task_dir: Path, cost: Mapping[str, float], iverilog_s: float | None = None
) -> str | None:
    """For a reference slow enough that "auto" would simulate candidates with Verilator
    (verilator.choose), the simulator to pin in the task: "verilator" when the reference
    passes its own testbench there too and its model (build and run, the runtime library
    aside: built once per verifier) costs less than half its iverilog run, else "iverilog"
    (a two-state simulator can read a testbench differently, and a task must never blame
    every candidate for that; a model that takes longer to build than iverilog takes to
    simulate is no gain). None: the task stays on "auto" (iverilog)."""
    from verifiers.catalog import load_task
    from verifiers.contract import Limits
    from verifiers.rtl import verilator
    from verifiers.rtl.verifier import SIM_ONLY, RtlVerifier

    task = load_task(task_dir, "rtl")
    if (cost.get("simulate") or 0.0) < verilator.AUTO_ABOVE_S:
        return None
    if verilator.missing():
        log.warning("%s: verilator cannot build here; pinned to iverilog", task_dir.name)
        return verilator.IVERILOG
    harness = {**task.harness, "simulator": verilator.VERILATOR, "sim_cpu_s": CHECK_SIM_CPU_S}
    task = dataclasses.replace(task, harness=harness)
    code = rename_modules(task.reference or "", {REF_TOP: task.interface["top"]})
    v = RtlVerifier().verify(task, code, Limits(gates=SIM_ONLY, **CHECK_LIMITS))
    if not (v.passed and v.metrics.get("simulator") == verilator.VERILATOR):
        log.warning(
            "%s: its reference does not pass under verilator (%s/%s %s); pinned to iverilog",
            task_dir.name,
            v.status.value,
            v.code,
            v.metrics.get("simulator_fallback", ""),
        )
        return verilator.IVERILOG
    sim_s = next((c.seconds for c in v.checks if c.name == "simulate"), 0.0)
    model_s = sim_s - v.metrics.get("verilator_runtime_build_s", 0.0)
    if model_s < 0.5 * (iverilog_s or cost["simulate"]):
        return verilator.VERILATOR
    log.info("%s: its verilator model costs %.2f s: pinned to iverilog", task_dir.name, model_s)
    return verilator.IVERILOG


def import_verilogeval(
    src_dir: Path,
    dest_dir: Path,
    *,
    split: str = "holdout",
    source: str = "verilogeval",
    check: bool = True,
) -> list[Path]:
    """Import every complete problem under `src_dir`; the task directories written, sorted.

    With `check` (the default), each problem is loaded as the catalog loads it and its
    reference is verified against its own testbench with every gate, as a candidate
    would be: a problem that fails is not written (its reason is in the errors), so the
    import and the catalog agree. The reference's cost per gate is stored with the task
    (`harness.ref_cost`), from which the verifier sets that task's budgets.

    Raises `ImportProblems` after importing the good ones when any problem lacks a file,
    cannot be read, or fails its check; its `imported` and `errors` say which is which.
    """
    src_dir, dest_dir = Path(src_dir), Path(dest_dir)
    if split not in ("train", "holdout"):
        raise ValueError(f"split must be 'train' or 'holdout', not {split!r}")
    if not src_dir.is_dir():
        raise FileNotFoundError(f"{src_dir}: not a directory")
    imported: list[Path] = []
    errors: list[str] = []
    problems = _problem_files(src_dir)
    for stem, files in sorted(problems.items()):
        missing = [stem + SUFFIXES[k] for k in SUFFIXES if k not in files]
        if missing:
            errors.append(f"{stem}: missing {', '.join(missing)}")
            continue
        try:
            task_dir = import_problem(stem, files, dest_dir, split=split, source=source)
        except (PortParseError, OSError, UnicodeDecodeError) as e:
            errors.append(f"{stem}: {e}")
            continue
        if check:
            try:
                cost, sim_s = check_reference(task_dir)
            except (TaskSpecError, ReferenceFails, RuntimeError) as e:
                shutil.rmtree(task_dir, ignore_errors=True)
                errors.append(f"{stem}: {e}")
                continue
            if cost:
                sim = pick_simulator(task_dir, cost, sim_s)
                import_problem(
                    stem, files, dest_dir, split=split, source=source, ref_cost=cost, simulator=sim
                )
            log.info("checked %s (%d/%d)", stem, len(imported) + len(errors) + 1, len(problems))
        imported.append(task_dir)
    if errors:
        raise ImportProblems(imported, errors)
    return imported


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m verifiers.rtl.importer",
        description="Import VerilogEval-layout problems as RTL task directories.",
    )
    ap.add_argument("src_dir", type=Path)
    ap.add_argument("dest_dir", type=Path)
    ap.add_argument("--split", default="holdout", choices=("train", "holdout"))
    ap.add_argument("--source", default="verilogeval")
    ap.add_argument(
        "--no-check",
        action="store_true",
        help="write every problem without running its reference through its testbench "
        "and the catalog checks (faster; the catalog may then refuse some)",
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        done = import_verilogeval(
            args.src_dir,
            args.dest_dir,
            split=args.split,
            source=args.source,
            check=not args.no_check,
        )
    except ImportProblems as e:
        log.info("imported %d problem(s) into %s", len(e.imported), args.dest_dir)
        for err in e.errors:
            log.error("skipped %s", err)
        return 1
    log.info("imported %d problem(s) into %s", len(done), args.dest_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
