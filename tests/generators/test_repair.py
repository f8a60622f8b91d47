"""Offline repair: reconstruction from the nearest verified variant, one hunk a round."""

from __future__ import annotations

from pathlib import Path

from generators.base import RepairRequest
from generators.perturb import PerturbChannel
from generators.perturb.repair import apply_first_hunk, nearest
from generators.prompts import REPAIR_FEEDBACK_BUDGET, repair_messages
from verifiers.catalog import load_task
from verifiers.contract import Candidate, Limits, Status
from verifiers.registry import get_verifier

TASK = load_task(Path(__file__).resolve().parents[2] / "tasks" / "rtl" / "updown_counter8")
LIMITS = Limits(gates=("compile", "simulate"))


def cand(code: str, origin: str = "perturb", attempt: int = 0) -> Candidate:
    return Candidate(TASK.task_id, code, origin, f"test:{origin}", attempt=attempt)


def request(failed: Candidate, *verified: Candidate) -> RepairRequest:
    verdict = get_verifier("rtl").verify(TASK, failed.code, LIMITS)
    assert verdict.status is not Status.PASS
    return RepairRequest(TASK, failed, verdict, tuple(verified))


def test_nearest_is_the_most_similar_verified_variant():
    ref = cand(TASK.reference, "reference")
    far = cand("// unrelated\nmodule other; endmodule\n", "rewrite")
    mutant = TASK.reference.replace("<=", "=", 1)
    assert nearest(mutant, (far, ref)) == ref
    assert nearest(mutant, ()) is None


def test_one_hunk_per_round():
    target = "a\nb\nc\nd\ne\n"
    broken = "a\nB\nc\nd\nE\n"
    once = apply_first_hunk(broken, target)
    assert once == "a\nb\nc\nd\nE\n"
    assert apply_first_hunk(once, target) == target
    assert apply_first_hunk(target, target) is None


def test_a_mutant_is_rebuilt_into_code_that_verifies():
    lines = TASK.reference.splitlines(keepends=True)
    i = next(k for k, line in enumerate(lines) if "+ 1" in line or "+ 8'd1" in line)
    lines[i] = lines[i].replace("+", "-", 1)
    failed = cand("".join(lines))
    ref = cand(TASK.reference, "reference")
    gen = PerturbChannel()
    (fix,) = gen.repair(request(failed, ref))
    assert fix.origin == "repair" and fix.parent_id == failed.candidate_id and fix.attempt == 1
    assert fix.generator.startswith("reconstruct:")
    assert get_verifier("rtl").verify(TASK, fix.code, LIMITS).passed
    assert gen.stats["repair_repaired"] == 1


def test_without_a_verified_variant_there_is_no_offline_fix():
    failed = cand(TASK.reference.replace("endmodule", "", 1))
    gen = PerturbChannel()
    assert gen.repair(request(failed)) == []
    assert gen.stats["repair_no_verified_variant"] == 1


def test_the_repair_prompt_shows_the_tool_feedback_trimmed_to_its_budget():
    failed = cand(TASK.reference.replace(";", "", 1))
    req = request(failed)
    msgs = repair_messages(TASK, failed.code, req.verdict.status.value, req.verdict.feedback)
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert failed.code.strip() in msgs[2]["content"]
    first_error_line = req.verdict.feedback.strip().splitlines()[0]
    assert first_error_line in msgs[3]["content"]
    long = repair_messages(TASK, failed.code, "compile_error", "x" * 50_000)
    assert len(long[3]["content"]) < REPAIR_FEEDBACK_BUDGET + 400
