"""The in-process vLLM generator: `vllm.LLM` answers whole batches of conversations at once.

Everything but "answer these conversations" is `ChatGenerator`'s, shared with the HTTP
generator. The engine is pluggable: by default a `VllmEngine` in this process (a GPU box,
no Ray); on a cluster `ray_actors.generate.vllm_generator` hands in a Ray actor pinned to a
GPU node, so the driver itself needs neither a GPU nor vllm.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

from generators.openai import ChatGenerator, ChatRequest, Choice, Completion, GeneratorError
from generators.prompts import Message
from generators.settings import LLMSettings

INSTALL_HINT = (
    "vllm is not installed: pip install vllm on a GPU node, or use the openai generator "
    "against `vllm serve`"
)


class Engine(Protocol):
    def generate_batch(
        self, conversations: list[list[Message]], params: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """One `Completion.to_dict()` per conversation, in order; `params` are the
        `SamplingParams` keyword arguments for each."""
        ...


def require_vllm() -> None:
    # find_spec, not import: importing vllm pulls in torch and CUDA for nothing here
    if importlib.util.find_spec("vllm") is None:
        raise GeneratorError(INSTALL_HINT)


def sampling_params(settings: LLMSettings, request: ChatRequest) -> dict[str, Any]:
    return {
        "n": request.n,
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "max_tokens": settings.max_tokens,
        "seed": request.seed,
    }


class VllmEngine:
    """`vllm.LLM` in this process. Plain class: `ray_actors.generate` wraps it in an actor."""

    def __init__(self, settings: LLMSettings) -> None:
        try:
            from vllm import LLM
        except ImportError as e:
            raise GeneratorError(f"{INSTALL_HINT} (import failed: {e})") from e
        self.llm = LLM(model=settings.model, **settings.engine_args)

    def generate_batch(
        self, conversations: list[list[Message]], params: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        from vllm import SamplingParams

        outputs = self.llm.chat(
            conversations, [SamplingParams(**p) for p in params], use_tqdm=False
        )
        return [
            Completion(
                tuple(Choice(o.text, o.finish_reason) for o in out.outputs),
                len(out.prompt_token_ids or ()),
                sum(len(o.token_ids) for o in out.outputs),
            ).to_dict()
            for out in outputs
        ]

    def close(self) -> None:
        del self.llm


class VllmGenerator(ChatGenerator):
    name = "vllm"
    batch_size: ClassVar[int] = 256  # the engine schedules a batch far better than we could

    def __init__(self, settings: LLMSettings, engine: Engine | None = None) -> None:
        super().__init__(settings)
        if engine is None:
            require_vllm()
        self._engine = engine

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = VllmEngine(self.settings)
        return self._engine

    def close(self) -> None:
        close = getattr(self._engine, "close", None)
        if close is not None:
            close()
        self._engine = None

    def _complete(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        out = self.engine.generate_batch(
            [list(r.messages) for r in requests],
            [sampling_params(self.settings, r) for r in requests],
        )
        if len(out) != len(requests):
            raise GeneratorError(
                f"the vllm engine answered {len(out)} of {len(requests)} conversations"
            )
        return [Completion.from_dict(d) for d in out]
