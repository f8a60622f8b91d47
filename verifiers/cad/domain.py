"""The CAD domain's descriptor and its verifier's settings (stdlib only: read without
importing CadQuery)."""

import dataclasses

from verifiers.domain import Domain, ExtractRules, PromptStyle
from verifiers.settings import SettingsError, VerifierSettings, setting


@dataclasses.dataclass(frozen=True)
class CadSettings(VerifierSettings):
    """The CAD verifier's settings (`CadVerifier(settings=...)`)."""

    domain = "cad"

    workers: int | None = setting(
        None, "warm build servers, and as many judges (default: one of each per core)"
    )

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise SettingsError("cad verifier settings: workers must be at least 1")


DOMAIN = Domain(
    name="cad",
    summary="CadQuery parts judged by exact geometry against the reference",
    verifier="verifiers.cad.verifier:CadVerifier",
    spec_loader="verifiers.cad.spec:load_cad_spec",
    perturb="generators.perturb.cad:CadPerturbGenerator",
    resource="cad",
    image="cad",
    tools=("bwrap",),
    modules=("cadquery",),
    install="pip install -e '.[cad]'",
    prompt=PromptStyle(
        "CadQuery (Python)",
        "python",
        "a Python script that builds the part with CadQuery and assigns it to `result`",
    ),
    extract=ExtractRules(
        entry=r"^\s*result\s*=",
        named_entry=r"^\s*(?:class|def)\s+{name}\b",
        unfenced=r"\A(?:\s*#[^\n]*)*\s*(?:import\s|from\s+\S+\s+import\s)",
        python=True,
    ),
    syntax="python",
    gates=(
        ("anticheat", "build"),
        ("build", "build"),
        ("solid", "judge"),
        ("iou", "judge"),
        ("surface", "judge"),
    ),
    fast_gates=("build",),
    default_run=True,
    settings="verifiers.cad.domain:CadSettings",
)
