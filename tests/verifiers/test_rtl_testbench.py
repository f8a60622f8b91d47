"""The testbench generator: determinism, refusals, and that its testbenches catch the
mistakes they exist to catch (async vs sync reset, wrong clock edge, X outputs, ignored
upper words of wide inputs)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from verifiers.rtl.hdl import REPORT_TOKEN, rename_reference
from verifiers.rtl.testbench import (
    HEADER,
    InterfaceError,
    generate_testbench,
    main,
    write_testbench,
)

SUMMARY = re.compile(re.escape(REPORT_TOKEN) + r" Mismatches: (\d+) in (\d+) samples")

needs_iverilog = pytest.mark.skipif(
    shutil.which("iverilog") is None, reason="install iverilog: apt-get install iverilog"
)


def _port(name: str, direction: str, width: int = 1) -> dict:
    return {"name": name, "direction": direction, "width": width}


COUNTER = {
    "top": "cnt",
    "kind": "sequential",
    "clock": "clk",
    "reset": "rst_n",
    "reset_active": "low",
    "reset_sync": False,
    "ports": [
        _port("clk", "input"),
        _port("rst_n", "input"),
        _port("en", "input"),
        _port("d", "input", 40),
        _port("q", "output", 4),
        _port("y", "output", 8),
    ],
}
COUNTER_REF = """
module cnt(input clk, input rst_n, input en, input [39:0] d, output reg [3:0] q,
           output [7:0] y);
  always @(posedge clk or negedge rst_n)
    if (!rst_n) q <= 4'd0;
    else if (en) q <= q + 4'd1;
  assign y = d[39:32] ^ {4'd0, q};
endmodule
"""
GATE = {
    "top": "gate",
    "kind": "combinational",
    "ports": [_port("a", "input"), _port("b", "input", 2), _port("y", "output")],
}
GATE_REF = "module gate(input a, input [1:0] b, output y); assign y = a & (b == 2'd3); endmodule\n"


def _run(tb: str, ref: str, top: str, candidate: str, tmp: Path, *plusargs: str):
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "tb.sv").write_text(tb)
    (tmp / "cand.sv").write_text(candidate)
    (tmp / "ref.sv").write_text(rename_reference(ref, top))
    subprocess.run(
        ["iverilog", "-g2012", "-o", "sim", "tb.sv", "cand.sv", "ref.sv"],
        cwd=tmp,
        check=True,
        capture_output=True,
        timeout=60,
    )
    out = subprocess.run(
        ["vvp", "-n", "sim", *plusargs], cwd=tmp, capture_output=True, text=True, timeout=60
    ).stdout
    (found,) = SUMMARY.findall(out)
    return int(found[0]), int(found[1]), out


def test_deterministic_and_seeded():
    assert generate_testbench(COUNTER) == generate_testbench(COUNTER)
    assert generate_testbench(COUNTER, seed=2) != generate_testbench(COUNTER)
    tb = generate_testbench(COUNTER)
    assert tb.startswith(HEADER)
    assert "cnt dut(" in tb and "RefModule ref_model(" in tb
    assert "{$random(tb_rng), $random(tb_rng)}" in tb  # 40 bits take two words


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "async"}, "kind"),
        ({"clock": "clock"}, "clock"),
        ({"reset": "nope"}, "reset"),
        ({"reset_active": "up"}, "reset_active"),
        ({"ports": [_port("clk", "input"), _port("tb_q", "output")]}, "tb_"),
        ({"ports": [_port("clk", "input"), _port("io", "inout")]}, "inout"),
        ({"ports": [_port("clk", "input"), _port("dut", "output")]}, "clash"),
        (
            {"ports": [_port("clk", "input"), _port("q", "output"), _port("q_ref", "input")]},
            "clash",
        ),
        ({"ports": [_port("clk", "input")]}, "no outputs"),
    ],
)
def test_bad_interfaces_are_refused(change: dict, message: str):
    interface = {**COUNTER, "reset": None, **change}
    with pytest.raises(InterfaceError, match=message):
        generate_testbench(interface)


def test_bad_stimulus_is_refused():
    with pytest.raises(InterfaceError, match="unknown option"):
        generate_testbench(COUNTER, wiggle=True)
    with pytest.raises(InterfaceError, match="not a data input"):
        generate_testbench(COUNTER, bias={"clk": 50})
    with pytest.raises(InterfaceError, match=r"0\.\.100"):
        generate_testbench(COUNTER, bias={"en": 150})
    with pytest.raises(InterfaceError, match="exceeds the width"):
        generate_testbench(GATE, values={"b": [4]})
    with pytest.raises(InterfaceError, match="phases"):
        generate_testbench(COUNTER, phases=[{"cycles": 0}])


@needs_iverilog
def test_reference_passes_and_report_format(tmp_path: Path):
    tb = generate_testbench(COUNTER, cycles=100, random_reset=True, reset_interval=10)
    mismatches, samples, _ = _run(tb, COUNTER_REF, "cnt", COUNTER_REF, tmp_path / "ok")
    assert (mismatches, samples) == (0, 100)

    wrong = COUNTER_REF.replace("q + 4'd1", "q + 4'd2")
    mismatches, _, out = _run(tb, COUNTER_REF, "cnt", wrong, tmp_path / "bad")
    assert mismatches > 0
    lines = [line for line in out.splitlines() if "MISMATCH" in line]
    assert len(lines) == 5
    assert re.fullmatch(
        rf"{REPORT_TOKEN} MISMATCH time=\d+ output=[qy] expected=[0-9a-f]+ got=[0-9a-f]+ "
        r"inputs: rst_n=[01] en=[01] d=[0-9a-f]{10}",
        lines[0],
    )
    assert f"{REPORT_TOKEN} Hint: Output 'q' has" in out
    assert out.rstrip().splitlines()[-1].startswith(f"{REPORT_TOKEN} Mismatches:")


@needs_iverilog
@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("posedge clk or negedge rst_n", "posedge clk"),  # sync reset where async is asked
        ("posedge clk or negedge rst_n", "negedge clk or negedge rst_n"),  # wrong edge
        ("if (!rst_n) q <= 4'd0;", "if (!rst_n) q <= 4'bx;"),  # X out of reset
        ("d[39:32]", "d[31:24]"),  # upper word of a wide input ignored
    ],
)
def test_typical_mistakes_are_caught(tmp_path: Path, old: str, new: str):
    tb = generate_testbench(COUNTER, cycles=100, random_reset=True, reset_interval=10)
    assert old in COUNTER_REF
    mismatches, _, _ = _run(tb, COUNTER_REF, "cnt", COUNTER_REF.replace(old, new), tmp_path)
    assert mismatches > 0


@needs_iverilog
def test_bias_steers_an_input(tmp_path: Path):
    # a candidate that ignores `en` is right exactly when en is always 1
    ignores_en = COUNTER_REF.replace("else if (en)", "else")
    always_on = generate_testbench(COUNTER, cycles=100, bias={"en": 100})
    assert _run(always_on, COUNTER_REF, "cnt", ignores_en, tmp_path / "on")[0] == 0
    # a phase's bias overrides the global one for its cycles only
    phased = generate_testbench(
        COUNTER,
        cycles=100,
        bias={"en": 100},
        phases=[{"cycles": 50}, {"cycles": 10, "bias": {"en": 0}}],
    )
    assert _run(phased, COUNTER_REF, "cnt", ignores_en, tmp_path / "phased")[0] > 0


@needs_iverilog
def test_combinational_is_exhaustive_when_small(tmp_path: Path):
    tb = generate_testbench(GATE, cycles=10)
    mismatches, samples, _ = _run(tb, GATE_REF, "gate", GATE_REF, tmp_path / "ok")
    assert (mismatches, samples) == (0, 8 + 10)
    # wrong on one input combination of eight: random sampling alone could miss it
    wrong = GATE_REF.replace("b == 2'd3", "b >= 2'd2")
    tb = generate_testbench(GATE, cycles=1)
    assert _run(tb, GATE_REF, "gate", wrong, tmp_path / "bad")[0] > 0


@needs_iverilog
def test_vcd_only_on_request(tmp_path: Path):
    tb = generate_testbench(GATE, cycles=2)
    _run(tb, GATE_REF, "gate", GATE_REF, tmp_path / "plain")
    assert not (tmp_path / "plain" / "wave.vcd").exists()
    _run(tb, GATE_REF, "gate", GATE_REF, tmp_path / "vcd", "+vcd")
    assert (tmp_path / "vcd" / "wave.vcd").stat().st_size > 0


TASK_TOML = """
name = "gate"
[interface]
top = "gate"
kind = "combinational"
[[interface.ports]]
name = "a"
direction = "input"
width = 1
[[interface.ports]]
name = "y"
direction = "output"
width = 1
[harness]
testbench = "tb.sv"
[harness.stimulus]
cycles = 7
"""


def test_write_testbench_and_check(tmp_path: Path):
    task = tmp_path / "gate"
    task.mkdir()
    (task / "task.toml").write_text(TASK_TOML)
    path = write_testbench(task)
    assert path == task / "tb.sv"
    assert "tb_cycle < 7;" in path.read_text()
    assert main([str(task), "--check"]) == 0
    (task / "task.toml").write_text(TASK_TOML.replace("cycles = 7", "cycles = 9"))
    assert main([str(task), "--check"]) == 1
    assert main([str(task)]) == 0
    assert main([str(task), "--check"]) == 0

    path.write_text("// hand-written\nmodule tb; endmodule\n")
    with pytest.raises(FileExistsError, match="hand-written"):
        write_testbench(task)
    assert main([str(task), "--check"]) == 0  # hand-written files are not stale
    write_testbench(task, force=True)
    assert path.read_text().startswith(HEADER)
