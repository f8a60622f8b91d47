"""Dedup: normalization, signatures, clustering, keepers, decontamination, the lake pass."""

from __future__ import annotations

import dataclasses
import json
import random
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from deltalake import write_deltalake

from lake import db
from lake.dedup import (
    TOKEN,
    DedupSettings,
    bucket_pairs,
    components,
    estimated_jaccard,
    exact_key,
    features,
    holdout_index,
    near_duplicate_clusters,
    normalize,
    optimal_bands,
    run_dedup,
    shingle_set,
    signatures,
    token_spans,
    tokens,
)
from lake.schema import candidate_row, to_arrow
from lake.store import Lake
from lake.writer import BatchWriter
from tests.lake.conftest import make_candidate, make_task, make_verdict
from verifiers import domain as domains
from verifiers.catalog import load_catalog
from verifiers.contract import Task

ROOT = Path(__file__).resolve().parents[2]
SYNC = DedupSettings(scheduler="synchronous")
LATER = "2025-03-01T00:00:00.000+00:00"
LATEST = "2025-04-01T00:00:00.000+00:00"
_WORDS = re.findall(
    r"\w+", "data addr cnt state valid ready fifo ptr sel acc sum tag idx mode irq bus tx rx"
)


def ident(rng: random.Random) -> str:
    return f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}{rng.randrange(1000)}"


def random_module(rng: random.Random, lines: int = 16) -> str:
    """~110 tokens of Verilog with random names and constants."""
    body = [
        f"  assign {ident(rng)} = {ident(rng)} {rng.choice('+-&|^')} {rng.randrange(10_000)};"
        for _ in range(lines)
    ]
    return "\n".join(
        [
            f"module {ident(rng)} (input wire clk, output reg [7:0] {ident(rng)});",
            *body,
            "endmodule",
        ]
    )


def edit_tokens(rng: random.Random, code: str, edits: int) -> str:
    """Replace `edits` identifiers by fresh ones."""
    spans = [m.span() for m in re.finditer(r"\b[a-z]+_[a-z]+\d+\b", code)]
    for start, end in sorted(rng.sample(spans, edits), reverse=True):
        code = code[:start] + ident(rng) + code[end:]
    return code


def jaccard(a: set[int], b: set[int]) -> float:
    return len(a & b) / len(a | b)


def groups(labels: list[int] | dict[str, str]) -> set[frozenset]:
    """A clustering as a set of member sets (labels by position or by key)."""
    items = labels.items() if isinstance(labels, dict) else enumerate(labels)
    out: dict[object, set] = defaultdict(set)
    for member, label in items:
        out[label].add(member)
    return {frozenset(s) for s in out.values()}


# --- normalization and tokens ------------------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "code", "expected"),
    [
        (
            "rtl",
            "assign a = b; // note\n\n  /* block\n comment */ assign c = d;",
            "assign a = b; assign c = d;",
        ),
        ("rtl", '$display("a // b"); // gone', '$display("a // b");'),
        ("rtl", "#5 a = b; // a delay, not a comment", "#5 a = b;"),
        ("cuda", "int x = '\"'; // c\n/* d */ int y;", "int x = '\"'; int y;"),
        ("triton", "x = 1  # note\ns = '#kept'\n", "x = 1 s = '#kept'"),
        ("cad", 'r = box(1, 2)   # mm\n"""doc # kept"""', 'r = box(1, 2) """doc # kept"""'),
        ("no_such", "#5 a = b; // unknown: C's comments", "#5 a = b;"),
    ],
)
def test_normalize_folds_comments_and_whitespace_per_language(
    domain: str, code: str, expected: str
) -> None:
    assert normalize(code, domain) == expected


def test_a_registered_descriptor_picks_the_comment_syntax() -> None:
    # a new domain says which syntax its code has; dedup needs no line of its own
    code = "mov eax, 1 ; nasm\n# gas\n\tret"
    before = normalize(code, "test_asm")  # unknown yet: C's comments, so nothing folds
    asm = dataclasses.replace(
        domains.get("rtl"),
        name="test_asm",
        syntax="asm",
        default_run=False,
        perturb=None,
        settings=None,
    )
    domains.register(asm)
    try:
        assert normalize(code, "test_asm") == "mov eax, 1 ret" != before
        # local labels are numbered by first use: a relabelled file is the same code
        a, b = "jmp .L7\n.L7: ret\n.L9: nop", "jmp .Lx1\n.Lx1: ret\n.Lq: nop"
        assert exact_key(a, "test_asm") == exact_key(b, "test_asm")
        assert exact_key(a, "test_asm") != exact_key("jmp .L9\n.L7: ret\n.L9: nop", "test_asm")
        assert exact_key(code, "test_asm") == exact_key("mov eax, 1\nret", "test_asm")
        sig = signatures([code, "mov eax, 1 ret"], "test_asm", SYNC)
        assert (sig[0] == sig[1]).all()
        f = features([code, code], ["test_asm", "rtl"], SYNC)
        assert f.exact_key[0] != f.exact_key[1]  # per candidate, its own domain's syntax
    finally:
        domains.unregister("test_asm")


def test_exact_key_ignores_comments_and_layout_but_not_tokens() -> None:
    a = "module m(input a, output y);\n  assign y = ~a;\nendmodule\n"
    b = "// inverter\nmodule m(input a,   output y);\n\tassign y = ~a; /* why */\nendmodule"
    assert exact_key(a, "rtl") == exact_key(b, "rtl")
    assert exact_key(a, "rtl") != exact_key(a.replace("~a", "!a"), "rtl")
    # '#' is a comment in Python, not in Verilog
    assert exact_key("x # y", "triton") == exact_key("x", "triton")
    assert exact_key("x # y", "rtl") != exact_key("x", "rtl")


def test_numpy_tokenizer_and_exact_keys_agree_with_the_reference_code() -> None:
    rng = random.Random(7)
    alphabet = "ab_$09 \t\n\r\f\v+-*/;:()[]{}'\"#<>=!é→\u00a0\x00"
    texts = ["", " ", "x", "a<=b;", "\u00a0ab cd\u2003"] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(60))) for _ in range(300)
    ]
    for text in texts:
        data = text.encode("utf-8")
        assert token_spans(text) == [m.span() for m in TOKEN.finditer(data)], text
    assert tokens("a<=b1 + 4'd9;") == ["a", "<", "=", "b1", "+", "4", "'", "d9", ";"]
    f = features(texts, ["rtl"] * len(texts), SYNC)
    assert f.exact_key == [exact_key(t, "rtl") for t in texts]
    assert features(["", " \n", "//"], ["rtl"] * 3, SYNC).exact_key == [exact_key("", "rtl")] * 3
    assert f.length.tolist() == [len(normalize(t, "rtl").encode()) for t in texts]


# --- signatures ---------------------------------------------------------------------------


def test_estimated_jaccard_is_as_good_as_minhash_theory() -> None:
    """Unbiased, with errors no larger than k-permutation MinHash's standard error
    sqrt(J (1 - J) / num_perm): a broken binning or densification is far off both."""
    rng = random.Random(3)
    bias, z = [], []
    for _ in range(200):
        a = random_module(rng, lines=rng.randint(5, 40))
        b = edit_tokens(rng, a, rng.randint(1, 12))
        sig = signatures([a, b], "rtl", SYNC)
        exact = jaccard(shingle_set(a, "rtl", SYNC), shingle_set(b, "rtl", SYNC))
        err = float(estimated_jaccard(sig[0], sig[1])) - exact
        bias.append(err)
        z.append(abs(err) / np.sqrt(exact * (1 - exact) / 128))
    # measured: bias -0.003, mean |z| 0.72 (a normal error gives 0.80)
    assert abs(np.mean(bias)) < 0.01 and np.mean(z) < 1.0, (np.mean(bias), np.mean(z))


def test_short_and_empty_documents_get_signatures() -> None:
    sig = signatures(["", "", "a", "a b c", "x y z"], "rtl", SYNC)
    assert sig.shape == (5, 128) and sig.dtype == np.uint32
    assert (sig[0] == sig[1]).all()
    assert estimated_jaccard(sig[2], sig[3]) < 1.0 and estimated_jaccard(sig[3], sig[4]) < 0.1


def test_signatures_are_the_same_in_another_process() -> None:
    texts = [random_module(random.Random(i)) for i in range(5)] + ["", "é ü // c"]
    here = signatures(texts, "rtl", SYNC)
    script = (
        "import sys, json; from lake.dedup import signatures, DedupSettings; "
        "print(json.dumps(signatures(json.load(sys.stdin), 'rtl', DedupSettings()).tolist()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"},
    )
    assert np.array_equal(np.array(json.loads(out.stdout), np.uint32), here)
    assert not np.array_equal(signatures(texts, "rtl", DedupSettings(seed=2)), here)


# --- clustering ---------------------------------------------------------------------------


def test_settings_choose_bands_and_reject_impossible_ones() -> None:
    s = DedupSettings()
    assert (s.bands, s.rows) == optimal_bands(0.7, 128) == (18, 7)
    # datasketch's own weights give its answer
    assert optimal_bands(0.7, 128, 0.5, 0.5) == (14, 9)
    assert "scheduler" not in s.to_params() and s.to_params()["bands"] == 18
    with pytest.raises(ValueError, match="bands \\* rows"):
        DedupSettings(bands=20, rows=7)
    with pytest.raises(ValueError, match="threshold"):
        DedupSettings(threshold=1.5)


def test_exact_duplicates_cluster_even_when_tiny() -> None:
    codes = ["a", "a // same", "b", "  a  ", "/* x */ a"]
    assert near_duplicate_clusters(codes, "rtl", SYNC) == [0, 0, 2, 0, 0]


def test_planted_near_duplicates_cluster_and_unrelated_ones_do_not() -> None:
    rng = random.Random(11)
    base = [random_module(rng) for _ in range(40)]
    copies = [edit_tokens(rng, base[i], 2) for i in range(0, 40, 2)]
    texts = base + copies
    labels = near_duplicate_clusters(texts, "rtl", SYNC)
    for k, i in enumerate(range(0, 40, 2)):
        assert labels[40 + k] == labels[i] == i
    assert len(set(labels[:40])) == 40  # no two unrelated modules merged


def test_recall_and_precision_on_a_planted_set() -> None:
    rng = random.Random(5)
    texts = [random_module(rng, lines=rng.randint(12, 30)) for _ in range(300)]
    planted = []
    for copy_of in rng.sample(range(300), 60):
        edited = edit_tokens(rng, texts[copy_of], rng.randint(1, 2))
        if rng.random() < 0.5:
            edited = "// a copy\n" + edited.replace("  ", "\t")
        planted.append((len(texts), copy_of))
        texts.append(edited)
    labels = near_duplicate_clusters(texts, "rtl", SYNC)
    found = {(i, j) for i in range(len(texts)) for j in range(i) if labels[i] == labels[j]}
    shingles = [shingle_set(t, "rtl", SYNC) for t in texts]
    truth = {(i, j) for i, j in planted}
    true_found = {p for p in found if p in truth or jaccard(*(shingles[k] for k in p)) >= 0.7}
    recall = sum(p in found for p in truth) / len(truth)
    precision = len(true_found) / len(found)
    assert recall >= 0.95 and precision >= 0.95, (recall, precision)


def test_bucket_pairs_caps_big_buckets_and_components_union_them() -> None:
    keys = np.array([7] * 100 + [9, 9, 3], np.uint64)
    gids = np.array([*range(100, 0, -1), 200, 201, 300], np.int64)
    u, v = bucket_pairs(keys, gids, limit=8)
    assert len(u) == 2 * 98 + 1 + 1  # star + chain for the big bucket, one pair for 9
    assert (u < v).all()
    labels = components(302, u, v)
    assert set(labels[1:101].tolist()) == {1} and labels[201] == 200 and labels[300] == 300
    u_all, _ = bucket_pairs(keys, gids, limit=100)
    assert len(u_all) == 100 * 99 // 2 + 1


def test_components_match_a_breadth_first_search() -> None:
    rng = np.random.default_rng(0)
    n = 500
    u, v = rng.integers(0, n, 300), rng.integers(0, n, 300)
    adjacency: dict[int, set[int]] = defaultdict(set)
    for a, b in zip(u.tolist(), v.tolist(), strict=True):
        adjacency[a].add(b)
        adjacency[b].add(a)
    expected = list(range(n))
    seen: set[int] = set()
    for start in range(n):
        if start in seen:
            continue
        todo, comp = [start], []
        seen.add(start)
        while todo:
            x = todo.pop()
            comp.append(x)
            for y in adjacency[x] - seen:
                seen.add(y)
                todo.append(y)
        for x in comp:
            expected[x] = min(comp)
    assert components(n, u, v).tolist() == expected


# --- contamination ------------------------------------------------------------------------


def holdout_task(reference: str, requirement: str = "Hold this out.") -> Task:
    return dataclasses.replace(
        make_task("secret_fifo"), reference=reference, requirement=requirement, split="holdout"
    )


def test_real_catalog_flags_no_train_task_but_13_tokens_would() -> None:
    tasks, errors = load_catalog(ROOT / "tasks", ("rtl",), None)
    assert not errors
    rows = [dataclasses.asdict(t) for t in tasks]
    train = [r for r in rows if r["split"] == "train"]
    holdout = [r for r in rows if r["split"] == "holdout"]
    assert len(holdout) == 6 and len(train) >= 40

    def flagged(settings: DedupSettings) -> tuple[int, int]:
        index = holdout_index(rows, settings)
        hits = features([r["reference"] for r in train], ["rtl"] * len(train), settings, index)
        by_requirement = index.task_hits(train, settings)
        return int((hits.code_hit >= 0).sum()), len(by_requirement)

    assert flagged(SYNC) == (0, 0)
    code13, req13 = flagged(DedupSettings(ngram=13, requirement_ngram=13))
    assert code13 > 20 and req13 > 40  # why the defaults are longer (see holdout_index)
    # and a holdout reference still matches itself
    index = holdout_index(rows, SYNC)
    own = features([r["reference"] for r in holdout], ["rtl"] * 6, SYNC, index).code_hit
    assert sorted(index.names[i] for i in own) == sorted(r["name"] for r in holdout)


def test_contamination_flags_copies_of_holdout_text_only(lake: Lake) -> None:
    rng = random.Random(2)
    secret_code = random_module(rng, lines=25)
    secret_req = " ".join(rng.choice(_WORDS) for _ in range(40))
    secret = holdout_task(secret_code, secret_req)
    train = make_task("adder")
    copier = dataclasses.replace(make_task("copier"), requirement="Intro. " + secret_req)
    # keeps 6 lines (42 tokens) of the holdout reference, in a renamed module, commented
    middle = "\n".join(secret_code.splitlines()[8:14])
    copied = make_candidate(train, f"// mine\nmodule mine;\n{middle}\nendmodule")
    unrelated = make_candidate(train, random_module(rng))
    held = make_candidate(secret, secret_code)
    by_req = make_candidate(copier, random_module(rng))
    # the same code plus a line, in a clean task: longer, yet the cluster's keeper
    clean_twin = make_candidate(
        train, by_req.code.replace("endmodule", "  assign q = 1;\nendmodule")
    )
    plan = [(copied, train), (unrelated, train), (held, secret), (by_req, copier)]
    plan.append((clean_twin, train))
    with BatchWriter(lake, run_id="g") as w:
        for t in (secret, train, copier):
            w.add_task(t)
        for c, t in plan:
            w.add_candidate(c, t.domain)
    con = db.connect(lake)
    run_dedup(lake, con, run_id="d", settings=SYNC)
    rows = latest(con)
    assert {c: (r["contaminated"], r["contamination"]) for c, r in rows.items()} == {
        copied.candidate_id: (True, "code 30-gram: secret_fifo"),
        unrelated.candidate_id: (False, None),
        held.candidate_id: (True, "holdout task: secret_fifo"),
        by_req.candidate_id: (True, "requirement 20-gram: secret_fifo"),
        clean_twin.candidate_id: (False, None),
    }
    assert rows[by_req.candidate_id]["cluster_id"] == clean_twin.candidate_id
    assert rows[clean_twin.candidate_id]["keeper"] and not rows[by_req.candidate_id]["keeper"]


# --- the lake pass ------------------------------------------------------------------------


def latest(con) -> dict[str, dict]:
    rows = con.sql("SELECT * FROM latest_dedup").to_arrow_table().to_pylist()
    return {r["candidate_id"]: r for r in rows}


def written(lake: Lake, run_id: str) -> set[str]:
    t = lake.table("dedup").to_pyarrow_table(columns=["candidate_id", "run_id"]).to_pylist()
    return {r["candidate_id"] for r in t if r["run_id"] == run_id}


def test_keeper_prefers_a_pass_then_the_shortest_then_the_smallest_id(lake: Lake) -> None:
    task = make_task()
    rng = random.Random(4)
    base = random_module(rng, lines=20)
    lines = base.splitlines()
    shortest = "\n".join(lines[:5] + lines[6:])  # one assign fewer: fails
    short = edit_tokens(rng, base, 1) + "\n// comments do not count " + "x" * 200
    longer = base.replace("endmodule", "  assign extra_line = 1;\nendmodule")
    plan = [(shortest, "wrong_answer"), (short, "pass"), (longer, "pass")]
    plan.append((random_module(rng), "compile_error"))
    cands = [make_candidate(task, code) for code, _ in plan]
    with BatchWriter(lake, run_id="g") as w:
        w.add_task(task)
        for c, (_, status) in zip(cands, plan, strict=True):
            w.add_candidate(c, task.domain)
            w.add_verdict(make_verdict(c, task, status))
    con = db.connect(lake)
    run_dedup(lake, con, run_id="d1", settings=SYNC)
    rows = latest(con)
    ids = [c.candidate_id for c in cands]
    assert [rows[c]["keeper"] for c in ids] == [False, True, False, True]
    assert [rows[c]["cluster_id"] for c in ids] == [ids[1], ids[1], ids[1], ids[3]]
    assert [rows[c]["cluster_size"] for c in ids] == [3, 3, 3, 1]

    # Equal normalized code, both passing: the smaller candidate_id keeps.
    twins = [make_candidate(task, plan[3][0] + " // x"), make_candidate(task, plan[3][0] + " ")]
    with BatchWriter(lake, run_id="g2") as w:
        for c in twins:
            w.add_candidate(c, task.domain)
            w.add_verdict(make_verdict(c, task, "pass"))
    run_dedup(lake, con, run_id="d2", settings=SYNC)
    rows = latest(con)
    assert rows[ids[3]]["cluster_id"] == min(t.candidate_id for t in twins)
    assert rows[twins[0].candidate_id]["exact_key"] == rows[ids[3]]["exact_key"]
    assert rows[ids[3]]["cluster_size"] == 3 and not rows[ids[3]]["keeper"]


def test_rerun_appends_nothing_and_a_new_near_duplicate_touches_only_its_cluster(
    lake: Lake,
) -> None:
    task = make_task()
    rng = random.Random(9)
    texts = [random_module(rng) for _ in range(30)]
    texts += [edit_tokens(rng, texts[i], 1) for i in range(5)]  # clusters {i, 30 + i}
    cands = [make_candidate(task, t) for t in texts]
    with BatchWriter(lake, run_id="g") as w:
        w.add_task(task)
        for c in cands:
            w.add_candidate(c, task.domain)
    con = db.connect(lake)
    first = run_dedup(lake, con, run_id="d1", settings=SYNC)
    assert first["rows_written"] == 35 and first["clusters"] == 30
    assert first["near_duplicates"] == 5 and first["exact_duplicates"] == 0
    versions = lake.versions()
    again = run_dedup(lake, con, run_id="d2", settings=SYNC)
    assert again["rows_written"] == 0 and lake.versions() == versions

    newcomer = make_candidate(task, edit_tokens(rng, texts[3], 1))
    with BatchWriter(lake, run_id="g2") as w:
        w.add_candidate(newcomer, task.domain)
    third = run_dedup(lake, con, run_id="d3", settings=SYNC)
    affected = {cands[3].candidate_id, cands[33].candidate_id, newcomer.candidate_id}
    assert written(lake, "d3") == affected and third["rows_written"] == 3
    assert {latest(con)[c]["cluster_size"] for c in affected} == {3}

    # Other settings are another outcome: every row is rewritten once.
    loose = dataclasses.replace(SYNC, threshold=0.5, bands=0, rows=0)
    assert run_dedup(lake, con, run_id="d4", settings=loose)["rows_written"] == 36


def test_an_outcome_that_flips_back_gets_a_fresh_row(lake: Lake) -> None:
    task = make_task()
    code = random_module(random.Random(1))
    a = make_candidate(task, code)  # shorter: keeps whenever it passes
    b = make_candidate(task, code.replace("endmodule", "  assign one_more = 1;\nendmodule"))
    with BatchWriter(lake, run_id="g") as w:
        w.add_task(task)
        for c in (a, b):
            w.add_candidate(c, task.domain)
        w.add_verdict(make_verdict(a, task, "wrong_answer"))
        w.add_verdict(make_verdict(b, task, "pass"))
    con = db.connect(lake)

    def keepers() -> list[bool]:
        rows = latest(con)
        return [rows[a.candidate_id]["keeper"], rows[b.candidate_id]["keeper"]]

    run_dedup(lake, con, run_id="d1", settings=SYNC)
    assert keepers() == [False, True]
    with BatchWriter(lake, run_id="g") as w:  # a is re-verified: now it passes
        w.add_verdict(make_verdict(a, task, "pass", version="2", created_at=LATER))
    run_dedup(lake, con, run_id="d2", settings=SYNC)
    assert keepers() == [True, False]
    with BatchWriter(lake, run_id="g") as w:  # and fails again under version 3
        w.add_verdict(make_verdict(a, task, "wrong_answer", version="3", created_at=LATEST))
    run_dedup(lake, con, run_id="d3", settings=SYNC)
    assert keepers() == [False, True]  # the same outcome as the first pass ...
    history = lake.table("dedup").to_pyarrow_table().to_pylist()
    for c in (a, b):  # ... in a row of its own: the first one is older than the second
        assert len({r["dedup_id"] for r in history if r["candidate_id"] == c.candidate_id}) == 3


def test_domains_never_mix(lake: Lake) -> None:
    rng = random.Random(6)
    code = random_module(rng)
    rtl_task, cuda_task = make_task("m", "rtl"), make_task("k", "cuda")
    rtl = [make_candidate(rtl_task, code), make_candidate(rtl_task, code + " // v2")]
    cuda = [make_candidate(cuda_task, code), make_candidate(cuda_task, edit_tokens(rng, code, 1))]
    with BatchWriter(lake, run_id="g") as w:
        for t in (rtl_task, cuda_task):
            w.add_task(t)
        for c in rtl:
            w.add_candidate(c, "rtl")
        for c in cuda:
            w.add_candidate(c, "cuda")
    con = db.connect(lake)
    assert run_dedup(lake, con, run_id="d0", settings=SYNC, domains=["cad"])["candidates"] == 0
    only_rtl = run_dedup(lake, con, run_id="d1", settings=SYNC, domains=["rtl"])
    assert only_rtl["candidates"] == 2 and set(only_rtl["domains"]) == {"rtl"}
    counts = run_dedup(lake, con, run_id="d2", settings=SYNC)
    rows = latest(con)
    assert {c: r["cluster_size"] for c, r in rows.items()} == dict.fromkeys(rows, 2)
    assert {rows[c.candidate_id]["domain"] for c in rtl} == {"rtl"}
    assert {rows[c.candidate_id]["cluster_id"] for c in rtl} <= {c.candidate_id for c in rtl}
    assert {rows[c.candidate_id]["cluster_id"] for c in cuda} <= {c.candidate_id for c in cuda}
    assert counts["clusters"] == 2 and counts["domains"]["cuda"]["near_duplicates"] == 1
    assert counts["domains"]["rtl"]["exact_duplicates"] == 1


def test_dask_path_equals_the_in_memory_path(lake: Lake) -> None:
    rng = random.Random(8)
    texts = [random_module(rng, lines=rng.randint(8, 20)) for _ in range(150)]
    for i in rng.sample(range(150), 40):
        texts.append(edit_tokens(rng, texts[i], rng.randint(1, 3)))
    # Jaccard ~0.5: these share buckets now and then, and verification must split them
    for i in rng.sample(range(150), 40):
        texts.append(edit_tokens(rng, texts[i], len(texts[i].splitlines()) // 3))
    texts += [texts[0], texts[1] + "\n// exact copy"]
    task = make_task()
    cands = [make_candidate(task, t) for t in texts]
    with BatchWriter(lake, run_id="g") as w:
        w.add_task(task)
        for c in cands:
            w.add_candidate(c, task.domain)
    con = db.connect(lake)
    # four partitions through the process pool: every bucket is split across inputs
    settings = DedupSettings(scheduler="processes", workers=2, partitions=4)
    run_dedup(lake, con, run_id="d", settings=settings)
    lake_clusters = groups({c: r["cluster_id"] for c, r in latest(con).items()})
    memory = near_duplicate_clusters(texts, "rtl", settings)
    memory_clusters = {frozenset(cands[i].candidate_id for i in g) for g in groups(memory)}
    assert lake_clusters == memory_clusters
    assert len(memory_clusters) < len(texts) - 30  # the planted copies did cluster


def test_at_least_once_copies_of_a_candidate_count_once(lake: Lake) -> None:
    task = make_task()
    rng = random.Random(12)
    code = random_module(rng)
    a, b = make_candidate(task, code), make_candidate(task, edit_tokens(rng, code, 1))
    with BatchWriter(lake, run_id="g") as w:
        w.add_task(task)
        for c in (a, b):
            w.add_candidate(c, task.domain)
    # a retried append around the writer: the same candidate row twice more
    again = to_arrow("candidates", [candidate_row(a, "rtl")] * 2)
    write_deltalake(lake.table_uri("candidates"), again, mode="append")
    con = db.connect(lake)
    counts = run_dedup(lake, con, run_id="d", settings=SYNC)
    assert counts["candidates"] == 2 and counts["rows_written"] == 2
    rows = lake.table("dedup").to_pyarrow_table().to_pylist()
    assert sorted(r["candidate_id"] for r in rows) == sorted([a.candidate_id, b.candidate_id])
    assert {r["cluster_size"] for r in rows} == {2}
