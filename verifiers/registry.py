"""Domain -> verifier class, as dotted paths imported on first use (fsspec-style).

Importing `verifiers` never imports a domain's tool bindings; `get_verifier("rtl")` does,
once. A domain whose Python stack is not installed answers with the install hint instead
of a traceback, and `verify()` turns that into an `infra_error` verdict.
"""

from __future__ import annotations

import importlib
from typing import Any

from verifiers.base import Verifier, infra_verdict
from verifiers.contract import Limits, Task, Verdict, content_id

_REGISTRY: dict[str, tuple[str, str]] = {
    # domain: (dotted path "module:Class", pip extra / install hint)
    "rtl": ("verifiers.rtl.verifier:RtlVerifier", "bash infra/install-toolchains.sh rtl"),
    "cuda": ("verifiers.kernels.verifier:CudaVerifier", "pip install -e '.[gpu]' and nvcc"),
    "triton": ("verifiers.kernels.verifier:TritonVerifier", "pip install -e '.[gpu]'"),
    "cad": ("verifiers.cad.verifier:CadVerifier", "pip install -e '.[cad]'"),
}
_INSTANCES: dict[str, Verifier] = {}


class VerifierUnavailable(RuntimeError):
    """The domain's verifier cannot be imported here; the message says what to install."""


def register(domain: str, dotted: str, install: str, *, overwrite: bool = False) -> None:
    if domain in _REGISTRY and not overwrite and _REGISTRY[domain][0] != dotted:
        raise ValueError(f"domain {domain!r} is already registered to {_REGISTRY[domain][0]}")
    _REGISTRY[domain] = (dotted, install)
    _INSTANCES.pop(domain, None)


def known_domains() -> list[str]:
    return sorted(_REGISTRY)


def get_verifier(domain: str) -> Verifier:
    if domain in _INSTANCES:
        return _INSTANCES[domain]
    if domain not in _REGISTRY:
        raise VerifierUnavailable(
            f"no verifier for domain {domain!r}; known: {', '.join(known_domains())}"
        )
    dotted, install = _REGISTRY[domain]
    try:
        cls = load_dotted(dotted)
    except ImportError as e:
        raise VerifierUnavailable(
            f"the {domain} verifier cannot be imported ({type(e).__name__}: {e}); "
            f"install it with: {install}"
        ) from None
    _INSTANCES[domain] = cls()
    return _INSTANCES[domain]


def close_all() -> None:
    """Stop every verifier's warm workers and remove their dirs (an entry point's exit)."""
    while _INSTANCES:
        _, verifier = _INSTANCES.popitem()
        close = getattr(verifier, "close", None)
        if close is not None:
            close()


def verify(task: Task, code: Any, limits: Limits | None = None) -> Verdict:
    """Verify with the task's domain verifier; an unimportable domain is `infra_error`."""
    try:
        verifier = get_verifier(task.domain)
    except VerifierUnavailable as e:
        text = code if isinstance(code, str) else repr(code)
        return infra_verdict(
            task,
            content_id(task.task_id, text),
            f"{task.domain}:unavailable",
            "0",
            "tool_missing",
            "import",
            str(e),
        )
    return verifier.verify(task, code, limits)


def verify_many(items: list[tuple[Task, Any]], limits: Limits | None = None) -> list[Verdict]:
    """Verify (task, code) pairs of one domain together (the verifier may parallelise)."""
    if not items:
        return []
    domain = items[0][0].domain
    try:
        verifier = get_verifier(domain)
    except VerifierUnavailable:
        return [verify(t, c, limits) for t, c in items]
    return verifier.verify_many(items, limits)


def load_dotted(dotted: str) -> Any:
    """The object a registry entry names: `package.module:Name`, imported on first use."""
    module_name, _, name = dotted.partition(":")
    return getattr(importlib.import_module(module_name), name)
