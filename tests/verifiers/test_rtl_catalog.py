"""Every built-in RTL task: its task.toml is complete, its tb.sv is what the generator makes,
the reference passes its own testbench, and a broken reference fails it.

The last point is the one that matters most: a testbench that cannot fail lets wrong
designs into the training data. Inverting every output is the bluntest breakage there is,
so a testbench that misses it compares nothing at all.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from verifiers.rtl.hdl import (
    REPORT_TOKEN,
    module_names,
    rename_modules,
    rename_reference,
    strip_comments,
)
from verifiers.rtl.testbench import is_generated, render_task

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks" / "rtl"
TASK_DIRS = sorted(p.parent for p in TASKS_DIR.glob("*/task.toml"))
FAMILIES = {
    "combinational",
    "arithmetic",
    "mux",
    "decoder",
    "encoder",
    "shift_register",
    "counter",
    "fsm_moore",
    "fsm_mealy",
    "fifo",
    "memory",
    "parameterized",
    "multi_module",
}
SUMMARY = re.compile(re.escape(REPORT_TOKEN) + r" Mismatches: (\d+) in (\d+) samples")
MISMATCH_LINE = re.compile(
    re.escape(REPORT_TOKEN) + r" MISMATCH time=\d+ output=\w+ expected=\S+ got=\S+ inputs:"
)

needs_iverilog = pytest.mark.skipif(
    shutil.which("iverilog") is None or shutil.which("vvp") is None,
    reason="install iverilog: apt-get install iverilog",
)


def _ids(dirs: list[Path]) -> list[str]:
    return [d.name for d in dirs]


def _spec(task_dir: Path) -> dict:
    return tomllib.loads((task_dir / "task.toml").read_text(encoding="utf-8"))


def inverted_candidate(reference: str, interface: dict) -> str:
    """A candidate named like the top that wraps the reference and inverts every output."""
    top = interface["top"]
    inner = f"{top}_crucible_inner"
    decls, conns, assigns = [], [], []
    for port in interface["ports"]:
        name, width = port["name"], port["width"]
        rng = f"[{width - 1}:0] " if width > 1 else ""
        decls.append(f"{port['direction']} wire {rng}{name}")
        if port["direction"] == "output":
            assigns.append(f"  wire {rng}raw_{name};\n  assign {name} = ~raw_{name};")
            conns.append(f".{name}(raw_{name})")
        else:
            conns.append(f".{name}({name})")
    wrapper = (
        f"module {top}({', '.join(decls)});\n"
        + "\n".join(assigns)
        + f"\n  {inner} u_inner({', '.join(conns)});\nendmodule\n"
    )
    return rename_modules(reference, {top: inner}) + "\n" + wrapper


def simulate(task_dir: Path, candidate: str, tmp_path: Path) -> tuple[int, int, str]:
    spec = _spec(task_dir)
    harness = spec["harness"]
    reference = (task_dir / harness["reference"]).read_text(encoding="utf-8")
    ref_top = harness.get("ref_top", spec["interface"]["top"])
    files = {
        "tb.sv": (task_dir / harness["testbench"]).read_text(encoding="utf-8"),
        "candidate.sv": candidate,
        "reference.sv": rename_reference(reference, ref_top),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    compiled = subprocess.run(
        ["iverilog", "-g2012", "-o", "sim.vvp", *files],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert compiled.returncode == 0, compiled.stderr
    run = subprocess.run(
        ["vvp", "-n", "sim.vvp"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=harness.get("sim_timeout_s", 10) * 3,
        check=False,
    )
    found = SUMMARY.findall(run.stdout)
    assert len(found) == 1, run.stdout[-2000:]
    mismatches, samples = map(int, found[0])
    return mismatches, samples, run.stdout


def test_catalog_is_not_empty():
    assert len(TASK_DIRS) >= 42


@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=_ids(TASK_DIRS))
def test_task_toml_fields(task_dir: Path):
    spec = _spec(task_dir)
    assert spec["name"] == task_dir.name
    assert spec["family"] in FAMILIES
    assert spec["level"] in (1, 2, 3)
    assert spec["split"] in ("train", "holdout")
    assert spec["source"] == "crucible"
    assert len(spec["requirement"].strip()) > 80
    interface = spec["interface"]
    assert interface["kind"] in ("combinational", "sequential")
    ports = interface["ports"]
    assert ports and all(
        set(p) == {"name", "direction", "width"} and p["direction"] in ("input", "output")
        for p in ports
    )
    names = {p["name"] for p in ports}
    harness = spec["harness"]
    if interface["kind"] == "sequential":
        assert interface["clock"] in names
        assert harness["equivalence"] == "seq"
        if "reset" in interface:
            assert interface["reset"] in names
            assert interface["reset_active"] in ("high", "low")
            assert isinstance(interface["reset_sync"], bool)
    else:
        assert harness["equivalence"] == "comb"
    assert spec["platform"] == {"language": "SystemVerilog-2012", "simulator": "iverilog -g2012"}
    reference = (task_dir / harness["reference"]).read_text(encoding="utf-8")
    assert interface["top"] in module_names(reference)
    # the harness renames modules by whole word: a signal named like a module would break
    for module in module_names(reference):
        assert module not in names, f"port {module!r} is named like a module"
    code = strip_comments(reference)
    assert not re.search(r"\binitial\b|\$display\b", code), "references are synthesizable RTL"
    assert (task_dir / harness["testbench"]).is_file()
    assert isinstance(harness["sim_timeout_s"], int)


@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=_ids(TASK_DIRS))
def test_testbench_is_regenerable(task_dir: Path):
    path, text = render_task(task_dir)
    current = path.read_text(encoding="utf-8")
    if is_generated(current):
        assert current == text, "stale: run python -m verifiers.rtl.testbench " + str(task_dir)


@needs_iverilog
@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=_ids(TASK_DIRS))
def test_reference_passes_its_testbench(task_dir: Path, tmp_path: Path):
    reference = (task_dir / "ref.sv").read_text(encoding="utf-8")
    mismatches, samples, _ = simulate(task_dir, reference, tmp_path)
    assert mismatches == 0
    assert samples > 0


@needs_iverilog
@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=_ids(TASK_DIRS))
def test_inverted_reference_fails_its_testbench(task_dir: Path, tmp_path: Path):
    spec = _spec(task_dir)
    reference = (task_dir / "ref.sv").read_text(encoding="utf-8")
    mismatches, samples, out = simulate(
        task_dir, inverted_candidate(reference, spec["interface"]), tmp_path
    )
    assert mismatches > samples // 2
    reported = [line for line in out.splitlines() if "MISMATCH" in line]
    assert 1 <= len(reported) <= 5
    assert all(MISMATCH_LINE.match(line) for line in reported)
