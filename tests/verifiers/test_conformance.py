"""The conformance suite for the built-in domains: one fixtures class each (rtl, cuda,
triton, cad, embedded, x86asm, ascendc), and the rule that every registered domain has one.

The candidates are the adversarial suite's own where it has them (looked up by case id),
so a hostile text is written once. GPU domains run their CPU path here (see
`tests/verifiers/conformance.py`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from tests.verifiers.conformance import (
    HANG_LIMITS,
    INFRA_TEXT,
    SLOW_LIMITS,
    ConformanceCases,
    DomainFixtures,
    fixtures_class,
    fixtures_for_domain,
    missing_fixtures,
    path_without,
    python_without,
)
from verifiers import domain as domains
from verifiers import registry


def _by_id(params, id_: str, index: int = 0) -> str:
    """The candidate text of the adversarial suite's case `id_`."""
    return next(p.values[index] for p in params if p.id == id_)


@fixtures_for_domain
class RtlFixtures(DomainFixtures):
    domain = "rtl"
    task_dir = "tasks/rtl/adder8"

    @staticmethod
    def _case(id_: str) -> str:
        from tests.adversarial.rtl import test_hostile_rtl as rtl

        return _by_id(rtl.CASES, id_, index=1)

    def wrong(self) -> str:
        from tests.adversarial.rtl.test_hostile_rtl import ADDER_WRONG, adder

        return adder(ADDER_WRONG)

    def hang(self) -> str:
        return self._case("limits-zero_delay_infinite_loop")

    # no sleeper: a design cannot block the simulator without simulation time advancing
    # (that is a busy simulator), and $system is refused statically

    def flood(self) -> str:
        return self._case("limits-output_flood")

    def fork_bomb(self) -> str:
        return self._case("classics-fork_bomb")  # $system: refused by the static gate

    def forged_pass(self) -> str:
        return self._case("judge_reads_candidate_text-forged_report_without_nonce")

    def infra_text(self) -> str:
        from tests.adversarial.rtl.test_hostile_rtl import ADDER_OK, adder

        return adder(ADDER_OK + f'  initial $display("{INFRA_TEXT}");\n')


class _KernelFixtures(DomainFixtures):
    """CUDA and Triton: the registry's verifier, on its CPU path without a GPU."""

    def gpu_here(self) -> bool:
        return self.verifier().device == "cuda"

    modules: tuple[str, ...] = ("torch",)

    def absent(self) -> list[str]:
        return [m for m in self.modules if importlib.util.find_spec(m) is None]


@fixtures_for_domain
class CudaFixtures(_KernelFixtures):
    domain = "cuda"
    task_dir = "tasks/cuda/relu"
    gpu_only = ("correct", "timing")  # nvcc compiles and launches dry-run on the CPU

    def absent(self) -> list[str]:
        from verifiers.kernels.nvcc import find_nvcc

        return super().absent() + ([] if find_nvcc() else ["nvcc"])

    @staticmethod
    def _hostile():
        from tests.adversarial.cuda import test_hostile_cuda

        return test_hostile_cuda

    def make_past_static_gate(self):
        from tests.adversarial.kernel_kit import StaticGateBypassedCudaVerifierForTests

        return StaticGateBypassedCudaVerifierForTests(workers=1)

    def slow_machine_verifier(self):
        # on the CPU path the reference meets only nvcc, whose wall limit is the verifier's
        # compile floor (a setting), not Limits.timeout_s: as tiny as the case's wall limit
        return registry.get_verifier(
            self.domain, settings={"compile_timeout_s": SLOW_LIMITS["timeout_s"]}
        )

    def uncached(self, code: str) -> str:
        # nvcc's cache keys on the CUDA source: the nonce goes inside it
        import secrets

        marker = 'CUDA_SRC = r"""'
        assert marker in code
        return code.replace(marker, f"{marker}\n// conformance nonce {secrets.token_hex(8)}", 1)

    def wrong(self) -> str:
        return self._hostile().BROKEN  # on the CPU path only a build failure shows

    def hang(self) -> str:
        # the CPU path runs the candidate's Python only to load it and dry-run forward
        return self._hostile().in_init("i = 0\n        while i >= 0:\n            i = i + 1")

    def hang_verifier(self):
        # the load runs under the build deadline, max(3 x Limits.timeout_s, the compile
        # floor): with the default floor the busy loop would spin a whole minute
        floor = 3 * HANG_LIMITS["timeout_s"]
        return registry.get_verifier(self.domain, settings={"compile_timeout_s": floor})

    # no sleeper: it could only block while loading (the hang's build deadline);
    # Triton's, on the same runner, stands for both

    def flood(self) -> str:
        return self._hostile().in_init("for i in range(16384):\n            print('x' * 4096)")

    def fork_bomb(self) -> str:
        m = self._hostile()
        return m.probe(m.FORK_BOMB)

    def forged_pass(self) -> str:
        m = self._hostile()
        return _by_id(m.STATIC, "judge_reads_candidate_text-fake_result_json")

    def infra_text(self) -> str:
        return self._hostile().in_init(f"print({INFRA_TEXT!r})")

    def hide_tool(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        from verifiers.kernels import nvcc

        monkeypatch.setattr(nvcc, "CUDA_HOMES", ())  # its fixed install dirs, searched first
        monkeypatch.delenv("CUDA_HOME", raising=False)
        monkeypatch.delenv("CUDA_PATH", raising=False)
        monkeypatch.setenv("PATH", path_without({"nvcc"}, tmp_path / "bin"))
        assert nvcc.find_nvcc() is None


@fixtures_for_domain
class TritonFixtures(_KernelFixtures):
    domain = "triton"
    task_dir = "tasks/triton/relu"
    gpu_only = ("timing",)  # the interpreter runs the correctness trials on the CPU
    modules = ("torch", "triton")

    @staticmethod
    def _hostile():
        from tests.adversarial.triton import test_hostile_triton

        return test_hostile_triton

    @staticmethod
    def _relu() -> str:
        from tests.verifiers.test_kernels import TRITON_RELU

        return TRITON_RELU

    def make_past_static_gate(self):
        from tests.adversarial.kernel_kit import StaticGateBypassedTritonVerifierForTests

        return StaticGateBypassedTritonVerifierForTests(workers=1)

    def wrong(self) -> str:
        return self._hostile().WRONG

    def writes_past_a_buffer(self) -> str:
        return self._hostile().STORE_MASK_DROPPED  # seen by the interpreter's trials here

    def hang(self) -> str:
        # in the kernel: only the interpreter's correctness run reaches it
        return self._relu().replace(
            "    tl.store(", "    k = 0\n    while k >= 0:\n        k = k + 1\n    tl.store("
        )

    def sleeper(self) -> str:
        m = self._hostile()
        return m.probe(m.SLEEP_FOREVER)

    def flood(self) -> str:
        return self._init("for i in range(16384):\n            print('x' * 4096)")

    def fork_bomb(self) -> str:
        m = self._hostile()
        return m.probe(m.FORK_BOMB)

    def forged_pass(self) -> str:
        return _by_id(self._hostile().STATIC, "judge_reads_candidate_text-fake_result_json")

    def infra_text(self) -> str:
        return self._init(f"print({INFRA_TEXT!r})")

    def _init(self, stmt: str) -> str:
        init = "        super().__init__()\n"
        return self._relu().replace(init, f"{init}        {stmt}\n")

    def hide_tool(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        monkeypatch.delenv("CRUCIBLE_KERNEL_DEVICE", raising=False)
        python_without(monkeypatch, "torch", "triton")


@fixtures_for_domain
class CadFixtures(DomainFixtures):
    domain = "cad"
    task_dir = "tasks/cad/washer"

    @staticmethod
    def _case(id_: str) -> str:
        from tests.adversarial.cad.cases import ALL

        return next(c.code for c in ALL if c.id == id_)

    def make_past_static_gate(self):
        from tests.adversarial.cad.test_hostile_cad import StaticGateBypassedCadVerifier

        return StaticGateBypassedCadVerifier(workers=1)

    def wrong(self) -> str:
        from tests.adversarial.cad.cases import WRONG_PLATE

        return WRONG_PLATE

    def hang(self) -> str:
        return "i = 0\nwhile i >= 0:\n    i = i + 1\n" + self.reference()

    def sleeper(self) -> str:
        return self._case("classics-sleep_forever")  # `time`: past the static gate only

    def flood(self) -> str:
        return "while True:\n    print('x' * 4096)\n" + self.reference()

    def fork_bomb(self) -> str:
        return self._case("classics-fork_bomb")

    def forged_pass(self) -> str:
        return self._case("judge_reads_candidate_text-prints_fake_results_and_sandbox_faults")

    def infra_text(self) -> str:
        return f"print({INFRA_TEXT!r})\n" + self.reference()

    def hide_tool(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        python_without(monkeypatch, "cadquery")


@fixtures_for_domain
class EmbeddedFixtures(DomainFixtures):
    domain = "embedded"
    task_dir = "tests/fixtures/embedded/board"  # every check kind at once

    @staticmethod
    def _case(id_: str) -> str:
        from tests.adversarial.embedded.cases import ALL

        return next(c.code for c in ALL if c.id == id_)

    def make_past_static_gate(self):
        from tests.adversarial.embedded.test_hostile_embedded import NoTrapCheck

        return NoTrapCheck()

    def wrong(self) -> str:
        return self.reference().replace("(1UL << 5)", "(1UL << 6)", 1)

    def hang(self) -> str:
        return self._case("classics-busy_hang")

    def sleeper(self) -> str:
        # WFI with interrupts off: under -icount sleep=off QEMU spins on it, so the CPU
        # budget ends it like a busy hang (the candidate's either way)
        return self._case("classics-wfi_forever")

    def flood(self) -> str:
        return self._case("classics-uart_flood")

    def fork_bomb(self) -> str:
        return self._case("classics-fork_bomb")  # semihosting SYS_SYSTEM

    def forged_pass(self) -> str:
        return self._case("forge-prints_the_expected_transcript")

    def writes_past_a_buffer(self) -> str:
        from tests.adversarial.embedded.cases import EXACT

        return next(c.code for c in EXACT if c.id == "oob-wild_store_into_free_ram")

    def infra_text(self) -> str:
        # on USART2, a port with nothing attached: the transcript the task checks stays the
        # reference's, so it earns the reference's pass
        line = INFRA_TEXT.replace('"', "'")
        return self.reference().replace(
            "void led(int on) {",
            'void led(int on) {\n  for (const char *p = "' + line + '"; *p; p++) '
            "USART2->DR = (uint8_t)*p;",
            1,
        )


@fixtures_for_domain
class X86AsmFixtures(DomainFixtures):
    domain = "x86asm"
    task_dir = "tests/fixtures/x86asm/add_scaled"  # in and inout buffers, a scalar, AVX2

    @staticmethod
    def _case(id_: str) -> str:
        from tests.adversarial.x86asm.cases import ALL

        return next(c.code for c in ALL if c.id == id_)

    def wrong_past_the_task_sizes(self) -> str:
        return self._case("sizes-wrong_from_400_to_32768")

    def writes_past_a_buffer(self) -> str:
        return self._case("oob-write_dst_n_when_large")

    def make_past_static_gate(self):
        from tests.adversarial.x86asm.verifiers import NoStaticRules

        return NoStaticRules()

    def wrong(self) -> str:
        return self.reference().replace("vpmulld", "vpaddd", 1)

    def hang(self) -> str:
        return self._case("classics-busy_hang")

    # no sleeper: blocking needs a system call, which the static gate refuses and the
    # driver's filter kills (the candidate's forbidden_syscall, never a wait)

    def flood(self) -> str:
        # no system call means no output of its own: the assembler made to print instead
        return self._case("classics-assembler_flood")

    def fork_bomb(self) -> str:
        return self._case("classics-fork_bomb")

    def forged_pass(self) -> str:
        return self._case("forge-driver_records_then_exit")

    def infra_text(self) -> str:
        # printed by its tool run: an assembler warning carrying the text
        line = INFRA_TEXT.replace('"', "'")
        return f'.warning "{line}"\n' + self.reference()


@fixtures_for_domain
class AscendcFixtures(DomainFixtures):
    """pyasc's DSL on tasks/ascendc/add: the gates that run here are extract, lower and
    static; compile, precision and speedup need CANN (`no_cann` off an NPU node). What a
    candidate runs, it runs while pyasc lowers it (tests/adversarial/ascendc/cases.py)."""

    domain = "ascendc"
    task_dir = "tasks/ascendc/add"
    gpu_only = ("compile", "precision", "speedup")
    hardware_code = "no_cann"

    @staticmethod
    def _cases():
        from tests.adversarial.ascendc import cases

        return cases

    def make_past_static_gate(self):
        from tests.adversarial.ascendc.verifiers import DslCheckOffForTests

        return DslCheckOffForTests()

    def slow_machine_verifier(self):
        # the lowering's wall limit is a setting (floored at 3 x Limits.timeout_s, at
        # least 3 s): as tiny as the case's wall limit
        return registry.get_verifier(
            self.domain, settings={"lower_timeout_s": SLOW_LIMITS["timeout_s"]}
        )

    def wrong(self) -> str:
        return self._cases().WRONG  # asc.vadd: does not lower

    def hang(self) -> str:
        return self._cases().HANG  # a static unroll of 10^8 trips, spun at lowering time

    def sleeper(self) -> str:
        return self._cases().SLEEPER  # `import time`: past the DSL check only

    def flood(self) -> str:
        return self._cases().FLOOD  # a helper the kernel calls prints at lowering time

    def fork_bomb(self) -> str:
        return self._cases().FORK_BOMB  # `import os`: refused by the DSL check

    def forged_pass(self) -> str:
        return self._cases().FORGED

    def infra_text(self) -> str:
        return self._cases().printing(INFRA_TEXT)


@pytest.fixture(scope="module", autouse=True)
def _close_verifiers():
    yield
    registry.close_all()


class TestConformance(ConformanceCases):
    """Every case for every registered domain (ids: `[<domain>]`)."""


# --- every registered domain has fixtures ------------------------------------------------


def test_every_registered_domain_has_fixtures():
    assert missing_fixtures() == [], (
        f"registered domains without conformance fixtures: {missing_fixtures()}"
    )
    for name in domains.names():
        assert fixtures_class(name).domain == name


def test_a_domain_registered_without_fixtures_is_flagged():
    dummy = dataclasses.replace(domains.get("rtl"), name="conformance_dummy")
    domains.register(dummy)
    try:
        assert "conformance_dummy" in domains.names()
        assert missing_fixtures() == ["conformance_dummy"]
        with pytest.raises(LookupError, match="no conformance fixtures"):
            fixtures_class("conformance_dummy")
    finally:
        domains.unregister("conformance_dummy")
    assert missing_fixtures() == []


def test_fixtures_cannot_be_declared_twice():
    class Again(RtlFixtures):
        pass

    with pytest.raises(ValueError, match="already has conformance fixtures"):
        fixtures_for_domain(Again)
