"""The ascendc domain's descriptor and its verifier's settings (stdlib only: read without
a toolchain)."""

import dataclasses

from verifiers.domain import Domain, ExtractRules, PerfMetric, PromptStyle
from verifiers.settings import SettingsError, VerifierSettings, setting


@dataclasses.dataclass(frozen=True)
class AscendcSettings(VerifierSettings):
    """The AscendC verifier's settings (`AscendcVerifier(settings=...)`)."""

    domain = "ascendc"

    lower_timeout_s: float = setting(
        60.0, "wall seconds one pyasc lowering may take (its CPU budget is the task's)"
    )
    soc: str = setting(
        "Ascend910B", "the SoC the CANN gates compile for and run on (bisheng --cce-soc-version)"
    )

    def __post_init__(self) -> None:
        if not 0.0 < self.lower_timeout_s <= 3600.0:
            raise SettingsError("ascendc verifier settings: lower_timeout_s must be in (0, 3600]")
        if self.soc not in SOCS:
            raise SettingsError(f"ascendc verifier settings: soc must be one of {', '.join(SOCS)}")


SOCS = ("Ascend910B", "Ascend910_93")

DOMAIN = Domain(
    name="ascendc",
    summary="NPU kernels in AscendC: pyasc DSL lowered here, static sync / queue / tiling "
    "checks; compile, precision and speedup where CANN runs",
    verifier="verifiers.ascendc.verifier:AscendcVerifier",
    spec_loader="verifiers.ascendc.spec:load_ascendc_spec",
    perturb="generators.perturb.ascendc:AscendcPerturbGenerator",
    resource="NPU",
    image="npu",
    tools=("pyasc-python", "bwrap"),
    install="bash infra/install-toolchains.sh ascendc",
    prompt=PromptStyle(
        "AscendC for Ascend NPUs (pyasc's Python DSL, or AscendC C++)",
        "python",
        "the complete kernel: for a pyasc task one Python file defining the task's @asc.jit "
        "kernel; for a C++ task the kernel file (Device-Only) or every file the task lists, "
        "each after a `// file: <path>` line (Host+Device)",
    ),
    extract=ExtractRules(
        entry=r"^\s*(?:@asc\.jit|def\s+\w+\s*\(|extern\s+\"C\"\s+__global__)",
        named_entry=r"\b{name}\b",
        unfenced=r"\A\s*(?:import\s+asc\b|from\s+asc\b|#include\b|//\s*file:)",
        comment="#",
        entry_field="kernel",
        tags=("py", "python", "cpp", "c++", "ascendc", "pyasc"),
    ),
    syntax="python",
    gates=(
        ("extract", "build"),
        ("lower", "build"),
        ("static", "build"),
        ("compile", "build"),
        ("precision", "judge"),
        ("speedup", "perf"),
    ),
    perf=PerfMetric("speedup", "higher", "x", goal="faster"),
    # no quick screen: a verdict of the gates that run here only says it lowered and is
    # statically clean, and a pass of them (a kernel computing anything) must never be taken
    # for a verified kernel; `--gates extract,lower,static` still asks for them explicitly
    fast_gates=None,
    default_run=False,
    settings="verifiers.ascendc.domain:AscendcSettings",
    importers=(("npukernelbench", "verifiers.ascendc.npukernelbench:import_npukernelbench"),),
)
