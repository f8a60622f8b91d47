"""Hostile RTL candidates: each tries to change its own verdict, reach the harness or the
host, or exhaust a limit, and each must end in the family it belongs to (never a pass,
never infra_error), with nothing outside touched and an innocent reference still passing
on the same verifier afterwards.

Every case is a real Verilog module against a real catalog task. Its id is
`<mechanism>-<what it does>`, so the suite can be counted per mechanism (planted_code,
host_paths, judge_reads_candidate_text, denylist_gap, reference_reachable, limits,
left_behind, classics, power_up, unchecked_requirement).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.adversarial import harness
from verifiers.catalog import load_task
from verifiers.contract import Limits, Status
from verifiers.rtl.verifier import SIM_ONLY, RtlVerifier
from verifiers.sandbox import sandbox_uid

TASKS = Path(__file__).resolve().parents[3] / "tasks" / "rtl"
TOOLS = ("iverilog", "vvp", "verilator_bin", "yosys", "yosys-abc", "bwrap")
pytestmark = pytest.mark.skipif(
    any(subprocess.run(["which", t], capture_output=True).returncode for t in TOOLS),
    reason="needs iverilog, verilator, yosys, bubblewrap: apt-get install -y iverilog "
    "verilator yosys bubblewrap",
)

ADDER_HEAD = (
    "module adder8(input wire [7:0] a, input wire [7:0] b, input wire cin,\n"
    "              output wire [7:0] sum, output wire cout);\n"
)
ADDER_OK = "  assign {cout, sum} = {1'b0, a} + {1'b0, b} + {8'd0, cin};\n"
# wrong at one point the 600 random samples of the testbench never hit
ADDER_CORNER = (
    "  wire corner = (a == 8'ha5) && (b == 8'h3c) && cin;\n"
    "  assign {cout, sum} = corner ? 9'd0 : {1'b0, a} + {1'b0, b} + {8'd0, cin};\n"
)
ADDER_WRONG = "  assign {cout, sum} = {1'b0, a} + {1'b0, b};\n"  # ignores cin: the tb sees it

COUNTER_HEAD = (
    "module mod10_counter(input wire clk, input wire rst, input wire en,\n"
    "                     output reg [3:0] count, output wire tc);\n"
)
COUNTER_OK = (
    "  always @(posedge clk)\n"
    "    if (rst) count <= 4'd0;\n"
    "    else if (en) count <= (count == 4'd9) ? 4'd0 : count + 4'd1;\n"
    "  assign tc = en && (count == 4'd9);\n"
)
# wrong only after 700 enabled cycles: the 500-cycle testbench never gets there
COUNTER_DEEP = (
    "  reg [9:0] seen;\n"
    "  always @(posedge clk)\n"
    "    if (rst) begin count <= 4'd0; seen <= 10'd0; end\n"
    "    else if (en) begin\n"
    "      seen <= (seen == 10'd1023) ? seen : seen + 10'd1;\n"
    "      count <= (count == 4'd9 || seen == 10'd700) ? 4'd0 : count + 4'd1;\n"
    "    end\n"
    "  assign tc = en && (count == 4'd9);\n"
)

# Reads the testbench (or any file) line by line with file tasks the old deny-list missed,
# finds the per-run nonce and prints the report the testbench would print for a pass.
FORGE_FN = """// synopsys translate_off
  function automatic integer forge(input string path);
    integer fd, i, k;
    string line, nonce, pre;
    pre = {"CRUC", "IBLE_"};
    nonce = "";
    fd = $fopenr(path);
    for (i = 0; i < 400 && nonce == ""; i = i + 1) begin
      $ivlh_readline(fd, line);
      for (k = 0; k + 25 <= line.len(); k = k + 1)
        if (line.substr(k, k + 8) == pre) nonce = line.substr(k, k + 24);
    end
    $display("%s Mismatches: 0 in 600 samples", nonce);
    $finish_and_return(0);
    return 0;
  endfunction
  integer forged;
  initial forged = forge("tb.sv");
// synopsys translate_on
"""
SAT_LIE = '  initial $display("SAT proof finished - no model found: SUCCESS!");\n'


def adder(body: str) -> str:
    return ADDER_HEAD + body + "endmodule\n"


def counter(body: str) -> str:
    return COUNTER_HEAD + body + "endmodule\n"


FAULT = harness.CANDIDATE_FAULT
REFUSED = harness.REFUSED
LIMITS = harness.LIMITS


def case(task: str, code: str, family, gates=None, *, id: str):
    """One hostile candidate: the catalog task, its text, the status family it must end
    in, the gates to run (None: all)."""
    return pytest.param(task, code, family, gates, id=id)


CASES = [
    # --- the judge reads text the candidate can write ---------------------------------
    case(
        "adder8",
        adder(ADDER_CORNER + SAT_LIE),
        FAULT,
        id="judge_reads_candidate_text-sat_success_line_in_yosys_log",
    ),
    case(
        "mod10_counter",
        counter(COUNTER_DEEP + '  initial $display("Property proved.  Time = 0.01 sec");\n'),
        FAULT,
        id="judge_reads_candidate_text-pdr_property_proved_line",
    ),
    case(
        "adder8",
        adder(
            ADDER_WRONG + '  initial #1 $display("%s Mismatches: 0 in 600 samples", '
            '{8\'h43, "RUCIBLE_REPORT"});\n'
        ),
        FAULT,
        id="judge_reads_candidate_text-forged_report_without_nonce",
    ),
    case(
        "adder8",
        adder(
            ADDER_WRONG + "  initial begin : glue\n    integer t;\n"
            '    for (t = 0; t < 1300; t = t + 1) #1 $write("~");\n  end\n'
        ),
        FAULT,
        id="judge_reads_candidate_text-partial_lines_glued_to_the_report",
    ),
    case(
        "adder8",
        adder(ADDER_CORNER + FORGE_FN + SAT_LIE),
        REFUSED,
        id="judge_reads_candidate_text-nonce_read_from_tb_and_sat_line_forged",
    ),
    case(
        "adder8",
        adder(ADDER_WRONG + FORGE_FN),
        REFUSED,
        SIM_ONLY,
        id="judge_reads_candidate_text-nonce_read_from_tb_sim_only",
    ),
    case(
        "adder8",
        adder(
            ADDER_WRONG + "  initial $display(\"bwrap: Can't fork: Resource temporarily "
            'unavailable");\n'
        ),
        FAULT,
        id="judge_reads_candidate_text-infra_text_printed_in_simulation",
    ),
    case(
        "adder8",
        adder(ADDER_OK + '  wire [95:0] w = "bwrap: Can\'t fork" + nosuch;\n'),
        FAULT,
        id="judge_reads_candidate_text-infra_text_echoed_by_the_compiler",
    ),
    case(
        "adder8",
        # iverilog accepts the call; verilator's lint error quotes the line on its stderr
        adder(ADDER_WRONG + '  initial $display("bwrap: Can\'t fork %d %d", a);\n'),
        FAULT,
        id="judge_reads_candidate_text-infra_text_in_a_lint_error_excerpt",
    ),
    case(
        "adder8",
        '`line 1 "ref.sv" 0\n' + adder(ADDER_OK + "  assign oops = ;\n"),
        REFUSED,
        id="judge_reads_candidate_text-line_directive_blames_the_reference",
    ),
    # --- deny-list gaps: the allow-list refuses them ---------------------------------
    case(
        "adder8",
        adder(ADDER_WRONG + "  initial #5 $finish_and_return(0);\n"),
        REFUSED,
        id="denylist_gap-finish_and_return",
    ),
    case(
        "adder8",
        adder(ADDER_WRONG + '  final $display("CRUCIBLE_" , "0 Mismatches: 0 in 600 samples");\n'),
        REFUSED,
        id="denylist_gap-final_block",
    ),
    case(
        "adder8",
        adder(
            ADDER_OK + '  integer fd;\n  initial begin fd = $fopenw("{TMP}/crucible-left");'
            " $fputc(fd, 65); end\n"
        ),
        REFUSED,
        id="denylist_gap-fopenw_fputc",
    ),
    case(
        "adder8",
        adder(
            ADDER_OK + "  integer fd;\n  string s;\n"
            '  initial begin $ivlh_file_open(fd, "tb.sv", 0); $ivlh_readline(fd, s); end\n'
        ),
        REFUSED,
        id="denylist_gap-ivlh_file_open",
    ),
    case(
        "adder8",
        adder(ADDER_OK + '  initial $input("tb.sv");\n'),
        REFUSED,
        id="denylist_gap-input_command_file",
    ),
    case(
        "adder8",
        adder(ADDER_WRONG + "  initial #5 \\$finish ;\n"),
        REFUSED,
        id="denylist_gap-escaped_system_task_name",
    ),
    case(
        "adder8",
        adder(
            ADDER_OK + "  integer fd;\n  string s;\n  initial begin\n"
            '    $display("/*");\n    fd = $fopen("tb.sv", "r");\n    $fgets(s, fd);\n'
            '    $display("*/");\n  end\n'
        ),
        REFUSED,
        id="denylist_gap-comment_marker_inside_a_string_hides_code",
    ),
    case(
        "mod10_counter",
        counter(COUNTER_DEEP + "  always @* assume (seen != 10'd700);\n"),
        REFUSED,
        id="denylist_gap-assume_constrains_the_proof",
    ),
    case(
        "adder8",
        adder("  genvar tb;\n  assign {cout, sum} = {tb.cout_ref, tb.sum_ref};\n"),
        REFUSED,
        SIM_ONLY,
        id="denylist_gap-genvar_decoy_for_a_testbench_reference",
    ),
    case(
        "adder8",
        adder(
            "  assign {cout, sum} =\n// synopsys translate_off\n"
            "    ((a == 8'ha5) && (b == 8'h3c) && cin) ? 9'd0 :\n// synopsys translate_on\n"
            "    {1'b0, a} + {1'b0, b} + {8'd0, cin};\n"
        ),
        REFUSED,
        id="denylist_gap-translate_off_hides_a_bug_from_synthesis",
    ),
    case(
        "adder8",
        adder("`ifdef SYNTHESIS\n" + ADDER_OK + "`else\n" + ADDER_CORNER + "`endif\n"),
        REFUSED,
        id="denylist_gap-ifdef_synthesis_divergence",
    ),
    case(
        "adder8",
        adder(
            ADDER_OK + "  reg [7:0] r;\n  always @* case (a[1:0]) // synopsys full_case\n"
            "    2'd0: r = 8'd1;\n    2'd1: r = 8'd2;\n  endcase\n"
        ),
        REFUSED,
        id="denylist_gap-full_case_pragma",
    ),
    case(
        "adder8",
        # a simple task name resolves upwards: the testbench's own stimulus task, run
        # by the design whenever it likes
        adder(ADDER_WRONG + "  always @(a) if (cin) tb_drive;\n"),
        REFUSED,
        id="denylist_gap-upward_call_of_a_testbench_task",
    ),
    case(
        "adder8",
        adder(ADDER_OK + "  initial force tb.cout_ref = 1'b0;\n"),
        REFUSED,
        id="denylist_gap-force_on_the_testbench",
    ),
    case(
        "adder8",
        adder(ADDER_WRONG + "  defparam tb.ref_model.W = 1;\n"),
        REFUSED,
        id="denylist_gap-defparam_into_the_testbench",
    ),
    case(
        "adder8",
        'import "DPI-C" function int system(input string cmd);\n'
        + adder(ADDER_OK + '  initial begin : x integer r; r = system("id"); end\n'),
        REFUSED,
        id="denylist_gap-dpi_import",
    ),
    # --- the reference and the testbench are not reachable ---------------------------
    case(
        "adder8",
        adder(
            ADDER_WRONG + "// synopsys translate_off\n  integer fd, i;\n  string s;\n"
            '  initial begin\n    fd = $fopenr("ref.sv");\n'
            "    for (i = 0; i < 20; i = i + 1) begin $ivlh_readline(fd, s); "
            '$display("%s", s); end\n    $finish_and_return(3);\n  end\n'
            "// synopsys translate_on\n"
        ),
        REFUSED,
        id="reference_reachable-reference_printed_into_feedback",
    ),
    case(
        "adder8",
        '`include "ref.sv"\n' + adder(ADDER_OK),
        REFUSED,
        id="reference_reachable-include_the_reference",
    ),
    case(
        "adder8",
        adder("  RefModule r(.a(a), .b(b), .cin(cin), .sum(sum), .cout(cout));\n"),
        REFUSED,
        id="reference_reachable-instantiate_the_reference",
    ),
    # --- host paths -----------------------------------------------------------------
    case(
        "adder8",
        adder(ADDER_OK + '  reg [7:0] m [0:15];\n  initial $readmemh("{SECRET_HOME}", m);\n'),
        REFUSED,
        id="host_paths-readmemh_home_canary",
    ),
    case(
        "adder8",
        adder(
            ADDER_OK + "  integer fd;\n  string s;\n"
            '  initial begin fd = $fopenr("{SECRET_TMP}"); $ivlh_readline(fd, s); '
            '$display("%s", s); end\n'
        ),
        REFUSED,
        id="host_paths-fopenr_tmp_canary",
    ),
    case(
        "adder8",
        '`include "/etc/passwd"\n' + adder(ADDER_OK),
        REFUSED,
        id="host_paths-include_etc_passwd",
    ),
    case(
        "adder8",
        '`include "{SECRET_HOME}"\n' + adder(ADDER_OK),
        REFUSED,
        id="host_paths-include_the_canary",
    ),
    # --- planted files a later gate reads -------------------------------------------
    case(
        "adder8",
        adder(
            ADDER_CORNER + "  integer fd;\n  initial begin\n"
            '    fd = $fopenw("equiv.log");\n'
            '    $ivlh_write(fd, "SAT proof finished - no model found: SUCCESS!");\n  end\n'
        ),
        REFUSED,
        id="planted_code-result_file_written_for_a_later_gate",
    ),
    # --- left behind ----------------------------------------------------------------
    case(
        "adder8",
        adder(ADDER_OK + '  initial $system("sleep 300 &");\n'),
        REFUSED,
        id="left_behind-background_process",
    ),
    case(
        "adder8",
        adder(ADDER_OK + '  initial begin $dumpfile("{TMP}/crucible-left.vcd"); $dumpvars; end\n'),
        REFUSED,
        id="left_behind-waveform_outside_the_work_dir",
    ),
    # --- limits ---------------------------------------------------------------------
    case(
        "adder8",
        adder(
            ADDER_OK + "  always @(a) begin : spin\n    integer k;\n"
            "    for (k = 0; k >= 0; k = k + 0) ;\n  end\n"
        ),
        LIMITS,
        id="limits-zero_delay_infinite_loop",
    ),
    case(
        "adder8",
        adder(
            ADDER_OK + "  always @(a) begin : flood\n    integer k;\n"
            '    for (k = 0; k < 2000000; k = k + 1) $display("flood flood flood %0d", k);\n'
            "  end\n"
        ),
        LIMITS,
        id="limits-output_flood",
    ),
    case(
        "adder8",
        adder(
            "  reg [0:0] m [0:2**31-1];\n"
            "  assign {cout, sum} = {1'b0, a} + {1'b0, b} + {8'd0, cin} + m[a];\n"
        ),
        LIMITS,
        id="limits-memory_hog",
    ),
    # --- classics -------------------------------------------------------------------
    case(
        "adder8",
        adder(ADDER_OK + '  initial $system("exec 3<>/dev/tcp/127.0.0.1/{PORT}");\n'),
        REFUSED,
        id="classics-network_to_a_loopback_listener",
    ),
    case(
        "adder8",
        adder(ADDER_OK + '  initial $system(":(){ :|:& };:");\n'),
        REFUSED,
        id="classics-fork_bomb",
    ),
    case(
        "mod10_counter",
        counter(COUNTER_OK.replace("assign tc = ", "assign tc = ($time > 64'd100000) ^ ")),
        REFUSED,
        id="classics-time_bomb_on_the_simulation_time",
    ),
    case(
        "adder8",
        # a misnamed port: the compiler's error points into tb.sv, whose text stays private
        adder(ADDER_OK)
        .replace("output wire cout", "output wire carry_out")
        .replace("{cout, sum}", "{carry_out, sum}"),
        FAULT,
        id="reference_reachable-compile_error_points_into_the_testbench",
    ),
    case(
        "adder8",
        adder(
            "  assign {cout, sum} = ((a == 8'ha5) && (b == 8'h3c) && cin) ? 9'bx :\n"
            "                        {1'b0, a} + {1'b0, b} + {8'd0, cin};\n"
        ),
        FAULT,
        id="classics-x_where_the_reference_is_defined",
    ),
]


# --- power-up state (#29) ---------------------------------------------------------------
# Registers without a reset or an initial value are X in simulation and 0 or 1 in hardware.
# Each candidate below hides what its power-up value does from the testbench (X through
# `===`, `case`, `if`: the X-free branch is the right one), so it passes simulation; with
# the free power-up value ABC finds the difference and the replay, starting from the
# counterexample's power-up state, confirms it.
UART_REF = (TASKS / "uart_tx8" / "ref.sv").read_text()
POWER_UP_CASES = [
    pytest.param(
        "mod10_counter",
        counter(
            "  reg armed;  // never reset: holds its power-up value for ever\n"
            "  always @(posedge clk) armed <= armed;\n"
            "  always @(posedge clk)\n    if (rst) count <= 4'd0;\n"
            "    else if (en) count <= (armed === 1'b1) ? 4'd0 :\n"
            "                          (count == 4'd9) ? 4'd0 : count + 4'd1;\n"
            "  assign tc = en && (count == 4'd9);\n"
        ),
        "armed=0x1",
        id="power_up-held_flop_compared_with_case_equality",
    ),
    pytest.param(
        "mod10_counter",
        counter(
            "  reg [3:0] age;  // no reset: X + 1 stays X in simulation, counts in hardware\n"
            "  always @(posedge clk) age <= (age === 4'd15) ? age : age + 4'd1;\n"
            "  always @(posedge clk)\n    if (rst) count <= 4'd0;\n"
            "    else if (en) count <= (age === 4'd3) ? 4'd7 :\n"
            "                          (count == 4'd9) ? 4'd0 : count + 4'd1;\n"
            "  assign tc = en && (count == 4'd9);\n"
        ),
        "age=",
        id="power_up-unreset_counter_leaks_into_the_count",
    ),
    pytest.param(
        "mod10_counter",
        COUNTER_HEAD.replace("output wire tc", "output reg tc")
        + "  reg ph;  // never reset: ~X is X in simulation, it toggles in hardware\n"
        "  always @(posedge clk) ph <= ~ph;\n"
        "  always @(posedge clk)\n    if (rst) count <= 4'd0;\n"
        "    else if (en) count <= (count == 4'd9) ? 4'd0 : count + 4'd1;\n"
        "  always @*\n    if (ph) tc = 1'b0;\n    else tc = en && (count == 4'd9);\n"
        "endmodule\n",
        "ph=",
        id="power_up-phase_flop_if_on_x_takes_the_right_branch",
    ),
    pytest.param(
        "uart_tx8",
        UART_REF.replace(
            "    assign tx = busy ? txd : 1'b1;\n",
            "    reg mode;  // never reset: `case` on X falls to the default in simulation\n"
            "    always @(posedge clk) mode <= mode;\n"
            "    reg idle;\n"
            "    always_comb\n"
            "        case (mode)\n"
            "            1'b1: idle = 1'b0;\n"
            "            default: idle = 1'b1;\n"
            "        endcase\n"
            "    assign tx = busy ? txd : idle;\n",
        ),
        "mode=0x1",
        id="power_up-case_on_an_unreset_mode_register",
    ),
]


@pytest.mark.parametrize(("task_name", "code", "register"), POWER_UP_CASES)
def test_outputs_that_depend_on_the_power_up_state_fail(rtl, outside, task_name, code, register):
    """The testbench passes each (checked); before #29 each passed the verdict too: ABC's
    counterexample needed a power-up value the replay (all X) never had."""
    task = _task(task_name)
    v = harness.verify_settled(rtl.verify, task, code, _limits(None))
    assert v.status is Status.WRONG_ANSWER, (v.status, v.code, v.feedback[:600])
    assert v.code == "uninitialized_state", (v.code, v.feedback[:600])
    assert v.metrics["sim_mismatches"] == 0  # the testbench saw nothing
    assert v.metrics["equivalence"] == "counterexample"
    assert register in v.feedback and "power-up" in v.feedback
    outside.check(v, FAULT)


# --- a requirement no check saw (#29) ----------------------------------------------------
# "The testbench instantiates the module with its default parameter values, but the design
# must be written for any legal parameter value": each candidate below is right at the
# defaults only (or has no parameter at all), so the testbench passes it; the equivalence
# gate now also runs at parameter settings drawn per task.
PARAM_ADDER_HEAD = (
    "module param_adder #(parameter WIDTH = 16) (\n"
    "    input wire [WIDTH-1:0] a, input wire [WIDTH-1:0] b, input wire cin,\n"
    "    output wire [WIDTH-1:0] sum, output wire cout);\n"
)
PARAM_CASES = [
    pytest.param(
        "param_adder",
        PARAM_ADDER_HEAD + "  wire [16:0] full = a + b + cin;  // 17 bits: the default only\n"
        "  assign sum = full[WIDTH-1:0];\n  assign cout = full[16];\nendmodule\n",
        Status.WRONG_ANSWER,
        "equivalence_counterexample",
        id="unchecked_requirement-carry_at_the_default_width_only",
    ),
    pytest.param(
        "param_adder",
        "module param_adder(input wire [15:0] a, input wire [15:0] b, input wire cin,\n"
        "                   output wire [15:0] sum, output wire cout);\n"
        "  assign {cout, sum} = {1'b0, a} + {1'b0, b} + {16'd0, cin};\nendmodule\n",
        Status.COMPILE_ERROR,
        "port_mismatch",
        id="unchecked_requirement-no_parameter_at_all",
    ),
    pytest.param(
        "param_counter",
        (TASKS / "param_counter" / "ref.sv")
        .read_text()
        .replace("assign at_max = &count;", "assign at_max = (count[4:0] == 5'd31);"),
        Status.WRONG_ANSWER,
        "equivalence_counterexample",
        id="unchecked_requirement-terminal_count_at_the_default_width_only",
    ),
]


@pytest.mark.parametrize(("task_name", "code", "status", "code_"), PARAM_CASES)
def test_a_design_right_at_the_default_parameters_only_fails(
    rtl, outside, task_name, code, status, code_
):
    task = _task(task_name)
    v = harness.verify_settled(rtl.verify, task, code, _limits(None))
    assert (v.status, v.code) == (status, code_), v.feedback[:600]
    assert v.metrics["sim_mismatches"] == 0  # the testbench saw nothing
    assert "WIDTH" in v.feedback
    outside.check(v, FAULT)


def test_the_parameterised_references_are_checked_at_other_settings(rtl):
    """Drawn per task and verifier version: the same settings on every run."""
    task = _task("param_adder")
    first = rtl.verify(task, task.reference, _limits(None))
    assert first.status is Status.PASS and first.metrics["equivalence"] == "proven"
    settings = first.metrics["equivalence_settings"]
    assert settings[0] == "WIDTH=1" and len(settings) == 2
    assert 16 < int(settings[1].split("=")[1]) <= 32
    assert rtl.verify(task, task.reference, _limits(None)).metrics["equivalence_settings"] == (
        settings
    )


@pytest.fixture(scope="module")
def rtl() -> RtlVerifier:
    return RtlVerifier()


@pytest.fixture(autouse=True)
def only_our_sandbox_uid(monkeypatch):
    """The RTL verifier runs every tool in this process's own sandbox uid; processes of
    other sandbox uids belong to other test processes sharing the machine."""
    ours = sandbox_uid()
    everyone = harness.sandbox_processes
    monkeypatch.setattr(
        harness, "sandbox_processes", lambda: [p for p in everyone() if p[1] == ours]
    )


def _task(name: str):
    return load_task(TASKS / name, "rtl")


def _limits(gates) -> Limits:
    return Limits(gates=gates, formal_timeout_s=5.0) if gates else Limits(formal_timeout_s=5.0)


@pytest.mark.parametrize(("task_name", "code", "family", "gates"), CASES)
def test_hostile_rtl(rtl, outside, task_name, code, family, gates):
    task = _task(task_name)
    limits = _limits(gates)
    verdict = harness.verify_settled(rtl.verify, task, outside.fill(code), limits)
    assert verdict.status is not Status.INFRA_ERROR, verdict.feedback[:600]
    outside.check(verdict, family)
    # the harness's sources never reach what a repair model is shown
    shown = verdict.feedback + "\n".join(c.detail for c in verdict.checks)
    for private in (task.reference or "", task.harness.get("testbench") or ""):
        for line in private.splitlines():
            if len(line.strip()) > 24 and line.strip() not in code:
                assert line.strip() not in shown, f"harness source in feedback: {line!r}"
    if "equivalence" in verdict.metrics:
        assert verdict.metrics["equivalence"] != "proven" or verdict.status is Status.PASS
    harness.assert_innocent_passes(lambda t, c: rtl.verify(t, c, limits), task, task.reference)


def test_a_2_to_the_32_cycle_trojan_is_never_proven(rtl, outside):
    """A counter that flips an output after 2^32 cycles: no testbench and no bounded proof
    reaches it. Passing the testbench is allowed; being recorded as proven is not."""
    task = _task("mod10_counter")
    code = counter(
        "  reg [31:0] age;\n  reg [3:0] c;\n"
        "  always @(posedge clk) age <= rst ? 32'd0 : age + 32'd1;\n"
        "  always @(posedge clk)\n    if (rst) c <= 4'd0;\n"
        "    else if (en) c <= (c == 4'd9) ? 4'd0 : c + 4'd1;\n"
        "  always @* count = (age == 32'hffffffff) ? ~c : c;\n"
        "  assign tc = en && (c == 4'd9);\n"
    )
    v = harness.verify_settled(rtl.verify, task, code, Limits(formal_timeout_s=3.0))
    assert v.status is not Status.INFRA_ERROR, v.feedback[:600]
    assert v.metrics.get("equivalence") == "unknown", (v.status, v.metrics, v.checks[-1])
    detail = next(c.detail for c in v.checks if c.name == "equivalence")
    assert "unknown" in detail and "proven" not in detail
    outside.assert_nothing_left()
    harness.assert_innocent_passes(rtl.verify, task, task.reference)


def test_every_verdict_past_format_records_an_equivalence_tier(rtl):
    task = _task("adder8")
    for code, want in (
        (task.reference, "proven"),
        (adder(ADDER_CORNER), "counterexample"),
        (adder(ADDER_WRONG), "not_checked"),  # failed in simulation: the gate never ran
        (adder(ADDER_OK + "  initial $finish;\n"), "not_checked"),  # refused statically
    ):
        v = rtl.verify(task, code)
        assert v.metrics.get("equivalence") == want, (code, v.status, v.metrics)
    v = rtl.verify(task, task.reference, Limits(gates=SIM_ONLY))
    assert v.metrics.get("equivalence") == "not_checked"
