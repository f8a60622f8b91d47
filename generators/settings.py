"""Settings for the chat-model generators (`openai` against any OpenAI-compatible endpoint,
`vllm` in-process). Loaded once at the entry point and passed down; nothing here reads the
environment unless the entry point asks it to (`with_api_key_from`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LLMSettings:
    model: str = ""
    base_url: str = "http://localhost:8000/v1"  # `vllm serve`'s default
    # The key itself never goes into `to_dict` (run records land in the lake) nor `repr`.
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str = "OPENAI_API_KEY"  # where the entry point looks for the key
    temperature: float = 0.8
    top_p: float = 0.95
    n: int = 4  # samples per task
    max_tokens: int = 2048
    retries: int = 4  # extra attempts after the first, on 429 / 5xx / connection errors
    backoff_s: float = 1.0  # first retry's delay; doubles each time, with jitter
    concurrency: int = 8  # requests in flight at once
    timeout_s: float = 120.0  # per HTTP request
    # vllm generator only: extra `vllm.LLM` arguments (max_model_len, gpu_memory_utilization)
    engine_args: dict[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        for name in ("n", "max_tokens", "concurrency"):
            if getattr(self, name) < 1:
                raise ValueError(f"LLMSettings.{name} must be at least 1")
        if self.retries < 0 or self.backoff_s < 0 or self.timeout_s <= 0:
            raise ValueError("LLMSettings: retries and backoff_s must be >= 0, timeout_s > 0")

    def with_api_key_from(self, environ: Mapping[str, str]) -> LLMSettings:
        """These settings with the key read from `environ[api_key_env]` (entry points only)."""
        if self.api_key or not self.api_key_env:
            return self
        return dataclasses.replace(self, api_key=environ.get(self.api_key_env) or None)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        del d["api_key"]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LLMSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(
                f"unknown LLM setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return cls(**d)
