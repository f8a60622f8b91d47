"""(domain, settings) -> verifier instance, the class named by the domain's descriptor
(`verifiers.domain`), imported on first use and built with those settings
(`verifiers.settings`: the descriptor's settings class, as an object or its dict).

Importing `verifiers` never imports a domain's tool bindings; `get_verifier("rtl")` does,
once. A domain whose Python stack is not installed answers with the install hint instead
of a traceback, and `verify()` turns that into an `infra_error` verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verifiers import domain as domain_registry
from verifiers.base import Verifier, infra_verdict
from verifiers.contract import Limits, Task, Verdict, content_id
from verifiers.domain import load_dotted
from verifiers.settings import SettingsError, VerifierSettings, settings_for

__all__ = [
    "SettingsError",
    "VerifierUnavailable",
    "close_all",
    "get_verifier",
    "load_dotted",
    "new_verifier",
    "verify",
]

# (domain, canonical settings) -> the verifier built with them
_INSTANCES: dict[tuple[str, str], Verifier] = {}


class VerifierUnavailable(RuntimeError):
    """The domain's verifier cannot be imported here; the message says what to install."""


def known_domains() -> list[str]:
    return list(domain_registry.names())


def get_verifier(
    domain: str, settings: VerifierSettings | Mapping[str, Any] | None = None
) -> Verifier:
    """The domain's verifier built with `settings` (None: the defaults), one instance per
    distinct settings value. Settings that are not the domain's raise `SettingsError`."""
    try:
        domain_registry.get(domain)
    except domain_registry.UnknownDomain as e:
        raise VerifierUnavailable(str(e)) from None
    chosen = settings_for(domain, settings)
    key = (domain, chosen.canonical())
    if key not in _INSTANCES:
        _INSTANCES[key] = new_verifier(domain, chosen)
    return _INSTANCES[key]


def new_verifier(
    domain: str, settings: VerifierSettings | Mapping[str, Any] | None = None
) -> Verifier:
    """A verifier of its own for the caller (not shared through `get_verifier`): its warm
    workers live until the caller closes it."""
    try:
        desc = domain_registry.get(domain)
    except domain_registry.UnknownDomain as e:
        raise VerifierUnavailable(str(e)) from None
    chosen = settings_for(domain, settings)
    try:
        cls = load_dotted(desc.verifier)
    except ImportError as e:
        raise VerifierUnavailable(
            f"the {domain} verifier cannot be imported ({type(e).__name__}: {e}); "
            f"install it with: {desc.install}"
        ) from None
    return cls(settings=chosen)


def close_all() -> None:
    """Stop every verifier's warm workers and remove their dirs (an entry point's exit)."""
    while _INSTANCES:
        _, verifier = _INSTANCES.popitem()
        close = getattr(verifier, "close", None)
        if close is not None:
            close()


def verify(
    task: Task,
    code: Any,
    limits: Limits | None = None,
    settings: VerifierSettings | Mapping[str, Any] | None = None,
) -> Verdict:
    """Verify with the task's domain verifier; an unimportable domain is `infra_error`."""
    try:
        verifier = get_verifier(task.domain, settings)
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


def verify_many(
    items: list[tuple[Task, Any]],
    limits: Limits | None = None,
    settings: VerifierSettings | Mapping[str, Any] | None = None,
) -> list[Verdict]:
    """Verify (task, code) pairs of one domain together (the verifier may parallelise)."""
    if not items:
        return []
    domain = items[0][0].domain
    try:
        verifier = get_verifier(domain, settings)
    except VerifierUnavailable:
        return [verify(t, c, limits, settings) for t, c in items]
    return verifier.verify_many(items, limits)
