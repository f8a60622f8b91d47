"""The chip-design domain's descriptor (stdlib only: read without importing a tool)."""

from verifiers.domain import Domain, ExtractRules, PerfMetric, PromptStyle

DOMAIN = Domain(
    name="rtl",
    summary="Verilog / SystemVerilog: simulate, synthesize, prove equivalent",
    formal="SAT / ABC `pdr` equivalence",
    verifier="verifiers.rtl.verifier:RtlVerifier",
    spec_loader="verifiers.rtl.spec:load_rtl_spec",
    perturb="generators.perturb.rtl:RtlPerturbGenerator",
    resource="eda",
    image="eda",
    tools=("iverilog", "vvp", "verilator_bin", "yosys", "yosys-abc", "bwrap"),
    install="bash infra/install-toolchains.sh rtl",
    prompt=PromptStyle(
        "SystemVerilog",
        "systemverilog",
        "the complete synthesizable module(s), including the top module with exactly the "
        "ports listed; no testbench",
    ),
    extract=ExtractRules(
        entry=r"^\s*(?:module|macromodule)\s+[A-Za-z_]\w*",
        named_entry=r"^\s*(?:module|macromodule)\s+(?:automatic\s+|static\s+)?{name}\b",
        unfenced=r"\A(?:\s*(?://[^\n]*|/\*.*?\*/|`[^\n]*))*\s*(?:module|macromodule)\b.*"
        r"\bendmodule\b",
        comment="//",
        cut_after="endmodule",
        entry_field="top",
    ),
    # Verilog's ' starts sized literals (4'd9), never a character literal: C's comments
    syntax="c",
    gates=(
        ("static", "build"),
        ("compile", "build"),
        ("lint", "build"),
        ("simulate", "run"),
        ("synthesize", "build"),
        ("equivalence", "judge"),
    ),
    perf=PerfMetric("area", "lower", "um^2"),
    fast_gates=("compile", "simulate"),
    default_run=True,
    importers=(("verilogeval", "verifiers.rtl.importer:import_verilogeval"),),
    settings="verifiers.rtl.settings:RtlSettings",
)
