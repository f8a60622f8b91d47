"""The RTL verifier: Verilog / SystemVerilog candidates against a testbench and a reference.

Gates, in order: `static` (anti-cheat, always), `compile` (iverilog: testbench, reference,
UNIT_SHIM and candidate in one compilation unit, as the benchmarks' harnesses compile),
`lint` (verilator, a quality signal that never fails; delays and latches are findings),
`simulate` (vvp, or a Verilator model for a slow reference (verilator.py), the
testbench's nonce-prefixed report; a sample of candidates is cross-checked on the other
simulator), `synthesize` (yosys onto cells.lib: cells, area; sim-only constructs and
multiple drivers are `unsynthesizable`; output bits the reference leaves X are don't-care),
`equivalence` (yosys sat for combinational tasks, ABC bmc3 + pdr on an AIGER miter for
sequential ones). A candidate passes when it compiles, simulates without mismatch,
synthesizes and is not proven inequivalent: an undecided proof is recorded, not held
against it.

Every tool run on candidate text goes through the sandbox (`ctx.run`), inside which the
work dir is /work: every path below is relative to it.

The trust boundary, in this verifier:

- no verdict is read from text the candidate can write. The testbench's report is found by
  a per-run nonce (anywhere in a line) the candidate cannot learn: it may not touch files
  (the anti-cheat allow-list) nor name the testbench's scopes, and ref.sv / tb.sv exist in
  the work dir only while a tool that does not run the design (iverilog, yosys, the
  Verilator build, whose generated sources go before its model runs) reads them, never
  while vvp or the model runs it. One compilation unit puts the harness's macros in scope
  for the candidate's file: UNIT_SHIM undefines them first. Formal verdicts come from exit
  statuses and result files (formal.py says which); the counterexample replay can confirm
  or explain a formal counterexample, never turn it into a pass;
- the host never follows a link the sandbox could have planted: inputs are written with
  O_EXCL | O_NOFOLLOW after an unlink, outputs read with O_NOFOLLOW, size-capped, regular
  files only;
- feedback never quotes the reference or the testbench: diagnostics about those files keep
  the compiler's message only, and every verdict is scrubbed of their source lines;
- a candidate's text is never taken for an infrastructure fault: "the reference does not
  compile" is decided by compiling the reference alone, not by where the log points;
- `metrics["equivalence"]` is on every verdict: "proven", "counterexample", "unknown" (an
  undecided proof: not held against the candidate, never reported as proven), or
  "not_checked" (the gate did not run, or the task has no reference / equivalence = none).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from verifiers.base import Context, GateFail, Tool, Verifier, fail_on_limit
from verifiers.contract import Artifact, Limits, Status, Task, Verdict
from verifiers.feedback import trim
from verifiers.rtl import anticheat, errors, formal, verilator, waves
from verifiers.rtl.domain import DOMAIN
from verifiers.rtl.hdl import (
    REF_TOP,
    REPORT_TOKEN,
    code_only,
    comb_as_star,
    module_names,
    rename_reference,
    unit_shim,
)
from verifiers.sandbox import MACHINE_CODES, RunResult

INSTALL = "apt-get install -y iverilog verilator yosys"
CELLS_LIB = Path(__file__).with_name("cells.lib")
# yosys 0.23's dfflibmap maps flops only; latches (legalised to one type) map onto DLH here.
LATCH_MAP = """module \\$_DLATCH_P_ (input E, input D, output Q);
  DLH _TECHMAP_REPLACE_ (.D(D), .G(E), .Q(Q));
endmodule
"""
# One compilation unit, as the benchmarks' own harnesses compile (VerilogEval: testbench,
# reference, candidate in one iverilog call, no -u): the testbench's `timescale is in force
# for the candidate, so its delays mean what they mean in the harness. The candidate's file
# comes last (its directives reach nothing of the harness), after UNIT_SHIM, which undefines
# the harness's macros (no macro of the harness expands in candidate text) and restates the
# time scale in force. -Wportbind: warn about unconnected ports.
COMPILE_ARGV = ("iverilog", "-g2012", "-Wportbind")
UNIT_SHIM = "unit.sv"
# -Wno-fatal: warnings are a quality signal, not a failure; DECLFILENAME: the harness picks
# the file name; --no-timing: delays become STMTDLY warnings instead of errors.
# verilator_bin directly: the `verilator` wrapper is perl + sh around it, ~50 ms of a
# ~60 ms lint (the wrapper only adds `ulimit -s unlimited`, which small designs never need).
LINT_ARGV = (
    "verilator_bin",
    "--lint-only",
    "-Wall",
    "-Wno-fatal",
    "-Wno-DECLFILENAME",
    "--no-timing",
)
# Onto cells.lib: flops by dfflibmap, latches (legalised to one type) by LATCH_MAP, logic
# by abc; stat for cells/area, the netlist JSON to find outputs left undriven.
SYNTH_SCRIPT = (
    f"read_verilog -sv {formal.YOSYS_CAND}",
    "hierarchy -check -top {top}",
    "proc",
    "opt_clean",  # the user's names on the nets check reports
    "tee -q -o check.txt check",  # multiple drivers: only this pass's output
    "synth -top {top} -flatten -noabc",  # one abc, onto the library, is enough
    "dfflegalize -cell $_DLATCH_P_ x t:$_DLATCH*",
    "techmap -map latch_map.v",
    "dfflibmap -liberty cells.lib",
    "abc -liberty cells.lib",
    "opt_clean",
    "tee -q -o stat.json stat -json",
    "write_json netlist.json",
)
MAX_VCD_BYTES = 2 * 1024 * 1024
TRIM_VCD_ABOVE = 256 * 1024
_VCD_DATE = re.compile(r"\$date\b.*?\$end", re.S)
DEFAULT_SIM_TIMEOUT_S = 10.0
# Limits(gates=SIM_ONLY): the fast screening mode, compile + simulate only.
SIM_ONLY = ("compile", "simulate")
DEFAULT_SIM_CPU_S = 2
# budgets are at least this many times the reference's own measured cost (harness.ref_cost)
COST_MULT = 4
# ... up to these: an undecided proof is not held against a candidate, so a longer one
# buys little; a synthesis past two minutes is a design no task here means
FORMAL_CAP_S = 60.0
TOOL_CAP_S = 120.0

# Sim-only constructs that yosys quietly accepts (it drops delays): found in the text.
_DELAY_ONLY_ALWAYS = re.compile(r"\balways\s*(?:begin\s*(?::\s*\w+\s*)?)?#")


class RtlVerifier(Verifier):
    domain = "rtl"
    name = "rtl"
    version = "2"
    resource = "eda"
    tools = (
        Tool("iverilog", "iverilog", ("iverilog", "-V"), INSTALL),
        Tool("vvp", "vvp", ("vvp", "-V"), INSTALL),
        Tool("verilator", "verilator_bin", ("verilator_bin", "--version"), INSTALL),
        Tool("yosys", "yosys", ("yosys", "-V"), INSTALL),
        Tool("yosys-abc", "yosys-abc", ("yosys-abc", "-q", "version"), INSTALL),
    )
    gates = DOMAIN.gate_names
    always = ("static",)
    requires = {"simulate": ("compile",)}
    # One sandbox per candidate (Sandbox.session) cuts ~7 ms a tool run, but is off: under
    # a loaded suite a 50 ms wall stop of a reference in a session was judged the
    # candidate's `timeout`, not `machine_slow` (the job's dispatch, fork and exec inside
    # the session is neither its CPU nor CPU wait, so the machine rule reads it as
    # blocked). On once that latency is accounted for (issue 14's note).
    session_sandbox = False

    def verify(self, task: Task, code: Any, limits: Limits | None = None) -> Verdict:
        traced = len(self.trace) if self.trace is not None else 0
        v = super().verify(task, code, limits)
        if self.trace is not None:
            _restore_for_replay(task, self.trace[traced:])
        metrics = {"equivalence": "not_checked", **v.metrics}
        private = _private_lines(task, code)
        return dataclasses.replace(
            v,
            metrics=metrics,
            feedback=_scrub(v.feedback, private),
            checks=tuple(
                dataclasses.replace(c, detail=_scrub(c.detail, private)) for c in v.checks
            ),
        )

    # --- format ---------------------------------------------------------------------------
    def check_format(self, task: Task, code: str) -> None:
        top = task.interface.get("top", "")
        found = module_names(code)
        if top not in found:
            seen = ", ".join(found) if found else "none"
            raise GateFail(
                Status.FORMAT_ERROR,
                "missing_entry_point",
                f"no module named `{top}` (modules found: {seen})",
            )

    # --- static -----------------------------------------------------------------------------
    def gate_static(self, ctx: Context) -> str:
        s = _setup(ctx)
        tb = s["testbench"]
        names = anticheat.harness_names(tb) if tb else set()
        mods = module_names(tb) if tb else []
        calls = anticheat.harness_subroutines(tb) if tb else set()
        findings = anticheat.scan(ctx.code, names, mods, calls)
        # macros can assemble what the plain text hides (`$fin``ish`); without a backtick
        # there is no directive or macro, and preprocessing would return the same text
        if not findings and "`" in ctx.code:
            pre = ctx.run(["iverilog", "-g2012", "-E", "-o", "cand.pp.sv", "cand.sv"])
            if pre.returncode == 0 and not pre.limit_hit:
                findings = anticheat.scan(_read(ctx, "cand.pp.sv"), names, mods, calls)
        if findings:
            rules = ", ".join(f.rule for f in findings)
            fb = "The candidate was rejected by static checks:\n" + "\n".join(
                f.describe() for f in findings
            )
            raise GateFail(Status.REJECTED, findings[0].code, f"anti-cheat: {rules}", feedback=fb)
        return f"{len(anticheat.ALL_RULES)} rules, none broken"

    # --- compile ----------------------------------------------------------------------------
    def gate_compile(self, ctx: Context) -> str:
        s = _setup(ctx)
        top = ctx.task.interface["top"]
        # -N: the elaborated netlist, for synthesize's initial-only check (not written
        # when synthesize will not run: a large design's netlist costs time)
        netlist = ["-N", "elab.net"] if ctx.limits.wants("synthesize") else []
        argv = [*COMPILE_ARGV, *netlist, "-o", "sim.vvp"]
        harness = ["tb.sv"] if s["testbench"] else []
        if s["testbench"]:
            # only the testbench is a root: extra modules of the candidate never run alone
            for root in s["tb_roots"]:
                argv += ["-s", root]
            if s["reference"]:
                harness.append("ref.sv")
        else:
            argv += ["-s", top]
        with _harness_files(ctx, *harness, UNIT_SHIM):
            res = ctx.run(argv + harness + [UNIT_SHIM, "cand.sv"])
        fail_on_limit(res, "iverilog")
        log = (res.stdout + res.stderr).strip()
        budget = ctx.limits.feedback_chars
        if res.returncode != 0:
            code, decided = errors.classify(log, ctx.code)
            ctx.artifacts.append(Artifact("log", "compile.log", log.encode()))
            if code == "harness_error" and self._reference_compiles(ctx):
                code, decided = "compile_error", errors.parse_diagnostics(log)
            if code == "harness_error":
                raise GateFail(
                    Status.INFRA_ERROR,
                    code,
                    f"the task's reference does not compile: {decided[0].text.strip()}"[:300],
                )
            prefix = _port_note(ctx, top) if code == "port_mismatch" else ""
            first = decided[0].text.strip() if decided else (log.splitlines() or [""])[0]
            raise GateFail(
                Status.COMPILE_ERROR,
                code,
                f"iverilog: {first}"[:300],
                feedback=errors.feedback(log, ctx.code, decided, budget, prefix),
            )
        problems = _port_problems(ctx, top)
        dangling = errors.dangling_port_warnings(log, top)
        if problems or dangling:
            ctx.artifacts.append(Artifact("log", "compile.log", log.encode()))
            note = "; ".join(problems) or dangling[0].message
            raise GateFail(
                Status.COMPILE_ERROR,
                "port_mismatch",
                f"port mismatch: {note}",
                feedback=errors.feedback(
                    log, ctx.code, dangling, budget, _port_note(ctx, top, problems)
                ),
            )
        widths = errors.width_warnings(log, top)
        if widths:
            ctx.artifacts.append(Artifact("log", "compile.log", log.encode()))
            raise GateFail(
                Status.COMPILE_ERROR,
                "width_mismatch",
                f"port width differs from the interface: {widths[0].message}"[:300],
                feedback=errors.feedback(
                    log, ctx.code, widths, budget, _port_note(ctx, top, problems)
                ),
            )
        # the netlist holds the testbench (its nonce) and the reference: off the disk
        # before the design runs
        if netlist:
            ctx.state["elab"] = _read(ctx, "elab.net")
            _remove(ctx, "elab.net")
        warnings = sum(1 for d in errors.parse_diagnostics(log) if d.is_warning)
        return f"iverilog ok ({warnings} warning(s))"

    def _reference_compiles(self, ctx: Context) -> bool:
        """The log blames only ref.sv: true when the reference, compiled alone, is fine (then
        the candidate caused it, whatever the log says)."""
        if not ctx.state["reference"]:
            return False
        with _harness_files(ctx, "ref.sv"):
            res = ctx.run(["iverilog", "-g2012", "-o", "ref.nul", "ref.sv"])
        _remove(ctx, "ref.nul")
        return res.returncode == 0 and not res.limit_hit

    # --- lint -------------------------------------------------------------------------------
    def gate_lint(self, ctx: Context) -> str:
        _setup(ctx)
        top = ctx.task.interface["top"]
        res = ctx.run([*LINT_ARGV, "--top-module", top, "cand.sv"])
        out = res.stdout + res.stderr
        warn_lines = [ln for ln in out.splitlines() if ln.startswith("%Warning")]
        codes = sorted({m[1] for ln in warn_lines if (m := re.match(r"%Warning-(\w+)", ln))})
        ctx.metrics["lint_warnings"] = len(warn_lines)
        ctx.metrics["lint_codes"] = codes
        # delays: simulation follows them (in the testbench's time units, as the harness
        # does), synthesis drops them; in RTL meant for hardware they are a finding
        delays = [ln for ln in warn_lines if re.match(r"%Warning-(?:ASSIGNDLY|STMTDLY)", ln)]
        ctx.metrics["delays"] = len(delays)
        if delays:
            ctx.notes.append(
                f"Delays in synthesizable RTL ({len(delays)}): simulation waits for them, "
                "synthesis ignores them, so hardware does not behave like the simulation. "
                "First: " + delays[0].split(": ", 1)[-1]
            )
        # verilator 5.006 --lint-only still writes its C++ to /dev/null, after the lint is
        # done; on hosts whose /dev/null is not world-writable the sandbox uid cannot open
        # it. That error says nothing about the design.
        err_lines = [
            ln
            for ln in out.splitlines()
            if ln.startswith("%Error") and "Cannot write /dev/null" not in ln
        ]
        if res.limit_hit or (res.returncode != 0 and err_lines):
            ctx.metrics["lint_error"] = True
            why = res.limit_hit or (err_lines[0] if err_lines else f"exit {res.returncode}")
            return f"verilator did not finish cleanly ({why})"[:400]
        if warn_lines:
            ctx.notes.append("Lint (verilator -Wall):\n" + "\n".join(warn_lines[:5]))
        return "\n".join([f"{len(warn_lines)} warning(s)", *warn_lines[:3]])[:600]

    # --- simulate ---------------------------------------------------------------------------
    def gate_simulate(self, ctx: Context) -> str:
        """The testbench's report from the task's simulator (`verilator.choose`: vvp, or a
        Verilator model for a slow reference), judged the same way whichever ran; for a
        sample of candidates the other one runs too (`_cross_check`)."""
        s = _setup(ctx)
        if not s["testbench"]:
            return "skipped: the task has no testbench"
        timeout, cpu = sim_budget(ctx.task)
        sim = verilator.choose(ctx.task.harness, s["reference"])
        res = self._verilator(ctx, timeout, cpu) if sim == verilator.VERILATOR else None
        if isinstance(res, str):  # no model: verilator's limit, not the candidate's fault
            ctx.metrics["simulator_fallback"] = res
            sim, res = verilator.IVERILOG, None
        if res is None:
            res = ctx.run(["vvp", "-n", "sim.vvp"], timeout_s=timeout, cpu_s=cpu)
        ctx.metrics["simulator"] = sim
        tool = "vvp" if sim == verilator.IVERILOG else "the Verilator model"
        if res.limit_hit == "cpu_limit":
            detail = f"simulation used its whole CPU budget ({cpu} s) without finishing"
            raise GateFail(
                Status.TIMEOUT,
                "sim_timeout",
                detail,
                feedback=f"{detail}: a zero-delay loop, a combinational loop, or a design "
                "that never lets simulation time advance.\n" + trim(res.stdout + res.stderr, 800),
            )
        fail_on_limit(res, "simulation", timeout_code="sim_timeout")
        rep = waves.parse_report(res.stdout, s["nonce"])
        if rep.mismatches is None:
            tail = trim((res.stdout + "\n" + res.stderr).strip(), 1500)
            if res.returncode != 0:
                raise GateFail(
                    Status.RUNTIME_ERROR,
                    "sim_runtime_error",
                    f"{tool} exited {res.returncode} before the testbench reported",
                    feedback=f"The simulator stopped with exit code {res.returncode}:\n{tail}",
                )
            raise GateFail(
                Status.WRONG_ANSWER,
                "no_testbench_report",
                "the simulation ended without the testbench's report",
                feedback="The simulation ended before the testbench printed its "
                f"result (did the design stop it?). Output:\n{tail}",
            )
        ctx.metrics["sim_samples"] = rep.samples
        ctx.metrics["sim_mismatches"] = rep.mismatches
        finding = self._cross_check(ctx, sim, rep.mismatches, timeout, cpu)
        if rep.mismatches > 0:
            # the waveform is vvp's (a model with tracing builds slower for every candidate)
            vcd_note = self._waveform(ctx, rep, timeout) if sim == verilator.IVERILOG else ""
            head = f"Simulation: {rep.mismatches} of {rep.samples} samples mismatch."
            body = rep.table()
            hints = "\n".join(rep.hints) if rep.rows else ""
            fb = "\n".join(x for x in (head, body, hints, vcd_note, finding) if x)
            raise GateFail(
                Status.WRONG_ANSWER,
                "sim_mismatch",
                f"{rep.mismatches} mismatching sample(s) of {rep.samples}",
                feedback=fb,
            )
        return f"0 mismatches in {rep.samples} samples ({sim})"

    def _verilator(self, ctx: Context, timeout: float, cpu: int) -> RunResult | str:
        """The testbench's Verilator model, built in the compile gate's one compilation
        unit while the harness files are on disk (verilator_bin and g++ read them, nothing
        of the design runs), then run alone, every generated file gone but the model: its
        run, or why there is no model."""
        s = ctx.state
        if gone := verilator.missing():
            return f"verilator build needs {', '.join(gone)} ({verilator.INSTALL})"
        if len(s["tb_roots"]) != 1:
            return f"verilator takes one top module; the testbench has {len(s['tb_roots'])}"
        cap = ctx.limits.fsize_mb * 1024 * 1024
        runtime = self.__dict__.setdefault("_vl_runtime", verilator.Runtime())
        got = runtime.get(ctx.sandbox, cap)
        if isinstance(got, str):
            return got
        archive, seconds = got
        if seconds:
            ctx.metrics["verilator_runtime_build_s"] = round(seconds, 3)
            ctx.tool_seconds += seconds
        for name in (verilator.MDIR, verilator.RUNTIME, verilator.BINARY):
            _remove(ctx, name)
        harness = ["tb.sv", *(["ref.sv"] if s["reference"] else [])]
        files = [*harness, UNIT_SHIM, "cand.sv"]
        argv = verilator.build_argv(s["tb_roots"][0], files, prebuilt=True)
        try:
            verilator.put(ctx.workdir, verilator.RUNTIME, archive)
            with _harness_files(ctx, *harness, UNIT_SHIM):
                build = ctx.run(
                    argv, timeout_s=verilator.BUILD_TIMEOUT_S, cpu_s=verilator.BUILD_CPU_S
                )
            built = build.returncode == 0 and not build.limit_hit
            built = built and verilator.keep_model(ctx.workdir)
        finally:  # the generated C++ quotes tb.sv and ref.sv
            _remove(ctx, verilator.MDIR)
            _remove(ctx, verilator.RUNTIME)
        ctx.metrics["verilator_build_s"] = round(build.seconds, 3)
        if not built:
            return verilator.build_error(build.stdout + build.stderr, build.limit_hit)
        return ctx.run([f"./{verilator.BINARY}"], timeout_s=timeout, cpu_s=cpu)

    def _cross_check(self, ctx: Context, sim: str, got: int, timeout: float, cpu: int) -> str:
        """For a sample of candidates (`RtlSettings.cross_check_rate`), the same testbench
        in the other simulator. A disagreement is the finding `sim_disagreement` (metrics,
        feedback); the verdict stays the first simulator's (verilator.py says why). Returns
        the feedback paragraph, or ""."""
        rate = getattr(self.settings, "cross_check_rate", 0.0)
        if not verilator.sampled(ctx.task.task_id, ctx.code, rate):
            return ""
        second = verilator.other(sim)
        try:
            if second == verilator.VERILATOR and "simulator_fallback" in ctx.metrics:
                res = ctx.metrics["simulator_fallback"]  # it failed once already
            elif second == verilator.VERILATOR:
                res = self._verilator(ctx, timeout, cpu)
            else:
                res = ctx.run(["vvp", "-n", "sim.vvp"], timeout_s=timeout, cpu_s=cpu)
        except GateFail as f:  # the machine's or the sandbox's: nothing said about the design
            res = f"not run: {f.detail}"
        if isinstance(res, str):
            check = verilator.compare(got, second, None, False, res)
        elif res.limit_hit:
            check = verilator.compare(got, second, None, False, f"stopped: {res.limit_hit}")
        else:
            rep = waves.parse_report(res.stdout, ctx.state["nonce"])
            detail = f"exit {res.returncode}" + (
                f", {rep.mismatches} of {rep.samples} samples mismatch"
                if rep.mismatches is not None
                else ", no report"
            )
            check = verilator.compare(got, second, rep.mismatches, True, detail)
        ctx.metrics["sim_cross_check"] = check
        if check["agree"] is not False:
            return ""
        ctx.metrics["sim_disagreement"] = True
        text = verilator.note(sim, got, check)
        ctx.notes.append(text)
        return text

    def _waveform(self, ctx: Context, rep: waves.Report, timeout: float) -> str:
        """Re-run with +vcd (the testbench dumps on that plusarg) and keep the waveform
        around the first mismatch."""
        _remove(ctx, "wave.vcd")
        try:
            ctx.run(["vvp", "-n", "sim.vvp", "+vcd"], timeout_s=timeout, cpu_s=int(timeout))
        except GateFail as f:  # the machine cut it: the waveform is feedback only
            if f.code not in MACHINE_CODES:
                raise
            return ""
        raw = _read_bytes(ctx, "wave.vcd")
        if not raw:
            return ""
        size = len(raw)
        # the date line is the only thing that differs between two runs of one design:
        # without it the same waveform is the same blob (and the same artifact) every time
        text = _VCD_DATE.sub("$date\n$end", raw.decode(errors="replace"), count=1)
        if size > TRIM_VCD_ABOVE:
            center = None
            if rep.first_time is not None:
                tb_unit = waves.timescale_seconds(ctx.state["testbench"]) or 1.0
                vcd_unit = waves.timescale_seconds(text[:4096]) or tb_unit
                center = round(rep.first_time * tb_unit / vcd_unit)
            text = waves.trim_vcd(text, center)
        data = text.encode()
        if len(data) > MAX_VCD_BYTES:
            return f"(waveform of {size} bytes not kept: over the size limit)"
        ctx.artifacts.append(Artifact("vcd", "wave.vcd", data))
        return ""

    # --- synthesize -------------------------------------------------------------------------
    def gate_synthesize(self, ctx: Context) -> str:
        """Sim-only constructs are `unsynthesizable` in three ways: yosys refuses them
        (`forever`, `while` in logic), iverilog's netlist shows variables only initial
        blocks assign, or an output is left undriven / X after synthesis."""
        _setup(ctx)
        top = ctx.task.interface["top"]
        _sim_only_always(ctx.code)
        _write(ctx, "cells.lib", _cells_lib())
        _write(ctx, "latch_map.v", LATCH_MAP)
        _remove(ctx, "check.txt")
        script = "; ".join(SYNTH_SCRIPT).replace("{top}", top)
        res = ctx.run(
            ["yosys", "-q", "-l", "synth.log", "-p", script], **tool_budget(ctx, "synthesize")
        )
        fail_on_limit(res, "yosys synthesis")
        log = _read(ctx, "synth.log") or (res.stdout + res.stderr)
        # before yosys's own verdict: a design driven twice can crash a later pass
        conflicts = _conflicting_drivers(_read(ctx, "check.txt"))
        if conflicts:
            raise GateFail(
                Status.COMPILE_ERROR,
                "unsynthesizable",
                f"multiple conflicting drivers: {', '.join(conflicts)}"[:300],
                feedback="Synthesis found more than one driver for: "
                f"{', '.join(conflicts)}. Two processes (or a process and an assignment) "
                "drive the same bits; in simulation the last write wins (a delay can make "
                "that the right value at every sample), in hardware they short.",
            )
        if res.returncode != 0:
            err = [ln for ln in log.splitlines() if "ERROR" in ln] or log.splitlines()[-3:]
            ctx.artifacts.append(Artifact("log", "synth.log", log.encode()))
            raise GateFail(
                Status.COMPILE_ERROR,
                "unsynthesizable",
                f"yosys: {err[0].strip()}"[:300] if err else "yosys failed",
                feedback="Synthesis (yosys) failed:\n"
                + _with_source(err, ctx.code, ctx.limits.feedback_chars),
            )
        drivers = self._initial_only_vars(ctx, top)
        if drivers:
            raise GateFail(
                Status.COMPILE_ERROR,
                "unsynthesizable",
                f"driven only by initial blocks: {', '.join(drivers)}"[:300],
                feedback="Variables that only `initial` blocks assign are simulation-only "
                f"(no hardware drives them): {', '.join(drivers)}. Drive them from "
                "`always` blocks or continuous assignments.",
            )
        undriven = _undriven_outputs(_read(ctx, "netlist.json"), top)
        if undriven:
            undriven = self._beyond_dont_care(ctx, undriven)
        if undriven:
            raise GateFail(
                Status.COMPILE_ERROR,
                "unsynthesizable",
                f"outputs undriven after synthesis: {', '.join(undriven)}",
                feedback="After synthesis these outputs are undriven or constant X: "
                f"{', '.join(undriven)}. Logic that exists only in simulation "
                "(initial blocks, delays, system tasks) does not make hardware.",
            )
        cells, area, kinds = _area(_read(ctx, "stat.json"))
        ctx.metrics["cells"] = cells
        ctx.metrics["area"] = area
        ctx.metrics["flops"] = sum(n for k, n in kinds.items() if k.startswith("DFF"))
        ctx.metrics["latches"] = sum(n for k, n in kinds.items() if k == "DLH")
        if ctx.metrics["latches"]:
            ctx.notes.append(
                f"Latches: synthesis inferred {ctx.metrics['latches']} latch bit(s) "
                "(a combinational block that does not assign every variable on every "
                "path, e.g. a `case` without `default`). Assign a default first if no "
                "latch was intended."
            )
        unmapped = sorted(k for k in kinds if k.startswith("$"))
        tail = f"; unmapped: {', '.join(unmapped)}" if unmapped else ""
        return f"{cells} cells, area {area:.3f} um^2 (cells.lib){tail}"

    def _beyond_dont_care(self, ctx: Context, undriven: dict[str, set[int]]) -> list[str]:
        """The candidate's undriven / X output bits that the reference drives: the bits
        the reference itself leaves X or undriven after synthesis are don't-cares (the
        testbench masks them: `(ref ^ dut ^ ref) !== ref`), whatever the candidate does
        with them."""
        if not ctx.state["reference"]:
            return sorted(undriven)
        script = "; ".join(
            (
                f"read_verilog -sv {formal.YOSYS_REF}",
                f"hierarchy -check -top {REF_TOP}",
                f"synth -top {REF_TOP} -flatten -noabc",
                "opt_clean",
                "write_json ref_netlist.json",
            )
        )
        with _harness_files(ctx, formal.YOSYS_REF):
            res = ctx.run(["yosys", "-q", "-p", script])
        ref = _read(ctx, "ref_netlist.json") if res.returncode == 0 and not res.limit_hit else ""
        _remove(ctx, "ref_netlist.json")  # the reference's netlist: off the disk at once
        dont_care = _undriven_outputs(ref, REF_TOP) if ref else {}
        return sorted(n for n, bits in undriven.items() if not bits <= dont_care.get(n, set()))

    def _initial_only_vars(self, ctx: Context, top: str) -> list[str]:
        if "elab" not in ctx.state:  # compile did not run: elaborate alone
            argv = ["iverilog", "-g2012", "-s", top, "-N", "elab.net", "-o", "cand.nul", "cand.sv"]
            res = ctx.run(argv)
            if res.returncode != 0 or res.limit_hit:
                return []  # not elaborated here: the gates that compile it say why
            ctx.state["elab"] = _read(ctx, "elab.net")
        return _initial_only(ctx.state["elab"])

    # --- equivalence ------------------------------------------------------------------------
    def gate_equivalence(self, ctx: Context) -> str:
        s = _setup(ctx)
        mode = ctx.task.harness.get("equivalence")
        if mode is None:
            mode = "seq" if ctx.task.interface.get("kind") == "sequential" else "comb"
        if mode == "none" or not s["reference"]:
            ctx.metrics["equivalence"] = "not_checked"
            why = "harness equivalence = none" if mode == "none" else "no reference"
            return f"skipped ({why})"
        seq = mode == "seq" and bool(ctx.task.interface.get("clock"))
        out = self._sequential(ctx) if seq else self._combinational(ctx)
        ctx.metrics["equivalence"] = out.verdict
        if out.depth is not None:
            ctx.metrics["equivalence_depth"] = out.depth
        if out.verdict == "counterexample":
            raise GateFail(Status.WRONG_ANSWER, out.code, out.detail, feedback=out.feedback)
        out = self._parameters(ctx, seq, out)
        if out.verdict == "unknown":
            t = formal_budget(ctx)
            ctx.notes.append(f"Formal equivalence undecided within {t:g}s: {out.detail}")
            return f"equivalence unknown within {t:g}s ({out.detail})"
        return out.detail

    def _parameters(self, ctx: Context, seq: bool, out: formal.Outcome) -> formal.Outcome:
        """The requirement says "written for any legal parameter value" and the testbench
        instantiates the defaults only: the same equivalence runs at the settings
        `formal.sweep` draws (each one the reference itself elaborates at). A missing
        parameter is a port mismatch; a design that does not elaborate, or differs, at a
        setting fails there."""
        top = ctx.task.interface["top"]
        ref_top = ctx.task.harness.get("ref_top") or top
        defaults = errors.header_parameters(ctx.state["reference"], ref_top)
        seed = f"{ctx.task.task_id}:{self.version}"
        settings = formal.sweep(defaults, seed)
        if not settings:
            return out
        missing = [
            n
            for n in {k for st in settings for k in st}
            if not errors.declares_parameter(ctx.code, top, n)
        ]
        if missing:
            names = ", ".join(sorted(missing))
            raise GateFail(
                Status.COMPILE_ERROR,
                "port_mismatch",
                f"no parameter {names}",
                feedback=f"The interface of `{top}` has the parameter(s) {names} (the "
                "testbench uses their defaults; the design must work for any legal value); "
                f"the candidate's `{top}` does not declare them.",
            )
        checked, undecided = [], []
        for params, iface in zip(settings, self._ifaces_at(ctx, settings), strict=True):
            if iface is None:
                continue  # the reference itself does not take these values
            at = formal.params_text(params)
            got = self._sequential(ctx, iface, params) if seq else self._combinational(ctx, params)
            checked.append(at)
            if got.verdict == "unbuilt":
                raise GateFail(
                    Status.COMPILE_ERROR,
                    "unsynthesizable",
                    f"with {at} the design does not elaborate ({got.detail})"[:300],
                    feedback=f"With {at} (the testbench uses the defaults; the design must "
                    f"work for any legal value, and the reference does at {at}), the design "
                    f"does not elaborate: {got.detail}",
                )
            if got.verdict == "counterexample":
                ctx.metrics["equivalence"] = "counterexample"
                ctx.metrics["equivalence_params"] = dict(params)
                raise GateFail(
                    Status.WRONG_ANSWER,
                    got.code,
                    f"with {at}: {got.detail}"[:300],
                    feedback=f"With {at} (the testbench instantiates the defaults; the "
                    "design must work for any legal value):\n" + got.feedback,
                )
            if got.verdict != "proven":
                undecided.append(f"{at}: {got.detail}")
        ctx.metrics["equivalence_settings"] = checked
        if undecided and out.verdict == "proven":
            ctx.metrics["equivalence"] = "unknown"
            return formal.Outcome("unknown", "at the defaults proven; " + "; ".join(undecided))
        if checked:
            out.detail += f"; also at {'; '.join(checked)}"
        return out

    def _ifaces_at(
        self, ctx: Context, settings: list[dict[str, int]]
    ) -> list[dict[str, Any] | None]:
        """The interface with the reference's port widths at each setting; None where the
        reference does not elaborate with it. One yosys run for all, one per setting only
        when that fails."""
        got = self._ports_run(ctx, settings)
        if got is not None:
            return got
        return [(self._ports_run(ctx, [params]) or [None])[0] for params in settings]

    def _ports_run(
        self, ctx: Context, settings: list[dict[str, int]]
    ) -> list[dict[str, Any] | None] | None:
        names = [formal.ports_json(i) for i in range(len(settings))]
        for name in names:
            _remove(ctx, name)
        with _harness_files(ctx, formal.YOSYS_REF):
            res = ctx.run(["yosys", "-q", "-p", formal.ports_script(settings)])
        texts = [_read(ctx, name) for name in names]
        for name in names:
            _remove(ctx, name)
        if res.returncode != 0 or res.limit_hit:
            return None
        return [formal.with_widths(ctx.task.interface, t) if t else None for t in texts]

    def _combinational(self, ctx: Context, params: dict[str, int] | None = None) -> formal.Outcome:
        """At `params` (a swept setting), a miter yosys cannot build is "unbuilt": the
        reference elaborates there, so the candidate does not."""
        top = ctx.task.interface["top"]
        t = formal_budget(ctx)
        gold_x = formal.reference_has_x(ctx.state["reference"])
        _remove(ctx, formal.SAT_CEX)
        script = formal.comb_script(top, gold_x, t, params)
        with _harness_files(ctx, formal.YOSYS_REF):
            res = ctx.run(
                ["yosys", "-q", "-l", "equiv.log", "-p", script],
                **formal.run_limits(t),
            )
        if res.limit_hit:
            return formal.Outcome("unknown", f"yosys sat stopped by the {res.limit_hit}")
        cex = _read(ctx, formal.SAT_CEX) if _exists(ctx, formal.SAT_CEX) else None
        out = formal.sat_outcome(res.returncode, cex, ctx.task.interface.get("ports") or ())
        _own_timer(res, out.verdict, t, "yosys sat")
        if out.verdict == "unknown" and res.returncode != 0:
            log = _read(ctx, "equiv.log") or res.stderr
            err = [ln for ln in log.splitlines() if "ERROR" in ln]
            timed_out = any("time out" in ln for ln in err)
            if any("type $dlatch" in ln or "type $adlatch" in ln for ln in err):
                out.detail = (
                    "a design with latches: a combinational SAT check cannot decide it "
                    "(the latch is state); the simulation stands"
                )
            elif not timed_out:
                out.detail = f"yosys could not build the miter: {err[0] if err else res.returncode}"
                if params:
                    out.verdict = "unbuilt"
        return out

    def _sequential(
        self,
        ctx: Context,
        iface: dict[str, Any] | None = None,
        params: dict[str, int] | None = None,
    ) -> formal.Outcome:
        """The task's interface at its defaults, or `iface` at `params` (a swept setting:
        a miter yosys cannot elaborate there is "unbuilt")."""
        iface = iface or ctx.task.interface
        t = formal_budget(ctx)
        _write(ctx, "miter.sv", formal.seq_miter(iface, params))
        with _harness_files(ctx, formal.YOSYS_REF):
            res = ctx.run(
                ["yosys", "-q", "-l", "prep.log", "-p", formal.prep_script()],
                **formal.run_limits(t),
            )
        if res.returncode != 0 or res.limit_hit:
            err = [
                ln for ln in (_read(ctx, "prep.log") or res.stderr).splitlines() if "ERROR" in ln
            ]
            verdict = "unbuilt" if params and not res.limit_hit else "unknown"
            return formal.Outcome(verdict, f"miter not built: {err[0] if err else res.limit_hit}")
        cycles = formal.single_posedge_clock(_read(ctx, "miter_pre.json"), iface.get("clock"))
        res = ctx.run(
            ["yosys", "-q", "-l", "aig.log", "-p", formal.aiger_script(cycles)],
            **formal.run_limits(t),
        )
        if res.returncode != 0 or res.limit_hit:
            err = [ln for ln in (_read(ctx, "aig.log") or res.stderr).splitlines() if "ERROR" in ln]
            return formal.Outcome(
                "unknown", f"AIGER not written: {err[0] if err else res.limit_hit}"
            )
        # zeros for the candidate's registers the power-up model leaves free: a ZERO
        # counterexample's power-up state
        zeros = formal.read_inits(_read(ctx, formal.POWERUP_MAP))
        zero_model = (formal.ZERO_AIG, formal.ZERO_MAP, zeros)
        free_model = (formal.POWERUP_AIG, formal.POWERUP_MAP, None)
        # ZERO first, as this gate ran before the power-up was free: bmc3 for short
        # counterexamples of shallow bugs, then pdr. POWERUP after, for what only a
        # power-up value shows: its pdr is the harder one (a FIFO's free memory: 3.4 CPU-s
        # against 0.3; bmc3 spent its whole limit there), so it never stands between a
        # candidate and the verdict ZERO gives. At a swept parameter setting POWERUP's pdr
        # first (it sees all ZERO sees), ZERO only where that does not decide.
        if params:
            free = self._engine(ctx, iface, "pdr", free_model, cycles, t)
            if free.verdict in ("counterexample", "proven"):
                return free
            zero = self._engine(ctx, iface, "pdr", zero_model, cycles, t)
            return zero if zero.verdict == "counterexample" else _undecided(zero, free)
        first = self._engine(ctx, iface, "bmc3", zero_model, cycles, t)
        if first.verdict == "counterexample":
            return first
        # bmc3's counterexample the replay did not show: pdr on ZERO would find it again
        zero = first if first.verdict == "undecided" else None
        zero = zero or self._engine(ctx, iface, "pdr", zero_model, cycles, t)
        if zero.verdict in ("counterexample", "unknown"):
            return zero
        free = self._engine(ctx, iface, "pdr", free_model, cycles, t)
        if free.verdict in ("counterexample", "proven"):
            return free
        return _undecided(zero, free)

    def _engine(
        self,
        ctx: Context,
        iface: dict[str, Any],
        engine: str,
        model: tuple[str, str, dict[int, list[tuple[str, int]]] | None],
        cycles: bool,
        t: float,
    ) -> formal.Outcome:
        """ABC's `engine` on one model of the miter (aig, map, the zeros of its power-up
        or None: the counterexample's own), a counterexample replayed; "undecided": a
        counterexample the replay ran through without seeing it."""
        aig, map_name, zeros = model
        if engine == "bmc3":
            verdict, out_idx, frame, why = self._abc(ctx, formal.abc_bmc(min(2.0, t / 4), aig), t)
        else:
            verdict, out_idx, frame, why = self._abc(ctx, formal.abc_pdr(t, aig), t, own_limit=True)
        if verdict == "proven":
            kind = "one frame per clock cycle" if cycles else "clk2fflogic"
            return formal.Outcome("proven", f"sequential equivalence proven (ABC pdr, {kind})")
        if verdict == "unknown":
            return formal.Outcome("unknown", f"ABC {engine}: {why or 'undecided'}")
        return self._replay(ctx, iface, out_idx, frame, cycles, engine, map_name, zeros)

    def _abc(
        self, ctx: Context, script: str, t: float, own_limit: bool = False
    ) -> tuple[str, int | None, int | None, str | None]:
        """One yosys-abc run, its result read from the status file it writes.
        `own_limit`: the script's engine stops itself at `t` (pdr -T): an undecided run
        that took that long is judged by the machine-or-candidate rule."""
        _remove(ctx, formal.ABC_STATUS)
        _remove(ctx, formal.ABC_CEX)
        res = ctx.run(["yosys-abc", "-c", script], **formal.run_limits(t))
        if res.limit_hit:
            return "unknown", None, None, res.limit_hit
        status = _read(ctx, formal.ABC_STATUS) if _exists(ctx, formal.ABC_STATUS) else None
        verdict, out_idx, frame = formal.parse_status(status)
        if own_limit:
            _own_timer(res, verdict, t, "ABC pdr")
        return verdict, out_idx, frame, None

    def _replay(
        self,
        ctx: Context,
        iface: dict[str, Any],
        out_idx: int | None,
        frame: int | None,
        cycles: bool,
        engine: str,
        map_name: str,
        zero_inits: dict[int, list[tuple[str, int]]] | None,
    ) -> formal.Outcome:
        """Check ABC's counterexample in simulation, where X bits of the reference are
        don't-cares as in the testbench; only a reproduced one fails the candidate. The
        candidate's registers power up as in the counterexample (the POWERUP model's
        free values, or ZERO's zeros: `zero_inits`) in a second miter of the replay; a
        difference only that one shows is `uninitialized_state`."""
        map_text = _read(ctx, map_name)
        in_map, out_names = formal.read_map(map_text)
        cex_text = _read(ctx, formal.ABC_CEX)
        trace = formal.read_cex(cex_text, in_map)
        if zero_inits is None:
            powerup = formal.read_powerup(cex_text, formal.read_inits(map_text))
        else:
            powerup = formal.read_powerup(None, zero_inits)
        which = (
            out_names[out_idx].removeprefix(formal.P_TRIG)
            if out_idx is not None and out_idx < len(out_names)
            else "?"
        )
        where = f"output {which} at cycle {frame}"
        if not trace:
            return formal.Outcome(
                "unknown",
                f"ABC {engine} reported a difference ({where}) but wrote no trace",
                depth=frame,
            )
        token = "CRUCIBLE_" + secrets.token_hex(8)
        res, powerup = self._compile_replay(ctx, iface, trace, cycles, token, powerup)
        rows: list[dict[str, str]] = []
        ended = False
        if res.returncode == 0 and not res.limit_hit:
            sim = ctx.run(["vvp", "-n", "replay.vvp"])
            rows, ended = formal.parse_replay(sim.stdout, token)
            ended = ended and sim.returncode == 0 and not sim.limit_hit
        forced = formal.forced_reset(iface)
        trace_text = formal.trace_summary(trace, iface.get("clock"), forced)
        if not rows and ended:
            return formal.Outcome(
                "undecided",
                f"ABC {engine} found a difference ({where}) that "
                "simulation does not reproduce (X / initial-state semantics)",
                depth=frame,
            )
        if not rows:
            # the replay runs the candidate's code: one that stops, hangs or crashes it
            # leaves the formal counterexample as it was
            fb = "\n".join(
                [
                    f"Formal equivalence check (sequential, ABC {engine}): the candidate "
                    f"differs from the reference on {where}"
                    + (" (cycle 0 is the reset cycle)" if forced else "")
                    + "; the replay in simulation did not run to its end.",
                    "Input trace:",
                    trace_text,
                ]
            )
            return formal.Outcome(
                "counterexample", f"counterexample: {where} (ABC {engine})", fb, depth=frame
            )
        plain = [r for r in rows if r["kind"] == "CEX"]
        if plain:
            return _cex_outcome(plain, engine, forced, trace_text)
        # only the miter powered up as the counterexample says differs: the candidate's
        # outputs depend on what its unset registers hold at power-up
        first = rows[0]
        state = formal.powerup_summary(powerup)
        head = (
            f"Formal equivalence check (sequential, ABC {engine}): the candidate's outputs "
            "depend on what its registers without an initial value hold at power-up"
            + (" (a reset sets only those it resets)" if forced else "")
            + f". Powering up with {state}, it differs from the reference at cycle "
            f"{first['frame']} on output {first['output']}: expected {first['expected']}, "
            f"got {first['got']}. In simulation these registers start as X (and `===`, "
            "`!==`, `case` or `if` on X can hide that); hardware starts them at 0 or 1."
        )
        table = waves.format_table(
            ("cycle", "output", "expected", "got", "inputs"),
            [[r["frame"], r["output"], r["expected"], r["got"], r["inputs"]] for r in rows[:5]],
        )
        fb = "\n".join(
            [
                head,
                "Reset them, or give them a value before anything reads them.",
                "Input trace (cycle 0 is the reset cycle):" if forced else "Input trace:",
                trace_text,
                table,
            ]
        )
        return formal.Outcome(
            "counterexample",
            f"power-up state {state}: differs at cycle {first['frame']} (ABC {engine})"[:300],
            fb,
            depth=int(first["frame"]),
            code="uninitialized_state",
        )

    def _compile_replay(
        self,
        ctx: Context,
        iface: dict[str, Any],
        trace: list[dict[str, int]],
        cycles: bool,
        token: str,
        powerup: dict[str, dict[int, int]],
    ) -> tuple[RunResult, dict[str, dict[int, int]]]:
        """iverilog on the replay, and the power-up state it sets. A power-up line the
        compiler refuses (a name of the flop's net that is not a variable) is dropped and
        the replay compiled again; the plain replay (no power-up miter) is the last
        resort."""
        for _ in range(3):
            text, setters = formal.replay_testbench(iface, trace, cycles, token, powerup)
            _write(ctx, "replay.sv", text)
            with _harness_files(ctx, "ref.sv", UNIT_SHIM):
                files = ["ref.sv", "miter.sv", "replay.sv", UNIT_SHIM, "cand.sv"]
                res = ctx.run([*COMPILE_ARGV, "-s", formal.REPLAY, "-o", "replay.vvp", *files])
            _remove(ctx, "replay.sv")  # the token: gone before the candidate's code runs
            if res.returncode == 0 or not powerup:
                return res, powerup
            bad = {
                setters[int(n)]
                for n in re.findall(r"replay\.sv:(\d+)", res.stdout + res.stderr)
                if int(n) in setters
            }
            powerup = {k: v for k, v in powerup.items() if k not in bad} if bad else {}
        return res, powerup


def _undecided(zero: formal.Outcome, free: formal.Outcome) -> formal.Outcome:
    """Neither model gave a verdict the replay stands behind: an "undecided" is a
    difference the replay ran through without seeing (the reference's own outputs X
    there)."""
    if zero.verdict == "proven":
        return formal.Outcome(
            "unknown",
            "equivalent from an all-zero power-up (ABC pdr); with free power-up values of "
            f"the candidate's registers: {free.detail}",
            depth=free.depth,
        )
    details = dict.fromkeys((f"all-zero power-up: {zero.detail}", f"free: {free.detail}"))
    return formal.Outcome("unknown", "; ".join(details), depth=zero.depth or free.depth)


def _cex_outcome(
    rows: list[dict[str, str]], engine: str, forced: dict[str, int], trace_text: str
) -> formal.Outcome:
    first = rows[0]
    head = (
        f"Formal equivalence check (sequential, ABC {engine}): "
        + ("after reset, " if forced else "")
        + f"the candidate differs from the reference at cycle {first['frame']} on output "
        f"{first['output']}: expected {first['expected']}, got {first['got']}."
    )
    table = waves.format_table(
        ("cycle", "output", "expected", "got", "inputs"),
        [[r["frame"], r["output"], r["expected"], r["got"], r["inputs"]] for r in rows[:5]],
    )
    fb = "\n".join(
        [
            head,
            "Input trace (cycle 0 is the reset cycle):" if forced else "Input trace:",
            trace_text,
            table,
        ]
    )
    return formal.Outcome(
        "counterexample",
        f"counterexample at cycle {first['frame']} (ABC {engine})",
        fb,
        depth=int(first["frame"]),
    )


def ref_cost(task: Task, gate: str) -> float:
    """The reference's own CPU seconds for `gate`, measured at ingest (0: not measured, or
    too small to matter: harness.ref_cost keeps only what is)."""
    return float((task.harness.get("ref_cost") or {}).get(gate, 0.0))


def sim_budget(task: Task) -> tuple[float, int]:
    """(wall seconds, CPU seconds) for one simulation. A hung simulation spins the CPU: a
    CPU budget ends it in ~sim_cpu_s (catalog references need ~0.05 s) where the wall
    clock alone would cost the whole timeout, and it does not misfire on a loaded machine
    the way a short wall timeout would. A slow reference (its cost measured at ingest)
    gets COST_MULT times its own cost; the wall clock leaves room for that CPU time, so
    a wall stop short of it is the machine's (`Stop.code`)."""
    timeout = float(task.harness.get("sim_timeout_s") or DEFAULT_SIM_TIMEOUT_S)
    cpu = task.harness.get("sim_cpu_s") or max(
        min(DEFAULT_SIM_CPU_S, timeout), math.ceil(COST_MULT * ref_cost(task, "simulate"))
    )
    return max(timeout, 1.5 * cpu), max(1, int(cpu))


def tool_budget(ctx: Context, gate: str) -> dict[str, Any]:
    """ctx.run limits for a synthesis run: the Limits' own, or COST_MULT times the
    reference's cost if that is more; CPU as long as the wall, so the machine-or-candidate
    rule can tell a starved run from a slow design."""
    wall = max(ctx.limits.timeout_s, min(TOOL_CAP_S, COST_MULT * ref_cost(ctx.task, gate)))
    return {"timeout_s": wall, "cpu_s": max(ctx.limits.cpu_s, math.ceil(wall))}


def formal_budget(ctx: Context) -> float:
    """The solver's time limit: the Limits' own, or COST_MULT times the reference's
    equivalence check against itself at ingest if that is more."""
    scaled = min(FORMAL_CAP_S, COST_MULT * ref_cost(ctx.task, "equivalence"))
    return max(ctx.limits.formal_timeout_s, scaled)


def _sim_only_always(code: str) -> None:
    """`always #d ...`: yosys drops the delay and synthesizes something; no hardware
    runs on a delay, so it is refused before that."""
    text = code_only(code)
    m = _DELAY_ONLY_ALWAYS.search(text)
    if not m:
        return
    line = text.count("\n", 0, m.start()) + 1
    raise GateFail(
        Status.COMPILE_ERROR,
        "unsynthesizable",
        f"line {line}: an always block timed only by a delay",
        feedback=f"cand.sv:{line}: `always #...` is timed by a delay, not by a clock or "
        "inputs: simulation-only, no hardware. Use `always @(posedge clk)` or `always @*`.\n"
        f"    {line} | {code.splitlines()[line - 1].rstrip()}",
    )


# --- helpers --------------------------------------------------------------------------------


def _setup(ctx: Context) -> dict[str, Any]:
    """Prepare the run once: cand.sv on disk, the reference (renamed) and the testbench
    (a fresh nonce in place of the report token) kept in memory until a tool that reads
    them runs (`_harness_files`)."""
    s = ctx.state
    if s.get("ready"):
        return s
    task = ctx.task
    tb = task.harness.get("testbench") or ""
    ref = task.reference or ""
    nonce = "CRUCIBLE_" + secrets.token_hex(8)
    s.update(
        nonce=nonce, testbench=tb, reference=ref, ready=True, tb_roots=_roots(tb) if tb else []
    )
    s["files"] = _harness_texts(task, nonce)
    _write(ctx, "cand.sv", ctx.code)
    _write(ctx, formal.YOSYS_CAND, comb_as_star(ctx.code))
    return s


@contextlib.contextmanager
def _harness_files(ctx: Context, *names: str) -> Iterator[None]:
    """The harness's private files (ref.sv, tb.sv) on disk for one tool run that reads
    them and does not run the design; removed again before anything else runs."""
    try:
        for name in names:
            _write(ctx, name, ctx.state["files"][name])
        yield
    finally:
        for name in names:
            _remove(ctx, name)


def _roots(tb: str) -> list[str]:
    """The testbench's top modules: the ones it does not instantiate itself."""
    code = code_only(tb)
    mods = module_names(code)
    roots = [
        m
        for m in mods
        if not re.search(rf"(?<![\w$]){re.escape(m)}\s*(?:#\s*\(.*?\))?\s+\w+\s*\(", code)
    ]
    return roots or mods


# The work dir belongs to the sandbox uid: whatever is in it may have been put there by a
# candidate (a symlink to a host file, a fifo, a huge file). The host writes and reads
# there only through these, which never follow a link and never read past a cap.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _write(ctx: Context, name: str, text: str) -> None:
    """Host-written inputs: a new file (never through a planted link), readable by the
    sandbox uid whatever the host's umask."""
    _remove(ctx, name)
    fd = os.open(ctx.workdir / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(f.fileno(), 0o644)
        f.write(text)


def _remove(ctx: Context, name: str) -> None:
    path = ctx.workdir / name
    try:
        path.unlink()  # a link itself, never its target
    except FileNotFoundError:
        pass
    except (IsADirectoryError, PermissionError):  # a directory in its place
        shutil.rmtree(path, ignore_errors=True)  # does not follow links either


def _exists(ctx: Context, name: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(ctx.workdir / name).st_mode)
    except OSError:
        return False


def _read_bytes(ctx: Context, name: str) -> bytes:
    """A regular file of the work dir, not through a link, at most fsize_mb; b"" if none."""
    cap = ctx.limits.fsize_mb * 1024 * 1024
    try:
        fd = os.open(ctx.workdir / name, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW)
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > cap:
            return b""
        return f.read(cap)


def _own_timer(res: RunResult, verdict: str, limit_s: float, what: str) -> None:
    """A solver that came back undecided after its own time limit (yosys `sat -timeout`
    is a wall-clock alarm): the machine's when it was starved of the CPU for it
    (`Stop.own_timer`). Judged from the host's measures, never from the log (a candidate
    can print "time out" into it)."""
    if verdict != "unknown" or res.stop is None or res.seconds < limit_s:
        return
    if fault := res.stop.own_timer(limit_s).fault(what):
        raise fault


def _read(ctx: Context, name: str) -> str:
    return _read_bytes(ctx, name).decode(errors="replace")


def _harness_texts(task: Task, nonce: str) -> dict[str, str]:
    """The harness's private files by name: the reference renamed (as iverilog and as
    yosys read it), the testbench with `nonce` for the report token, the unit shim."""
    tb = task.harness.get("testbench") or ""
    ref = task.reference or ""
    ref_top = task.harness.get("ref_top") or task.interface["top"]
    renamed = rename_reference(ref, ref_top) if ref else ""
    return {
        "ref.sv": renamed,
        formal.YOSYS_REF: comb_as_star(renamed),
        "tb.sv": tb.replace(REPORT_TOKEN, nonce) if tb else "",
        UNIT_SHIM: unit_shim(tb, ref),
    }


def _restore_for_replay(task: Task, runs: list[dict[str, Any]]) -> None:
    """Debugging and benchmarks only (kept work dirs): put the harness's files back once
    the verdict is in, so each traced tool run can be replayed in its directory."""
    files = _harness_texts(task, REPORT_TOKEN)
    for workdir in {r["workdir"] for r in runs}:
        for name, text in files.items():
            if not text:
                continue
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
            with (
                contextlib.suppress(OSError),
                os.fdopen(os.open(Path(workdir) / name, flags, 0o644), "w") as f,
            ):
                f.write(text)


def _private_lines(task: Task, code: Any) -> frozenset[str]:
    """Lines of the reference and the testbench worth hiding (long enough to say something,
    and not lines the candidate wrote itself)."""
    own = code if isinstance(code, str) else ""
    text = (task.reference or "") + "\n" + (task.harness.get("testbench") or "")
    return frozenset(
        ln.strip() for ln in text.splitlines() if len(ln.strip()) >= 16 and ln.strip() not in own
    )


def _scrub(text: str, private: frozenset[str]) -> str:
    """`text` without any line that quotes the reference or the testbench."""
    if not text or not private:
        return text
    lines = text.split("\n")
    kept = [ln for ln in lines if not any(p in ln for p in private)]
    if len(kept) == len(lines):
        return text
    return "\n".join([*kept, "(lines quoting the task's private sources were removed)"])


def _port_problems(ctx: Context, top: str) -> list[str]:
    want = ctx.task.interface.get("ports")
    if not want:
        return []
    have = errors.candidate_ports(ctx.code, top)
    return errors.port_problems(have, want) if have is not None else []


def _port_note(ctx: Context, top: str, problems: list[str] | None = None) -> str:
    want = ctx.task.interface.get("ports") or ()
    spec = ", ".join(f"{p['direction']} [{p.get('width', 1)}] {p['name']}" for p in want)
    problems = _port_problems(ctx, top) if problems is None else problems
    lines = [f"The interface of `{top}` is: {spec}."] if spec else []
    lines += [f"Candidate: {p}." for p in problems]
    return "\n".join(lines)


def _with_source(lines: list[str], code: str, budget: int) -> str:
    src = code.splitlines()
    out = []
    for ln in lines[:10]:
        out.append(ln.strip())
        m = re.search(r"cand(?:\.y)?\.sv:(\d+)", ln)
        if m and 0 < int(m[1]) <= len(src):
            out.append(f"    {m[1]} | {src[int(m[1]) - 1].rstrip()}")
    return trim("\n".join(out), budget)


_NET_PROC = re.compile(r"^(initial|always\w*|final)\s+/\* (\S+):\d+ in (\S+) \*/", re.M)
_NET_LHS = re.compile(r"^\s*\{(.+?)\}\s*<?=\s", re.M)
_NET_DECL = re.compile(
    r"^\s+\w+: (\S+) unpacked dims=(\d+)(.*?)\(eref=(\d+), lref=\d+\).*? scope=(\S+)", re.M
)


def _initial_only(netlist: str, source: str = "cand.sv") -> list[str]:
    """Variables of `source` that only `initial` blocks assign and something reads: logic
    that exists in simulation only. From iverilog's elaborated netlist (-N), which names
    every process's kind, file and scope. Memories (ROM contents) are hardware."""
    procs = list(_NET_PROC.finditer(netlist))
    written: dict[tuple[str, str], set[str]] = {}
    for k, m in enumerate(procs):
        if m[2] != source:
            continue
        end = procs[k + 1].start() if k + 1 < len(procs) else len(netlist)
        for lhs in _NET_LHS.finditer(netlist, m.end(), end):
            for item in lhs[1].split(","):
                item = item.strip()
                name = re.match(r"[\w$]+", item)
                if name and "[word=" not in item:
                    written.setdefault((m[3], name[0]), set()).add(m[1])
    # read: referenced in an expression, or an output port (the testbench reads it)
    read = {
        (d[5], d[1])
        for d in _NET_DECL.finditer(netlist)
        if d[2] == "0" and (d[4] != "0" or " output " in d[3])
    }
    return sorted(
        f"{scope}.{name}"
        for (scope, name), kinds in written.items()
        if kinds == {"initial"} and (scope, name) in read
    )


_CONFLICT = re.compile(
    r"^Warning: multiple conflicting drivers for [\w$]+\.\\?(\S+?)(?: \[\d+\])?:$", re.M
)


def _conflicting_drivers(check_log: str) -> list[str]:
    """Signals yosys `check` found driven more than once (its own pass's output, teed to
    a file: the candidate's text can only add to it by failing itself)."""
    return sorted(set(_CONFLICT.findall(check_log)))


def _undriven_outputs(netlist_json: str, top: str) -> dict[str, set[int]]:
    """Output port -> the indices of its bits that are X or Z (undriven) in the netlist."""
    if not netlist_json:
        return {}
    mod = json.loads(netlist_json).get("modules", {}).get(top, {})
    out = {}
    for name, p in mod.get("ports", {}).items():
        bits = {i for i, b in enumerate(p["bits"]) if b in ("x", "z")}
        if p.get("direction") == "output" and bits:
            out[name] = bits
    return out


_LIB_AREA = re.compile(r"cell\s*\(\s*(\w+)\s*\)\s*\{\s*area\s*:\s*([\d.]+)")


@functools.cache
def _cells_lib() -> str:
    return CELLS_LIB.read_text()


@functools.cache
def _cell_areas() -> dict[str, float]:
    return {m[1]: float(m[2]) for m in _LIB_AREA.finditer(_cells_lib())}


def _area(stat_json: str) -> tuple[int, float, dict[str, int]]:
    if not stat_json:
        return 0, 0.0, {}
    data = json.loads(stat_json)
    design = data.get("design") or next(iter(data.get("modules", {}).values()), {})
    kinds = design.get("num_cells_by_type", {})
    areas = _cell_areas()
    area = sum(areas.get(k, 0.0) * n for k, n in kinds.items())
    return sum(kinds.values()), round(area, 3), dict(kinds)
