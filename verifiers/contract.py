"""The records every domain shares: Task, Candidate, Verdict, Check, Status, Limits.

Records are frozen and JSON-safe by construction: `to_dict()` gives plain JSON types and
`from_dict()` reads them back, so a verifier node needs nothing but the stdlib to exchange
them as JSONL.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

SPEC_VERSION = 1
# The domains: `verifiers.domain` (the registry of descriptors), never a list here.
ORIGINS = ("reference", "rewrite", "perturb", "llm", "repair", "optimize")
SPLITS = ("train", "holdout")


def content_id(*parts: str) -> str:
    """sha256 over the parts, NUL-separated so ("ab", "c") and ("a", "bc") differ."""
    h = hashlib.sha256()
    for i, part in enumerate(parts):
        if i:
            h.update(b"\0")
        h.update(part.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Status(StrEnum):
    """What the candidate did (first tier) or what the infrastructure did (`INFRA_ERROR`)."""

    PASS = "pass"
    FORMAT_ERROR = "format_error"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    WRONG_ANSWER = "wrong_answer"
    TIMEOUT = "timeout"
    RESOURCE_LIMIT = "resource_limit"
    SLOW = "slow"
    REJECTED = "rejected"
    INFRA_ERROR = "infra_error"

    @property
    def is_infra(self) -> bool:
        return self is Status.INFRA_ERROR


@dataclass(frozen=True)
class Limits:
    """Resource limits for one candidate's tool runs, and which gates to run.

    `gates=None` runs every gate the verifier has; a tuple runs only those named (the
    verifier still runs the gates they depend on, e.g. `simulate` needs `compile`).
    `unconfined=True` is the user's explicit opt-out of the sandbox: candidate code then
    runs with rlimits only. Never the default.
    """

    timeout_s: float = 20.0  # wall clock per tool run
    cpu_s: int = 20
    memory_mb: int = 2048
    nproc: int = 64
    fsize_mb: int = 64
    output_bytes: int = 256 * 1024  # per stream; more is `resource_limit`
    max_code_bytes: int = 256 * 1024
    feedback_chars: int = 4000
    formal_timeout_s: float = 10.0
    gates: tuple[str, ...] | None = None
    unconfined: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["gates"] = list(self.gates) if self.gates is not None else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Limits:
        d = dict(d)
        if d.get("gates") is not None:
            d["gates"] = tuple(d["gates"])
        return cls(**d)

    def wants(self, gate: str) -> bool:
        return self.gates is None or gate in self.gates


@dataclass(frozen=True)
class Task:
    """One industrial coding task. `task_id` is the hash of everything else."""

    name: str
    domain: str
    family: str
    level: int
    requirement: str
    interface: dict[str, Any]
    platform: dict[str, Any]
    reference: str | None
    harness: dict[str, Any]
    source: str = "crucible"
    split: str = "train"
    spec_version: int = SPEC_VERSION
    task_id: str = ""

    def __post_init__(self) -> None:
        if not self.task_id:
            object.__setattr__(self, "task_id", content_id(canonical_json(self._spec())))

    def _spec(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.pop("task_id")
        return d

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Task:
        return cls(**d)


@dataclass(frozen=True)
class Candidate:
    task_id: str
    code: str
    origin: str
    generator: str
    prompt: str | None = None
    parent_id: str | None = None
    attempt: int = 0
    run_id: str = ""
    created_at: str = ""
    candidate_id: str = ""

    def __post_init__(self) -> None:
        if not self.candidate_id:
            object.__setattr__(self, "candidate_id", content_id(self.task_id, self.code))
        if not self.created_at:
            object.__setattr__(self, "created_at", utc_now())

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Candidate:
        return cls(**d)


@dataclass(frozen=True)
class Check:
    """One gate that ran: its name, whether it let the candidate through, how long, why,
    and its stage (`build`, `run`, `judge`, `perf`: what SQL and exports key on)."""

    name: str
    ok: bool
    seconds: float
    detail: str = ""
    stage: str = ""


@dataclass(frozen=True)
class Artifact:
    """A blob a verdict produced (log, VCD, netlist). Stored content-addressed by the lake."""

    kind: str
    name: str
    data: bytes

    @functools.cached_property  # blobs can be megabytes; writers ask for it several times
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "sha256": self.sha256,
            "data_b64": base64.b64encode(self.data).decode("ascii"),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Artifact:
        return cls(kind=d["kind"], name=d["name"], data=base64.b64decode(d["data_b64"]))


@dataclass(frozen=True)
class Verdict:
    candidate_id: str
    task_id: str
    domain: str
    verifier: str
    verifier_version: str
    status: Status
    checks: tuple[Check, ...] = ()
    metrics: dict[str, Any] = field(default_factory=dict)
    feedback: str = ""
    category: str = ""
    code: str = ""
    toolchain: dict[str, str] = field(default_factory=dict)
    duration_ms: float = 0.0
    node: str = ""
    created_at: str = ""
    artifacts: tuple[Artifact, ...] = ()
    verdict_id: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))
        if not self.created_at:
            object.__setattr__(self, "created_at", utc_now())
        if not self.verdict_id:
            parts = [self.candidate_id, self.verifier, self.verifier_version]
            if self.status.is_infra:
                # An infra_error is retried; salting its id with the time keeps the retry's
                # verdict (which gets the canonical id) from being skipped as present.
                parts += ["infra_error", self.created_at]
            object.__setattr__(self, "verdict_id", content_id(*parts))

    @property
    def passed(self) -> bool:
        return self.status is Status.PASS

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["status"] = self.status.value
        d["passed"] = self.passed
        d["checks"] = [dataclasses.asdict(c) for c in self.checks]
        d["artifacts"] = [a.to_dict() for a in self.artifacts]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        d = dict(d)
        d.pop("passed", None)
        d["checks"] = tuple(Check(**c) for c in d.get("checks", ()))
        d["artifacts"] = tuple(Artifact.from_dict(a) for a in d.get("artifacts", ()))
        return cls(**d)
