"""read_ports: the ports Yosys elaborates, for SystemVerilog its `proc` pass refuses too,
and cached on disk so that loading the catalog elaborates each reference once."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from verifiers.rtl import ports
from verifiers.rtl.ports import PortReadError, read_ports

pytestmark = pytest.mark.skipif(
    shutil.which("yosys") is None, reason="install yosys: apt-get install yosys"
)

# Yosys 0.23's `proc` refuses this ("Latch inferred for signal ... from always_comb
# process"): the case has no default
INCOMPLETE_CASE = """
module dec(input [1:0] s, output logic [2:0] z);
  always_comb begin
    case (s)
      2'd0: z = 3'd1;
      2'd1: z = 3'd2;
    endcase
  end
endmodule
"""
PARAMETERISED = """
module m #(parameter W=4)(input [W-1:0] a, output [W:0] y);
  assign y = a + 1;
endmodule
"""


def _yosys_runs(monkeypatch) -> list[list[str]]:
    runs: list[list[str]] = []
    real = subprocess.run

    def counting(cmd, *args, **kwargs):
        runs.append(cmd)
        return real(cmd, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting)
    return runs


def test_always_comb_with_an_incomplete_case_has_its_ports(tmp_path):
    assert read_ports(INCOMPLETE_CASE, "dec", cache_dir=tmp_path) == [
        {"name": "s", "direction": "input", "width": 2},
        {"name": "z", "direction": "output", "width": 3},
    ]


def test_widths_follow_the_default_parameters(tmp_path):
    assert read_ports(PARAMETERISED, "m", cache_dir=tmp_path) == [
        {"name": "a", "direction": "input", "width": 4},
        {"name": "y", "direction": "output", "width": 5},
    ]


def test_the_second_read_comes_from_the_cache(tmp_path, monkeypatch):
    first = read_ports(PARAMETERISED, "m", cache_dir=tmp_path)

    def yosys_must_not_run(*args, **kwargs):
        raise AssertionError("yosys ran for a cached design")

    monkeypatch.setattr(subprocess, "run", yosys_must_not_run)
    assert read_ports(PARAMETERISED, "m", cache_dir=tmp_path) == first


def test_another_top_or_source_is_another_entry(tmp_path, monkeypatch):
    read_ports(PARAMETERISED, "m", cache_dir=tmp_path)
    runs = _yosys_runs(monkeypatch)
    read_ports(PARAMETERISED.replace("W=4", "W=6"), "m", cache_dir=tmp_path)
    assert len(runs) == 1 and len(list(tmp_path.glob("*.json"))) == 2


@pytest.mark.parametrize(
    "garbage",
    ["{not json", "", json.dumps({"key": "x", "ports": []}), json.dumps([1, 2])],
    ids=["torn", "empty", "foreign-key", "not-an-entry"],
)
def test_a_corrupt_entry_is_recomputed_and_rewritten(tmp_path, monkeypatch, garbage):
    want = read_ports(INCOMPLETE_CASE, "dec", cache_dir=tmp_path)
    (entry,) = tmp_path.glob("*.json")
    entry.write_text(garbage)
    runs = _yosys_runs(monkeypatch)
    assert read_ports(INCOMPLETE_CASE, "dec", cache_dir=tmp_path) == want
    assert len(runs) == 1
    assert json.loads(entry.read_text())["ports"] == want


def test_an_unwritable_cache_only_costs_the_run(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    for _ in range(2):
        assert [p["name"] for p in read_ports(PARAMETERISED, "m", cache_dir=not_a_dir)] == [
            "a",
            "y",
        ]
    assert list(tmp_path.iterdir()) == [not_a_dir]


def test_a_failure_is_raised_and_not_cached(tmp_path):
    for _ in range(2):
        with pytest.raises(PortReadError, match="nope"):
            read_ports(PARAMETERISED, "nope", cache_dir=tmp_path)
    assert not list(tmp_path.iterdir())


def test_the_cache_is_under_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert ports.default_cache_dir() == tmp_path / "crucible" / "ports"
    read_ports(PARAMETERISED, "m")
    assert len(list((tmp_path / "crucible" / "ports").glob("*.json"))) == 1
