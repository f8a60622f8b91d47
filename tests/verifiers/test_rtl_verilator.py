"""The second simulator (verifiers/rtl/verilator.py): Verilator judges a task that names it
or whose reference is slow in iverilog, exactly as vvp does; for a sample of candidates
both run, and a disagreement is a finding that leaves the verdict alone. Real tools, real
sandbox; one verifier for the module, so the runtime library is built once (~7 s) and
each design's build costs ~1.5 s."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest

from tests.verifiers.test_rtl_verifier import ADD, ADD_REF, CNT, CNT_REF, add, check
from tests.verifiers.test_rtl_verifier import pytestmark as tools_mark
from verifiers.contract import Limits, Status
from verifiers.rtl import verilator
from verifiers.rtl.settings import RtlSettings
from verifiers.rtl.verifier import SIM_ONLY, RtlVerifier
from verifiers.sandbox import Sandbox, SandboxSession
from verifiers.settings import SettingsError, settings_for

pytestmark = [
    tools_mark,
    pytest.mark.skipif(
        bool(verilator.missing()), reason=f"needs a verilator build: {verilator.INSTALL}"
    ),
]

FAST = Limits(gates=SIM_ONLY)
VL_ADD = dataclasses.replace(ADD, harness={**ADD.harness, "simulator": "verilator"})
VL_CNT = dataclasses.replace(CNT, harness={**CNT.harness, "simulator": "verilator"})
SLOW_ADD = dataclasses.replace(ADD, harness={**ADD.harness, "ref_cost": {"simulate": 5.0}})

# A race: `n` is written with a blocking assignment in one always block and read by another
# on the same edge. iverilog 11 runs the reader first (q takes the stale n: 47 of 58
# samples mismatch); verilator 5.006 orders the writer first (a correct counter).
RACE_CNT = """module cnt(input clk, input rst, input en, output reg [7:0] q);
  reg [7:0] n;
  always @(posedge clk) n = q + 8'd1;
  always @(posedge clk) if (rst) q <= 8'd0; else if (en) q <= n;
endmodule
"""
# a switch primitive: iverilog simulates it, verilator 5.006 does not build it
TRAN_ADD = add("  wire u, w;\n  tran t(u, w);\n  assign y = a + b;")


@pytest.fixture(scope="module")
def vl() -> RtlVerifier:
    return RtlVerifier(settings={"cross_check_rate": 1.0})


def test_a_task_that_names_verilator_is_judged_by_it(vl):
    v = check(vl.verify(VL_ADD, ADD_REF, FAST), Status.PASS)
    assert v.metrics["simulator"] == "verilator"
    assert "simulator_fallback" not in v.metrics
    assert f"./{verilator.BINARY}" in [r["argv0"] for r in v.metrics["tool_runs"]]
    assert v.metrics["sim_cross_check"]["agree"] is True
    v = check(
        vl.verify(VL_ADD, add("  assign y = a - b;"), FAST), Status.WRONG_ANSWER, "sim_mismatch"
    )
    assert v.metrics["simulator"] == "verilator" and v.metrics["sim_mismatches"] > 0
    assert "expected" in v.feedback  # the testbench's mismatch table, as from vvp


def test_auto_picks_verilator_for_a_slow_reference_only():
    def pick(harness, ref=ADD_REF):
        return verilator.choose(harness, ref)

    assert pick({}) == "iverilog"
    assert pick({"ref_cost": {"simulate": 0.5}}) == "iverilog"
    assert pick({"ref_cost": {"simulate": verilator.AUTO_ABOVE_S}}) == "verilator"
    assert pick({"simulator": "auto", "ref_cost": {"simulate": 30.0}}) == "verilator"
    assert pick({"simulator": "iverilog", "ref_cost": {"simulate": 30.0}}) == "iverilog"
    assert pick({"simulator": "verilator"}) == "verilator"
    # a reference with don't-care X bits needs four states, however slow it is
    x_ref = ADD_REF.replace("a + b", "a[0] ? a + b : 5'bx")
    assert pick({"ref_cost": {"simulate": 30.0}}, x_ref) == "iverilog"


def test_auto_mode_runs_verilator_for_a_slow_reference(vl):
    v = check(vl.verify(SLOW_ADD, ADD_REF, FAST), Status.PASS)
    assert v.metrics["simulator"] == "verilator"
    v = check(vl.verify(ADD, ADD_REF, FAST), Status.PASS)
    assert v.metrics["simulator"] == "iverilog"
    assert v.metrics["sim_cross_check"] == {
        "simulator": "verilator",
        "mismatches": 0,
        "agree": True,
        "detail": "exit 0, 0 of 40 samples mismatch",
    }


def test_a_race_is_a_disagreement_and_the_verdict_stays_the_deciders(vl):
    # iverilog decides: the race fails, and verilator's pass is the finding
    check(vl.verify(CNT, CNT_REF, FAST), Status.PASS)
    v = check(vl.verify(CNT, RACE_CNT, FAST), Status.WRONG_ANSWER, "sim_mismatch")
    assert v.metrics["simulator"] == "iverilog" and v.metrics["sim_disagreement"] is True
    cross = v.metrics["sim_cross_check"]
    assert cross["simulator"] == "verilator" and cross["mismatches"] == 0
    assert cross["agree"] is False
    assert "Simulators disagree" in v.feedback and "race" in v.feedback
    # verilator decides: the same race passes, iverilog's mismatches are the finding
    v = check(vl.verify(VL_CNT, RACE_CNT, FAST), Status.PASS)
    assert v.metrics["sim_disagreement"] is True
    assert v.metrics["sim_cross_check"]["simulator"] == "iverilog"
    assert v.metrics["sim_cross_check"]["mismatches"] > 0
    assert "Simulators disagree" in v.feedback


def test_a_design_verilator_cannot_build_is_judged_by_iverilog(vl):
    v = check(vl.verify(VL_ADD, TRAN_ADD, FAST), Status.PASS)
    assert v.metrics["simulator"] == "iverilog"
    assert "Unsupported" in v.metrics["simulator_fallback"]
    assert v.metrics["sim_cross_check"]["agree"] is None  # no second build is tried
    assert "sim_disagreement" not in v.metrics


def test_the_model_runs_with_no_harness_source_on_disk(vl, monkeypatch):
    """The generated C++ quotes tb.sv (the nonce) and ref.sv: when the model runs the
    design, only the model itself and vvp's compiled file hold the nonce."""
    seen: dict = {}
    real = Sandbox.run

    def look(argv, workdir):
        if argv[0] == "verilator_bin" and "tb.sv" in argv:
            tb = (workdir / "tb.sv").read_text()
            seen["nonce"] = re.search(r"CRUCIBLE_[0-9a-f]{16}", tb)[0].encode()
        if argv[0] == f"./{verilator.BINARY}":
            seen["files"] = {
                str(p.relative_to(workdir)): p.read_bytes()
                for p in workdir.rglob("*")
                if p.is_file() and not p.is_symlink()
            }

    def spy(self, argv, workdir, **kw):
        look(argv, workdir)
        return real(self, argv, workdir, **kw)

    def spy_session(self, argv, **kw):  # the candidate's runs share one sandbox
        look(argv, self.workdir)
        return real_session(self, argv, **kw)

    real_session = SandboxSession.run
    monkeypatch.setattr(Sandbox, "run", spy)
    monkeypatch.setattr(SandboxSession, "run", spy_session)
    check(vl.verify(VL_ADD, ADD_REF, FAST), Status.PASS)
    files = seen["files"]
    assert not {"tb.sv", "ref.sv", verilator.RUNTIME} & set(files)
    assert not [f for f in files if f.startswith(verilator.MDIR + "/")]
    holders = {name for name, data in files.items() if seen["nonce"] in data}
    assert holders == {verilator.BINARY, "sim.vvp"}


def test_the_cross_check_sample_is_drawn_from_the_candidate():
    codes = [f"module m{i}; endmodule" for i in range(2000)]
    share = sum(verilator.sampled("t", c, 0.25) for c in codes) / len(codes)
    assert 0.21 < share < 0.29
    assert [verilator.sampled("t", c, 0.25) for c in codes[:50]] == [
        verilator.sampled("t", c, 0.25) for c in codes[:50]
    ]
    assert not any(verilator.sampled("t", c, 0.0) for c in codes[:50])
    assert all(verilator.sampled("t", c, 1.0) for c in codes[:50])


def test_settings_hold_a_rate_between_0_and_1():
    assert settings_for("rtl", {"cross_check_rate": 1}) == RtlSettings(cross_check_rate=1.0)
    for bad in (1.5, -0.1, math.nan):
        with pytest.raises(SettingsError, match="cross_check_rate must be in"):
            RtlSettings(cross_check_rate=bad)
    with pytest.raises(SettingsError, match="cross_check_rate must be in"):
        settings_for("rtl", {"cross_check_rate": 1.5})
    with pytest.raises(SettingsError, match="known: cross_check_rate"):
        settings_for("rtl", {"workers": 1})
    assert RtlVerifier(cross_check_rate=0.5).settings.recorded() == {"cross_check_rate": 0.5}
