"""The embedded domain's descriptor and its verifier's settings (stdlib only: read without
a toolchain)."""

import dataclasses

from verifiers.domain import Domain, ExtractRules, PromptStyle
from verifiers.settings import SettingsError, VerifierSettings, setting


@dataclasses.dataclass(frozen=True)
class EmbeddedSettings(VerifierSettings):
    """The embedded verifier's settings (`EmbeddedVerifier(settings=...)`)."""

    domain = "embedded"

    workers: int | None = setting(
        None, "candidates of a batch verified at once (default: one per core)"
    )

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise SettingsError("embedded verifier settings: workers must be at least 1")


DOMAIN = Domain(
    name="embedded",
    summary="STM32F4 (Cortex-M4) firmware in C, booted in QEMU: exit code, UART, registers",
    verifier="verifiers.embedded.verifier:EmbeddedVerifier",
    spec_loader="verifiers.embedded.spec:load_embedded_spec",
    perturb="generators.perturb.embedded:EmbeddedPerturbGenerator",
    resource="emulator",
    image="emulator",
    tools=("arm-none-eabi-gcc", "qemu-system-arm", "bwrap"),
    install="bash infra/install-toolchains.sh embedded",
    prompt=PromptStyle(
        "C for the STM32F407 (Cortex-M4F, arm-none-eabi-gcc)",
        "c",
        "one C file that defines exactly the functions and interrupt handlers listed, "
        "includes only the headers allowed, and has no main()",
    ),
    extract=ExtractRules(
        entry=r"^[ \t]*(?:static\s+|inline\s+)*[A-Za-z_][\w \t\*]*\b[A-Za-z_]\w*\s*\([^;{]*\)\s*\{",
        named_entry=r"^[ \t]*[A-Za-z_][\w \t\*]*\b{name}\s*\([^;{]*\)\s*\{",
        unfenced=r"\A(?:\s*(?://[^\n]*|/\*.*?\*/))*\s*#\s*include\b",
        comment="//",
        entry_field="entry",
        tags=("cpp", "c++", "C"),
    ),
    syntax="c",
    gates=(
        ("compile", "build"),
        ("link", "build"),
        ("size", "build"),
        ("boot", "run"),
        ("exit", "judge"),
        ("uart", "judge"),
        ("registers", "judge"),
    ),
    fast_gates=("compile", "link", "size"),
    default_run=True,
    settings="verifiers.embedded.domain:EmbeddedSettings",
)
