"""Offline generators: the reference, rewrites of it, and mutations, per domain.

Domains map to dotted paths imported on first use (as `verifiers.registry` does), so
importing this package costs nothing for domains a stage does not touch.
"""

from __future__ import annotations

import importlib

from generators.base import Generator

_REGISTRY: dict[str, str] = {
    "rtl": "generators.perturb.rtl:RtlPerturbGenerator",
}


def register(domain: str, dotted: str, *, overwrite: bool = False) -> None:
    if domain in _REGISTRY and not overwrite and _REGISTRY[domain] != dotted:
        raise ValueError(f"domain {domain!r} already has a perturb generator: {_REGISTRY[domain]}")
    _REGISTRY[domain] = dotted


def known_domains() -> list[str]:
    return sorted(_REGISTRY)


def generator_for(domain: str) -> Generator:
    """A fresh generator (its `stats` start at zero) for `domain`'s tasks."""
    try:
        dotted = _REGISTRY[domain]
    except KeyError:
        raise ValueError(
            f"no perturb generator for domain {domain!r}; known: {', '.join(known_domains())}"
        ) from None
    module_name, _, cls_name = dotted.partition(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    return cls()
