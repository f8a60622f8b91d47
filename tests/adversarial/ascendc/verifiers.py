"""What the ascendc tests share: the skip when pyasc is missing, and the test-only verifier
that switches the DSL check off, so the lowering's sandbox is what a candidate meets."""

from __future__ import annotations

import shutil

import pytest

from verifiers import domain as domains
from verifiers.ascendc.verifier import AscendcVerifier
from verifiers.base import Context

ASCENDC = domains.get("ascendc")
needs_pyasc = pytest.mark.skipif(
    any(shutil.which(t) is None for t in ASCENDC.tools),
    reason=f"pyasc missing: {ASCENDC.install}",
)


class DslCheckOffForTests(AscendcVerifier):
    """Test-only: a pyasc candidate's file is not read for imports, calls or dunders before
    it is lowered, so what it makes pyasc run (a plain helper its kernel calls runs at
    lowering time) really runs, in the sandbox."""

    def gate_extract(self, ctx: Context) -> str:
        if ctx.task.harness["form"] == "pyasc":
            return "DSL check off (test-only)"
        return super().gate_extract(ctx)
