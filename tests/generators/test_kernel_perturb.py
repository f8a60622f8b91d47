"""The offline CUDA / Triton generators over the task catalog: every task gets its reference
and unique candidates, every mutation finds sites in at least three tasks, candidates stay
valid Python (but for the syntax slips), output is deterministic, and operators stay out
of sources without their idiom. A Triton sample is verified for real on the CPU (Triton's
interpreter at the small shapes): rewrites pass, the tail / grid / identity bugs do not, and
a grid moved to axis 1 is refused once it needs more than 65535 programs."""

from __future__ import annotations

import ast
import dataclasses
import random
import re
from collections import defaultdict
from pathlib import Path

import pytest

from generators.perturb import generator_for, known_domains
from generators.perturb.kernels import (
    CUDA_MUTATIONS,
    CUDA_REWRITES,
    TRITON_MUTATIONS,
    TRITON_REWRITES,
    WRONG_API,
    CudaPerturbGenerator,
    TritonPerturbGenerator,
)
from verifiers.catalog import load_catalog
from verifiers.contract import ORIGINS, Task
from verifiers.taxonomy import PERFORMANCE, RESOURCE, SYNTAX

ROOT = Path(__file__).resolve().parents[2]
TABLES = {
    "cuda": (CudaPerturbGenerator, CUDA_REWRITES, CUDA_MUTATIONS),
    "triton": (TritonPerturbGenerator, TRITON_REWRITES, TRITON_MUTATIONS),
}
MIN_TASKS = 3  # every mutation must find a site in at least this many tasks of its domain


@pytest.fixture(scope="module")
def catalog() -> dict[str, list[Task]]:
    tasks, _errors = load_catalog(ROOT / "tasks", list(TABLES))
    by_domain = {d: [t for t in tasks if t.domain == d and t.reference] for d in TABLES}
    for domain, found in by_domain.items():
        if not found:
            pytest.skip(f"no {domain} tasks in the catalog")
    return by_domain


@pytest.fixture(scope="module")
def produced(catalog) -> dict[str, dict[str, list]]:
    """domain -> task name -> candidates (seed 0, one per applicable operator)."""
    return {
        d: {t.name: generator_for(d).generate(t, seed=0) for t in tasks}
        for d, tasks in catalog.items()
    }


def _op(candidate) -> str:
    return candidate.generator.split(":", 1)[1]


def test_registered():
    assert {"cuda", "triton"} <= set(known_domains())
    assert isinstance(generator_for("cuda"), CudaPerturbGenerator)
    assert isinstance(generator_for("triton"), TritonPerturbGenerator)
    for domain, (cls, rewrites, mutations) in TABLES.items():
        assert cls.name == f"perturb:{domain}" and cls.domain == domain
        assert len({op.name for op in mutations}) == len(mutations)
        assert rewrites and mutations


@pytest.mark.parametrize("domain", sorted(TABLES))
def test_reference_then_unique_candidates(domain, catalog, produced):
    _, rewrites, mutations = TABLES[domain]
    known = {f"rewrite:{r.name}" for r in rewrites} | {f"perturb:{m.name}" for m in mutations}
    for task in catalog[domain]:
        cands = produced[domain][task.name]
        assert cands[0].generator == "catalog:reference" and cands[0].code == task.reference
        codes = [c.code for c in cands]
        assert len(codes) == len(set(codes)), f"{task.name}: duplicate codes"
        assert all(c.origin in ORIGINS and c.task_id == task.task_id for c in cands)
        assert {c.generator for c in cands[1:]} <= known
        # 4: grid_past_limit is offered only where the timing grid passes 65535 (in the
        # other tasks it was a correct program counted as a mutation)
        assert sum(c.origin == "perturb" for c in cands) >= 4, f"{task.name}: few mutations"
        assert any(c.origin == "rewrite" for c in cands), f"{task.name}: no rewrite"


@pytest.mark.parametrize("domain", sorted(TABLES))
def test_every_operator_covers_tasks(domain, catalog, produced):
    _, rewrites, mutations = TABLES[domain]
    cover: dict[str, list[str]] = defaultdict(list)
    for name, cands in sorted(produced[domain].items()):
        for c in cands[1:]:
            cover[_op(c)].append(name)
    n = len(catalog[domain])
    print(f"\n{domain}: {n} tasks")
    for op in [*rewrites, *mutations]:
        names = cover.get(op.name, [])
        print(f"  {op.name:26s} {len(names):3d}  {' '.join(names)}")
    # a mutation that is a bug only at some sizes (`shows`) needs one task that has them
    thin = {m.name: len(cover.get(m.name, [])) for m in mutations}
    least = {m.name: 1 if m.shows else min(MIN_TASKS, n) for m in mutations}
    thin = {k: v for k, v in thin.items() if v < least[k]}
    assert not thin, f"{domain} mutations with sites in fewer than {MIN_TASKS} tasks: {thin}"
    assert all(cover.get(r.name) for r in rewrites)


@pytest.mark.parametrize("domain", sorted(TABLES))
def test_candidates_parse_but_syntax_slips(domain, produced):
    _, _, mutations = TABLES[domain]
    category = {m.name: m.category for m in mutations}
    for name, cands in produced[domain].items():
        for c in cands:
            syntax_slip = c.origin == "perturb" and category[_op(c)] == SYNTAX
            if syntax_slip and domain == "triton":
                with pytest.raises(SyntaxError):
                    ast.parse(c.code)
                continue
            ast.parse(c.code)  # CUDA's syntax slips live inside the CUDA_SRC string
            if domain == "cuda":
                assert re.search(r"^CUDA_SRC\s*=", c.code, re.M), f"{name} {c.generator}"


@pytest.mark.parametrize("domain", sorted(TABLES))
def test_deterministic(domain, catalog):
    for task in catalog[domain]:
        a = [(c.generator, c.code) for c in generator_for(domain).generate(task, seed=3)]
        b = [(c.generator, c.code) for c in generator_for(domain).generate(task, seed=3)]
        assert a == b, task.name


@pytest.mark.parametrize("domain", sorted(TABLES))
def test_n_caps_and_extends_perturbations(domain, catalog):
    by_name = {t.name: t for t in catalog[domain]}
    task = by_name.get("softmax_rows", catalog[domain][0])
    gen = generator_for(domain)
    few = [c for c in gen.generate(task, n=2) if c.origin == "perturb"]
    assert len(few) == 2
    once = [c for c in gen.generate(task) if c.origin == "perturb"]
    more = [c for c in gen.generate(task, n=40) if c.origin == "perturb"]
    assert len(more) >= len(once)
    assert len({c.code for c in more}) == len(more)


@pytest.mark.parametrize("domain", sorted(TABLES))
def test_operators_leave_foreign_sources_alone(domain, catalog):
    """No idiom, no candidate: plain Python, and the other language's references."""
    _, rewrites, mutations = TABLES[domain]
    other = "triton" if domain == "cuda" else "cuda"
    foreign = [t.reference for t in catalog[other][:6]]
    plain = ["", "x = 1\n", "import torch\n\n\nclass ModelNew:\n    pass\n", "def f(:\n"]
    for op in [*rewrites, *mutations]:
        for src in plain + foreign:
            assert op.apply(src, random.Random(0)) is None, (op.name, src[:60])


@pytest.mark.parametrize("domain", sorted(TABLES))
def test_operators_never_return_their_input(domain, catalog):
    _, rewrites, mutations = TABLES[domain]
    for task in catalog[domain]:
        for op in [*rewrites, *mutations]:
            for seed in range(3):
                out = op.apply(task.reference, random.Random(seed))
                assert out != task.reference, (task.name, op.name)


def test_wrong_api_names_do_not_exist():
    tl = pytest.importorskip("triton.language")
    for good, bad in WRONG_API.items():
        assert hasattr(tl, good), good
        assert not hasattr(tl, bad), f"tl.{bad} exists: not a wrong API"


def test_cuda_edits_stay_consistent(catalog, produced):
    """Kernel-side and launch-side halves of the paired edits agree."""
    for task in catalog["cuda"]:
        for c in produced["cuda"][task.name]:
            op = _op(c)
            if op == "rename_kernel":
                old = set(re.findall(r'cuda_kernel\("(\w+)"\)', task.reference))
                new = set(re.findall(r'cuda_kernel\("(\w+)"\)', c.code))
                (gone,) = old - new
                (added,) = new - old
                assert not re.search(rf"\b{gone}\b", c.code)
                assert re.search(rf"__global__\s+void\s+{added}\s*\(", c.code)
            elif op == "grid_past_limit":
                assert "grid=(1, " in c.code or re.search(r"grid\w* = \(1, ", c.code)
                assert c.code.count("blockIdx.y") > task.reference.count("blockIdx.y")
            elif op == "uncoalesced":
                assert "threadIdx.x * gridDim.x + blockIdx.x" in c.code


def test_categories_are_the_taxonomy_ones():
    cats = {m.name: m.category for m in CUDA_MUTATIONS + TRITON_MUTATIONS}
    assert cats["grid_past_limit"] == RESOURCE
    assert cats["uncoalesced"] == PERFORMANCE
    assert cats["missing_semicolon"] == SYNTAX and cats["missing_colon"] == SYNTAX


# --- verified for real: Triton's interpreter on the CPU ------------------------------------

CPU_GATES = ("parse", "anticheat", "compile", "launch", "correct")
SAMPLE = ("softmax_rows", "relu", "layer_norm")
MUST_FAIL = ("tail_mask_dropped", "grid_off_by_one", "wrong_reduction_identity")
# relu is elementwise: the operator drops its store's mask, and the tail lanes write past
# the output into a red zone (out_of_bounds_write); dropping its load's mask alone would
# read past the tensor into lanes nobody stores, which no check here sees
INVISIBLE: set[tuple[str, str]] = set()
GRID_Y_MAX = 65535


@pytest.fixture(scope="module")
def triton_verdicts(catalog):
    """(task name, operator) -> verdict for the sample's references, rewrites, the bugs
    that must show and grid_past_limit; one verifier, one candidate at a time (a crashing
    candidate then takes down only its own worker), closed at the end."""
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    from verifiers.contract import Limits
    from verifiers.registry import get_verifier

    tasks = {t.name: t for t in catalog["triton"] if t.name in SAMPLE}
    if len(tasks) < len(SAMPLE):
        pytest.skip(f"sample tasks missing: {sorted(set(SAMPLE) - set(tasks))}")
    v = get_verifier("triton")
    if v.missing_tools():
        pytest.skip(f"triton verifier unavailable: {[t.name for t in v.missing_tools()]}")
    wanted = {"reference", "rename_kernel", "num_warps", "grid_past_limit", *MUST_FAIL}
    verdicts = {}
    try:
        for name, task in sorted(tasks.items()):
            for c in generator_for("triton").generate(task):
                if _op(c) in wanted and (name, _op(c)) not in INVISIBLE:
                    verdicts[(name, _op(c))] = v.verify(task, c.code, Limits(gates=CPU_GATES))
        yield verdicts, tasks, v
    finally:
        v.close()


def _show(verdict) -> str:
    return f"{verdict.status.value} {verdict.code}: {verdict.feedback[:300]}"


def test_triton_references_and_rewrites_pass(triton_verdicts):
    verdicts, _, _ = triton_verdicts
    for (name, op), verdict in sorted(verdicts.items()):
        if op in ("reference", "rename_kernel", "num_warps"):
            assert verdict.status.value == "pass", (name, op, _show(verdict))
    assert {op for _, op in verdicts} >= {"reference", "rename_kernel", "num_warps"}


def test_triton_tail_grid_identity_bugs_fail(triton_verdicts):
    verdicts, _, _ = triton_verdicts
    seen = defaultdict(list)
    for (name, op), verdict in sorted(verdicts.items()):
        if op in MUST_FAIL:
            seen[op].append(f"{name}: {verdict.status.value} {verdict.code}")
            assert verdict.status.value != "pass", (name, op, "passed the CPU gates")
    print("\nverified failing:", dict(seen))
    relu = verdicts[("relu", "tail_mask_dropped")]
    assert (relu.status.value, relu.code) == ("wrong_answer", "out_of_bounds_write"), _show(relu)
    ops = {(name, op) for name, op in verdicts}
    assert {
        ("softmax_rows", "tail_mask_dropped"),
        ("layer_norm", "tail_mask_dropped"),
        ("relu", "grid_off_by_one"),
        ("softmax_rows", "wrong_reduction_identity"),
    } <= ops


def test_triton_grid_past_limit(triton_verdicts):
    """Below 65535 programs the moved grid is the same computation; past it the launch
    check refuses it."""
    verdicts, tasks, v = triton_verdicts
    from verifiers.contract import Limits

    launches = verdicts[("relu", "reference")].metrics.get("launches", [])
    assert launches, "the reference's launch record is missing"
    programs = launches[0]["grid"][0]
    verdict = verdicts[("relu", "grid_past_limit")]
    if programs > GRID_Y_MAX:
        assert verdict.code == "launch_exceeds_limit", _show(verdict)
        return
    # 4096 x 4093 / 1024 = 16372 programs: latent at the catalog's timing shape (it runs
    # and is right); a taller input makes the same candidate exceed the limit
    assert verdict.status.value == "pass", _show(verdict)
    task = tasks["relu"]
    rows = GRID_Y_MAX * 1024 // 4093 + 64  # relu: BLOCK = 1024, dim = 4093
    problem = re.sub(r"(?m)^batch_size = \d+", f"batch_size = {rows}", task.harness["problem"])
    assert problem != task.harness["problem"]
    big = dataclasses.replace(task, harness={**task.harness, "problem": problem}, task_id="")
    code = next(
        c.code for c in generator_for("triton").generate(task) if _op(c) == "grid_past_limit"
    )
    gates = Limits(gates=("parse", "compile", "launch"))
    ref, cand = v.verify(big, task.reference, gates), v.verify(big, code, gates)
    assert ref.status.value == "pass", _show(ref)
    assert cand.code == "launch_exceeds_limit", _show(cand)


@pytest.mark.parametrize("domain", sorted(TABLES))
def test_grid_past_limit_only_where_the_timing_grid_passes_65535(domain, catalog, produced):
    """Moving a 1-D launch onto grid y is a bug only past 65,535 blocks: it is offered
    where the reference's own grid at the timing shapes needs more (relu and gelu_tanh,
    whose requirements say so), and nowhere else, where it was a correct program (on
    the H200, 15 of 20 passed)."""
    from generators.perturb.kernels import timing_grids

    offered = {
        name
        for name, cands in produced[domain].items()
        if any(c.generator == "perturb:grid_past_limit" for c in cands)
    }
    assert offered == {"gelu_tanh", "relu"}
    for task in catalog[domain]:
        grids = timing_grids(task, task.reference)
        assert grids, f"{task.name}: its launches could not be told"
        assert (max(g[0] for g in grids) > 65535) == (task.name in offered), (task.name, grids)
