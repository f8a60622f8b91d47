"""The VerilogEval importer on three problems written in VerilogEval's own layout."""

from __future__ import annotations

import filecmp
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from verifiers.rtl.hdl import REPORT_TOKEN, rename_modules, rename_reference
from verifiers.rtl.importer import (
    ImportProblems,
    PortParseError,
    import_verilogeval,
    ports_from_header,
    prefix_results,
)
from verifiers.rtl.ports import read_ports

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "verilogeval"
PROBLEMS = ("Prob010_mux2w8", "Prob020_count10", "Prob030_dff8ar")
SUMMARY = re.compile(re.escape(REPORT_TOKEN) + r" Mismatches: (\d+) in (\d+) samples")

needs_iverilog = pytest.mark.skipif(
    shutil.which("iverilog") is None, reason="install iverilog: apt-get install iverilog"
)
needs_yosys = pytest.mark.skipif(
    shutil.which("yosys") is None, reason="install yosys: apt-get install yosys"
)


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    dest = tmp_path / "tasks"
    done = import_verilogeval(FIXTURES, dest)
    assert [p.name for p in done] == list(PROBLEMS)
    return dest


def _spec(task_dir: Path) -> dict:
    return tomllib.loads((task_dir / "task.toml").read_text(encoding="utf-8"))


def test_files_and_fields(imported: Path):
    for name in PROBLEMS:
        task_dir = imported / name
        assert sorted(p.name for p in task_dir.iterdir()) == ["ref.sv", "task.toml", "tb.sv"]
        spec = _spec(task_dir)
        assert spec["name"] == name
        assert (spec["family"], spec["level"], spec["split"], spec["source"]) == (
            "imported",
            2,
            "holdout",
            "verilogeval",
        )
        prompt = (FIXTURES / f"{name}_prompt.txt").read_text(encoding="utf-8")
        assert spec["requirement"] == prompt.rstrip() + "\n"
        assert spec["interface"]["top"] == "TopModule"
        assert spec["harness"]["ref_top"] == "RefModule"
        assert spec["harness"]["reference"] == "ref.sv"
        assert spec["harness"]["testbench"] == "tb.sv"
        assert spec["platform"]["simulator"] == "iverilog -g2012"
        ref = (FIXTURES / f"{name}_ref.sv").read_text(encoding="utf-8")
        assert (task_dir / "ref.sv").read_text(encoding="utf-8") == ref


def test_interfaces(imported: Path):
    mux = _spec(imported / "Prob010_mux2w8")["interface"]
    assert mux["kind"] == "combinational"
    assert "clock" not in mux and "reset" not in mux
    assert mux["ports"] == [
        {"name": "a", "direction": "input", "width": 8},
        {"name": "b", "direction": "input", "width": 8},
        {"name": "sel", "direction": "input", "width": 1},
        {"name": "out", "direction": "output", "width": 8},
    ]
    assert _spec(imported / "Prob010_mux2w8")["harness"]["equivalence"] == "comb"

    count = _spec(imported / "Prob020_count10")
    iface = count["interface"]
    assert (iface["kind"], iface["clock"], iface["reset"]) == ("sequential", "clk", "reset")
    assert (iface["reset_active"], iface["reset_sync"]) == ("high", True)
    assert count["harness"]["equivalence"] == "seq"

    dff = _spec(imported / "Prob030_dff8ar")["interface"]
    assert (dff["reset"], dff["reset_active"], dff["reset_sync"]) == ("areset", "high", False)
    assert [p["name"] for p in dff["ports"]] == ["clk", "d", "areset", "q"]


def test_result_lines_are_token_prefixed(imported: Path):
    for name in PROBLEMS:
        tb = (imported / name / "tb.sv").read_text(encoding="utf-8")
        assert f'$display("{REPORT_TOKEN} Mismatches: %1d in %1d samples"' in tb
        assert f'$display("{REPORT_TOKEN} Hint: Output' in tb
        assert '"Mismatches:' not in tb and '"Hint:' not in tb
        # nothing else changed
        original = (FIXTURES / f"{name}_test.sv").read_text(encoding="utf-8")
        assert tb.replace(f"{REPORT_TOKEN} ", "") == original


def test_prefixing_twice_changes_nothing():
    text = '$display("Mismatches: %d", n); $fdisplay(f, "Hint: Output x");'
    once = prefix_results(text)
    assert once == (
        f'$display("{REPORT_TOKEN} Mismatches: %d", n); '
        f'$fdisplay(f, "{REPORT_TOKEN} Hint: Output x");'
    )
    assert prefix_results(once) == once


def _one_quantum_apart(a: dict, b: dict) -> bool:
    """Two measured `ref_cost`s the same, or a gate's one power-of-two step apart (or one
    side under the floor, the other its first step): the CPU seconds of one tool run vary
    by up to 1.6x between runs on this shared 2-core VM (0.95-1.6 s measured for the
    same simulation, unloaded), so a cost near a step's edge lands on either side."""
    for k in a.keys() | b.keys():
        lo, hi = sorted((a.get(k, 0.0), b.get(k, 0.0)))
        if not (lo == hi or (lo > 0 and hi == 2 * lo) or (lo == 0 and hi <= 1.0)):
            return False
    return True


def test_import_is_idempotent(imported: Path, tmp_path: Path):
    again = tmp_path / "again"
    import_verilogeval(FIXTURES, again)
    import_verilogeval(FIXTURES, again)  # over itself
    for name in PROBLEMS:
        cmp = filecmp.dircmp(imported / name, again / name)
        assert cmp.left_only == cmp.right_only == []
        _, mismatch, errors = filecmp.cmpfiles(
            imported / name, again / name, ["ref.sv", "tb.sv"], shallow=False
        )
        assert mismatch == errors == []
        # task.toml the same, but for each import's own measure of the reference's cost
        one, two = _spec(imported / name), _spec(again / name)
        costs = [x["harness"].pop("ref_cost", {}) for x in (one, two)]
        assert one == two, name
        assert _one_quantum_apart(*costs), (name, costs)


def test_split_and_source_are_passed_through(tmp_path: Path):
    done = import_verilogeval(FIXTURES, tmp_path, split="train", source="verilogeval-v2")
    spec = _spec(done[0])
    assert (spec["split"], spec["source"]) == ("train", "verilogeval-v2")
    with pytest.raises(ValueError, match="split"):
        import_verilogeval(FIXTURES, tmp_path, split="test")


def test_incomplete_problem_is_skipped_and_named(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    for path in FIXTURES.iterdir():
        shutil.copy(path, src / path.name)
    (src / "Prob020_count10_ref.sv").unlink()
    (src / "Prob040_orphan_prompt.txt").write_text("only a prompt\n", encoding="utf-8")
    with pytest.raises(ImportProblems) as info:
        import_verilogeval(src, tmp_path / "out")
    errors = info.value.errors
    assert errors == [
        "Prob020_count10: missing Prob020_count10_ref.sv",
        "Prob040_orphan: missing Prob040_orphan_ref.sv, Prob040_orphan_test.sv",
    ]
    assert [p.name for p in info.value.imported] == ["Prob010_mux2w8", "Prob030_dff8ar"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "Prob010_mux2w8",
        "Prob030_dff8ar",
    ]


@needs_yosys
def test_header_parser_agrees_with_yosys():
    for name in PROBLEMS:
        ref = (FIXTURES / f"{name}_ref.sv").read_text(encoding="utf-8")
        assert ports_from_header(ref, "RefModule") == read_ports(ref, "RefModule")


def _simulate(task_dir: Path, candidate: str, work: Path) -> tuple[int, int]:
    work.mkdir()
    spec = _spec(task_dir)
    ref = (task_dir / "ref.sv").read_text(encoding="utf-8")
    (work / "tb.sv").write_text((task_dir / "tb.sv").read_text(encoding="utf-8"))
    (work / "candidate.sv").write_text(candidate)
    (work / "reference.sv").write_text(rename_reference(ref, spec["harness"]["ref_top"]))
    subprocess.run(
        ["iverilog", "-g2012", "-o", "sim.vvp", "tb.sv", "candidate.sv", "reference.sv"],
        cwd=work,
        check=True,
        capture_output=True,
        timeout=60,
    )
    out = subprocess.run(
        ["vvp", "-n", "sim.vvp"], cwd=work, capture_output=True, text=True, timeout=60
    ).stdout
    found = SUMMARY.findall(out)
    assert len(found) == 1, out[-2000:]
    return int(found[0][0]), int(found[0][1])


WRONG = {
    "Prob010_mux2w8": ("sel ? b : a", "sel ? a : b"),
    "Prob020_count10": ("q == 9", "q == 10"),
    "Prob030_dff8ar": ("posedge clk, posedge areset", "posedge clk"),
}


@needs_iverilog
@pytest.mark.parametrize("name", PROBLEMS)
def test_imported_testbench_judges(imported: Path, tmp_path: Path, name: str):
    task_dir = imported / name
    ref = (task_dir / "ref.sv").read_text(encoding="utf-8")
    right = rename_modules(ref, {"RefModule": "TopModule"})
    mismatches, samples = _simulate(task_dir, right, tmp_path / "right")
    assert mismatches == 0 and samples > 0

    old, new = WRONG[name]
    assert old in right
    mismatches, _ = _simulate(task_dir, right.replace(old, new), tmp_path / "wrong")
    assert mismatches > 0


def test_header_parser_edge_cases():
    header = """
    module RefModule (  // a comment, with a comma
      input clk,
      input wire signed [7:0] a, b,
      input [0:3] rev,
      output logic [15:0] y,
      output reg z
    );
    endmodule
    """
    assert ports_from_header(header, "RefModule") == [
        {"name": "clk", "direction": "input", "width": 1},
        {"name": "a", "direction": "input", "width": 8},
        {"name": "b", "direction": "input", "width": 8},
        {"name": "rev", "direction": "input", "width": 4},
        {"name": "y", "direction": "output", "width": 16},
        {"name": "z", "direction": "output", "width": 1},
    ]
    with pytest.raises(PortParseError, match="non-ANSI"):
        ports_from_header("module RefModule(a, y); input a; output y; endmodule", "RefModule")
    with pytest.raises(PortParseError, match="no ANSI header"):
        ports_from_header("module Other(input a); endmodule", "RefModule")


# --- import = load: every reference through its own testbench and the catalog's checks ------

# count10 in VerilogEval's FSM style: an `always_comb` whose case covers only the reachable
# states (Yosys 0.23 refuses it as "Latch inferred"; the harness runs it)
COUNT10_ALWAYS_COMB = """module RefModule (
  input clk,
  input reset,
  output reg [3:0] q
);
  reg [3:0] next;
  always_comb begin
    case (q)
      4'd0: next = 4'd1; 4'd1: next = 4'd2; 4'd2: next = 4'd3; 4'd3: next = 4'd4;
      4'd4: next = 4'd5; 4'd5: next = 4'd6; 4'd6: next = 4'd7; 4'd7: next = 4'd8;
      4'd8: next = 4'd9; 4'd9: next = 4'd0;
    endcase
  end
  always @(posedge clk)
    if (reset) q <= 0;
    else q <= next;
endmodule
"""


def _break_testbench(src: Path) -> None:
    tb = src / "Prob010_mux2w8_test.sv"
    text = tb.read_text(encoding="utf-8")
    tb.write_text(text.replace("RefModule good1 (", "RefModule good1 (\n\t\t.y2(sel),"), "utf-8")


def _copy_fixtures(dest: Path) -> Path:
    dest.mkdir()
    for path in FIXTURES.iterdir():
        shutil.copy(path, dest / path.name)
    return dest


@needs_iverilog
@needs_yosys
def test_a_reference_that_fails_its_own_testbench_is_skipped(tmp_path: Path):
    """VerilogEval Prob099's shape: the testbench uses a port the reference does not have.
    Imported, every candidate would be blamed with `port_mismatch`."""
    from verifiers.catalog import load_catalog

    src = _copy_fixtures(tmp_path / "src")
    _break_testbench(src)
    with pytest.raises(ImportProblems) as info:
        import_verilogeval(src, tmp_path / "out" / "rtl")
    (err,) = info.value.errors
    assert err.startswith("Prob010_mux2w8: its own reference fails its own harness")
    assert "port_mismatch" in err
    assert not (tmp_path / "out" / "rtl" / "Prob010_mux2w8").exists()
    tasks, refused = load_catalog(tmp_path / "out", ["rtl"])
    assert sorted(t.name for t in tasks) == ["Prob020_count10", "Prob030_dff8ar"]
    assert refused == []


@needs_iverilog
@needs_yosys
def test_an_unchecked_import_writes_every_problem(tmp_path: Path):
    src = _copy_fixtures(tmp_path / "src")
    _break_testbench(src)
    done = import_verilogeval(src, tmp_path / "out" / "rtl", check=False)
    assert len(done) == 3


@needs_iverilog
@needs_yosys
def test_an_always_comb_latch_reference_imports_and_loads(tmp_path: Path):
    from verifiers.catalog import load_catalog

    src = _copy_fixtures(tmp_path / "src")
    (src / "Prob020_count10_ref.sv").write_text(COUNT10_ALWAYS_COMB, encoding="utf-8")
    done = import_verilogeval(src, tmp_path / "out" / "rtl")
    tasks, refused = load_catalog(tmp_path / "out", ["rtl"])
    assert refused == []
    assert sorted(t.name for t in tasks) == sorted(p.name for p in done) == list(PROBLEMS)


def test_costs_are_quantized_so_a_reimport_writes_the_same_task():
    from verifiers.rtl.importer import quantize_cost

    assert quantize_cost(0.05) == quantize_cost(0.49) == 0.0  # below the floor: not stored
    assert quantize_cost(0.6) == quantize_cost(0.9) == 1.0
    assert quantize_cost(5.7) == quantize_cost(7.9) == 8.0


@needs_iverilog
@needs_yosys
def test_a_loaded_machine_measures_the_same_cost(tmp_path: Path):
    """The reference's cost per gate is its tool runs' CPU, not their wall time: with seven
    busy loops on the one core it runs on, its simulation takes ~8x the wall and the task
    records the same cost (a re-import under load must write the same task.toml)."""
    import os
    import sys

    from verifiers.rtl.importer import check_reference, quantize_cost

    src = _copy_fixtures(tmp_path / "src")
    tb = src / "Prob020_count10_test.sv"  # 160k cycles, 0.7-1.6 s of CPU: 1.0 or 2.0
    text = tb.read_text().replace("repeat(400) @", "repeat(160000) @")
    tb.write_text(text.replace("#1000000\n", "#1000000000\n"))  # its 100k-cycle timeout
    task_dir = import_verilogeval(src, tmp_path / "rtl", check=False)[1]
    assert task_dir.name == "Prob020_count10"
    quiet, _ = check_reference(task_dir)
    assert "simulate" in quiet, quiet
    mine = os.sched_getaffinity(0)
    core = {min(mine)}
    os.sched_setaffinity(0, core)  # this thread, and the tools it starts
    # started after the pinning: on the same core; each in a session (an autogroup) of its
    # own, as the sandbox's tools are, so that the scheduler shares the core eight ways
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(7)
    ]
    try:
        cost, sim_wall = check_reference(task_dir)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        os.sched_setaffinity(0, mine)
    # the same as unloaded (`quiet`): within one power-of-two step, this VM's own
    # run-to-run spread of a tool's CPU seconds (`_one_quantum_apart`); a cost read from
    # the wall would be two steps or more above it (the load stretches the wall ~8x)
    assert _one_quantum_apart(cost, quiet), (cost, quiet)
    assert quantize_cost(sim_wall) >= 4 * quiet["simulate"], (
        f"the load did not slow it down ({sim_wall:.2f} s)"
    )


def test_budgets_follow_the_references_cost():
    import dataclasses

    from verifiers.contract import Task
    from verifiers.rtl.verifier import COST_MULT, DEFAULT_SIM_CPU_S, sim_budget

    base = Task(
        name="t",
        domain="rtl",
        family="f",
        level=1,
        requirement="r",
        interface={"top": "t", "kind": "combinational", "ports": []},
        platform={},
        reference="",
        harness={"testbench": "", "sim_timeout_s": 20},
        source="test",
    )
    assert sim_budget(base) == (20.0, DEFAULT_SIM_CPU_S)
    slow = dataclasses.replace(base, harness={**base.harness, "ref_cost": {"simulate": 8.0}})
    wall, cpu = sim_budget(slow)
    assert cpu == 8 * COST_MULT and wall >= cpu  # the wall leaves room for the CPU budget
    fixed = dataclasses.replace(slow, harness={**slow.harness, "sim_cpu_s": 3})
    assert sim_budget(fixed)[1] == 3  # an explicit budget wins


@needs_iverilog
@needs_yosys
def test_a_slow_reference_is_pinned_to_the_simulator_it_passes_in(tmp_path: Path):
    """With "auto", a slow reference's candidates would be simulated by Verilator: the
    importer runs the reference there too and pins the simulator it passes in."""
    from verifiers.rtl import verilator
    from verifiers.rtl.importer import pick_simulator

    done = import_verilogeval(FIXTURES, tmp_path / "rtl", check=False)
    task_dir = done[0]
    assert pick_simulator(task_dir, {"simulate": 0.5}) is None  # fast: stays on auto
    if verilator.missing():
        assert pick_simulator(task_dir, {"simulate": 8.0}) == "iverilog"
    else:
        assert pick_simulator(task_dir, {"simulate": 8.0}) == "verilator"
