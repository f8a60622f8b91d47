"""The offline ascendc generator: every operator changes the code, is deterministic, and on
tasks/ascendc/add (pyasc) and a Host+Device C++ fixture task the registry's verifier, asked
for the gates that run without an NPU (extract, lower, static), gives each kind of edit its
class: rewrites lower and pass; API, type and scope edits do not lower, with the class's
code at the DSL line; the memory-object and compiles-but-wrong edits lower and pass the
static checks (only an NPU's precision gate can fail them); the C++ edits fail the static
gate with their rule's code (the static checks are being written: those cases fail until
they land), a hallucinated C++ API passes it (bisheng on an NPU node is what refuses it)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from generators.perturb import generator_for
from generators.perturb.ascendc import MUTATIONS, REWRITES, AscendcPerturbGenerator
from verifiers import domain as domains
from verifiers import registry
from verifiers.catalog import load_task
from verifiers.contract import Limits, Status

ROOT = Path(__file__).resolve().parents[2]
ADD = ROOT / "tasks" / "ascendc" / "add"
CPP = ROOT / "tests" / "fixtures" / "ascendc" / "add_custom"
HERE = Limits(gates=("extract", "lower", "static"))
DOMAIN = domains.get("ascendc")
needs_pyasc = pytest.mark.skipif(
    any(shutil.which(t) is None for t in DOMAIN.tools),
    reason=f"pyasc missing: {DOMAIN.install}",
)

# generator -> (status, code) on the gates here; None: lowers and passes them
PYASC_EXPECTED = {
    "catalog:reference": None,
    "rewrite:rename_locals": None,
    "rewrite:reorder_independent": None,
    "rewrite:fold_constants": None,
    "perturb:api_arg_count": (Status.COMPILE_ERROR, "api_signature"),
    "perturb:api_hallucinated": (Status.COMPILE_ERROR, "api_signature"),
    "perturb:type_wrong_dtype": (Status.COMPILE_ERROR, "type_cast"),
    "perturb:type_float_count": (Status.COMPILE_ERROR, "type_cast"),
    "perturb:scope_undefined_name": (Status.COMPILE_ERROR, "scope_lifetime"),
    # pyasc tracks neither a tensor's lifetime nor a queue's position / buffer: they lower
    "perturb:scope_use_after_free": None,
    "perturb:memory_queue_position": None,
    "perturb:memory_missing_init_buffer": None,
    # compiles but wrong: precision on an NPU is what fails them
    "perturb:wrong_tile_offset": None,
    "perturb:wrong_op": None,
    "perturb:wrong_missing_last_tile": None,
    "perturb:wrong_block_offset": None,
}
CPP_EXPECTED = {
    "catalog:reference": None,
    "perturb:cpp_sync_removed": (Status.WRONG_ANSWER, "sync_unpaired"),
    "perturb:cpp_enque_dropped": (Status.WRONG_ANSWER, "queue_unbalanced"),
    "perturb:cpp_free_dropped": (Status.WRONG_ANSWER, "queue_unbalanced"),
    "perturb:cpp_tiling_type_mismatch": (None, "tiling_mismatch"),
    "perturb:cpp_framework_fallback": (Status.REJECTED, "torch_fallback"),
    "perturb:cpp_api_hallucinated": None,  # bisheng's to refuse, on an NPU node
}


@pytest.fixture(scope="module")
def add():
    return load_task(ADD, "ascendc")


@pytest.fixture(scope="module")
def cpp():
    return load_task(CPP, "ascendc")


def test_the_generator_is_the_descriptors():
    assert isinstance(generator_for("ascendc"), AscendcPerturbGenerator)


def test_operator_names_are_unique_and_each_class_is_named():
    names = [op.name for op in (*MUTATIONS, *REWRITES)]
    assert len(set(names)) == len(names)
    classes = {"api", "type", "scope", "memory", "wrong", "cpp"}
    assert {m.name.split("_")[0] for m in MUTATIONS} == classes


@pytest.mark.parametrize("which", ["add", "cpp"])
def test_every_candidate_changes_the_code_and_is_deterministic(which, add, cpp):
    task = add if which == "add" else cpp
    expected = PYASC_EXPECTED if which == "add" else CPP_EXPECTED
    gen = AscendcPerturbGenerator()
    first = gen.generate(task)
    again = AscendcPerturbGenerator().generate(task)
    assert [(c.code, c.generator) for c in first] == [(c.code, c.generator) for c in again]
    assert sorted(c.generator for c in first) == sorted(expected)
    codes = [c.code for c in first]
    assert len(set(codes)) == len(codes)  # each differs from the reference and the others
    assert {c.origin for c in first} == (
        {"reference", "rewrite", "perturb"} if which == "add" else {"reference", "perturb"}
    )
    other = AscendcPerturbGenerator().generate(task, seed=1)
    assert other[0].code == first[0].code  # the reference whatever the seed


def test_operators_find_no_site_in_the_other_form(add, cpp):
    for op in (*MUTATIONS, *REWRITES):
        foreign = cpp.reference if not op.name.startswith("cpp_") else add.reference
        assert op.apply(foreign, random.Random(0)) is None, op.name


def test_edits_are_the_ones_named(add, cpp):
    ref = add.reference
    from generators.perturb import ascendc as p

    rng = random.Random
    assert "asc.sub(zl, xv, yv, tile)" in p.wrong_op(ref, rng(0))
    assert "range(block_length // tile - 1)" in p.wrong_missing_last_tile(ref, rng(0))
    assert "(asc.get_block_idx() + 1) * block_length" in p.wrong_block_offset(ref, rng(0))
    assert "+ 1) * tile:]" in p.wrong_tile_offset(ref, rng(0))
    folded = p.fold_constants(ref, rng(0))
    assert "BUFFERS" not in folded and "asc.TQue(asc.TPosition.VECIN, 2)" in folded
    uaf = p.scope_use_after_free(ref, rng(0)).splitlines()
    free = next(i for i, ln in enumerate(uaf) if ".free_tensor(" in ln)
    assert "asc.add(" in uaf[free + 1] or "data_copy(" in uaf[free + 1]
    head = cpp.reference.split("// file: op_kernel/add_custom.cpp")[0]
    tiling = p.cpp_tiling_type_mismatch(cpp.reference, rng(0))
    assert (
        tiling.split("// file: op_kernel/add_custom.cpp")[1]
        == (cpp.reference.split("// file: op_kernel/add_custom.cpp")[1])
    )  # the header only
    assert tiling.split("// file: op_kernel/add_custom.cpp")[0] != head
    assert "WaitFlag" not in p.cpp_sync_removed(cpp.reference, rng(0))


@pytest.fixture(scope="module")
def judged(add, cpp):
    v = registry.get_verifier("ascendc")
    out = {}
    for which, task in (("add", add), ("cpp", cpp)):
        cands = AscendcPerturbGenerator().generate(task)
        verdicts = v.verify_many([(task, c.code) for c in cands], HERE)
        out[which] = {c.generator: (c, vd) for c, vd in zip(cands, verdicts, strict=True)}
    return out


def _show(v) -> str:
    return f"{v.status} {v.code}: {(v.checks[-1].detail if v.checks else '')[:300]}"


@needs_pyasc
@pytest.mark.parametrize("generator", sorted(PYASC_EXPECTED))
def test_each_pyasc_edit_lowers_or_fails_as_its_class_says(generator, judged):
    c, v = judged["add"][generator]
    want = PYASC_EXPECTED[generator]
    if want is None:
        assert v.status is Status.PASS, _show(v)
        assert [ch.name for ch in v.checks] == ["format", "extract", "lower", "static"]
        return
    assert (v.status, v.code) == want, _show(v)
    failed = v.checks[-1]
    assert failed.name == "lower" and failed.detail.startswith("line "), _show(v)
    line = int(failed.detail.split(":")[0].removeprefix("line "))
    ref = judged["add"]["catalog:reference"][0].code.splitlines()
    edited = [i for i, ln in enumerate(c.code.splitlines(), start=1) if ln not in ref]
    assert len(edited) == 1, edited
    # the edited line, or (a type error) the op that uses the tensor the edited line made
    pointed, made = c.code.splitlines()[line - 1], c.code.splitlines()[edited[0] - 1]
    target = made.split("=")[0].strip()
    assert line == edited[0] or (target.isidentifier() and target in pointed), (line, _show(v))
    assert "> " in v.feedback  # the DSL excerpt a repair prompt shows


@needs_pyasc
@pytest.mark.parametrize("generator", sorted(CPP_EXPECTED))
def test_each_cpp_edit_fails_the_static_rule_its_class_names(generator, judged):
    _c, v = judged["cpp"][generator]
    want = CPP_EXPECTED[generator]
    if want is None:
        assert v.status is Status.PASS, _show(v)
        return
    status, code = want
    assert v.code == code and not v.passed, _show(v)
    if status is not None:
        assert v.status is status, _show(v)
    assert v.checks[-1].name == "static", _show(v)


@needs_pyasc
def test_everything_that_lowers_ends_at_no_cann_never_a_label(add):
    """Asked for every gate, the compiles-but-wrong edits end exactly where the reference
    does: infra_error / no_cann at `compile`, every gate before it passed. Nothing here can
    tell them from the reference: that is the NPU's precision gate's work."""
    v = registry.get_verifier("ascendc")
    cands = [
        c
        for c in AscendcPerturbGenerator().generate(add)
        if c.generator == "catalog:reference" or c.generator.startswith("perturb:wrong_")
    ]
    for verdict in v.verify_many([(add, c.code) for c in cands]):
        assert (verdict.status, verdict.code) == (Status.INFRA_ERROR, "no_cann"), _show(verdict)
        *before, last = verdict.checks
        assert all(ch.ok for ch in before) and last.name == "compile", _show(verdict)
