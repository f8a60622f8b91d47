"""The x86asm domain's descriptor and its verifier's settings (stdlib only: read without
a toolchain)."""

import dataclasses

from verifiers.domain import Domain, ExtractRules, PerfMetric, PromptStyle
from verifiers.settings import SettingsError, VerifierSettings, setting


@dataclasses.dataclass(frozen=True)
class X86Settings(VerifierSettings):
    """The x86asm verifier's settings (`X86Verifier(settings=...)`)."""

    domain = "x86asm"

    workers: int | None = setting(
        None, "candidates of a batch verified at once (default: one per core)"
    )
    timing_reps: int = setting(
        15,
        "timed rounds of three passes (the candidate, the -O3 baseline, a second copy of "
        "it: the noise floor), their order rotating; each round on perf inputs of its own",
    )

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise SettingsError("x86asm verifier settings: workers must be at least 1")
        if not 3 <= self.timing_reps <= 1000:
            raise SettingsError("x86asm verifier settings: timing_reps must be 3..1000")


DOMAIN = Domain(
    name="x86asm",
    summary="x86-64 assembly optimization: correct on every test, ABI-clean, and faster "
    "than gcc -O3 in instructions (callgrind) and wall time",
    verifier="verifiers.x86asm.verifier:X86Verifier",
    spec_loader="verifiers.x86asm.spec:load_x86asm_spec",
    perturb="generators.perturb.x86asm:X86PerturbGenerator",
    resource="cpu",
    image="cpu",
    tools=("gcc", "as", "objcopy", "objdump", "valgrind", "bwrap"),
    install="bash infra/install-toolchains.sh x86asm",
    prompt=PromptStyle(
        "x86-64 assembly (GNU as, System V AMD64 ABI)",
        "asm",
        "the complete assembly file (GNU as) that defines the function as a global symbol, "
        "correct on every input and faster than the -O3 baseline",
    ),
    extract=ExtractRules(
        entry=r"^[ \t]*[A-Za-z_.$][\w.$]*:",
        named_entry=r"^[ \t]*{name}:",
        unfenced=r"\A(?:\s*(?:#|//)[^\n]*)*\s*(?:\.(?:text|globl|global|intel_syntax|section|"
        r"file|p2align|type)\b|[A-Za-z_]\w*:)",
        comment="#",
        entry_field="function",
        tags=("asm", "s", "gas", "x86asm", "assembly"),
    ),
    syntax="asm",
    gates=(
        ("assemble", "build"),
        ("static", "build"),
        ("link", "build"),
        ("execute", "run"),
        ("abi", "judge"),
        ("correct", "judge"),
        ("copy", "perf"),
        ("perf", "perf"),
    ),
    perf=PerfMetric(
        "instructions",
        "lower",
        "instructions",
        confirm=("speedup_wall", "higher"),
        goal="faster",
        report=("baseline_instructions", "speedup", "wall_ns", "baseline_wall_ns", "speedup_wall"),
    ),
    fast_gates=("assemble", "static", "link", "execute", "abi", "correct"),
    default_run=False,
    settings="verifiers.x86asm.domain:X86Settings",
    importers=(("supercoder", "verifiers.x86asm.supercoder:import_supercoder"),),
)
