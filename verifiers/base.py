"""The verifier family base: `verify()` is written once here; a domain only declares its
tools and writes its gates.

A gate is a method `gate_<name>(ctx) -> str` returning the check's detail, or raising
`GateFail` with the status and taxonomy code. Gates run in the order of `gates` and stop at
the first failure; every gate that ran becomes a `Check` with its seconds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from verifiers import domain as domain_registry
from verifiers.contract import Artifact, Check, Limits, Status, Task, Verdict, content_id
from verifiers.domain import FORMAT_GATE
from verifiers.feedback import trim
from verifiers.sandbox import (
    MachineFault,
    RunResult,
    Sandbox,
    SandboxSession,
    SandboxUnavailable,
)
from verifiers.settings import VerifierSettings, settings_for
from verifiers.taxonomy import category_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Tool:
    name: str
    binary: str
    version_argv: tuple[str, ...]
    install: str  # the command that installs it on Debian 12

    def present(self) -> bool:
        return shutil.which(self.binary) is not None

    def version(self) -> str:
        try:
            out = subprocess.run(
                self.version_argv, capture_output=True, text=True, timeout=20, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"unknown ({type(e).__name__})"
        text = (out.stdout or out.stderr).strip()
        return text.splitlines()[0][:120] if text else "unknown"


class GateFail(Exception):
    """A gate refused the candidate (or, with INFRA_ERROR, the infrastructure failed)."""

    def __init__(
        self,
        status: Status,
        code: str,
        detail: str,
        feedback: str = "",
        metrics: dict[str, Any] | None = None,
    ):
        super().__init__(detail)
        category_of(code)  # unknown codes fail loudly, at the raise site
        self.status = status
        self.code = code
        self.detail = detail
        self.feedback = feedback or detail
        self.metrics = metrics or {}


LIMIT_STATUS = {
    "timeout": (Status.TIMEOUT, "tool_timeout"),
    "output_limit": (Status.RESOURCE_LIMIT, "output_limit"),
    # a hang that spent its CPU budget ran out of time, as one stopped by the wall clock
    "cpu_limit": (Status.TIMEOUT, "cpu_limit"),
    "file_size_limit": (Status.RESOURCE_LIMIT, "file_size_limit"),
    "memory_limit": (Status.RESOURCE_LIMIT, "memory_limit"),
    # the machine's, never the candidate's (`verifiers.sandbox.Stop`): retried
    "machine_slow": (Status.INFRA_ERROR, "machine_slow"),
    "killed_externally": (Status.INFRA_ERROR, "killed_externally"),
}


def fail_on_limit(res: RunResult, what: str, timeout_code: str = "tool_timeout") -> None:
    """Raise the right GateFail if a sandbox limit ended the run."""
    if fault := res.machine_fault(what):
        raise GateFail(Status.INFRA_ERROR, fault.code, fault.detail)
    hit = res.limit_hit
    if hit is None:
        return
    status, code = LIMIT_STATUS[hit]
    if hit == "timeout":
        code = timeout_code
    detail = f"{what}: stopped by the {hit.replace('_', ' ')} after {res.seconds:.2f}s"
    if hit in ("timeout", "cpu_limit") and res.stop is not None:
        detail += f" ({res.stop.describe()})"
    output = trim(res.stdout + res.stderr, 800)
    raise GateFail(status, code, detail, feedback=f"{detail}\n{output}")


def infra_verdict(
    task: Task, candidate_id: str, verifier: str, version: str, code: str, gate: str, reason: str
) -> Verdict:
    """A verdict for work the infrastructure could not do (never the candidate's fault)."""
    return Verdict(
        candidate_id=candidate_id,
        task_id=task.task_id,
        domain=task.domain,
        verifier=verifier,
        verifier_version=version,
        status=Status.INFRA_ERROR,
        checks=(Check(gate, False, 0.0, reason),),
        feedback=reason,
        category=category_of(code),
        code=code,
    )


@dataclass
class Context:
    """Mutable state of one verification, handed from gate to gate."""

    task: Task
    code: str
    limits: Limits
    sandbox: Sandbox
    workdir: Path
    metrics: dict[str, Any] = field(default_factory=dict)
    artifacts: list[Artifact] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # extra feedback for a passing verdict
    tool_seconds: float = 0.0  # time inside tool runs, for harness-overhead accounting
    state: dict[str, Any] = field(default_factory=dict)  # what one gate leaves for the next

    trace: list[dict[str, Any]] | None = None  # set by Verifier.trace: every run's argv
    gate: str = ""  # the gate now running
    # gate -> seconds measured elsewhere (a worker that runs several gates in one job);
    # used for that gate's Check instead of the time its method took
    gate_seconds: dict[str, float] = field(default_factory=dict)
    # the candidate's one sandbox for all its tool runs (`Verifier.session_sandbox`)
    session: SandboxSession | None = None

    def run(
        self,
        argv: list[str],
        *,
        timeout_s: float | None = None,
        cpu_s: int | None = None,
        self_signal: bool = False,
        seccomp: bytes | None = None,
    ) -> RunResult:
        """Run argv in the candidate's sandbox. `seccomp` (a `verifiers.seccomp` filter)
        takes a sandbox of its own for this run: a session's jobs share one filter."""
        if self.session is not None and seccomp is None:
            res = self.session.run(argv, timeout_s=timeout_s, cpu_s=cpu_s, self_signal=self_signal)
        else:
            res = self.sandbox.run(
                argv,
                self.workdir,
                timeout_s=timeout_s,
                cpu_s=cpu_s,
                self_signal=self_signal,
                seccomp=seccomp,
            )
        self.tool_seconds += res.seconds
        if self.trace is not None:
            self.trace.append(
                {
                    "gate": self.gate,
                    "workdir": str(self.workdir),
                    "argv": list(argv),
                    "seconds": res.seconds,
                    # the tree's CPU (wait4's rusage): what the run cost whatever the load
                    "cpu_s": res.stop.usage.cpu_s if res.stop and res.stop.usage else None,
                    "rc": res.returncode,
                }
            )
        self.metrics.setdefault("tool_runs", []).append(
            {"argv0": argv[0], "seconds": round(res.seconds, 4), "rc": res.returncode}
        )
        if fault := res.sandbox_fault:  # never the candidate's fault: retried as infra
            raise GateFail(
                Status.INFRA_ERROR,
                "sandbox_unavailable",
                f"{argv[0]} could not run in the sandbox: {fault}",
            )
        # the machine ended it (slow, or a kill from outside): infra, whatever the gate
        # would have made of the run (a formal `unknown`, a lint note, a timeout)
        if machine := res.machine_fault(argv[0]):
            raise GateFail(Status.INFRA_ERROR, machine.code, machine.detail)
        return res


def put_input(ctx: Context, name: str, data: str | bytes, mode: int = 0o644) -> None:
    """A host-written input in the work dir: a new file (whatever stood there removed),
    never written through a link the candidate planted."""
    path = ctx.workdir / name
    try:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            raise GateFail(Status.INFRA_ERROR, "sandbox_unavailable", f"{name} is a directory")
        path.unlink()
    except FileNotFoundError:
        pass
    raw = data.encode() if isinstance(data, str) else data
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), mode)
        f.write(raw)


class Verifier:
    domain: ClassVar[str]
    name: ClassVar[str]
    version: ClassVar[str]
    resource: ClassVar[str]  # the Ray resource its node type declares
    tools: ClassVar[tuple[Tool, ...]] = ()
    gates: ClassVar[tuple[str, ...]] = ()
    always: ClassVar[tuple[str, ...]] = ()  # gates run even when Limits.gates omits them
    # gate -> gates it needs: asking for one (Limits.gates) runs its prerequisites too
    requires: ClassVar[dict[str, tuple[str, ...]]] = {}
    # a verdict from some of the gates only carries its own version ("1+gates:a,b"), so it
    # never stands for a full one (the candidate stays pending for the full verdict)
    partial_versions: ClassVar[bool] = False
    # a candidate's tool runs share one sandbox (`Sandbox.session`: the same runs without
    # a bwrap start each), for a domain whose gates make many short ones
    session_sandbox: ClassVar[bool] = False
    # a batch's candidates verified on threads (`verify_many`): for a domain whose work is
    # all tool processes, which the threads only wait for
    threaded_batches: ClassVar[bool] = False

    def __init__(
        self,
        keep_workdirs: Path | None = None,
        *,
        settings: VerifierSettings | Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> None:
        # The domain's settings (`Domain.settings`): this object or its dict, plus any
        # field given by name (`CudaVerifier(workers=1)`); unknown keys are refused.
        self.settings = settings_for(getattr(self, "domain", ""), settings, **overrides)
        self._toolchain: dict[str, str] | None = None
        # Debugging and benchmarks: keep each candidate's work dir under this root and
        # record every tool run (argv, seconds, CPU seconds) in `self.trace`.
        self.keep_workdirs = keep_workdirs
        self.trace: list[dict[str, Any]] | None = [] if keep_workdirs else None

    # --- what a domain may override -------------------------------------------------------
    def check_format(self, task: Task, code: str) -> None:
        """Raise GateFail(FORMAT_ERROR, ...) when there is no usable code."""

    def version_for(self, limits: Limits | None) -> str:
        """The verifier_version a verdict under `limits` carries (and that pending work is
        selected by). A domain whose partial runs must not stand for a full one (the GPU
        verifiers' CPU gates) names the gates in it."""
        if not self.partial_versions:
            return self.version
        wanted = self._wanted(limits or Limits())
        if wanted >= set(self.gates):
            return self.version
        return f"{self.version}+gates:{','.join(g for g in self.gates if g in wanted)}"

    # --- written once ---------------------------------------------------------------------
    def missing_tools(self) -> list[Tool]:
        return [t for t in self.tools if not t.present()]

    def toolchain(self) -> dict[str, str]:
        if self._toolchain is None:
            self._toolchain = {t.name: t.version() for t in self.tools if t.present()}
        return self._toolchain

    def verify(self, task: Task, code: Any, limits: Limits | None = None) -> Verdict:
        """Run the gates on `code`; never raises for anything the candidate did."""
        start = time.perf_counter()
        limits = limits or Limits()
        candidate_id = content_id(task.task_id, _as_id_text(code))
        checks: list[Check] = []
        ctx: Context | None = None
        outcome: GateFail | None = None
        try:
            text = self._format_gate(task, code, limits, checks)
            missing = self.missing_tools()
            if missing:
                hint = "; ".join(f"{t.name}: {t.install}" for t in missing)
                raise GateFail(
                    Status.INFRA_ERROR,
                    "tool_missing",
                    f"missing tools for {self.domain}: install them ({hint})",
                )
            try:
                sandbox = Sandbox(limits)
            except SandboxUnavailable as e:
                raise GateFail(Status.INFRA_ERROR, "sandbox_unavailable", str(e)) from None
            with self._workdir() as tmp:
                work = sandbox.prepare_workdir(Path(tmp))
                with self._session(sandbox, work) as session:
                    ctx = Context(task, text, limits, sandbox, work, session=session)
                    ctx.trace = self.trace
                    self._run_gates(ctx, checks)
        except GateFail as f:
            outcome = f
        return self._verdict(task, candidate_id, checks, ctx, outcome, start, limits)

    def verify_many(
        self, items: list[tuple[Task, Any]], limits: Limits | None = None
    ) -> list[Verdict]:
        """Verify several (task, code) pairs. With `threaded_batches`, on `settings.workers`
        threads (default: one per core); a domain may override to run them otherwise."""
        workers = 1
        if self.threaded_batches:
            workers = getattr(self.settings, "workers", None) or os.cpu_count() or 1
        if workers == 1 or len(items) < 2:
            return [self.verify(task, code, limits) for task, code in items]
        with ThreadPoolExecutor(min(workers, len(items)), f"{self.domain}-verify") as pool:
            return list(pool.map(lambda it: self.verify(it[0], it[1], limits), items))

    def _session(
        self, sandbox: Sandbox, work: Path
    ) -> contextlib.AbstractContextManager[SandboxSession | None]:
        if not self.session_sandbox:
            return contextlib.nullcontext(None)
        return sandbox.session(work)

    def _workdir(self) -> contextlib.AbstractContextManager[str]:
        if self.keep_workdirs is None:
            return tempfile.TemporaryDirectory(prefix=f"crucible-{self.domain}-")
        self.keep_workdirs.mkdir(parents=True, exist_ok=True)
        # the sandbox uid binds the work dir itself, so it must be able to reach it
        self.keep_workdirs.chmod(0o711)
        return contextlib.nullcontext(tempfile.mkdtemp(prefix="cand-", dir=self.keep_workdirs))

    def _format_gate(self, task: Task, code: Any, limits: Limits, checks: list[Check]) -> str:
        t0 = time.perf_counter()
        try:
            if isinstance(code, bytes):
                try:
                    code = code.decode("utf-8")
                except UnicodeDecodeError:
                    raise GateFail(
                        Status.FORMAT_ERROR, "not_text", "candidate is not UTF-8 text"
                    ) from None
            if not isinstance(code, str) or "\0" in code:
                raise GateFail(Status.FORMAT_ERROR, "not_text", "candidate is not text")
            if not code.strip():
                raise GateFail(Status.FORMAT_ERROR, "empty_code", "candidate is empty")
            size = len(code.encode("utf-8"))
            if size > limits.max_code_bytes:
                raise GateFail(
                    Status.FORMAT_ERROR,
                    "code_too_large",
                    f"candidate is {size} bytes; the limit is {limits.max_code_bytes}",
                )
            self.check_format(task, code)
        except GateFail as f:
            seconds = time.perf_counter() - t0
            checks.append(Check("format", False, seconds, f.detail, FORMAT_GATE[1]))
            raise
        checks.append(Check("format", True, time.perf_counter() - t0, "", FORMAT_GATE[1]))
        return code

    def _wanted(self, limits: Limits) -> set[str]:
        wanted = {g for g in self.gates if g in self.always or limits.wants(g)}
        todo = list(wanted)
        while todo:
            for dep in self.requires.get(todo.pop(), ()):
                if dep not in wanted:
                    wanted.add(dep)
                    todo.append(dep)
        return wanted

    def _run_gates(self, ctx: Context, checks: list[Check]) -> None:
        wanted = self._wanted(ctx.limits)
        for gate in self.gates:
            if gate not in wanted:
                continue
            t0 = time.perf_counter()
            ctx.gate = gate
            try:
                detail = getattr(self, f"gate_{gate}")(ctx)
            except GateFail as f:
                checks.append(self._check(gate, False, self._seconds(ctx, gate, t0), f.detail))
                raise
            except SandboxUnavailable as e:
                checks.append(self._check(gate, False, self._seconds(ctx, gate, t0), str(e)))
                raise GateFail(Status.INFRA_ERROR, "sandbox_unavailable", str(e)) from None
            except MachineFault as e:  # a tool run or warm job the machine ended
                checks.append(self._check(gate, False, self._seconds(ctx, gate, t0), e.detail))
                raise GateFail(Status.INFRA_ERROR, e.code, e.detail) from None
            checks.append(self._check(gate, True, self._seconds(ctx, gate, t0), detail or ""))

    def stage_of(self, gate: str) -> str:
        """The gate's stage, from the domain's descriptor."""
        return domain_registry.get(self.domain).stage_of(gate)

    def _check(self, gate: str, ok: bool, seconds: float, detail: str) -> Check:
        return Check(gate, ok, seconds, detail, self.stage_of(gate))

    @staticmethod
    def _seconds(ctx: Context, gate: str, t0: float) -> float:
        measured = ctx.gate_seconds.get(gate)
        return float(measured) if measured is not None else time.perf_counter() - t0

    def _verdict(
        self,
        task: Task,
        candidate_id: str,
        checks: list[Check],
        ctx: Context | None,
        outcome: GateFail | None,
        start: float,
        limits: Limits,
    ) -> Verdict:
        metrics = dict(ctx.metrics) if ctx else {}
        ran = [c.name for c in checks]
        skipped = [g for g in self.gates if g not in ran]
        if outcome is None:
            status, code, category = Status.PASS, "", ""
            feedback = "\n".join(ctx.notes) if ctx else ""
            if skipped:
                metrics["gates_skipped"] = skipped
        else:
            status, code, category = outcome.status, outcome.code, category_of(outcome.code)
            feedback = outcome.feedback
            metrics.update(outcome.metrics)
        if ctx:
            metrics["tool_seconds"] = round(ctx.tool_seconds, 4)
        if recorded := self.settings.recorded():  # what differs from the defaults
            metrics["settings"] = recorded
        return Verdict(
            candidate_id=candidate_id,
            task_id=task.task_id,
            domain=self.domain,
            verifier=self.name,
            verifier_version=self.version_for(limits),
            status=status,
            checks=tuple(checks),
            metrics=metrics,
            feedback=trim(feedback, limits.feedback_chars),
            category=category,
            code=code,
            toolchain=self.toolchain(),
            duration_ms=round((time.perf_counter() - start) * 1000, 3),
            node=socket.gethostname(),
            artifacts=tuple(ctx.artifacts) if ctx else (),
        )


def _as_id_text(code: Any) -> str:
    if isinstance(code, str):
        return code
    if isinstance(code, bytes):
        return code.decode("utf-8", "replace")
    return repr(code)
