"""The conformance suite: the cases every registered domain must pass (issue 12).

A domain joins by supplying a fixtures class (a `DomainFixtures` subclass, decorated with
`@fixtures_for_domain`, in tests/verifiers/test_conformance.py): the task it is checked on
and a handful of candidates of its own language (the reference, a plainly wrong one, a
hang, an output flood, a fork bomb, a forged pass, one that prints infra-looking text).
`ConformanceCases` holds the cases; its `fx` fixture is parametrised over the registry
(`verifiers.domain.names()`), so a domain registered without fixtures fails the suite
(`missing_fixtures()` names it, and its every case errors).

The verifier under test is the registry's own (`verifiers.registry.get_verifier`, default
settings), one per domain for the whole module. A fixtures class may also give a verifier
with its static anti-cheat bypassed (`past_static_gate`, the adversarial suite's test-only
subclasses): the fork bomb and the sleeper are then run past the static gate too, so the
runtime defences (sandbox, warm workers) are what must hold, not the static rules alone.

GPU domains on a node without a GPU (here, and in CI) run their CPU path: the reference
must pass the gates that can run here (`gates_here`: every gate but `gpu_only`), and asked
for every gate it must end as `infra_error` / `no_gpu` at the first GPU-only gate with every
gate before it passed (the documented CPU fallback), never a pass. Every other case runs
with `Limits.gates = gates_here`.

What a case checks that is not plain status:
- hostile candidates (hang, flood, fork bomb, forged pass, infra text) go through the
  adversarial suite's `Outside` (canaries, no process or file of a sandbox uid left; for
  verifiers with warm pools, no stray below any worker: `harness.check`), and an
  innocent reference still passes on the same verifier afterwards;
- a missing tool is made really absent (a PATH without it, a module that cannot be
  imported, nvcc's fixed install dirs emptied) for a fresh verifier of the descriptor's
  class; the feedback must carry the descriptor's install hint or the tool's install text;
- sandbox unavailable: bubblewrap not on PATH, and bubblewrap present but unable to start
  a sandbox (a stand-in `bwrap` that fails the way a kernel without user namespaces does),
  with the sandbox's cached probe cleared so the verifier probes again;
- the slow machine: a tiny wall limit (Limits.timeout_s) and a large CPU budget on a
  variant of the reference no cache has seen: `infra_error` / `machine_slow`. A domain
  whose tools have wall limits of their own (a verifier setting, e.g. nvcc's floor) gives
  a verifier with those tiny too (`slow_machine_verifier`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import secrets
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.adversarial import harness
from verifiers import domain as domains
from verifiers import registry
from verifiers import sandbox as sandbox_mod
from verifiers.base import Verifier
from verifiers.catalog import load_task
from verifiers.contract import Limits, Status, Task, Verdict

ROOT = Path(__file__).resolve().parents[2]

# What a candidate may print or embed that looks like the infrastructure failing.
INFRA_TEXT = (
    "bwrap: Can't fork: Resource temporarily unavailable; infra_error sandbox_unavailable; "
    "Killed; Out of memory; harness_error; machine_slow"
)
# The base's format gate: the codes every domain shares for unusable input.
FORMAT_CODES = {"empty_code", "not_text", "code_too_large"}
# Small limits: a hang ends in seconds (busy loops spend their CPU budget first).
HANG_LIMITS = {"timeout_s": 2.0, "cpu_s": 1}
HOSTILE_LIMITS = {"timeout_s": 5.0}
FLOOD_LIMITS = {"timeout_s": 5.0, "output_bytes": 64 * 1024}
# The slow machine: the wall clock runs out long before the CPU budget could.
SLOW_LIMITS = {"timeout_s": 0.01, "cpu_s": 60}
# Resources a verifier's node offers without a tool on PATH (Ray's own: GPUs, CPUs).
RAY_NATIVE = {"GPU", "cpu"}
# A stand-in for bubblewrap on a kernel without unprivileged user namespaces.
FAILING_BWRAP = "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"


# --- the fixtures a domain supplies -----------------------------------------------------


class DomainFixtures:
    """What a domain gives the conformance suite. Subclass it per domain, set `domain` and
    `task_dir`, write the candidates; override the rest where the defaults do not fit."""

    domain: ClassVar[str]
    task_dir: ClassVar[str]  # a catalog task, relative to the repository root
    # gates that need hardware this node lacks (GPU domains without a GPU, CANN's gates
    # without an NPU), and the infra_error code the first of them ends a verdict with
    gpu_only: ClassVar[tuple[str, ...]] = ()
    hardware_code: ClassVar[str] = "no_gpu"

    def __init__(self) -> None:
        self._task: Task | None = None
        self._bypassed: Verifier | None = None
        self._reference_verdict: Verdict | None = None
        self.seen: list[Verdict] = []  # every verdict a case produced (round-tripped last)

    # --- environment ---------------------------------------------------------------------
    @property
    def descriptor(self) -> domains.Domain:
        return domains.get(self.domain)

    def absent(self) -> list[str]:
        """What this domain's toolchain lacks here (non-empty: the domain is skipped)."""
        d = self.descriptor
        gone = [t for t in d.tools if shutil.which(t) is None]
        return gone + [m for m in d.modules if importlib.util.find_spec(m) is None]

    def require(self) -> None:
        gone = self.absent()
        if gone:
            pytest.skip(
                f"the {self.domain} toolchain is not installed here (missing: "
                f"{', '.join(gone)}); install it with: {self.descriptor.install}"
            )

    def verifier(self) -> Verifier:
        """The verifier under test: the registry's, with its default settings."""
        return registry.get_verifier(self.domain)

    def fresh_verifier(self) -> Verifier:
        """A new instance of the descriptor's verifier class (it probes its tools anew)."""
        return domains.load_dotted(self.descriptor.verifier)()

    def slow_machine_verifier(self) -> Verifier:
        """The verifier of the slow-machine case: the one under test, unless the domain's
        tools run under wall limits of their own (settings, not Limits.timeout_s), which
        it then builds tiny (`registry.get_verifier(domain, settings={...})`)."""
        return self.verifier()

    def hang_verifier(self) -> Verifier:
        """The verifier of the hang case: the one under test, unless the domain meets a
        hang under a wall limit that is a setting rather than Limits.timeout_s (a build
        floor: a kernel's load runs under nvcc's 60 s), which it then builds as short as
        the case's limits make it (the same rule decides: CPU spent past its budget is
        the candidate's timeout)."""
        return self.verifier()

    def make_past_static_gate(self) -> Verifier | None:
        """A test-only verifier whose static anti-cheat lets everything through (None: the
        domain's runtime cannot be reached past its static gate, e.g. a design cannot fork)."""
        return None

    def past_static_gate(self) -> Verifier | None:
        if self._bypassed is None:
            self._bypassed = self.make_past_static_gate()
        return self._bypassed

    def close(self) -> None:
        if self._bypassed is not None:
            close = getattr(self._bypassed, "close", None)
            if close is not None:
                close()
            self._bypassed = None

    def gpu_here(self) -> bool:
        return False

    def gates_here(self) -> tuple[str, ...] | None:
        """The gates that can run on this node (None: all of them)."""
        if not self.gpu_only or self.gpu_here():
            return None
        return tuple(g for g in self.descriptor.gate_names if g not in self.gpu_only)

    def limits(self, **kw: Any) -> Limits:
        return Limits(gates=self.gates_here(), **kw)

    # --- the task and its candidates --------------------------------------------------
    def task(self) -> Task:
        if self._task is None:
            self._task = load_task(ROOT / self.task_dir)
        return self._task

    def reference(self) -> str:
        ref = self.task().reference
        assert ref, f"{self.task_dir} has no reference"
        return ref

    def comment(self, text: str) -> str:
        """A line comment in the domain's language (the descriptor's extraction rules)."""
        return f"{self.descriptor.extract.comment} {text}\n"

    def embedded_infra_text(self) -> str:
        """The reference with infra-looking text in a comment: it earns what the
        reference earns."""
        return self.comment(INFRA_TEXT) + self.reference()

    def uncached(self, code: str) -> str:
        """`code` changed so that no cache (compiles, builds) has seen it."""
        return code + "\n" + self.comment(f"conformance nonce {secrets.token_hex(8)}")

    def oversize(self, limit: int) -> str:
        """The reference padded with comments past `limit` bytes."""
        pad = self.comment("x" * 96)
        return self.reference() + "\n" + pad * (limit // len(pad) + 2)

    def wrong(self) -> str:
        """A plainly wrong candidate (fails on this node's gates)."""
        raise NotImplementedError

    def hang(self) -> str:
        """Never finishes on its own: a busy loop that spends its CPU budget (the
        candidate's under the machine rule)."""
        raise NotImplementedError

    def sleeper(self) -> str | None:
        """Never finishes, blocked (sleeping) rather than busy: run past the static gate
        when there is one. None: the domain cannot express one (or, see the class)."""
        return None

    def flood(self) -> str:
        """Prints far more than Limits.output_bytes."""
        raise NotImplementedError

    def fork_bomb(self) -> str:
        raise NotImplementedError

    def forged_pass(self) -> str:
        """A failing candidate that prints the harness's own report of a pass."""
        raise NotImplementedError

    def infra_text(self) -> str:
        """An otherwise correct candidate that prints INFRA_TEXT (it earns a pass)."""
        raise NotImplementedError

    # --- the behaviour space (issue 29): None where the domain's fixture task has no sized
    # inputs or no buffers; a domain whose task has them supplies both
    def wrong_past_the_task_sizes(self) -> str | None:
        """Right on every size the task's own ranges give and on the perf workload's, wrong
        on larger ones (up to twice the perf workload's): the cases must reach those."""
        return None

    def writes_past_a_buffer(self) -> str | None:
        """Right but for one store just outside a buffer it may write (past the end of an
        output, where sizes matter only at sizes past the task's own ranges) or into memory
        it owns none of: wrong_answer / out_of_bounds_write (red zones, painted memory or a
        guard page)."""
        return None

    def hide_tool(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        """Make one of the domain's tools really absent for a fresh verifier. Default: a
        PATH without the descriptor's first tool binary (other than bubblewrap)."""
        tool = next(t for t in self.descriptor.tools if t != "bwrap")
        monkeypatch.setenv("PATH", path_without({tool}, tmp_path / "bin"))
        assert shutil.which(tool) is None

    # --- running ------------------------------------------------------------------------
    def verify(self, code: Any, limits: Limits | None = None, verifier=None) -> Verdict:
        v = (verifier or self.verifier()).verify(self.task(), code, limits or self.limits())
        self.seen.append(v)
        return v

    def verify_hang(self, code: Any, limits: Limits, verifier) -> Verdict:
        """`verify` under a tight wall clock, again while the machine starved it
        (`harness.verify_settled`)."""
        return harness.verify_settled(
            lambda _task, c, lim: self.verify(c, lim, verifier), self.task(), code, limits
        )

    def reference_verdict(self) -> Verdict:
        if self._reference_verdict is None:
            self._reference_verdict = self.verify(self.reference())
        return self._reference_verdict


FIXTURES: dict[str, type[DomainFixtures]] = {}


def fixtures_for_domain(cls: type[DomainFixtures]) -> type[DomainFixtures]:
    """Class decorator: `cls` is the fixtures of `cls.domain` (one per domain)."""
    old = FIXTURES.get(cls.domain)
    if old is not None and old is not cls:
        raise ValueError(f"{cls.domain} already has conformance fixtures: {old.__qualname__}")
    FIXTURES[cls.domain] = cls
    return cls


def missing_fixtures(names: Iterable[str] | None = None) -> list[str]:
    """Registered domains (or `names`) that have no fixtures class."""
    return [n for n in (domains.names() if names is None else names) if n not in FIXTURES]


def fixtures_class(name: str) -> type[DomainFixtures]:
    cls = FIXTURES.get(name)
    if cls is None:
        raise LookupError(
            f"domain {name!r} is registered but has no conformance fixtures: add a "
            "DomainFixtures subclass for it (tests/verifiers/test_conformance.py)"
        )
    return cls


# --- helpers ---------------------------------------------------------------------------


def path_without(binaries: set[str], where: Path) -> str:
    """A PATH of one dir linking every program on the current PATH but `binaries`."""
    where.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    for d in os.environ.get("PATH", "").split(os.pathsep):
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            if e.name in binaries or e.name in seen:
                continue
            seen.add(e.name)
            (where / e.name).symlink_to(e.path)
    return str(where)


def show(v: Verdict) -> str:
    failed = next((c for c in v.checks if not c.ok), None)
    where = f" at {failed.name}: {failed.detail[:200]}" if failed else ""
    return f"{v.status} {v.code}{where} | {v.feedback[:500]}"


def contained(outside: harness.Outside, v: Verdict, family, verifier) -> None:
    """The adversarial suite's check: not a pass, in `family`, no canary read, nothing
    left; with warm pools, no stray process below any of the verifier's workers."""
    if getattr(verifier, "_pools", None) is not None:
        harness.check(outside, v, family, verifier)
    else:
        outside.check(v, family, settle_s=15.0)


def after_hostile(fx: DomainFixtures, verifier) -> None:
    """The next, innocent candidate on the same verifier (same warm workers) passes."""
    harness.assert_innocent_passes(
        lambda t, c: fx.verify(c, verifier=verifier), fx.task(), fx.reference()
    )


# --- the cases -------------------------------------------------------------------------


class ConformanceCases:
    """Every case, once per registered domain (`fx`: that domain's fixtures)."""

    @pytest.fixture(scope="class", params=domains.names())
    @classmethod
    def fx(cls, request):
        fixtures = fixtures_class(request.param)()
        fixtures.require()
        try:
            yield fixtures
        finally:
            fixtures.close()

    @pytest.fixture
    def outside(self):
        out = harness.make_outside()
        yield out
        harness.close_outside(out)

    # 0. the descriptor and the verifier agree
    def test_descriptor_matches_verifier(self, fx):
        d, v = fx.descriptor, fx.verifier()
        assert type(v) is domains.load_dotted(d.verifier)
        assert v.domain == d.name
        assert tuple(v.gates) == d.gate_names, (v.gates, d.gate_names)
        assert v.resource == d.resource
        for gate in v.gates:
            assert d.stage_of(gate) in domains.STAGES
        for tool in v.tools:
            assert tool.binary in d.tools or d.resource in RAY_NATIVE, (
                f"{tool.binary} is not in the descriptor's tools {d.tools} and "
                f"{d.resource!r} is not a resource Ray declares by itself"
            )
        if d.fast_gates is not None:
            assert set(d.fast_gates) <= set(v.gates)

    # 1. the reference passes (on this node's gates)
    def test_reference_passes(self, fx):
        v = fx.reference_verdict()
        assert v.status is Status.PASS and v.passed, show(v)
        assert all(c.ok for c in v.checks), show(v)
        ran = [c.name for c in v.checks]
        want = fx.gates_here() or fx.descriptor.gate_names
        assert ran == ["format", *[g for g in fx.descriptor.gate_names if g in want]], ran

    def test_a_timed_confirmation_is_judged_above_its_noise_floor(self, fx):
        """A domain whose perf metric is confirmed by a timed one (PerfMetric.confirm) says
        what the timing could resolve: the passing reference's verdict carries the noise
        floor of its run (the baseline against itself) and the interval of its speedup,
        whose low end clears that floor (a median above 1 is not a speedup, #29)."""
        perf = fx.descriptor.perf
        if perf is None or perf.confirm is None:
            pytest.skip(f"{fx.domain} confirms no speedup by timing")
        v = fx.reference_verdict()  # the one test_reference_passes judges
        name = perf.confirm[0]
        if name not in v.metrics:
            pytest.skip(f"{fx.domain} did not time its reference here")
        low, high = v.metrics[f"{name}_ci"]
        assert low <= v.metrics[name] <= high, v.metrics
        assert v.metrics["noise_floor"] >= 1.0 and low > v.metrics["noise_floor"], v.metrics

    def test_reference_passes_its_fast_gates(self, fx):
        fast = fx.descriptor.fast_gates
        if fast is None:
            pytest.skip(f"{fx.domain} declares no fast gates")
        v = fx.verify(fx.reference(), Limits(gates=fast))
        assert v.status is Status.PASS, show(v)

    # 1b. the cases cover what a candidate can do: sizes past the task's own ranges, and
    # memory just outside every buffer
    def test_sizes_past_the_task_ranges_are_checked(self, fx):
        code = fx.wrong_past_the_task_sizes()
        if code is None:
            pytest.skip(f"the {fx.domain} fixtures give no candidate wrong past the task's sizes")
        v = fx.verify(code)
        assert v.status is Status.WRONG_ANSWER, show(v)

    def test_a_write_past_a_buffer_is_out_of_bounds(self, fx):
        code = fx.writes_past_a_buffer()
        if code is None:
            pytest.skip(f"the {fx.domain} fixtures give no candidate writing past a buffer")
        v = fx.verify(code)
        assert (v.status, v.code) == (Status.WRONG_ANSWER, "out_of_bounds_write"), show(v)

    def test_without_the_hardware_every_gate_is_infra_never_pass(self, fx):
        """Asked for every gate on a node without the hardware: the CPU gates pass, the
        first hardware-only gate ends the verdict as infra_error / the fixtures'
        `hardware_code` (no_gpu, no_cann)."""
        if fx.gates_here() is None:
            pytest.skip(f"every {fx.domain} gate runs on this node")
        v = fx.verify(fx.reference(), Limits())
        assert (v.status, v.code) == (Status.INFRA_ERROR, fx.hardware_code), show(v)
        *before, last = v.checks
        assert all(c.ok for c in before), show(v)
        assert not last.ok and last.name in fx.gpu_only, show(v)

    # 2. unusable input is format_error
    @pytest.mark.parametrize(
        "kind", ["empty", "blank", "not_utf8", "nul_byte", "nul_in_bytes", "oversize"]
    )
    def test_unusable_input_is_format_error(self, fx, kind):
        limits = fx.limits(max_code_bytes=4096)
        ref = fx.reference()
        code = {
            "empty": "",
            "blank": " \n\t\n",
            "not_utf8": b"\xff\xfe" + ref.encode(),
            "nul_byte": ref[:10] + "\0" + ref[10:],
            "nul_in_bytes": b"\0" + ref.encode(),
            "oversize": fx.oversize(4096),
        }[kind]
        v = fx.verify(code, limits)
        assert v.status is Status.FORMAT_ERROR, show(v)
        assert v.code in FORMAT_CODES, show(v)
        assert [c.name for c in v.checks] == ["format"], show(v)

    # 3. a hang is timeout
    def test_hang_is_timeout(self, fx, outside):
        verifier = fx.hang_verifier()
        v = fx.verify_hang(outside.fill(fx.hang()), fx.limits(**HANG_LIMITS), verifier)
        assert v.status is Status.TIMEOUT, show(v)
        contained(outside, v, harness.LIMITS, verifier)
        after_hostile(fx, verifier)

    def test_sleeping_hang_is_the_candidates(self, fx, outside):
        """Blocked, not busy: the wall clock stops it with its CPU time under budget, yet
        it is the candidate's doing (a starved tool and a sleeping one must differ)."""
        code = fx.sleeper()
        if code is None:
            pytest.skip(f"no sleeping candidate for {fx.domain} (see its fixtures)")
        verifier = fx.past_static_gate() or fx.verifier()
        v = fx.verify_hang(outside.fill(code), fx.limits(**HANG_LIMITS), verifier)
        assert v.status is Status.TIMEOUT, show(v)
        contained(outside, v, harness.LIMITS, verifier)
        after_hostile(fx, verifier)

    # 4. an output flood is resource_limit
    def test_output_flood_is_resource_limit(self, fx, outside):
        v = fx.verify(outside.fill(fx.flood()), fx.limits(**FLOOD_LIMITS))
        assert v.status is Status.RESOURCE_LIMIT, show(v)
        contained(outside, v, {Status.RESOURCE_LIMIT}, fx.verifier())
        after_hostile(fx, fx.verifier())

    # 5. a fork bomb is contained and leaves no process
    def test_fork_bomb_is_contained(self, fx, outside):
        v = fx.verify(outside.fill(fx.fork_bomb()), fx.limits(**HOSTILE_LIMITS))
        assert v.status is not Status.INFRA_ERROR, show(v)
        contained(outside, v, harness.CANDIDATE_FAULT, fx.verifier())
        after_hostile(fx, fx.verifier())

    def test_fork_bomb_past_the_static_gate_is_contained(self, fx, outside):
        bypassed = fx.past_static_gate()
        if bypassed is None:
            pytest.skip(f"{fx.domain}: no runtime past its static gate can fork")
        v = fx.verify(outside.fill(fx.fork_bomb()), fx.limits(**HOSTILE_LIMITS), bypassed)
        assert v.status is not Status.INFRA_ERROR, show(v)
        contained(outside, v, harness.CANDIDATE_FAULT, bypassed)
        after_hostile(fx, bypassed)

    # 6. a missing tool is infra_error with the install hint
    def test_missing_tool_is_infra_with_install_hint(self, fx, monkeypatch, tmp_path):
        fx.hide_tool(monkeypatch, tmp_path)
        fresh = fx.fresh_verifier()
        try:
            v = fresh.verify(fx.task(), fx.reference(), fx.limits())
        finally:
            close = getattr(fresh, "close", None)
            if close is not None:
                close()
        fx.seen.append(v)
        assert (v.status, v.code) == (Status.INFRA_ERROR, "tool_missing"), show(v)
        hints = [fx.descriptor.install, *(t.install for t in fresh.tools)]
        assert any(h in v.feedback for h in hints), (hints, v.feedback)

    # 7. sandbox unavailable is infra_error
    @pytest.mark.parametrize("how", ["bwrap_not_installed", "bwrap_cannot_start"])
    def test_sandbox_unavailable_is_infra(self, fx, monkeypatch, tmp_path, how):
        monkeypatch.setattr(sandbox_mod, "_probed", {})  # probe again, then restore
        if how == "bwrap_not_installed":
            monkeypatch.setenv("PATH", path_without({"bwrap"}, tmp_path / "bin"))
            assert shutil.which("bwrap") is None
        else:
            fake = tmp_path / "fakebin"
            fake.mkdir()
            (fake / "bwrap").write_text(FAILING_BWRAP)
            (fake / "bwrap").chmod(0o755)
            monkeypatch.setattr(sandbox_mod, "SANDBOX_PATH", f"{fake}:{sandbox_mod.SANDBOX_PATH}")
        v = fx.verify(fx.reference())
        assert v.status is Status.INFRA_ERROR, show(v)
        assert v.code == "sandbox_unavailable", show(v)

    # 8. infra-looking text stays the candidate's
    def test_infra_text_printed_stays_the_candidates(self, fx, outside):
        v = fx.verify(outside.fill(fx.infra_text()))
        assert v.status is not Status.INFRA_ERROR, show(v)
        assert v.status is fx.reference_verdict().status, show(v)

    def test_infra_text_embedded_stays_the_candidates(self, fx):
        v = fx.verify(fx.embedded_infra_text())
        assert v.status is not Status.INFRA_ERROR, show(v)
        assert v.status is fx.reference_verdict().status, show(v)

    # 9. a forged pass line does not pass
    def test_forged_pass_line_does_not_pass(self, fx, outside):
        v = fx.verify(outside.fill(fx.forged_pass()))
        assert not v.passed, show(v)
        contained(outside, v, harness.CANDIDATE_FAULT, fx.verifier())
        after_hostile(fx, fx.verifier())

    # 10. a slow machine is infra_error machine_slow
    def test_slow_machine_is_infra_machine_slow(self, fx):
        verifier = fx.slow_machine_verifier()
        v = fx.verify(fx.uncached(fx.reference()), fx.limits(**SLOW_LIMITS), verifier)
        assert (v.status, v.code) == (Status.INFRA_ERROR, "machine_slow"), (
            f"a {SLOW_LIMITS['timeout_s']}s wall limit with a {SLOW_LIMITS['cpu_s']}s CPU "
            f"budget on the reference: {show(v)}"
        )
        failed = next(c for c in v.checks if not c.ok)
        assert "cpu" in (failed.detail + v.feedback).lower(), show(v)

    # 11. the same candidate twice: the same status and code
    @pytest.mark.parametrize("which", ["reference", "wrong"])
    def test_same_candidate_twice_same_verdict(self, fx, which):
        code = fx.reference() if which == "reference" else fx.wrong()
        first = fx.reference_verdict() if which == "reference" else fx.verify(code)
        second = fx.verify(code)
        assert (first.status, first.code) == (second.status, second.code), (
            show(first),
            show(second),
        )
        assert first.candidate_id == second.candidate_id
        if which == "wrong":
            assert not first.passed and first.status is not Status.INFRA_ERROR, show(first)

    # 12. verdicts round-trip through JSON, every check with its descriptor's stage
    def test_verdicts_round_trip_through_json(self, fx):
        verdicts = [fx.reference_verdict(), *fx.seen]
        if len(verdicts) < 3:  # run alone: a pass, a failure, a format error at least
            verdicts += [fx.verify(fx.wrong()), fx.verify("")]
        for v in verdicts:
            back = Verdict.from_dict(json.loads(json.dumps(v.to_dict())))
            assert back == v, _first_difference(v, back)
            assert back.to_dict() == v.to_dict()
            for c in v.checks:
                assert c.stage == fx.descriptor.stage_of(c.name), (c.name, c.stage)


def _first_difference(a: Verdict, b: Verdict) -> str:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if x != y:
            return f"{f.name}: {x!r:.300} != {y!r:.300}"
    return "equal fields"


def python_without(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make `modules` unimportable in this process (find_spec says None, import fails)."""
    for m in modules:
        monkeypatch.setitem(sys.modules, m, None)
        assert importlib.util.find_spec(m) is None
