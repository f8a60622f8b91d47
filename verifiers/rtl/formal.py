"""Formal equivalence against the reference: the scripts, the miter, and reading results.

Combinational: Yosys `miter -equiv` + `sat` (20-50 ms). `-ignore_gold_x` (the reference's
X bits are don't-cares, as in the testbench) only when the reference writes an X literal:
elsewhere it changes nothing and can cost seconds instead of milliseconds.

Sequential: a Verilog miter (`crucible_miter`) drives the reference and the candidate with
the same inputs, holds reset active in the first cycle (`crucible_init` starts at 0) and
compares outputs from then on, so two designs with different state encodings that behave
the same from reset are equivalent. Yosys turns it into two AIGER models (one frame per
clock cycle when every flop is a posedge flop on the task's clock, otherwise `clk2fflogic`
makes the clock an input): ZERO, every flop powering up 0, and POWERUP, where each flop
of the candidate without an initial value powers up free (`aiger_script`). `yosys-abc`
runs a short `bmc3` on ZERO (short counterexamples for shallow bugs), then `scorr; pdr`
on ZERO (deep bugs and proofs: a bug 200 cycles deep takes ~0.2 s where `sat
-tempinduct` took minutes), and once ZERO is proven (or its difference undecided), `pdr`
on POWERUP: a register that hardware powers up to 0 or 1 and simulation shows as X (where
`===`, `case` or `if` on X can hide it from the testbench) is judged at every value it
can take.

Power-up and the reference. The reference powers up 0 in both models and stays X in the
replay: what depends on its own unset state is a don't-care, as in the testbench. So a
difference counts only where the reference's outputs are defined whatever it powers up
to; one that needs the reference's power-up value is undecided (the gate's verdict stays
the all-zero model's, "unknown" in the metrics).

Parameters. A task whose reference has integer parameters (widths, depths) is checked
again at settings the testbench never instantiates (`sweep`): each setting a whole
equivalence check at the reference's port widths there.

Who decides (the trust boundary). A candidate can print into every log of a tool that
reads its text: Yosys prints an `initial $display(...)` while it reads the design, so a
verdict grepped from a log ("SAT proof finished - no model found: SUCCESS") can be forged
by one line of the candidate. No verdict here comes from a log:

- combinational: `sat -prove ... -verify` makes yosys exit non-zero unless the proof
  succeeds (a timeout too), and `-dump_json cex.json` writes the model only when there is
  one. Proven <=> exit 0; counterexample <=> non-zero exit and a cex.json the harness
  removed before the run; anything else is unknown. The counterexample's values for the
  feedback are read from that JSON, never from the log;
- sequential: `yosys-abc` reads only miter.aig (written by yosys from the harness's miter),
  so no candidate text reaches it at all, and its result is read from `write_status`
  (snl_UNSAT / snl_SAT <engine> <output> <frame> / snl_UNK), a file only ABC writes
  (removed before each run), not from its stdout ("Property proved").

A sequential counterexample is replayed in simulation (X semantics, as the testbench sees
it) by two miters on the same inputs: one powering up all X, one with the candidate's
registers at the counterexample's power-up state (`replay_testbench`). The replay runs the
candidate's code, so it may only add information: a reproduced difference gives the
feedback its expected/got table (shown by the power-up miter alone: `uninitialized_state`,
naming the registers and their values); the counterexample is set aside as undecided
(e.g. it needs a flop the reference never resets to start at a particular value) only when
the replay ran to its own end (its nonce-prefixed END line, exit 0, no limit) and no
difference showed. A replay that does not compile, ends early, crashes or hangs leaves the
formal counterexample standing.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verifiers.rtl.hdl import REF_TOP, code_only

MITER = "crucible_miter"
REPLAY = "crucible_replay"
INIT = "crucible_init"
P_GOLD, P_GATE, P_TRIG = "crucible_gold_", "crucible_gate_", "crucible_trig_"
BMC_FRAMES = 24
SAT_CEX = "cex.json"  # yosys sat's model (WaveJSON), written only when there is one
ABC_STATUS = "abc.status"  # ABC's write_status
ABC_CEX = "cex.txt"
# the candidate's unset flops free at power-up / every flop powering up 0 (aiger_script)
POWERUP_AIG, POWERUP_MAP = "miter.aig", "miter.map"
ZERO_AIG, ZERO_MAP = "miter_z.aig", "miter_z.map"
# what Yosys reads: the sources with `always_comb` as `always @*` (hdl.comb_as_star)
YOSYS_REF, YOSYS_CAND = "ref.y.sv", "cand.y.sv"

_X_LITERAL = re.compile(r"'\s*[sS]?[bBoOhHdD]?\s*[0-9a-fA-F_zZ?]*[xX]")


def run_limits(timeout_s: float) -> dict[str, Any]:
    """A formal tool run's wall clock and CPU budget: the solver's own time limit plus a
    margin, and a CPU budget as long, so that a run that had the CPU all along and met the
    wall is the candidate's (undecided), one starved of it the machine's
    (`verifiers.sandbox.Stop`: infra, retried)."""
    # the margin covers reading and elaborating before the solver's own clock starts; a
    # solver that does not stop on its own clock is stopped here, barely later
    wall = timeout_s + 1 + 0.1 * timeout_s
    return {"timeout_s": wall, "cpu_s": math.ceil(wall)}


def reference_has_x(reference: str) -> bool:
    return bool(_X_LITERAL.search(code_only(reference)))


# --- combinational ------------------------------------------------------------------------


def comb_script(
    top: str, ignore_gold_x: bool, timeout_s: float, params: Mapping[str, int] | None = None
) -> str:
    gx = " -ignore_gold_x" if ignore_gold_x else ""
    return "; ".join(
        (
            f"read_verilog -sv {YOSYS_REF}",
            f"read_verilog -sv {YOSYS_CAND}",
            *_chparam(params, REF_TOP, top),
            "proc",
            # proc turns case tables into ROMs, which sat cannot import: map them to logic
            "memory",
            "opt_clean",
            f"miter -equiv{gx} -flatten -make_outputs {REF_TOP} {top} crucible_comb",
            "hierarchy -top crucible_comb",
            # -verify: a non-zero exit unless proven; -dump_json: the model, only if one
            f"sat -prove trigger 0 -verify -show-inputs -show-outputs -dump_json {SAT_CEX}"
            f" -timeout {max(1, int(timeout_s))} crucible_comb",
        )
    )


@dataclass
class Outcome:
    verdict: str  # "proven" | "counterexample" | "unknown" ("undecided": formal.py's own)
    detail: str = ""
    feedback: str = ""
    depth: int | None = None
    code: str = "equivalence_counterexample"  # a counterexample's taxonomy code


def sat_outcome(
    returncode: int, cex_json: str | None, top_ports: Sequence[Mapping[str, Any]]
) -> Outcome:
    """The verdict of `sat -prove -verify -dump_json`: from yosys's exit status and the
    model file it wrote (None: no such file), never from its log."""
    if returncode == 0 and cex_json is None:
        return Outcome("proven", "combinational equivalence proven (yosys sat)")
    if returncode == 0 or cex_json is None:
        return Outcome("unknown", "sat gave no answer (timeout or no miter)")
    values = _wavejson_values(cex_json)
    if values is None:
        return Outcome("unknown", "sat wrote a model that does not parse")
    inputs = [p["name"] for p in top_ports if p.get("direction") == "input"]
    outputs = [p["name"] for p in top_ports if p.get("direction") == "output"]
    shown_in = " ".join(f"{n}={values.get('in_' + n, '?')}" for n in inputs)
    diffs = [
        f"  output {n}: reference {values.get('gold_' + n, '?')}, candidate "
        f"{values.get('gate_' + n, '?')}"
        for n in outputs
        if values.get("gold_" + n) != values.get("gate_" + n)
    ]
    fb = (
        "Formal equivalence check (combinational): the candidate differs from the reference "
        f"for inputs {shown_in} (hex):\n" + "\n".join(diffs)
    )
    return Outcome("counterexample", f"counterexample: {shown_in}", fb)


def _wavejson_values(text: str) -> dict[str, str] | None:
    """Signal -> hex value at step 0 of yosys's WaveJSON model."""
    try:
        signals = json.loads(text)["signal"]
    except (ValueError, KeyError, TypeError):
        return None
    values = {}
    for sig in signals if isinstance(signals, list) else ():
        if not isinstance(sig, dict) or not isinstance(sig.get("name"), str):
            continue
        data, wave = sig.get("data") or [], str(sig.get("wave", ""))
        bits = str(data[0]) if data else wave[:1]
        values[sig["name"]] = _bits_hex(bits)
    return values


def _bits_hex(bits: str) -> str:
    if bits and set(bits) <= {"0", "1"}:
        return format(int(bits, 2), "x")
    return bits.lower() or "?"


def _chparam(params: Mapping[str, int] | None, *modules: str) -> list[str]:
    mods = " ".join(modules)
    return [f"chparam -set {k} {v} {mods}" for k, v in (params or {}).items()]


# --- parameters the testbench leaves at their defaults -----------------------------------

SWEEP_MAX = 64  # a parameter's largest swept value (widths and depths beyond cost proofs)


def sweep(defaults: Mapping[str, str], seed: str) -> list[dict[str, int]]:
    """Parameter settings to check besides the defaults the testbench instantiates: for
    each parameter with a plain integer default N (a width, a depth), one at a time, 1 and
    a value drawn from N+1..2N seeded by `seed` (the task and the verifier version: a
    candidate meets the same values on every run). Each setting is a whole equivalence
    check, exhaustive over the inputs: two per parameter, one small and one large."""
    rng = random.Random(seed)
    out = []
    for name, text in defaults.items():
        if not re.fullmatch(r"\d+", text) or not 0 < int(text) <= SWEEP_MAX // 2:
            continue
        n = int(text)
        for value in dict.fromkeys((1, rng.randint(n + 1, 2 * n))):
            if value != n:
                out.append({name: value})
    return out


def params_text(params: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def ports_script(settings: Sequence[Mapping[str, int]]) -> str:
    """The reference alone at each setting: its ports (ports_<i>.json, the widths there).
    One setting the task's own design does not take stops the run (a non-zero exit):
    then one run per setting says which."""
    steps = [f"read_verilog -sv {YOSYS_REF}", "design -save crucible_ref"]
    for i, params in enumerate(settings):
        steps += [
            "design -load crucible_ref",
            *_chparam(params, REF_TOP),
            f"hierarchy -check -top {REF_TOP}",
            "proc",  # write_json refuses processes
            f"write_json {ports_json(i)}",
        ]
    return "; ".join(steps)


def ports_json(i: int) -> str:
    return f"ports_{i}.json"


def with_widths(interface: Mapping[str, Any], ports_json: str) -> dict[str, Any] | None:
    """`interface` with each port's width as the reference has it in `ports_json`."""
    try:
        ports = json.loads(ports_json)["modules"][REF_TOP]["ports"]
        width = {n: len(p["bits"]) for n, p in ports.items()}
    except (ValueError, KeyError, TypeError):
        return None
    out = [dict(p, width=width.get(p["name"], p.get("width", 1))) for p in interface["ports"]]
    return {**interface, "ports": out}


# --- sequential ---------------------------------------------------------------------------


def _rng(width: int) -> str:
    return f"[{width - 1}:0] " if width > 1 else ""


def seq_miter(interface: Mapping[str, Any], params: Mapping[str, int] | None = None) -> str:
    """The miter module: shared inputs, reset forced in the first cycle, one trigger output
    per interface output (so ABC says which output differs); both designs at `params`."""
    top = interface["top"]
    ports = list(interface.get("ports") or ())
    clock, reset = interface.get("clock"), interface.get("reset")
    active = "1'b0" if interface.get("reset_active", "high") == "low" else "1'b1"
    ins = [p for p in ports if p["direction"] == "input"]
    outs = [p for p in ports if p["direction"] == "output"]
    decl = [f"input {_rng(p.get('width', 1))}{p['name']}" for p in ins]
    decl += [f"output {P_TRIG}{p['name']}" for p in outs]
    body = [f"module {MITER}(" + ", ".join(decl) + ");"]
    body.append(f"  reg {INIT} = 1'b0;")
    if clock:
        body.append(f"  always @(posedge {clock}) {INIT} <= 1'b1;")
    rst_net = {}
    if reset and clock:
        body.append(f"  wire crucible_rst = {INIT} ? {reset} : {active};")
        rst_net[reset] = "crucible_rst"
    for p in outs:
        w = _rng(p.get("width", 1))
        body.append(f"  wire {w}{P_GOLD}{p['name']};")
        body.append(f"  wire {w}{P_GATE}{p['name']};")
    over = ", ".join(f".{k}({v})" for k, v in (params or {}).items())
    over = f" #({over})" if over else ""
    for inst, mod, pre in (("gold", REF_TOP, P_GOLD), ("gate", top, P_GATE)):
        conns = [f".{p['name']}({rst_net.get(p['name'], p['name'])})" for p in ins]
        conns += [f".{p['name']}({pre}{p['name']})" for p in outs]
        body.append(f"  {mod}{over} {inst}(" + ", ".join(conns) + ");")
    # compared only once reset has been applied; without a reset, from the first cycle.
    # (g ^ c ^ g) !== g: the testbench's rule, an X of the reference is a don't-care in
    # the replay; in synthesis there is no X and it is plain inequality.
    gate_on = INIT if (reset and clock) else "1'b1"
    for p in outs:
        g, c = P_GOLD + p["name"], P_GATE + p["name"]
        body.append(f"  assign {P_TRIG}{p['name']} = {gate_on} && (({g} ^ {c} ^ {g}) !== {g});")
    body.append("endmodule")
    return "\n".join(body) + "\n"


def prep_script() -> str:
    """Elaborate the miter to coarse cells and dump it as JSON, to see how it is clocked."""
    return "; ".join(
        (
            f"read_verilog -sv {YOSYS_REF}",
            "read_verilog -sv miter.sv",
            f"read_verilog -sv {YOSYS_CAND}",
            f"hierarchy -check -top {MITER}",
            "proc",
            "flatten",
            "opt_clean",
            "memory",
            "opt_clean",
            "write_rtlil miter_pre.il",
            "write_json miter_pre.json",
        )
    )


_LATCHES = ("$dlatch", "$adlatch", "$dlatchsr", "$_DLATCH")


def single_posedge_clock(netlist_json: str, clock: str | None) -> bool:
    """Every flop is clocked on the rising edge of the task's clock port (and there is no
    latch): then one AIGER frame is one clock cycle."""
    mod = json.loads(netlist_json)["modules"][MITER]
    clk_bits = mod["ports"].get(clock, {}).get("bits") if clock else None
    for cell in mod["cells"].values():
        kind = cell["type"]
        if kind.startswith(_LATCHES) or kind == "$ff":
            return False
        if "CLK" in cell.get("connections", {}):
            pol = str(cell.get("parameters", {}).get("CLK_POLARITY", "1"))
            if cell["connections"]["CLK"] != clk_bits or not pol.endswith("1"):
                return False
    return True


def aiger_script(cycle_frames: bool) -> str:
    """Two models of one miter. POWERUP (miter.aig): each flop of the candidate without an
    initial value powers up free (write_aiger -zinit gives it an input read at frame 0,
    an `init` line of the map), and `opt -keepdc` keeps a flop that only holds its
    power-up value (plain opt makes it a constant X and picks whatever value suits the
    logic after it: a design then judged by a choice of the optimiser). ZERO
    (miter_z.aig): every flop powers up 0, the optimiser free, the model this gate had
    before the power-up was free. The reference powers up 0 in both: its own unset
    flops are X in the testbench, what depends on them a don't-care, and the replay
    leaves them X."""
    # the candidate's cells by their source file: `src` is set by the frontend and the
    # anti-cheat allow-list keeps it out of candidate text. With one frame per cycle after
    # opt (which merges a reference flop and an identical one of the candidate: one flop,
    # as free as the candidate's, the same in both); clk2fflogic's cells have no `src`,
    # so before it (it carries the initial values over, the candidate's free ones as X)
    zinit_others = f"zinit -all t:* a:src=*{YOSYS_CAND}* %d"

    def model(keepdc: bool) -> list[str]:
        # techmap, not synth: ABC needs gates, not a good netlist (3x faster, same pdr time)
        opt = "opt -fast -keepdc" if keepdc else "opt -fast"
        steps = [opt, "techmap", opt]
        if cycle_frames:
            steps.append("async2sync")
        return steps

    pre = ["read_rtlil miter_pre.il"]
    tail = ["dffunmap", "aigmap", "setundef -zero", "opt_clean"]
    powerup = model(keepdc=True)
    if cycle_frames:
        powerup.append(zinit_others)
    else:
        powerup = [zinit_others, "clk2fflogic", *powerup]
    zero = model(keepdc=False) if cycle_frames else ["clk2fflogic", *model(keepdc=False)]
    steps = [
        *pre,
        "design -save crucible_pre",
        *powerup,
        *tail,
        # -vmap: clk2fflogic's flops have internal names (an `init` line names one)
        f"write_aiger -zinit -vmap {POWERUP_MAP} {POWERUP_AIG}",
        "design -load crucible_pre",
        *zero,
        "zinit -all",
        *tail,
        f"write_aiger -zinit -map {ZERO_MAP} {ZERO_AIG}",
    ]
    return "; ".join(steps)


def abc_bmc(timeout_s: float, aig: str = POWERUP_AIG) -> str:
    return (
        f"read_aiger {aig}; bmc3 -F {BMC_FRAMES} -T {max(1, int(timeout_s))}; "
        f"write_status {ABC_STATUS}; write_cex -n {ABC_CEX}"
    )


def abc_pdr(timeout_s: float, aig: str = POWERUP_AIG) -> str:
    # scorr first: it merges registers that provably agree (two encodings of one state), which
    # leaves pdr a trivial miter where alone it must learn the whole encoding (a Gray-coded
    # counter vs a binary one: >10 s without, 0.01 s with); it keeps the inputs, so a
    # counterexample is still a trace of the original miter (and is replayed anyway).
    return (
        f"read_aiger {aig}; scorr; pdr -T {max(1, int(timeout_s))}; "
        f"write_status {ABC_STATUS}; write_cex -n {ABC_CEX}"
    )


_STATUS = re.compile(r"^snl_(?P<kind>SAT|UNSAT|UNK)\b(?P<rest>.*)$", re.M)


def parse_status(status: str | None) -> tuple[str, int | None, int | None]:
    """("proven" | "counterexample" | "unknown", failing output index, frame) from ABC's
    `write_status` file (None: ABC wrote none). A counterexample line reads
    `snl_SAT <engine> <...> <output> <frame>`."""
    m = _STATUS.search(status or "")
    if not m or m["kind"] == "UNK":
        return "unknown", None, None
    if m["kind"] == "UNSAT":
        return "proven", None, None
    # bmc3 writes engine -1 when it stops at frame 0
    nums = [int(w) for w in m["rest"].split() if re.fullmatch(r"-?\d+", w)]
    out_idx, frame = (nums[-2], nums[-1]) if len(nums) >= 3 else (None, None)
    return "counterexample", out_idx, frame


def read_map(map_text: str) -> tuple[dict[int, tuple[str, int]], list[str]]:
    """AIGER input index -> (port, bit); output index -> trigger name."""
    inputs: dict[int, tuple[str, int]] = {}
    outputs: dict[int, str] = {}
    for line in map_text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "input":
            inputs[int(parts[1])] = (parts[3], int(parts[2]))
        elif len(parts) == 4 and parts[0] == "output":
            outputs[int(parts[1])] = parts[3]
    return inputs, [outputs[k] for k in sorted(outputs)]


# a register of the candidate a Verilog hierarchical name can reach from the miter:
# plain identifiers and index selects (generate blocks, memory words), no escaped or
# yosys-internal ($) names
_HIER_NAME = re.compile(r"gate(?:\.[A-Za-z_]\w*(?:\[\d+\])*)+")
# the flop clk2fflogic keeps a register's state in (yosys 0.23's name for it)
_SAMPLED = re.compile(r"\$auto\$clk2fflogic\.cc:\d+:sample_data\$\\(?P<name>.+)#sampled\$\d+")


def read_inits(map_text: str) -> dict[int, list[tuple[str, int]]]:
    """AIGER input index of a free power-up value -> the candidate registers (every alias
    of the flop's net a hierarchical name reaches, and its bit) it initialises."""
    inits: dict[int, list[tuple[str, int]]] = {}
    for line in map_text.splitlines():
        parts = line.split()
        if len(parts) != 4 or parts[0] != "init":
            continue
        name = m["name"] if (m := _SAMPLED.fullmatch(parts[3])) else parts[3]
        if _HIER_NAME.fullmatch(name):
            inits.setdefault(int(parts[1]), []).append((name, int(parts[2])))
    return inits


def read_powerup(
    cex_text: str | None, inits: Mapping[int, Sequence[tuple[str, int]]]
) -> dict[str, dict[int, int]]:
    """The power-up state of a counterexample: register -> {bit: value} at frame 0 (a
    trace of the ZERO model, `cex_text` None: every one of them 0)."""
    bits = {}
    if cex_text is not None:
        for m in re.finditer(r"^pi(\d+)@0=([01])", cex_text, re.M):
            bits[int(m[1])] = int(m[2])
    state: dict[str, dict[int, int]] = {}
    for idx, names in inits.items():
        for name, pos in names:
            state.setdefault(name, {})[pos] = bits.get(idx, 0)
    return state


def powerup_summary(state: Mapping[str, Mapping[int, int]], limit: int = 8) -> str:
    """`count=0x7 armed=0x1`: the registers as the candidate names them, those powering
    up non-zero first."""
    vals = {
        n.removeprefix("gate."): sum(v << b for b, v in bits.items()) for n, bits in state.items()
    }
    order = sorted(vals, key=lambda n: (vals[n] == 0, n))
    text = " ".join(f"{n}={vals[n]:#x}" for n in order[:limit])
    return text + (f" (and {len(order) - limit} more)" if len(order) > limit else "")


def read_cex(cex_text: str, inputs: Mapping[int, tuple[str, int]]) -> list[dict[str, int]]:
    """The input trace: one {port: value} per frame."""
    frames: dict[int, dict[str, int]] = {}
    for m in re.finditer(r"^pi(\d+)@(\d+)=([01])", cex_text, re.M):
        idx, frame, bit = int(m[1]), int(m[2]), int(m[3])
        if idx not in inputs:
            continue
        name, pos = inputs[idx]
        values = frames.setdefault(frame, {})
        values[name] = values.get(name, 0) | (bit << pos)
    return [frames.get(k, {}) for k in range(max(frames) + 1)] if frames else []


def replay_testbench(
    interface: Mapping[str, Any],
    trace: Sequence[Mapping[str, int]],
    cycle_frames: bool,
    token: str,
    powerup: Mapping[str, Mapping[int, int]] | None = None,
) -> tuple[str, dict[int, str]]:
    """Drive the miter with the trace in simulation; print every frame's differences.
    Two miters see the same inputs: `m` powers up as the testbench does (every unset
    register X), `p` with the candidate's registers set to the counterexample's power-up
    state (`powerup`), the reference's left X, so a difference of `p` alone is one the
    reference's defined outputs show against a power-up state the hardware can take.
    Returns the text and, by line number, the register each power-up line sets (a name
    the compiler refuses, e.g. a net alias of a flop, is dropped by line)."""
    ports = list(interface.get("ports") or ())
    clock = interface.get("clock")
    ins = [p for p in ports if p["direction"] == "input"]
    outs = [p for p in ports if p["direction"] == "output"]
    lines = [f"module {REPLAY};"]
    for p in ins:
        # clk2fflogic's flops see no edge in frame 0 (their sampled clock starts at the
        # level they trigger away from); a declaration's value makes no event, where
        # X -> 0 at time 0 is a negedge in simulation
        start = ""
        if p["name"] == clock and not cycle_frames and trace:
            start = f" = 1'b{trace[0].get(clock, 0) & 1}"
        lines.append(f"  reg {_rng(p.get('width', 1))}{p['name']}{start};")
    insts = [("m", "t_", "CEX")] + ([("p", "tp_", "PWR")] if powerup else [])
    for _inst, pre, _tag in insts:
        for p in outs:
            lines.append(f"  wire {pre}{p['name']};")
    for inst, pre, _tag in insts:
        conns = [f".{p['name']}({p['name']})" for p in ins]
        conns += [f".{P_TRIG}{p['name']}({pre}{p['name']})" for p in outs]
        lines.append(f"  {MITER} {inst}(" + ", ".join(conns) + ");")
    shown = [p for p in ins if p["name"] != clock]
    fmt = " ".join(f"{p['name']}=%h" for p in shown)
    args = "".join(f", {p['name']}" for p in shown)
    lines.append("  task show(input integer f);")
    lines.append("  begin")
    for inst, pre, tag in insts:
        for p in outs:
            n = p["name"]
            lines.append(
                f"    if ({pre}{n} === 1'b1) $display(\"{token} {tag} frame=%0d output={n} "
                f'expected=%h got=%h inputs: {fmt}", f, {inst}.{P_GOLD}{n}, '
                f"{inst}.{P_GATE}{n}{args});"
            )
    lines += ["  end", "  endtask", "  initial begin"]
    # before any input moves (a clock X -> 1 at time 0 is an edge): the unset bits of a
    # register stay X, the rest take the counterexample's values
    setters: dict[int, str] = {}
    for name, bits in sorted((powerup or {}).items()):
        width = max(bits) + 1
        mask = sum(1 << b for b in bits)
        value = sum(v << b for b, v in bits.items())
        setters[len(lines) + 1] = name
        reg = f"p.{name}"
        lines.append(f"    {reg} = ({reg} & ~{width}'h{mask:x}) | {width}'h{value:x};")
    if clock and cycle_frames:
        lines.append(f"    {clock} = 1'b0;")
    for f, frame in enumerate(trace):
        for p in ins:
            if p["name"] == clock and cycle_frames:
                continue
            lines.append(f"    {p['name']} = {p.get('width', 1)}'d{frame.get(p['name'], 0)};")
        lines.append(f"    #1 show({f});")
        if clock and cycle_frames:
            lines.append(f"    #1 {clock} = 1'b1;")
            lines.append(f"    #1 {clock} = 1'b0;")
        else:
            lines.append("    #1;")
    lines += [f'    $display("{token} END");', "  end", "endmodule"]
    return "\n".join(lines) + "\n", setters


_CEX_LINE = re.compile(
    r"(?P<kind>CEX|PWR) frame=(?P<frame>\d+) output=(?P<output>\S+) expected=(?P<expected>\S+) "
    r"got=(?P<got>\S+) inputs:\s*(?P<inputs>.*)$"
)


def parse_replay(stdout: str, token: str) -> tuple[list[dict[str, str]], bool]:
    """The differences the replay printed, and whether it reached its own END line. Only
    lines carrying the replay's nonce count, wherever in the line the nonce stands (the
    candidate may leave a partial line of its own in front of it)."""
    rows, ended = [], False
    for raw in stdout.splitlines():
        at = raw.find(token)
        if at < 0:
            continue
        line = raw[at + len(token) :].strip()
        if line == "END":
            ended = True
        elif m := _CEX_LINE.match(line):
            rows.append(m.groupdict())
    return rows, ended


def trace_summary(
    trace: Sequence[Mapping[str, int]],
    clock: str | None,
    forced: Mapping[str, int],
    limit: int = 12,
) -> str:
    """The input trace, runs of identical cycles folded (`cycles 1-199: en=1 rst=0`); in
    cycle 0 the miter holds reset (`forced`) whatever the input says."""
    runs: list[tuple[int, int, str]] = []
    for f, frame in enumerate(trace):
        values = {**frame, **forced} if f == 0 else frame
        text = " ".join(f"{k}={v:x}" for k, v in sorted(values.items()) if k != clock)
        if runs and runs[-1][2] == text:
            runs[-1] = (runs[-1][0], f, text)
        else:
            runs.append((f, f, text))
    out = [f"  cycle {a}: {t}" if a == b else f"  cycles {a}-{b}: {t}" for a, b, t in runs]
    if len(out) > limit:
        cut = f"  ... {len(out) - limit} more runs ..."
        out = [*out[: limit // 2], cut, *out[-limit // 2 :]]
    return "\n".join(out)


def forced_reset(interface: Mapping[str, Any]) -> dict[str, int]:
    reset = interface.get("reset")
    if not (reset and interface.get("clock")):
        return {}
    return {reset: 0 if interface.get("reset_active", "high") == "low" else 1}
