"""The RTL verifier's settings (`RtlVerifier(settings=...)`); stdlib only."""

from __future__ import annotations

import dataclasses
import math

from verifiers.settings import SettingsError, VerifierSettings, setting


@dataclasses.dataclass(frozen=True)
class RtlSettings(VerifierSettings):
    domain = "rtl"

    cross_check_rate: float = setting(
        0.0,
        "fraction of candidates (0 to 1, drawn from each candidate's content) whose "
        "simulation also runs in the other simulator (iverilog / verilator); a "
        "disagreement is recorded as the finding sim_disagreement",
    )

    def __post_init__(self) -> None:
        rate = self.cross_check_rate
        if not (math.isfinite(rate) and 0.0 <= rate <= 1.0):
            raise SettingsError(
                f"rtl verifier settings: cross_check_rate must be in [0, 1], not {rate}"
            )
