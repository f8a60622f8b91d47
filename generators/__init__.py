"""Candidate producers behind one interface (`generators.base.Generator`).

`make_generator(name, llm)` builds one by name: `perturb` (offline, the default), `openai`
(any OpenAI-compatible endpoint, e.g. `vllm serve`) or `vllm` (the engine in this process;
`ray_actors.generate.vllm_generator` puts it on a GPU Ray actor, which is what the pipeline
uses). Imports happen on first use, with an install hint when they fail.
"""

from __future__ import annotations

__crucible__ = True  # the mark flows/cli/install.py looks for: this module is Crucible's

from collections.abc import Mapping
from typing import Any

from generators.base import Generator
from verifiers.domain import load_dotted

GENERATORS: dict[str, str] = {
    "perturb": "generators.perturb:PerturbChannel",
    "openai": "generators.openai:OpenAIGenerator",
    "vllm": "generators.vllm:VllmGenerator",
}


def make_generator(name: str, llm: Mapping[str, Any] | None = None) -> Generator:
    """The generator `name`; `llm` holds LLMSettings fields for the model-backed ones."""
    try:
        dotted = GENERATORS[name]
    except KeyError:
        raise ValueError(
            f"unknown generator {name!r}; choose one of: {', '.join(GENERATORS)}"
        ) from None
    cls = load_dotted(dotted)
    if name == "perturb":
        return cls()
    from generators.settings import LLMSettings

    if not llm or not llm.get("model"):
        raise ValueError(f"the {name} generator needs a model: pass --model (and --base-url)")
    return cls(LLMSettings.from_dict(dict(llm)))
