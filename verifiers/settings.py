"""A verifier's settings: one frozen, JSON-safe object passed to its constructor.

Each domain names its settings class in its descriptor (`Domain.settings`, a
"module:Class" path to a subclass of `VerifierSettings`; none: no settings). The CLI, the
JSONL worker (`python -m verifiers.<domain> --settings JSON`) and the Ray actors all hand
a verifier its settings the same way, as this object or its dict; no verifier reads or
writes environment variables for them. A verdict records the values that differ from the
defaults under `metrics["settings"]`, and a pipeline run records them in its `runs` row.

Conventions shared code relies on: a domain whose verifier keeps warm worker processes
names their count `workers` (`None`: the verifier's own default); an actor that holds one
core sets it to 1 (`ray_actors.verify`).

Stdlib only: read without importing a domain's toolchain.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from verifiers import domain as domain_registry

S = TypeVar("S", bound="VerifierSettings")
_SCALARS = (bool, int, float, str)


class SettingsError(ValueError):
    """Settings that are not the domain's: an unknown key, a wrong type or value."""


@dataclasses.dataclass(frozen=True)
class VerifierSettings:
    """The base: no settings. A domain's subclass adds frozen fields of JSON scalar types
    (bool, int, float, str, or one of them | None), each with a default and a `help`
    entry in its field metadata (shown by the worker's `--help`)."""

    domain: ClassVar[str] = ""  # whose settings these are (for messages)

    # --- JSON -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls: type[S], d: Mapping[str, Any] | None) -> S:
        """The settings a dict holds; an unknown key or a wrong type is refused, naming
        the fields there are."""
        if d is None:
            return cls()
        if not isinstance(d, Mapping):
            raise SettingsError(f"{cls._what()} must be a JSON object, not {type(d).__name__}")
        known = cls.field_names()
        unknown = sorted(set(d) - set(known))
        if unknown:
            have = ", ".join(known) if known else "none"
            raise SettingsError(
                f"unknown {cls._what()} key(s): {', '.join(map(str, unknown))} (known: {have})"
            )
        hints = typing.get_type_hints(cls)
        values = {}
        for name, value in d.items():
            allowed = _allowed_types(hints[name])
            if type(value) is int and float in allowed and int not in allowed:
                value = float(value)  # JSON's 2 for a float field (bool is not an int here)
            if type(value) not in allowed:
                want = " or ".join("null" if t is type(None) else t.__name__ for t in allowed)
                shown = json.dumps(value) if type(value) in (*_SCALARS, type(None)) else repr(value)
                raise SettingsError(f"{cls._what()}: {name} must be {want}, not {shown}")
            values[name] = value
        try:
            return cls(**values)
        except SettingsError:
            raise
        except (TypeError, ValueError) as e:
            raise SettingsError(f"{cls._what()}: {e}") from None

    @classmethod
    def coerce(cls: type[S], value: VerifierSettings | Mapping[str, Any] | None, **overrides) -> S:
        """`value` (these settings, their dict, or None for the defaults) with `overrides`
        (field=value) applied, checked like `from_dict`."""
        if isinstance(value, VerifierSettings):
            if type(value) is not cls:
                raise SettingsError(
                    f"{cls._what()} expected, got {type(value).__name__} ({value._what()})"
                )
            if not overrides:
                return value  # type: ignore[return-value]
            value = value.to_dict()
        if value is not None and not isinstance(value, Mapping):
            return cls.from_dict(value)  # refused: not an object
        return cls.from_dict({**(value or {}), **overrides})

    def canonical(self) -> str:
        """One string per distinct value (a cache key): sorted JSON of every field."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    def recorded(self) -> dict[str, Any]:
        """What a verdict records: the fields that differ from the defaults."""
        default = type(self)()
        return {k: v for k, v in self.to_dict().items() if getattr(default, k) != v}

    # --- what entry points show -----------------------------------------------------------
    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def describe(cls) -> list[tuple[str, type, Any, str]]:
        """(name, scalar type, default, help) per field, for command-line flags."""
        hints = typing.get_type_hints(cls)
        out = []
        for f in dataclasses.fields(cls):
            scalar = next(t for t in _allowed_types(hints[f.name]) if t is not type(None))
            out.append((f.name, scalar, f.default, f.metadata.get("help", "")))
        return out

    @classmethod
    def _what(cls) -> str:
        return f"{cls.domain} verifier settings" if cls.domain else "verifier settings"


def _allowed_types(hint: Any) -> tuple[type, ...]:
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    args = typing.get_args(hint) if union else ()
    allowed = args or (hint,)
    for t in allowed:
        if t is not type(None) and t not in _SCALARS:
            raise TypeError(f"a verifier setting must be a JSON scalar type, not {hint!r}")
    return tuple(allowed)


def settings_class(domain: str) -> type[VerifierSettings]:
    """The settings class the domain's descriptor names (the base, without settings, for
    a domain that declares none or is not registered)."""
    try:
        desc = domain_registry.get(domain)
    except domain_registry.UnknownDomain:
        return VerifierSettings
    if not desc.settings:
        return VerifierSettings
    cls = domain_registry.load_dotted(desc.settings)
    if not (isinstance(cls, type) and issubclass(cls, VerifierSettings)):
        raise TypeError(f"{desc.settings} (settings of {domain}) is not a VerifierSettings")
    return cls


def settings_for(
    domain: str, value: VerifierSettings | Mapping[str, Any] | None = None, **overrides
) -> VerifierSettings:
    """The domain's settings from `value` and `overrides`, checked."""
    cls = settings_class(domain)
    given = value.to_dict() if isinstance(value, VerifierSettings) else value
    if cls is VerifierSettings and (given or overrides) and isinstance(given or {}, Mapping):
        keys = sorted({*(given or {}), *overrides})
        raise SettingsError(f"the {domain} verifier takes no settings (given: {', '.join(keys)})")
    return cls.coerce(value, **overrides)


def setting(default: Any, help: str) -> Any:
    """A settings field with its help text."""
    return dataclasses.field(default=default, metadata={"help": help})
