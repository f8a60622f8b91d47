"""The RTL verifier against the real tools (iverilog, vvp, verilator, yosys, yosys-abc) in
the real sandbox. Each gate: a correct design passes, a wrong one fails with the right
status and taxonomy code. The testbenches are written here, small, in the protocol of
verifiers/rtl/hdl.py."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from verifiers import sandbox as sandbox_mod
from verifiers.base import Tool
from verifiers.contract import Candidate, Limits, Status, Task, Verdict
from verifiers.rtl import errors, waves
from verifiers.rtl.hdl import REPORT_TOKEN
from verifiers.rtl.verifier import RtlVerifier

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("iverilog", "vvp", "verilator", "yosys", "yosys-abc", "bwrap")
pytestmark = pytest.mark.skipif(
    any(subprocess.run(["which", t], capture_output=True).returncode for t in TOOLS),
    reason="needs iverilog, verilator, yosys, bubblewrap: apt-get install -y iverilog verilator "
    "yosys bubblewrap",
)

T = REPORT_TOKEN


# --- tiny tasks -------------------------------------------------------------------------------


def comb_tb(
    top: str, ins: list[tuple[str, int]], outs: list[tuple[str, int]], samples: int, seed: int = 7
) -> str:
    """Random stimulus, every output compared, the report protocol; +vcd dumps a waveform."""
    decl = [f"  reg [{w - 1}:0] {n};" for n, w in ins]
    decl += [f"  wire [{w - 1}:0] {n}_dut, {n}_ref;" for n, w in outs]
    conn = [f".{n}({n})" for n, _ in ins]
    dut = ", ".join(conn + [f".{n}({n}_dut)" for n, _ in outs])
    ref = ", ".join(conn + [f".{n}({n}_ref)" for n, _ in outs])
    fmt = " ".join(f"{n}=%h" for n, _ in ins)
    args = "".join(f", {n}" for n, _ in ins)
    checks = "".join(
        f"      if ({n}_dut !== {n}_ref) begin bad = 1; if (shown < 5) begin shown = shown + 1;"
        f' $display("{T} MISMATCH time=%0t output={n} expected=%h got=%h inputs: {fmt}",'
        f" $time, {n}_ref, {n}_dut{args}); end end\n"
        for n, _ in outs
    )
    drive = "".join(f"      {n} = $random(seed);\n" for n, _ in ins)
    return f"""module tb;
{chr(10).join(decl)}
  integer seed, i, errs, shown; reg bad;
  {top} dut({dut});
  RefModule ref_model({ref});
  initial begin
    if ($test$plusargs("vcd")) begin $dumpfile("wave.vcd"); $dumpvars(0, tb); end
    seed = {seed}; errs = 0; shown = 0;
    for (i = 0; i < {samples}; i = i + 1) begin
{drive}      #1 bad = 0;
{checks}      if (bad) errs = errs + 1;
      #1;
    end
    $display("{T} Mismatches: %0d in %0d samples", errs, {samples});
    $finish;
  end
endmodule
"""


def seq_tb(top: str, cycles: int, seed: int = 3) -> str:
    """Clock, 2 reset cycles, random enable; q compared each cycle before the edge."""
    return f"""module tb;
  reg clk, rst, en; wire [7:0] q_dut, q_ref; integer seed, i, errs, shown;
  {top} dut(.clk(clk), .rst(rst), .en(en), .q(q_dut));
  RefModule ref_model(.clk(clk), .rst(rst), .en(en), .q(q_ref));
  initial begin
    seed = {seed}; errs = 0; shown = 0; clk = 0; rst = 1; en = 0;
    for (i = 0; i < {cycles}; i = i + 1) begin
      rst = (i < 2); en = $random(seed);
      #4 if (i >= 2 && q_dut !== q_ref) begin
        errs = errs + 1;
        if (shown < 5) begin shown = shown + 1;
          $display("{T} MISMATCH time=%0t output=q expected=%h got=%h inputs: en=%h", $time,
                   q_ref, q_dut, en); end
      end
      #1 clk = 1; #5 clk = 0;
    end
    $display("{T} Mismatches: %0d in %0d samples", errs, {cycles} - 2);
    $finish;
  end
endmodule
"""


def make_task(
    name: str,
    kind: str,
    ports: list[tuple[str, str, int]],
    reference: str,
    tb: str,
    equivalence: str,
    sim_timeout_s: float = 3.0,
    **iface,
) -> Task:
    interface = {
        "top": name,
        "kind": kind,
        "ports": [{"name": n, "direction": d, "width": w} for n, d, w in ports],
        **iface,
    }
    return Task(
        name=name,
        domain="rtl",
        family="test",
        level=1,
        requirement="test task",
        interface=interface,
        platform={},
        reference=reference,
        harness={"testbench": tb, "equivalence": equivalence, "sim_timeout_s": sim_timeout_s},
        source="test",
    )


ADD_REF = """module add4(input [3:0] a, input [3:0] b, output [4:0] y);
  assign y = a + b;
endmodule
"""
ADD_PORTS = [("a", "input", 4), ("b", "input", 4), ("y", "output", 5)]
ADD = make_task(
    "add4",
    "combinational",
    ADD_PORTS,
    ADD_REF,
    comb_tb("add4", [("a", 4), ("b", 4)], [("y", 5)], 40),
    "comb",
)
# the same with a short simulation CPU budget, for the candidates that hang the simulator:
# the budget ends a hang in ~1 s of CPU, and the wall limit (10 s) leaves room for a loaded
# machine (with a 1.5 s wall, three test workers on two cores made it `machine_slow`)
ADD_HANG = make_task(
    "add4", "combinational", ADD_PORTS, ADD_REF, ADD.harness["testbench"], "comb", 10.0
)
ADD_HANG = dataclasses.replace(ADD_HANG, harness={**ADD_HANG.harness, "sim_cpu_s": 1}, task_id="")


def add(body: str, header: str = "input [3:0] a, input [3:0] b, output [4:0] y") -> str:
    return f"module add4({header});\n{body}\nendmodule\n"


# The testbench's 6 samples never hit a=13, b=7: only the formal check sees this bug.
ALU_REF = """module alu(input [3:0] a, input [3:0] b, input [1:0] op, output reg [4:0] y);
  always @* case (op)
    2'd0: y = a + b;
    2'd1: y = a - b;
    2'd2: y = a & b;
    default: y = a | b;
  endcase
endmodule
"""
ALU = make_task(
    "alu",
    "combinational",
    [("a", "input", 4), ("b", "input", 4), ("op", "input", 2), ("y", "output", 5)],
    ALU_REF,
    comb_tb("alu", [("a", 4), ("b", 4), ("op", 2)], [("y", 5)], 6),
    "comb",
)

CNT_REF = """module cnt(input clk, input rst, input en, output reg [7:0] q);
  always @(posedge clk) if (rst) q <= 8'd0; else if (en) q <= q + 8'd1;
endmodule
"""
CNT_PORTS = [("clk", "input", 1), ("rst", "input", 1), ("en", "input", 1), ("q", "output", 8)]
CNT = make_task(
    "cnt",
    "sequential",
    CNT_PORTS,
    CNT_REF,
    seq_tb("cnt", 60),
    "seq",
    clock="clk",
    reset="rst",
    reset_active="high",
    reset_sync=True,
)

# A Gray-coded state register decoded back to binary: another encoding, same behaviour.
CNT_GRAY = """module cnt(input clk, input rst, input en, output [7:0] q);
  reg [7:0] g;
  wire [7:0] b;
  genvar k;
  assign b[7] = g[7];
  generate for (k = 6; k >= 0; k = k - 1) begin : dec
    assign b[k] = b[k + 1] ^ g[k];
  end endgenerate
  wire [7:0] n = b + 8'd1;
  always @(posedge clk) if (rst) g <= 8'd0; else if (en) g <= n ^ (n >> 1);
  assign q = b;
endmodule
"""
# Wrong only when the count reaches 200: 60 simulated cycles never get there.
CNT_DEEP_BUG = CNT_REF.replace("q <= q + 8'd1", "q <= (q == 8'd200) ? 8'd7 : q + 8'd1")


@pytest.fixture(scope="module")
def rtl() -> RtlVerifier:
    return RtlVerifier()


def check(v: Verdict, status: Status, code: str = "") -> Verdict:
    assert v.status is status, (v.status, v.code, v.checks, v.feedback)
    assert v.code == code, (v.code, v.feedback)
    return v


def gates_run(v: Verdict) -> list[str]:
    return [c.name for c in v.checks]


# --- pass ---------------------------------------------------------------------------------------


def test_correct_combinational_design_passes_every_gate(rtl):
    v = check(rtl.verify(ADD, ADD_REF), Status.PASS)
    assert gates_run(v) == [
        "format",
        "static",
        "compile",
        "lint",
        "simulate",
        "synthesize",
        "equivalence",
    ]
    assert all(c.ok for c in v.checks)
    m = v.metrics
    assert m["sim_mismatches"] == 0 and m["sim_samples"] == 40
    assert m["cells"] > 0 and m["area"] > 0
    assert m["equivalence"] == "proven"
    assert set(v.toolchain) == {"iverilog", "vvp", "verilator", "yosys", "yosys-abc"}
    Verdict.from_dict(json.loads(json.dumps(v.to_dict())))  # JSON-safe


def test_lint_warnings_are_recorded_on_a_passing_design(rtl):
    code = add("  wire [7:0] spare = {a, b};\n  assign y = a + b;")
    v = check(rtl.verify(ADD, code), Status.PASS)
    assert v.metrics["lint_warnings"] >= 1
    assert any(c.startswith("UNUSED") for c in v.metrics["lint_codes"])
    assert "Lint" in v.feedback


def test_sim_only_mode_and_gate_prerequisites(rtl):
    v = check(rtl.verify(ADD, ADD_REF, Limits(gates=("compile", "simulate"))), Status.PASS)
    assert gates_run(v) == ["format", "static", "compile", "simulate"]
    v = check(rtl.verify(ADD, ADD_REF, Limits(gates=("simulate",))), Status.PASS)
    assert gates_run(v) == ["format", "static", "compile", "simulate"]  # compile is needed


# --- format -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "expect"),
    [
        ("", "empty_code"),
        ("   \n\t", "empty_code"),
        (b"\xff\xfe module", "not_text"),
        ("module add4; endmodule\n" + "// pad\n" * 60000, "code_too_large"),
        (ADD_REF.replace("add4", "adder"), "missing_entry_point"),
        ("// module add4(input a);\nmodule other; endmodule", "missing_entry_point"),
    ],
)
def test_unusable_candidates_are_format_errors(rtl, code, expect):
    check(rtl.verify(ADD, code), Status.FORMAT_ERROR, expect)


# --- compile ------------------------------------------------------------------------------------


@pytest.mark.parametrize("literal", ["4'b102", "8'hZG", "'d1A"])
def test_malformed_literal(rtl, literal):
    v = check(
        rtl.verify(ADD, add(f"  assign y = a + b + {literal};")),
        Status.COMPILE_ERROR,
        "malformed_literal",
    )
    assert v.category == "syntax"
    assert literal in v.feedback and "cand.sv:2" in v.feedback
    assert any(a.kind == "log" for a in v.artifacts)


@pytest.mark.parametrize(
    ("header", "body", "code"),
    [
        ("input [3:0] a, output [4:0] y", "  assign y = a;", "port_mismatch"),  # missing b
        (
            "input [3:0] a, input [3:0] b, input c, output [4:0] y",
            "  assign y = a + b;",
            "port_mismatch",
        ),  # extra port: iverilog only warns
        (
            "input [3:0] a, input [3:0] bb, output [4:0] y",
            "  assign y = a + bb;",
            "port_mismatch",
        ),  # misnamed
        ("input [3:0] a, input [3:0] b, output [3:0] y", "  assign y = a + b;", "width_mismatch"),
        (
            "input [3:0] a, input [3:0] b, output [4:0] y",
            "  assign y = a + c;",
            "undeclared_identifier",
        ),
        (
            "input [3:0] a, input [3:0] b, output reg [4:0] y",
            "  always @* begin\n    y = a + b;\n",
            "syntax_error",
        ),  # missing `end`
        (
            "input [3:0] a, input [3:0] b, output [4:0] y",
            "  adder u(.a(a), .b(b), .y(y));",
            "unknown_module",
        ),
    ],
)
def test_compile_errors_are_classified(rtl, header, body, code):
    v = check(rtl.verify(ADD, add(body, header)), Status.COMPILE_ERROR, code)
    assert v.feedback
    assert "tb.sv:" not in v.feedback or code.startswith(("port", "width"))


def test_port_mismatch_feedback_names_the_interface(rtl):
    v = rtl.verify(
        ADD, add("  assign y = a + b;", "input [3:0] a, input [3:0] b, input c, output [4:0] y")
    )
    assert "c" in v.feedback and "interface" in v.feedback.lower()


# --- simulate -----------------------------------------------------------------------------------


def test_sim_mismatch_shows_first_mismatch_and_keeps_a_waveform(rtl):
    v = check(
        rtl.verify(ADD, add("  assign y = a + b + (a == 4'd3);")),
        Status.WRONG_ANSWER,
        "sim_mismatch",
    )
    assert "time" in v.feedback and "expected" in v.feedback and "a=3" in v.feedback
    assert v.metrics["sim_mismatches"] > 0
    vcd = [a for a in v.artifacts if a.kind == "vcd"]
    assert vcd and vcd[0].data.startswith(b"$date") and b"$enddefinitions" in vcd[0].data


def test_combinational_loop_times_out(rtl):
    # a ring of two always blocks: `===` turns X into a value, so once a^b is odd it never
    # settles (time stops advancing)
    code = add(
        "  reg p, q;\n  always @* p = (a[0] ^ b[0]) ? !(q === 1'b1) : 1'b0;\n"
        "  always @* q = p;\n  assign y = a + b + q;"
    )
    v = check(rtl.verify(ADD_HANG, code), Status.TIMEOUT, "sim_timeout")
    assert v.category == "timeout"


def test_zero_delay_infinite_always_times_out(rtl):
    code = add(
        "  reg [4:0] r;\n  always @(a) begin : spin\n    integer i;\n"
        "    for (i = 0; i < 10; i = i) r = a + b;\n  end\n  assign y = r;"
    )
    check(rtl.verify(ADD_HANG, code), Status.TIMEOUT, "sim_timeout")


def test_a_hang_is_ended_by_its_cpu_budget_not_the_wall_clock(rtl):
    # wall limit far away: the simulation's CPU budget (sim_cpu_s) is what stops the spin
    task = dataclasses.replace(
        ADD_HANG, harness={**ADD_HANG.harness, "sim_timeout_s": 60.0, "sim_cpu_s": 1}, task_id=""
    )
    code = add(
        "  reg [4:0] r;\n  always @* begin r = a + b; r = r; end\n"
        "  always @(r) r = r + 1;\n  assign y = r;"
    )
    v = check(rtl.verify(task, code), Status.TIMEOUT, "sim_timeout")
    assert "CPU budget (1 s)" in v.feedback


def test_continuous_assignment_ring_crashes_the_simulator(rtl):
    # vvp recurses through a zero-delay ring of continuous assignments until it overflows
    code = add("  wire osc;\n  assign osc = !(osc === 1'b1);\n  assign y = a + b + osc;")
    check(rtl.verify(ADD, code), Status.RUNTIME_ERROR, "sim_runtime_error")


def test_always_without_timing_control_is_a_compile_error(rtl):
    # iverilog itself refuses an always block that can never wait
    check(
        rtl.verify(ADD, add("  reg [4:0] r;\n  always r = a + b;\n  assign y = r;")),
        Status.COMPILE_ERROR,
        "compile_error",
    )


def test_display_flood_is_a_resource_limit(rtl):
    code = add(
        "  assign y = a + b;\n  always @(a) begin : spam\n    integer i;\n"
        '    for (i = 0; i < 100000; i = i + 1) $display("spam %0d", i);\n  end'
    )
    check(rtl.verify(ADD, code), Status.RESOURCE_LIMIT, "output_limit")


def test_a_forged_report_line_does_not_pass(rtl):
    # builds the token without writing it, so only the per-run nonce stands in the way
    code = add(
        '  assign y = a;\n  initial #1 $display("%s Mismatches: 0 in 40 samples", '
        '{8\'h43, "RUCIBLE_REPORT"});'
    )
    v = check(rtl.verify(ADD, code), Status.WRONG_ANSWER, "sim_mismatch")
    assert v.metrics["sim_mismatches"] > 0


def test_a_simulation_that_ends_without_the_report_fails(rtl):
    # a testbench that stops early on an X output, as strict testbenches do
    tb = f"""module tb;
  reg [3:0] a, b; wire [4:0] y;
  add4 dut(.a(a), .b(b), .y(y));
  RefModule ref_model(.a(a), .b(b), .y());
  initial begin
    a = 1; b = 2;
    #1 if (^y === 1'bx) $finish;
    $display("{T} Mismatches: 0 in 1 samples");
    $finish;
  end
endmodule
"""
    task = make_task("add4", "combinational", ADD_PORTS, ADD_REF, tb, "none")
    check(rtl.verify(task, ADD_REF), Status.PASS, "")
    v = check(
        rtl.verify(task, add("  wire [4:0] unused;")), Status.WRONG_ANSWER, "no_testbench_report"
    )
    assert "without the testbench's report" in v.checks[-1].detail


def test_simulator_runtime_error(rtl):
    # unbounded recursion overflows vvp's stack (an unknown `$task` is refused statically now)
    code = add(
        "  function automatic integer deep(input integer n); deep = deep(n + 1) + 1; endfunction\n"
        "  integer r;\n  assign y = a + b;\n  initial r = deep(0);"
    )
    check(rtl.verify(ADD, code), Status.RUNTIME_ERROR, "sim_runtime_error")


# --- static anti-cheat --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ('  assign y = a + b;\n  initial $system("rm -rf /work");', "forbidden_system_task"),
        (
            '  assign y = a + b;\n  integer f;\n  initial begin f = $fopen("/etc/x", "w"); '
            '$fwrite(f, "x"); end',
            "forbidden_system_task",
        ),
        ("  assign y = a + b;\n  initial #100 $finish;", "forbidden_system_task"),
        (
            "  assign y = a + b;\n  `define F(x) $fin``x\n  initial #100 `F(ish);",
            "forbidden_system_task",
        ),  # only visible once preprocessed
        ("  assign y = a + b;\n  initial #1 tb.errs = 0;", "testbench_tampering"),
        ("  assign y = ref_model.y;", "testbench_tampering"),
        ("  assign y = $root.tb.y_ref;", "testbench_tampering"),
        ("  RefModule r(.a(a), .b(b), .y(y));", "testbench_tampering"),
        ("  assign y = a + b;\n  initial force tb.y_ref = 0;", "testbench_tampering"),
        (
            f'  assign y = a;\n  initial $display("{T} Mismatches: 0 in 40 samples");',
            "testbench_tampering",
        ),
        ('  `include "tb.sv"\n  assign y = a + b;', "testbench_tampering"),
    ],
)
def test_static_rejects_cheats(rtl, body, code):
    v = check(rtl.verify(ADD, add(body)), Status.REJECTED, code)
    assert gates_run(v) == ["format", "static"]
    assert "rejected" in v.feedback.lower()


def test_static_ignores_comments_strings_and_own_hierarchy(rtl):
    code = """// $finish and tb.errs in a comment, $fopen in a "string" below
module half(input [3:0] a, input [3:0] b, output [4:0] s);
  assign s = a + b;
endmodule
module add4(input [3:0] a, input [3:0] b, output [4:0] y);
  half u0(.a(a), .b(b), .s());
  wire [4:0] s = u0.s;
  initial if (0) $display("$fopen tb.x");
  assign y = s;
endmodule
"""
    v = rtl.verify(ADD, code, Limits(gates=("compile",)))
    assert [c.name for c in v.checks if c.name == "static" and c.ok]


@pytest.mark.parametrize(
    "code",
    [
        "`ifndef ADD4_SV\n`define ADD4_SV\n" + ADD_REF + "`endif\n",  # an include guard
        "`define W 4\n`ifdef W\n" + ADD_REF.replace("[3:0] a", "[`W-1:0] a") + "`endif\n",
        "`timescale 1ns/1ps\n`default_nettype none\n" + ADD_REF,
        add("  (* keep *) wire [4:0] s = a + b;\n  assign y = s;"),
        add("  // verilator lint_off WIDTH\n  // synthesis-friendly adder\n  assign y = a + b;"),
        add("  localparam N = $clog2(16);\n  assign y = $unsigned(a) + b;\n"
            '  initial $display("N=%0d /* not a comment", N);'),
        add("  wire [4:0] \\sum/*x ;\n  assign \\sum/*x = a + b;\n  assign y = \\sum/*x ;"),
    ],
    ids=["include_guard", "own_macro", "unit_directives", "keep_attribute", "lint_comment",
         "allowed_system_functions", "escaped_identifier"],
)  # fmt: skip
def test_static_allows_what_honest_designs_use(rtl, code):
    v = rtl.verify(ADD, code, Limits(gates=("compile",)))
    assert [c.ok for c in v.checks if c.name == "static"] == [True], v.feedback


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        ("`ifdef YOSYS\n" + ADD_REF + "`else\n" + add("  assign y = a;") + "`endif\n",
         "tool_conditional"),
        ("`undef SYNTHESIS\n`ifdef SYNTHESIS\n`endif\n" + ADD_REF, "tool_conditional"),
        (add("  (* full_case *) wire [4:0] s = a + b;\n  assign y = s;"), "attribute_not_allowed"),
        (add("/* synthesis translate_off */\n  assign y = a + b;"), "synthesis_pragma"),
        (add("  assign y = a + b + `UNDEFINED_BY_ME;"), "directive_not_allowed"),
        (add("  assign y = a + b;\n  initial $strobe(\"%0t\", $time);"), "system_task_not_allowed"),
    ],
    ids=["ifdef_yosys", "tool_macro_even_after_undef", "full_case_attribute",
         "translate_off_block_comment", "foreign_macro", "simulation_time"],
)  # fmt: skip
def test_static_refuses_what_makes_simulation_and_synthesis_differ(rtl, code, rule):
    v = rtl.verify(ADD, code)
    assert v.status is Status.REJECTED and gates_run(v) == ["format", "static"], v.feedback
    assert rule in v.feedback


def test_candidate_module_named_like_the_testbench_is_rejected(rtl):
    check(
        rtl.verify(ADD, ADD_REF + "module tb; endmodule\n"), Status.REJECTED, "testbench_tampering"
    )


# --- synthesize ---------------------------------------------------------------------------------


def test_initial_only_logic_is_unsynthesizable(rtl):
    # simulates correctly (an endless initial loop waiting on the inputs), builds no hardware
    code = add(
        "  initial forever @(a or b) y = a + b;", "input [3:0] a, input [3:0] b, output reg [4:0] y"
    )
    v = check(rtl.verify(ADD, code), Status.COMPILE_ERROR, "unsynthesizable")
    assert [c.name for c in v.checks if c.ok][-1] == "simulate"
    assert v.metrics["lint_error"] is True  # verilator refuses it too, which never fails lint


def test_output_driven_only_by_an_initial_block_is_unsynthesizable(rtl):
    ref = "module one(output y);\n  assign y = 1'b1;\nendmodule\n"
    task = make_task(
        "one", "combinational", [("y", "output", 1)], ref, comb_tb("one", [], [("y", 1)], 3), "comb"
    )
    assert rtl.verify(task, ref).status is Status.PASS
    v = check(
        rtl.verify(task, "module one(output reg y);\n  initial y = 1'b1;\nendmodule\n"),
        Status.COMPILE_ERROR,
        "unsynthesizable",
    )
    assert "initial" in v.feedback
    alone = Limits(gates=("synthesize",))  # without compile's netlist: elaborated alone
    check(
        rtl.verify(task, "module one(output reg y);\n  initial y = 1'b1;\nendmodule\n", alone),
        Status.COMPILE_ERROR,
        "unsynthesizable",
    )


def test_delay_timed_always_is_unsynthesizable(rtl):
    code = add("  always #1 y = a + b;", "input [3:0] a, input [3:0] b, output reg [4:0] y")
    check(
        rtl.verify(ADD, code, Limits(gates=("synthesize",))),
        Status.COMPILE_ERROR,
        "unsynthesizable",
    )


def test_undriven_output_is_unsynthesizable(rtl):
    code = add("  wire [4:0] t;\n  assign y = t;")
    check(
        rtl.verify(ADD, code, Limits(gates=("synthesize",))),
        Status.COMPILE_ERROR,
        "unsynthesizable",
    )


def test_latches_and_flops_map_to_the_cell_library(rtl):
    code = add(
        "  reg [4:0] l;\n  always @* if (a[0]) l = a + b;\n  assign y = l;",
    )
    v = rtl.verify(ADD, code, Limits(gates=("synthesize",)))
    assert v.status is Status.PASS and v.metrics["latches"] == 5
    v = check(rtl.verify(CNT, CNT_REF, Limits(gates=("synthesize",))), Status.PASS)
    assert v.metrics["flops"] == 8 and v.metrics["area"] > 8 * 4.5


# --- equivalence --------------------------------------------------------------------------------


def test_comb_equivalence_catches_a_corner_the_testbench_misses(rtl):
    bug = ALU_REF.replace(
        "default: y = a | b;", "default: y = (a == 4'd13 && b == 4'd7) ? 5'd0 : a | b;"
    )
    v = check(rtl.verify(ALU, bug), Status.WRONG_ANSWER, "equivalence_counterexample")
    assert [c.name for c in v.checks if c.ok][-1] == "synthesize"  # the testbench passed it
    assert "a=d" in v.feedback and "b=7" in v.feedback and "op=3" in v.feedback
    assert v.metrics["equivalence"] == "counterexample"


def test_seq_equivalence_proves_a_different_state_encoding(rtl):
    v = check(rtl.verify(CNT, CNT_GRAY), Status.PASS)
    assert v.metrics["equivalence"] == "proven"
    assert next(c for c in v.checks if c.name == "equivalence").seconds < 5


def test_seq_equivalence_finds_a_deep_bug_with_pdr(rtl):
    v = check(rtl.verify(CNT, CNT_DEEP_BUG), Status.WRONG_ANSWER, "equivalence_counterexample")
    assert v.metrics["sim_mismatches"] == 0  # 60 cycles never reach 200
    assert v.metrics["equivalence_depth"] >= 200
    assert "expected" in v.feedback and "cycle" in v.feedback
    eq = next(c for c in v.checks if c.name == "equivalence")
    assert eq.seconds < 10


def _catalog(name: str) -> Task:
    from verifiers.catalog import load_task

    return load_task(ROOT / "tasks" / "rtl" / name, "rtl")


def test_a_register_without_reset_that_no_output_shows_before_it_is_loaded_passes(rtl):
    """uart_tx8 with its shift register left unreset: tx shows it only while busy, and
    busy starts only by loading it. Free power-up values of the candidate change nothing:
    proven, as before #29."""
    task = _catalog("uart_tx8")
    cand = task.reference.replace("            sr   <= 10'h3FF;\n", "")
    assert cand != task.reference
    v = check(rtl.verify(task, cand), Status.PASS)
    assert v.metrics["equivalence"] == "proven"


def test_power_up_freedom_where_the_reference_is_x_too_is_no_finding(rtl):
    """sp_ram16x8's reference has no reset: a word read before it is written is X, a
    don't-care. A candidate storing its words inverted powers up to other values there;
    ABC finds that difference with a free power-up and with an all-zero one, the replay
    shows the reference X, so it is undecided, never wrong. The reference itself is
    proven against itself (yosys merges the identical flops, one power-up for both)."""
    task = _catalog("sp_ram16x8")
    inverted = """module sp_ram16x8(input wire clk, input wire we, input wire [3:0] addr,
                  input wire [7:0] din, output wire [7:0] dout);
  reg [7:0] mem_n [0:15];
  reg [7:0] q_n;
  always @(posedge clk) begin
    q_n <= mem_n[addr];
    if (we) mem_n[addr] <= ~din;
  end
  assign dout = ~q_n;
endmodule
"""
    v = check(rtl.verify(task, inverted), Status.PASS)
    assert v.metrics["equivalence"] == "unknown"
    assert "all-zero power-up" in v.checks[-1].detail
    v = check(rtl.verify(task, task.reference), Status.PASS)
    assert v.metrics["equivalence"] == "proven"


def test_equivalence_none_is_skipped(rtl):
    task = make_task("add4", "combinational", ADD_PORTS, ADD_REF, ADD.harness["testbench"], "none")
    v = check(rtl.verify(task, ADD_REF), Status.PASS)
    assert v.metrics["equivalence"] == "not_checked"
    assert "skipped" in next(c.detail for c in v.checks if c.name == "equivalence")


# --- infrastructure -----------------------------------------------------------------------------


class MissingToolVerifier(RtlVerifier):
    """The real verifier with one tool that does not exist on this machine."""

    name = "rtl-missing-tool"
    tools = (
        *RtlVerifier.tools,
        Tool(
            "fancysim", "/nonexistent/fancysim", ("fancysim", "-V"), "apt-get install -y fancysim"
        ),
    )


def test_missing_tool_is_infra_error_with_install_hint():
    v = check(MissingToolVerifier().verify(ADD, ADD_REF), Status.INFRA_ERROR, "tool_missing")
    assert "apt-get install -y fancysim" in v.feedback
    assert gates_run(v) == ["format"]


def test_sandbox_unavailable_is_infra_error_and_runs_nothing(rtl, monkeypatch, tmp_path):
    bin_dir = tmp_path / "bin"  # every tool but bwrap
    bin_dir.mkdir()
    for tool in ("iverilog", "vvp", "verilator_bin", "yosys", "yosys-abc", "setpriv"):
        path = subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip()
        (bin_dir / tool).symlink_to(path)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(sandbox_mod, "_probed", {})
    v = check(rtl.verify(ADD, ADD_REF), Status.INFRA_ERROR, "sandbox_unavailable")
    assert "bubblewrap" in v.feedback
    assert gates_run(v) == ["format"] and "tool_runs" not in v.metrics


# --- worker -------------------------------------------------------------------------------------


def test_worker_reads_jsonl_and_writes_verdicts(tmp_path):
    good = Candidate(task_id=ADD.task_id, code=ADD_REF, origin="reference", generator="test")
    bad = Candidate(
        task_id=ADD.task_id, code=add("  assign y = a;"), origin="llm", generator="test"
    )
    lines = [
        json.dumps(
            {
                "task": ADD.to_dict(),
                "candidate": good.to_dict(),
                "limits": Limits(gates=("compile", "simulate")).to_dict(),
            }
        ),
        "{not json",
        json.dumps({"task": ADD.to_dict(), "candidate": bad.to_dict()}),
    ]
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.jsonl"
    res = subprocess.run(
        [sys.executable, "-m", "verifiers.rtl", str(src), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 1, res.stderr
    assert "line 2" in res.stderr
    verdicts = [Verdict.from_dict(json.loads(ln)) for ln in out.read_text().splitlines()]
    assert [v.status for v in verdicts] == [Status.PASS, Status.WRONG_ANSWER]
    assert verdicts[0].candidate_id == good.candidate_id
    assert verdicts[1].candidate_id == bad.candidate_id


# --- helpers, without tools ---------------------------------------------------------------------


def test_trim_vcd_keeps_header_state_and_the_window():
    head = '$timescale 1s $end\n$var wire 4 ! a $end\n$var wire 1 " c $end\n$enddefinitions $end\n'
    body = "".join(f"#{t}\nb{t % 16:b} !\n" + ('1"\n' if t == 3 else "") for t in range(1000))
    out = waves.trim_vcd(head + body, center=500, keep_steps=10)
    assert out.startswith(head)
    stamps = [int(ln[1:]) for ln in out.splitlines() if ln.startswith("#")]
    assert stamps[0] == 490 and stamps[-1] == 510
    dump = out.split("$dumpvars", 1)[1].split("$end", 1)[0]
    assert '1"' in dump and "b1001 !" in dump  # c set at 3; a's value at 489 (= 9)
    assert len(out) < len(head + body) / 10


def test_candidate_ports_ansi_and_non_ansi():
    ansi = "module m #(parameter W = $clog2(8)) (input [W-1:0] a, b, output reg [W:0] y = 0);"
    assert errors.candidate_ports(ansi + "\nendmodule", "m") == {
        "a": "input",
        "b": "input",
        "y": "output",
    }
    old = "module m(a, b, y);\n  input [3:0] a, b;\n  output reg [4:0] y;\nendmodule"
    assert errors.candidate_ports(old, "m") == {"a": "input", "b": "input", "y": "output"}
    assert errors.port_problems({"a": "input", "q": "output"}, ADD.interface["ports"]) == [
        "missing port(s): b, y",
        "port(s) not in the interface: q",
    ]


@pytest.mark.parametrize(
    ("line", "bad"),
    [
        ("assign y = 4'b102;", "4'b102"),
        ("x = 8'hZG;", "8'hZG"),
        ("x = 'd1A;", "'d1A"),
        ("x = 3'o9;", "3'o9"),
        ("x = 4'b10x1 + 8'hff + 'd12 + 16'h_DEAD + 4'sb1z?_;", None),
    ],
)
def test_bad_literal(line, bad):
    assert errors.bad_literal(line) == bad


def test_a_sandbox_that_cannot_start_is_infra_error_not_the_candidates_fault(rtl, monkeypatch):
    # read from the sandbox's own status pipe (tests/verifiers/test_sandbox.py), never from
    # text the tool printed: here bwrap refuses its arguments before any tool runs
    from verifiers import sandbox as sb_mod

    real = sb_mod.confined_argv
    monkeypatch.setattr(
        sb_mod, "confined_argv", lambda *a, **k: [*real(*a, **k), "--no-such-bwrap-option"]
    )
    v = check(rtl.verify(ADD, ADD_REF), Status.INFRA_ERROR, "sandbox_unavailable")
    assert "bwrap" in v.feedback and gates_run(v) == ["format", "static", "compile"]


def test_a_broken_reference_is_the_tasks_fault(rtl):
    task = make_task(
        "add4",
        "combinational",
        ADD_PORTS,
        ADD_REF.replace(";", "", 1),
        ADD.harness["testbench"],
        "comb",
    )
    check(rtl.verify(task, ADD_REF), Status.INFRA_ERROR, "harness_error")
