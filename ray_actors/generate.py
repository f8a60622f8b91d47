"""Generator actors: the vLLM engine as a Ray actor pinned to one GPU.

`VllmEngineWorker` is a plain class (it runs alone on a GPU box too); it becomes an actor
only in `start_engine`, which first checks that some node has a GPU: an actor asking for a
GPU no node has would wait forever in Ray.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import ray
from ray.exceptions import RayError

from generators.openai import GeneratorError
from generators.prompts import Message
from generators.settings import LLMSettings
from generators.vllm import VllmEngine, VllmGenerator

log = logging.getLogger(__name__)


class VllmEngineWorker:
    """Answers batches of conversations with `vllm.LLM`. Plain class; see `start_engine`."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.engine = VllmEngine(LLMSettings.from_dict(settings))

    def generate_batch(
        self, conversations: list[list[Message]], params: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        return self.engine.generate_batch(conversations, params)


def require_gpu(resources: Mapping[str, float]) -> int:
    """The cluster's GPU count; a clear error when there is none."""
    gpus = int(resources.get("GPU", 0))
    if gpus < 1:
        raise GeneratorError(
            "no Ray node has a GPU, so the vllm generator cannot start its engine: start a GPU "
            "node (`ray start --address=<head> --num-gpus=1`) or use the openai generator "
            "against a `vllm serve` endpoint"
        )
    return gpus


class RemoteEngine:
    """A `VllmEngineWorker` actor behind the engine interface `VllmGenerator` calls."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def generate_batch(
        self, conversations: list[list[Message]], params: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        try:
            return ray.get(self.actor.generate_batch.remote(conversations, params))
        except RayError as e:
            raise GeneratorError(f"the vllm engine actor failed: {e}") from e

    def close(self) -> None:
        ray.kill(self.actor)


def start_engine(
    settings: LLMSettings, resources: Mapping[str, float] | None = None
) -> RemoteEngine:
    """Start the engine actor on a GPU node. `resources` defaults to the running cluster's."""
    require_gpu(ray.cluster_resources() if resources is None else resources)
    actor_cls = ray.remote(VllmEngineWorker).options(num_gpus=1, num_cpus=1, max_restarts=0)
    log.info("starting the vllm engine for %s on a GPU node", settings.model)
    return RemoteEngine(actor_cls.remote(settings.to_dict()))


def vllm_generator(settings: LLMSettings) -> VllmGenerator:
    """The vllm generator with its engine on a GPU node of the running Ray cluster."""
    return VllmGenerator(settings, engine=start_engine(settings))
