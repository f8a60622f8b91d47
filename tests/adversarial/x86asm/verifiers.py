"""What the x86asm tests share: the skip when the toolchain is missing, and the test-only
verifiers that switch one defence off so the next one is what a candidate meets."""

from __future__ import annotations

import shutil

import pytest

from verifiers import domain as domains
from verifiers.x86asm.verifier import X86Verifier

X86 = domains.get("x86asm")
needs_x86 = pytest.mark.skipif(
    any(shutil.which(t) is None for t in X86.tools),
    reason=f"x86asm toolchain missing: {X86.install}",
)


class NoStaticRules(X86Verifier):
    """Test-only: the static gate refuses nothing (instructions, sections, client
    requests), so a candidate's code really runs."""

    def static_findings(self, ctx, obj, disassembly):
        return []


class CopyGateOff(X86Verifier):
    """Test-only: no copy detection, so a baseline reaches the perf gate."""

    def gate_copy(self, ctx):
        return "skipped"
