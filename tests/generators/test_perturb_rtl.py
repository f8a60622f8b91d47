"""The offline RTL generator: every operator applies where it should and nowhere else,
output is deterministic, rewrites compile and simulate identically to the reference
(iverilog, random stimulus, outputs compared every step), syntax-class mutations fail to
compile, functional ones compile."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from generators.base import seeded_rng
from generators.perturb import generator_for, known_domains
from generators.perturb.rtl import MUTATIONS, REWRITES, RtlPerturbGenerator
from generators.perturb.verilog import lex
from verifiers import domain as domains
from verifiers.catalog import load_catalog
from verifiers.contract import ORIGINS, Task
from verifiers.rtl.hdl import rename_modules
from verifiers.taxonomy import CATEGORIES, SYNTAX

ROOT = Path(__file__).resolve().parents[2]
needs_iverilog = pytest.mark.skipif(
    shutil.which("iverilog") is None or shutil.which("vvp") is None,
    reason="iverilog missing: apt-get install -y iverilog",
)

# --- small designs, one per kind of construct the operators look for ----------------------

COMB = """\
module comb_unit (
    input  wire [7:0] a,
    input  wire [7:0] b,
    input  wire       sel,
    output wire [7:0] y,
    output wire [8:0] sum,
    output wire       lt
);
    wire [7:0] masked;  // the selected operand
    assign masked = sel ? a : b;
    assign y = masked & 8'h0F | (a ^ b);
    assign sum = {1'b0, a} + {1'b0, b};
    assign lt = a < b;
endmodule
"""

SEQ = """\
// Counts enabled cycles up to `limit`, then wraps.
module counter (
    input  wire       clk,
    input  wire       rst,
    input  wire       en,
    input  wire [3:0] limit,
    output reg  [3:0] count,
    output wire       wrap
);
    reg [3:0] prev;
    always @(posedge clk) begin
        if (rst) begin
            count <= 4'd0;
            prev  <= 4'd0;
        end else if (en) begin
            if (count == limit) count <= 4'd0;
            else count <= count + 4'd1;
            prev <= count;  /* sampled after the update: blocking would differ */
        end
    end
    assign wrap = (count == 4'd0) && (prev != 4'd0);
endmodule
"""

FSM = """\
module handshake (
    input  wire clk,
    input  wire rst_n,
    input  wire go,
    input  wire stop,
    output wire busy,
    output reg  [1:0] phase
);
    localparam [1:0] IDLE = 2'b00, RUN = 2'b01, DONE = 2'b10;
    reg [1:0] state, next_state;
    always @(posedge clk or negedge rst_n) begin
        if (!rst_n) state <= IDLE;
        else state <= next_state;
    end
    always @(*) begin
        next_state = state;
        case (state)
            IDLE: if (go) next_state = RUN;
            RUN: if (stop) next_state = DONE;
            default: next_state = IDLE;
        endcase
    end
    assign busy = (state == RUN) ? 1'b1 : 1'b0;
    always @* phase = state;
endmodule
"""

DECODER = """\
module decoder (
    input  wire [1:0] code,
    input  wire       en,
    output reg  [3:0] onehot,
    output reg        valid
);
    always @(*) begin
        onehot = 4'b0000;
        valid  = 1'b0;
        if (en) begin
            case (code)
                2'd0: onehot = 4'b0001;
                2'd1: onehot = 4'b0010;
                2'd2: onehot = 4'b0100;
                default: onehot = 4'b1000;
            endcase
            valid = 1'b1;
        end
    end
endmodule
"""

WIRE = "module pass_through (input wire a, output wire y);\n    assign y = a;\nendmodule\n"
LONELY = "module lonely;\nendmodule\n"

DESIGNS = {"comb": COMB, "seq": SEQ, "fsm": FSM, "decoder": DECODER}
TOPS = {"comb": "comb_unit", "seq": "counter", "fsm": "handshake", "decoder": "decoder"}
# name -> (direction, width); the clock and reset are driven by the testbench itself
PORTS = {
    "comb": {"a": ("input", 8), "b": ("input", 8), "sel": ("input", 1), "y": ("output", 8),
             "sum": ("output", 9), "lt": ("output", 1)},
    "seq": {"clk": ("input", 1), "rst": ("input", 1), "en": ("input", 1),
            "limit": ("input", 4), "count": ("output", 4), "wrap": ("output", 1)},
    "fsm": {"clk": ("input", 1), "rst_n": ("input", 1), "go": ("input", 1),
            "stop": ("input", 1), "busy": ("output", 1), "phase": ("output", 2)},
    "decoder": {"code": ("input", 2), "en": ("input", 1), "onehot": ("output", 4),
                "valid": ("output", 1)},
}  # fmt: skip
CLOCKED = {"seq": ("clk", "rst", 1), "fsm": ("clk", "rst_n", 0)}  # clock, reset, active

# operator -> (a design it must apply to, one it cannot apply to)
MUTATION_CASES = {
    "nonblocking_to_blocking": (SEQ, COMB),
    "blocking_to_nonblocking": (DECODER, COMB),
    "off_by_one": (SEQ, WIRE),
    "port_width": (COMB, WIRE),
    "signal_width": (COMB, DECODER),
    "drop_reset": (SEQ, COMB),
    "invert_condition": (SEQ, COMB),
    "swap_ternary": (COMB, DECODER),
    "rename_port": (COMB, LONELY),
    "missing_port": (COMB, LONELY),
    "malformed_literal": (COMB, WIRE),
    "missing_end": (SEQ, COMB),
    "missing_semicolon": (COMB, LONELY),
    "undeclared_identifier": (COMB, LONELY),
    "wrong_fsm_transition": (FSM, DECODER),
    "latch_inference": (DECODER, SEQ),
    "wrong_operator": (COMB, WIRE),
    "swap_operands": (COMB, WIRE),
    "concat_order": (COMB, WIRE),
    "wrong_edge": (SEQ, COMB),
    "stuck_output": (COMB, DECODER),
    "incomplete_sensitivity": (DECODER, SEQ),
}
REWRITE_CASES = {
    "rename_internal": (COMB, DECODER),
    "reformat": (SEQ, None),
    "sv_always": (DECODER, COMB),
    "commute": (COMB, WIRE),
    "ternary_to_always": (COMB, DECODER),
}
# Must not compile on their own; the interface-class ones fail against the testbench.
# port_width compiles even there (iverilog only warns on a port width mismatch); the
# verifier's check of the ports against the task interface is what rejects it.
UNCOMPILABLE = {"malformed_literal", "missing_end", "missing_semicolon", "undeclared_identifier"}
INTERFACE = {"rename_port", "missing_port"}


def _task(source: str, name: str = "t") -> Task:
    return Task(name=name, domain="rtl", family="combinational", level=1, requirement="r",
                interface={}, platform={}, reference=source, harness={})  # fmt: skip


def _rng(op: str, seed: int = 0) -> random.Random:
    return seeded_rng("test-task", op, str(seed))


def _comments(source: str) -> list[str]:
    return [t.text for t in lex(source)[1] if t.kind == "comment"]


def _iverilog(tmp_path: Path, *sources: str, name: str = "d") -> subprocess.CompletedProcess:
    files = []
    for i, src in enumerate(sources):
        f = tmp_path / f"{name}_{i}.sv"
        f.write_text(src)
        files.append(str(f))
    out = tmp_path / f"{name}.vvp"
    return subprocess.run(
        ["iverilog", "-g2012", "-o", str(out), *files], capture_output=True, text=True, timeout=60
    )


# --- the tables ------------------------------------------------------------------------------


def test_tables_cover_the_required_bugs_and_rewrites():
    names = {m.name for m in MUTATIONS}
    assert len(MUTATIONS) >= 12 and len(REWRITES) >= 4
    assert set(MUTATION_CASES) == names, "every mutation needs a test case here"
    assert set(REWRITE_CASES) == {r.name for r in REWRITES}
    for m in MUTATIONS:
        assert m.category in CATEGORIES and m.description and callable(m.apply)
    assert {m.name for m in MUTATIONS if m.category == SYNTAX} >= UNCOMPILABLE | INTERFACE


def test_registry_gives_a_fresh_rtl_generator():
    assert "rtl" in known_domains()
    gen = generator_for("rtl")
    assert isinstance(gen, RtlPerturbGenerator) and gen.name == "perturb:rtl"
    assert generator_for("rtl") is not gen
    with pytest.raises(ValueError, match=r"no perturb generator for domain 'no_such'.*known"):
        generator_for("no_such")


def test_the_generator_comes_from_the_descriptor():
    # registration is the domain's descriptor: one without `perturb` has no generator, one
    # naming a class gets that class, and neither needs a line in generators.perturb
    base = domains.get("rtl")
    bare = dataclasses.replace(
        base, name="bare_hdl", perturb=None, default_run=False, settings=None
    )
    named = dataclasses.replace(base, name="named_hdl", default_run=False, settings=None)
    domains.register(bare)
    domains.register(named)
    try:
        assert "named_hdl" in known_domains() and "bare_hdl" not in known_domains()
        with pytest.raises(ValueError, match="no perturb generator for domain 'bare_hdl'"):
            generator_for("bare_hdl")
        assert isinstance(generator_for("named_hdl"), RtlPerturbGenerator)
    finally:
        domains.unregister("bare_hdl")
        domains.unregister("named_hdl")
    assert known_domains() == [n for n in domains.names() if domains.get(n).perturb]


# --- each operator, alone ---------------------------------------------------------------------


@pytest.mark.parametrize("op", MUTATIONS + REWRITES, ids=lambda op: op.name)
def test_operator_applies_where_it_should_and_only_there(op):
    good, bad = (MUTATION_CASES | REWRITE_CASES)[op.name]
    out = op.apply(good, _rng(op.name))
    assert out is not None and out != good
    assert op.apply(good, _rng(op.name)) == out, "same rng seed, same result"
    if bad is not None:
        assert op.apply(bad, _rng(op.name)) is None


@pytest.mark.parametrize("op", MUTATIONS, ids=lambda op: op.name)
def test_mutations_leave_comments_alone(op):
    for design in DESIGNS.values():
        for seed in range(4):
            out = op.apply(design, _rng(op.name, seed))
            if out is None:
                continue
            for comment in _comments(design):
                assert comment in out, f"{op.name} touched {comment!r}"


def test_code_inside_comments_and_strings_is_never_a_site():
    src = (
        "module m(input wire [3:0] a, output wire [3:0] y);\n"
        "    // assign y = a + 4'd1;  if (a == 1) y <= 0;\n"
        "    /* wire [7:0] hidden = 8'hFF - a; */\n"
        "    assign y = a;\n"
        '    initial $display("y = a + 8\'hFF end");\n'
        "endmodule\n"
    )
    for op in MUTATIONS:
        for seed in range(6):
            out = op.apply(src, _rng(op.name, seed))
            if out is not None:
                assert "// assign y = a + 4'd1;  if (a == 1) y <= 0;" in out
                assert "/* wire [7:0] hidden = 8'hFF - a; */" in out
                assert '"y = a + 8\'hFF end"' in out


def test_specific_edits_look_like_the_bug_they_imitate():
    by = {m.name: m for m in MUTATIONS}
    out = by["malformed_literal"].apply(WIRE.replace("= a", "= 4'b1010 & a"), _rng("m"))
    assert re.search(r"4'b[01]*2[01]*", out)
    out = by["drop_reset"].apply(SEQ, _rng("d"))
    assert "rst" not in out.split("always")[1].split("assign")[0]
    out = by["drop_reset"].apply(FSM, _rng("d"))
    assert "negedge rst_n" not in out and "always @(posedge clk)" in out
    out = by["wrong_edge"].apply(SEQ, _rng("e"))
    assert "negedge clk" in out
    out = by["nonblocking_to_blocking"].apply(SEQ, _rng("b"))
    assert "<=" not in out.split("always")[1].split("assign")[0]
    out = by["port_width"].apply(WIRE.replace("wire a", "wire [7:0] a"), _rng("w"))
    assert "[6:0] a" in out or "[8:0] a" in out
    out = by["stuck_output"].apply(WIRE, _rng("s"))
    assert "assign y = 0;" in out
    arms = FSM.replace("IDLE: if (go) next_state = RUN;", "IDLE: next_state = go ? RUN : IDLE;")
    outs = {by["wrong_fsm_transition"].apply(arms, _rng("f", seed)) for seed in range(12)}
    assert any("next_state = go ? DONE : IDLE;" in o for o in outs)
    assert all("(state == RUN)" in o for o in outs), "a test of the state is not a transition"
    out = by["missing_end"].apply(SEQ, _rng("e"))
    assert out.count("end") < SEQ.count("end") and out.count("begin") == SEQ.count("begin")


def test_off_by_one_respects_base_and_width():
    by = {m.name: m for m in MUTATIONS}
    src = "module m(input wire [3:0] a, output wire y);\n    assign y = a == 4'hF;\nendmodule\n"
    for seed in range(5):
        out = by["off_by_one"].apply(src, _rng("o", seed))
        assert "a == 4'hE;" in out  # 4'hF + 1 does not fit in 4 bits
    src = src.replace("4'hF", "4'b0011")
    outs = {by["off_by_one"].apply(src, _rng("o", seed)) for seed in range(12)}
    assert {o.split("== ")[1].split(";")[0] for o in outs} == {"4'b0010", "4'b0100"}


# --- the generator ----------------------------------------------------------------------------


def test_generate_reference_first_then_rewrites_then_perturbations():
    task = _task(FSM)
    cands = RtlPerturbGenerator().generate(task)
    assert cands[0].origin == "reference" and cands[0].code == FSM
    assert cands[0].generator == "catalog:reference"
    origins = [c.origin for c in cands]
    assert origins == sorted(origins, key=["reference", "rewrite", "perturb"].index)
    for c in cands:
        assert c.origin in ORIGINS and c.run_id == "" and c.task_id == task.task_id
        prefix = "catalog:" if c.origin == "reference" else f"{c.origin}:"
        assert c.generator.startswith(prefix)
    codes = [c.code for c in cands]
    assert len(set(codes)) == len(codes), "identical texts are dropped"
    perturbed = [c for c in cands if c.origin == "perturb"]
    assert len({c.generator for c in perturbed}) == len(perturbed), "one per operator"
    assert len(perturbed) >= 12


def test_generate_is_deterministic_and_seeded():
    task = _task(COMB)
    first = [c.candidate_id for c in RtlPerturbGenerator().generate(task, seed=3)]
    again = [c.candidate_id for c in generator_for("rtl").generate(task, seed=3)]
    assert first == again
    other = [c.candidate_id for c in RtlPerturbGenerator().generate(task, seed=4)]
    assert other != first and other[0] == first[0]  # same reference, other sites


def test_n_caps_and_extends_the_perturbations():
    task = _task(COMB)
    gen = RtlPerturbGenerator()
    default = [c for c in gen.generate(task) if c.origin == "perturb"]
    assert len([c for c in gen.generate(task, n=3) if c.origin == "perturb"]) == 3
    assert [c for c in gen.generate(task, n=0) if c.origin == "perturb"] == []
    many = [c for c in gen.generate(task, n=60) if c.origin == "perturb"]
    assert len(default) < len(many) <= 60
    assert len({c.code for c in many}) == len(many)
    assert gen.stats["perturb:wrong_operator.produced"] > 0
    with pytest.raises(ValueError):
        gen.generate(task, n=-1)


def test_generate_without_a_reference_or_for_another_domain():
    gen = RtlPerturbGenerator()
    assert gen.generate(_task(None)) == []
    cuda = Task(name="k", domain="cuda", family="f", level=1, requirement="r", interface={},
                platform={}, reference="x", harness={})  # fmt: skip
    with pytest.raises(ValueError, match="rtl"):
        gen.generate(cuda)


# --- against iverilog -------------------------------------------------------------------------


@needs_iverilog
@pytest.mark.parametrize("kind", sorted(DESIGNS))
def test_every_candidate_compiles_or_fails_as_its_class_says(kind, tmp_path):
    assert _iverilog(tmp_path, DESIGNS[kind], name="ref").returncode == 0
    for c in RtlPerturbGenerator().generate(_task(DESIGNS[kind]), n=40):
        op = c.generator.split(":", 1)[1]
        res = _iverilog(tmp_path, c.code, name=op)
        if op in UNCOMPILABLE:
            assert res.returncode != 0, f"{op} compiled:\n{c.code}"
        elif op in INTERFACE:
            # Compiles alone; a testbench connecting the interface's ports by name fails.
            tb = _harness_tb(kind, top=TOPS[kind], connect_only=True)
            assert _iverilog(tmp_path, c.code, tb, name=op + "_tb").returncode != 0
        else:
            assert res.returncode == 0, f"{c.generator} does not compile:\n{res.stderr}\n{c.code}"


@needs_iverilog
@pytest.mark.parametrize("kind", sorted(DESIGNS))
def test_rewrites_simulate_identically_to_the_reference(kind, tmp_path):
    rewrites = [
        c for seed in range(3) for c in RtlPerturbGenerator().generate(
            _task(DESIGNS[kind]), n=0, seed=seed) if c.origin == "rewrite"
    ]  # fmt: skip
    assert rewrites
    for c in rewrites:
        out = _simulate(tmp_path, kind, c.code, name=c.generator.split(":")[1])
        assert "DONE errors=0" in out, f"{c.generator} differs from the reference:\n{out}\n{c.code}"


@needs_iverilog
def test_the_equivalence_harness_catches_a_real_difference(tmp_path):
    by = {m.name: m for m in MUTATIONS}
    wrong = by["swap_operands"].apply(COMB, _rng("s"))
    assert "DONE errors=0" not in _simulate(tmp_path, "comb", wrong, name="wrong_comb")
    wrong = by["nonblocking_to_blocking"].apply(SEQ, _rng("b"))
    assert "DONE errors=0" not in _simulate(tmp_path, "seq", wrong, name="wrong_seq")


def _simulate(tmp_path: Path, kind: str, code: str, *, name: str) -> str:
    top = TOPS[kind]
    original = rename_modules(DESIGNS[kind], {top: f"orig_{top}"})
    tb = _harness_tb(kind, top=top)
    res = _iverilog(tmp_path, original, code, tb, name=name)
    assert res.returncode == 0, res.stderr + code
    run = subprocess.run(
        ["vvp", "-n", str(tmp_path / f"{name}.vvp")], capture_output=True, text=True, timeout=60
    )
    return run.stdout + run.stderr


def _harness_tb(kind: str, *, top: str, connect_only: bool = False, steps: int = 300) -> str:
    """The reference (renamed `orig_<top>`) and the candidate side by side on the same
    random inputs; every output compared with !== after every input change and clock
    edge. With `connect_only` just the candidate, its ports connected by name."""
    ports = PORTS[kind]
    clock, reset, active = CLOCKED.get(kind, (None, None, 1))
    lines = ["module tb;"]
    for n, (d, w) in ports.items():
        vec = f"[{w - 1}:0] " if w > 1 else ""
        lines += [f"  reg {vec}{n};"] if d == "input" else [f"  wire {vec}{n}_a, {n}_b;"]

    def conn(side: str) -> str:
        return ", ".join(f".{n}({n}{'' if d == 'input' else side})" for n, (d, _w) in ports.items())

    lines.append(f"  {top} dut({conn('_b')});")
    if connect_only:
        return "\n".join([*lines, "endmodule", ""])
    lines.append(f"  orig_{top} golden({conn('_a')});")
    compare = " ".join(
        f'if ({n}_a !== {n}_b) begin errors = errors + 1; $display("MISMATCH {n} %0t %h %h",'
        f" $time, {n}_a, {n}_b); end"
        for n, (d, _w) in ports.items()
        if d == "output"
    )
    drive = " ".join(
        f"{n} = $random(seed);"
        for n, (d, _w) in ports.items()
        if d == "input" and n not in (clock, reset)
    )
    lines += ["  integer seed, i, errors;", "  initial begin", "    seed = 11; errors = 0;"]
    if clock:
        lines.append(f"    {clock} = 0;")
    lines.append(f"    for (i = 0; i < {steps}; i = i + 1) begin")
    lines.append(f"      {drive}")
    if reset:
        # Reset for the first steps, then now and then, so both reset and run paths run.
        lines.append(
            f"      if (i < 3 || i % 37 == 0) {reset} = {active}; else {reset} = {1 - active};"
        )
    lines.append(f"      #1 {compare}")
    if clock:
        lines.append(f"      {clock} = 1; #1 {compare}")
        lines.append(f"      {clock} = 0; #1;")
    lines += ["    end", '    $display("DONE errors=%0d", errors);', "    $finish;", "  end"]
    return "\n".join([*lines, "endmodule", ""])


# --- the catalog ------------------------------------------------------------------------------


def _catalog_tasks() -> list[Task]:
    if not (ROOT / "tasks" / "rtl").is_dir():
        return []
    tasks, _errors = load_catalog(ROOT / "tasks", domains=["rtl"])
    return tasks


@needs_iverilog
def test_catalog_references_and_rewrites_compile(tmp_path):
    tasks = _catalog_tasks()
    if not tasks:
        pytest.skip("no tasks under tasks/rtl yet")
    gen = RtlPerturbGenerator()
    for task in tasks:
        cands = gen.generate(task)
        assert [c.candidate_id for c in gen.generate(task)] == [c.candidate_id for c in cands]
        for c in cands:
            if c.origin in ("reference", "rewrite"):
                res = _iverilog(tmp_path, c.code, name=task.name)
                assert res.returncode == 0, f"{task.name} {c.generator}:\n{res.stderr}"
    produced = sum(v for k, v in gen.stats.items() if k.startswith("perturb:") and
                   k.endswith(".produced"))  # fmt: skip
    assert produced >= 5 * len(tasks)


def test_ids_do_not_depend_on_the_process(tmp_path):
    """String hashing is salted per process; no site choice may depend on set order."""
    script = (
        "import json, sys\n"
        "from generators.perturb.rtl import RtlPerturbGenerator\n"
        "from tests.generators.test_perturb_rtl import DESIGNS, _task\n"
        "ids = [c.candidate_id for d in DESIGNS.values()\n"
        "       for c in RtlPerturbGenerator().generate(_task(d), n=30)]\n"
        "print(json.dumps(ids))\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True,
            env={**os.environ, "PYTHONHASHSEED": str(salt)}, timeout=120,
        ).stdout
        for salt in (1, 2)
    ]  # fmt: skip
    assert runs[0] == runs[1] and len(json.loads(runs[0])) > 50
