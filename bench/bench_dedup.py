"""Dedup benchmark: our one-permutation MinHash + Dask pass against datasketch.

    .venv/bin/python bench/bench_dedup.py [--docs 200000] [--scheduler processes]

Generates `docs` synthetic Verilog modules and C functions (50-150 lines, every identifier
and constant random) of which ~10% are planted near-duplicates: an earlier document with
1-4 token edits plus comment and whitespace changes; another ~2% get 5-70 token edits,
which puts their shingle Jaccard on both sides of the threshold. In one run it measures

  (a) `signatures` docs/s in one process (CPU time) and in two processes (wall),
  (b) `run_dedup` on a real lake holding the documents as candidates (Dask), its wall
      time, and recall / precision of the planted pairs, then a rerun (appends nothing),
  (c) datasketch `MinHash.bulk` + `MinHashLSH` insert and query on the same shingles,
  (d) peak RSS summed over this process and its children during (b) and (c).

A planted pair counts as found when both documents end in one cluster; precision is the
share of same-cluster pairs that are planted or have exact shingle Jaccard >= threshold.
Prints a table and writes bench/results/dedup.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lake import db
from lake.dedup import DedupSettings, components, run_dedup, shingle_set, signatures
from lake.schema import candidate_row
from lake.store import Lake
from lake.writer import BatchWriter
from verifiers.contract import Candidate, Task

RESULTS = Path(__file__).resolve().parent / "results" / "dedup.json"
TARGETS = {"signatures_docs_s": 30_000, "recall": 0.95, "precision": 0.95, "peak_rss_gb": 4.0}

_PARTS = (
    "data ctrl addr buf cnt state next valid ready req ack fifo rd wr ptr sel mux acc sum tmp "
    "bit lane beat pkt hdr crc tag way idx err flag mode cfg stat irq dma bus mem cache tx rx "
    "div phase tap coef sample pix row col lut key val hit miss fill drain head tail base "
    "limit step gain bias scale shift mask pad len off seq ord win slot port chan link frame "
    "burst word byte nib half quad carry borrow over under sat wrap lock sync edge pulse tick "
    "timer wdog pwm adc dac uart spi i2c gpio core hart warp tile blk grid thr fetch decode "
    "exec mem wb alu fpu mul quot rem exp mant sign norm round zero one two lo hi mid cur prev "
    "old new in out src dst ref cmp eq gt lt ge le inc dec en clr set rst load store push pop"
)
PARTS = tuple(_PARTS.split())
BIN_OPS = ("+", "-", "&", "|", "^", "<<", ">>", "==", "!=", "<", ">=", "*")


class Gen:
    """Random Verilog modules and C functions: every identifier and constant is drawn at
    random, so two generated documents share only the languages' keywords and idioms."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def ident(self) -> str:
        r = self.rng
        name = "_".join(r.sample(PARTS, r.choice((2, 2, 3))))
        return name + (str(r.randrange(100)) if r.random() < 0.3 else "")

    def const(self) -> str:
        r = self.rng
        return str(r.randrange(1 << r.choice((2, 4, 8, 12, 16))))

    def expr(self, names: list[str], depth: int = 0) -> str:
        r = self.rng
        if depth >= 2 or r.random() < 0.3:
            return r.choice(names) if r.random() < 0.7 else self.const()
        left, right = self.expr(names, depth + 1), self.expr(names, depth + 1)
        if r.random() < 0.1:
            return f"({r.choice(names)} ? {left} : {right})"
        return f"({left} {r.choice(BIN_OPS)} {right})"

    def comment(self) -> str:
        return " ".join(self.rng.sample(PARTS, self.rng.randint(3, 8)))

    def verilog(self, lines: int) -> str:
        r = self.rng
        ins = [self.ident() for _ in range(r.randint(2, 6))]
        outs = [self.ident() for _ in range(r.randint(1, 4))]
        regs = [self.ident() for _ in range(r.randint(2, 6))]
        names = ins + regs
        ports = ["    input wire clk", "    input wire rst_n"]
        ports += [f"    input wire [{r.randint(1, 31)}:0] {n}" for n in ins]
        ports += [f"    output reg [{r.randint(1, 31)}:0] {n}" for n in outs]
        out = [
            f"// {self.comment()}",
            f"module {self.ident()} #(parameter W = {r.randint(2, 64)}) (",
        ]
        out += [p + "," for p in ports[:-1]] + [ports[-1], ");"]
        out += [f"    reg [{r.randint(1, 31)}:0] {n};" for n in regs]
        while len(out) < lines - 2:
            kind = r.random()
            if kind < 0.35:
                targets = r.sample(regs + outs, r.randint(2, min(5, len(regs + outs))))
                out.append("    always @(posedge clk or negedge rst_n) begin")
                out.append("        if (!rst_n) begin")
                out += [f"            {t} <= {self.const()};" for t in targets]
                out.append(f"        end else if ({self.expr(names)}) begin")
                out += [f"            {t} <= {self.expr(names)};" for t in targets]
                out.append("        end")
                out.append("    end")
            elif kind < 0.6:
                sel = r.choice(names)
                target = r.choice(outs + regs)
                out.append("    always @(*) begin")
                out.append(f"        case ({sel})")
                for i in r.sample(range(64), r.randint(2, 6)):
                    out.append(f"            6'd{i}: {target} = {self.expr(names)};")
                out.append(f"            default: {target} = {self.const()};")
                out.append("        endcase")
                out.append("    end")
            elif kind < 0.85:
                w = self.ident()
                out.append(f"    wire [{r.randint(1, 31)}:0] {w} = {self.expr(names)};")
                names.append(w)
            else:
                out.append(f"    // {self.comment()}")
        out.append("endmodule")
        return "\n".join(out) + "\n"

    def c_function(self, lines: int) -> str:
        r = self.rng
        args = [self.ident() for _ in range(r.randint(1, 4))]
        names = [*args]
        out = [f"/* {self.comment()} */"]
        out.append(f"static int {self.ident()}(" + ", ".join(f"int {a}" for a in args) + ") {")
        while len(out) < lines - 2:
            kind = r.random()
            if kind < 0.3:
                v = self.ident()
                out.append(f"    int {v} = {self.expr(names)};")
                names.append(v)
            elif kind < 0.55:
                i = self.ident()
                out.append(f"    for (int {i} = 0; {i} < {self.const()}; ++{i}) {{")
                out.append(f"        {r.choice(names)} += {self.expr([*names, i])};")
                out.append("    }")
            elif kind < 0.85:
                out.append(f"    if ({self.expr(names)}) {{")
                out.append(f"        {r.choice(names)} = {self.expr(names)};")
                out.append("    } else {")
                out.append(f"        {r.choice(names)} ^= {self.expr(names)};")
                out.append("    }")
            else:
                out.append(f"    // {self.comment()}")
        out.append(f"    return {self.expr(names)};")
        out.append("}")
        return "\n".join(out) + "\n"

    def document(self) -> tuple[str, str]:
        """(domain, code): a Verilog module (rtl) or a C function (embedded)."""
        lines = self.rng.randint(50, 150)
        if self.rng.random() < 0.5:
            return "rtl", self.verilog(lines)
        return "embedded", self.c_function(lines)

    def near_copy(self, doc: str, edits: int | None = None) -> str:
        """A few (default 1-4) token edits plus comment and whitespace changes."""
        r = self.rng
        words = list(re.finditer(r"\b[A-Za-z_]\w*\b|\b\d+\b", doc))
        picks = sorted(r.sample(range(len(words)), min(len(words), edits or r.randint(1, 4))))
        out, last = [], 0
        for i in picks:
            m = words[i]
            out.append(doc[last : m.start()])
            edit = r.random()
            if edit < 0.4:
                out.append(self.ident())
            elif edit < 0.7:
                out.append(self.const())
            elif edit < 0.85:
                out.append("")  # token deleted
            else:
                out.append(f"{m.group()} + 1")
            last = m.end()
        out.append(doc[last:])
        lines = "".join(out).splitlines()
        if r.random() < 0.5:
            lines.insert(r.randrange(len(lines)), f"    // {self.comment()}")
        if r.random() < 0.5:
            lines = [line.replace("    ", "\t") for line in lines]
        if r.random() < 0.3:
            lines = [line.rstrip() + "  " for line in lines]
        return "\n".join(lines) + "\n"


@dataclass
class Corpus:
    docs: list[str]
    domains: list[str]
    planted: list[tuple[int, int]]  # (copy, original): 1-4 token edits
    hard: list[tuple[int, int]]  # (copy, original): 5-70 token edits, around the threshold


def corpus(n: int, seed: int = 0, dup_fraction: float = 0.1, hard_fraction: float = 0.02) -> Corpus:
    """n documents: `dup_fraction` of them lightly edited copies of an earlier original
    (the planted near-duplicates), `hard_fraction` heavily edited ones (shingle Jaccard
    from ~0.5 to ~0.95: what the threshold has to sort out)."""
    rng = random.Random(seed)
    gen = Gen(rng)
    c = Corpus([], [], [], [])
    originals: list[int] = []
    for i in range(n):
        draw = rng.random()
        if originals and draw < dup_fraction + hard_fraction:
            src = rng.choice(originals)
            hard = draw >= dup_fraction
            c.docs.append(gen.near_copy(c.docs[src], rng.randint(5, 70) if hard else None))
            c.domains.append(c.domains[src])
            (c.hard if hard else c.planted).append((i, src))
        else:
            domain, doc = gen.document()
            c.docs.append(doc)
            c.domains.append(domain)
            originals.append(i)
    return c


# --- measuring --------------------------------------------------------------------------


class PeakRSS:
    """Polls the RSS of this process (unless `children_only`) plus all its descendants
    and keeps the largest sum. Shared pages count once per process: an upper bound."""

    def __init__(self, interval: float = 0.05, *, children_only: bool = False) -> None:
        self.interval = interval
        self.children_only = children_only
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> int:
        me = psutil.Process()
        total = 0
        for p in ([] if self.children_only else [me]) + me.children(recursive=True):
            with contextlib.suppress(psutil.Error):  # a worker that just exited
                total += p.memory_info().rss
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._sample())
            time.sleep(self.interval)

    def __enter__(self) -> PeakRSS:
        self.peak = self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._sample())


_SHARED: dict[str, list[str]] = {}


def _sign_slice(bounds: tuple[int, int]) -> tuple[float, float]:
    docs = _SHARED["docs"][bounds[0] : bounds[1]]
    wall, cpu = time.perf_counter(), time.process_time()
    signatures(docs, "rtl", DedupSettings())
    return time.perf_counter() - wall, time.process_time() - cpu


def measure_signatures(docs: list[str], workers: int, repeat: int = 3) -> dict[str, float]:
    """One process over all docs (CPU time: docs/s per core), then `workers` forked
    processes over equal slices (wall time: docs/s of the machine), best of `repeat`:
    this machine is shared, and the best run is the one least disturbed."""
    signatures(docs[:2000], "rtl", DedupSettings())  # warm caches and lookup tables
    _SHARED["docs"] = docs
    _, cpu = _sign_slice((0, len(docs)))
    step = -(-len(docs) // workers)
    walls = []
    with mp.get_context("fork").Pool(workers) as pool:
        for _ in range(repeat):
            started = time.perf_counter()
            results = pool.map(_sign_slice, [(i, i + step) for i in range(0, len(docs), step)])
            walls.append(time.perf_counter() - started)
    _SHARED.clear()
    return {
        "per_core_docs_s": len(docs) / cpu,
        "parallel_docs_s": len(docs) / min(walls),
        "parallel_docs_s_runs": [len(docs) / w for w in walls],
        "parallel_workers": workers,
        "parallel_cpu_s": sum(c for _, c in results),
    }


def build_lake(root: Path, c: Corpus, seed: int) -> tuple[Lake, list[str]]:
    """The corpus as candidates of 50 train tasks per domain, plus 6 holdout tasks per
    domain whose references are generated documents outside the corpus. Returns the lake
    and each document's candidate_id."""
    lake = Lake(root)
    gen = Gen(random.Random(seed + 1))
    tasks: dict[str, list[Task]] = defaultdict(list)
    ids: list[str] = []
    with BatchWriter(lake, run_id="bench", batch_size=20_000) as w:
        for domain in sorted(set(c.domains)):
            for i in range(56):
                held = i >= 50
                task = Task(
                    name=f"{domain}_{'holdout' if held else 'task'}{i}",
                    domain=domain,
                    family="bench",
                    level=1,
                    requirement=gen.comment() + " " + gen.comment(),
                    interface={},
                    platform={},
                    reference=gen.verilog(80) if domain == "rtl" else gen.c_function(80),
                    harness={},
                    split="holdout" if held else "train",
                )
                w.add_task(task)
                if not held:
                    tasks[domain].append(task)
        for i, (code, domain) in enumerate(zip(c.docs, c.domains, strict=True)):
            cand = Candidate(
                task_id=tasks[domain][i % 50].task_id, code=code, origin="llm", generator="bench"
            )
            ids.append(cand.candidate_id)
            w.add("candidates", [candidate_row(cand, domain)])
    return lake, ids


def same_cluster_pairs(labels: Iterable[tuple[int, object]]) -> set[tuple[int, int]]:
    members: dict[object, list[int]] = defaultdict(list)
    for doc, label in labels:
        members[label].append(doc)
    return {
        (a, b) for group in members.values() for i, a in enumerate(group) for b in group[i + 1 :]
    }


class Truth:
    """Planted pairs and, on demand, exact shingle Jaccard of any pair."""

    def __init__(self, c: Corpus, settings: DedupSettings) -> None:
        self.c = c
        self.settings = settings
        self.planted = {frozenset(p) for p in c.planted}
        self._sets: dict[int, set[int]] = {}
        self.hard = {tuple(sorted(p)): self.jaccard(*p) for p in c.hard}
        self._sets.clear()

    def shingles(self, i: int) -> set[int]:
        if i not in self._sets:
            self._sets[i] = shingle_set(self.c.docs[i], self.c.domains[i], self.settings)
        return self._sets[i]

    def jaccard(self, a: int, b: int) -> float:
        sa, sb = self.shingles(a), self.shingles(b)
        return len(sa & sb) / len(sa | sb)

    def score(self, found: set[tuple[int, int]], docs: int) -> dict[str, float]:
        """Over pairs inside the first `docs` documents: recall of the planted pairs,
        recall of the heavily edited pairs at or above the threshold, the share of those
        below it that were merged anyway, and precision of all same-cluster pairs (true:
        planted, or exact Jaccard >= threshold)."""
        t = self.settings.threshold
        planted = [tuple(sorted(p)) for p in self.planted if max(p) < docs]
        above = [p for p, j in self.hard.items() if max(p) < docs and j >= t]
        below = [p for p, j in self.hard.items() if max(p) < docs and j < t]
        true = sum(frozenset(p) in self.planted or self.jaccard(*p) >= t for p in found)
        share = lambda pairs: sum(p in found for p in pairs) / len(pairs) if pairs else 1.0  # noqa: E731
        return {
            "recall": share(planted),
            "precision": true / len(found) if found else 1.0,
            "hard_recall": share(above),
            "hard_merged_below": share(below) if below else 0.0,
            "planted_pairs": len(planted),
            "hard_pairs_above": len(above),
            "hard_pairs_below": len(below),
            "found_pairs": len(found),
        }


def dedup_process(lake_root: str, work: str, scheduler: str) -> None:
    """`--dedup-process`: run_dedup twice (the pass, then a rerun that must append nothing)
    in a fresh process, so its memory is the dedup's own; counts as JSON on stdout."""
    lake = Lake(lake_root)
    con = db.connect(lake)
    settings = DedupSettings(scheduler=scheduler)
    first = run_dedup(lake, con, run_id="dedup1", settings=settings, workdir=work)
    rerun = run_dedup(lake, con, run_id="dedup2", settings=settings, workdir=work)
    print(json.dumps({"counts": first, "rerun": rerun}))


def run_ours(c: Corpus, settings: DedupSettings, work: Path, truth: Truth) -> dict[str, object]:
    """`run_dedup` on a lake of the corpus, in a child process: the peak RSS is that of
    the child and its Dask workers (DuckDB included), not of this bench."""
    started = time.perf_counter()
    lake, ids = build_lake(work / "lake", c, seed=0)
    build_s = time.perf_counter() - started
    args = ["--dedup-process", str(lake.root), str(work), settings.scheduler]
    with PeakRSS(children_only=True) as rss:
        out = subprocess.run(
            [sys.executable, __file__, *args], capture_output=True, text=True, check=True
        )
    result = json.loads(out.stdout.splitlines()[-1])
    con = db.connect(lake)
    cluster = dict(con.sql("SELECT candidate_id, cluster_id FROM latest_dedup").fetchall())
    con.close()
    found = same_cluster_pairs((i, cluster[cid]) for i, cid in enumerate(ids))
    return {
        "lake_build_s": build_s,
        "counts": result["counts"],
        "rerun": {k: result["rerun"][k] for k in ("rows_written", "seconds", "stage_seconds")},
        "peak_rss_bytes": rss.peak,
        **truth.score(found, len(c.docs)),
    }


def run_datasketch(
    c: Corpus, docs: int, settings: DedupSettings, truth: Truth
) -> dict[str, object]:
    """`MinHash.bulk` and `MinHashLSH(threshold, num_perm)` on our shingles (8-byte hashes:
    the same sets), a chunk at a time so the shingle lists never all exist at once. Only
    bulk + insert + query are timed; making the shingles is ours and not counted."""
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=settings.threshold, num_perm=settings.num_perm)
    kept: list[object] = []
    bulk_s = insert_s = 0.0
    with PeakRSS() as rss:
        for lo in range(0, docs, 2000):
            hi = min(docs, lo + 2000)
            shingles = [
                [h.to_bytes(8, "little") for h in shingle_set(c.docs[i], c.domains[i], settings)]
                for i in range(lo, hi)
            ]
            started = time.process_time()
            minhashes = MinHash.bulk(shingles, num_perm=settings.num_perm)
            bulk_s += time.process_time() - started
            del shingles
            started = time.process_time()
            for i, m in zip(range(lo, hi), minhashes, strict=True):
                lsh.insert((c.domains[i], i), m)  # keys carry the domain: never mixed
            insert_s += time.process_time() - started
            kept += minhashes
        started = time.process_time()
        pairs = [
            (i, j)
            for i, m in enumerate(kept)
            for dom, j in lsh.query(m)
            if j > i and dom == c.domains[i]
        ]
        query_s = time.process_time() - started
    u = np.array([p[0] for p in pairs], np.int64)
    v = np.array([p[1] for p in pairs], np.int64)
    labels = components(docs, u, v)
    found = same_cluster_pairs(enumerate(labels.tolist()))
    return {
        "docs": docs,
        "bands_rows": [lsh.b, lsh.r],
        "bulk_cpu_s": bulk_s,
        "lsh_cpu_s": insert_s + query_s,
        "bulk_docs_s": docs / bulk_s,
        "total_docs_s": docs / (bulk_s + insert_s + query_s),
        "peak_rss_bytes": rss.peak,
        **truth.score(found, docs),
    }


def table(rows: list[tuple[str, str, str, str, str]]) -> str:
    head = ("metric", "ours", "datasketch", "ratio", "target")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]
    line = lambda r: " | ".join(x.ljust(w) for x, w in zip(r, widths, strict=True))  # noqa: E731
    return "\n".join([line(head), "-+-".join("-" * w for w in widths), *map(line, rows)])


def main() -> None:
    if sys.argv[1:2] == ["--dedup-process"]:
        dedup_process(*sys.argv[2:5])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--scheduler", default="processes", choices=("synchronous", "threads", "processes")
    )
    ap.add_argument("--datasketch-docs", type=int, default=None, help="default: all")
    args = ap.parse_args()
    settings = DedupSettings(scheduler=args.scheduler)
    load_before = os.getloadavg()

    started = time.perf_counter()
    c = corpus(args.docs, args.seed)
    gen_s = time.perf_counter() - started
    lines = sum(d.count("\n") for d in c.docs) / len(c.docs)
    size = sum(len(d) for d in c.docs) / len(c.docs)
    print(
        f"{args.docs} documents ({lines:.0f} lines, {size:.0f} bytes on average, "
        f"{len(c.planted)} planted near-duplicates) generated in {gen_s:.0f}s",
        flush=True,
    )
    truth = Truth(c, settings)
    planted_j = np.array([truth.jaccard(a, b) for a, b in c.planted])
    hard_j = np.array(list(truth.hard.values()))
    truth._sets.clear()
    print(
        f"shingle Jaccard of the {len(planted_j)} planted pairs: min {planted_j.min():.3f}, "
        f"5% {np.quantile(planted_j, 0.05):.3f}, median {np.median(planted_j):.3f}; of the "
        f"{len(hard_j)} heavily edited pairs: 5% {np.quantile(hard_j, 0.05):.3f}, median "
        f"{np.median(hard_j):.3f}, 95% {np.quantile(hard_j, 0.95):.3f}, "
        f"{(hard_j >= settings.threshold).sum()} at or above {settings.threshold}",
        flush=True,
    )

    sig = measure_signatures(c.docs, workers=os.cpu_count() or 1)
    print(
        f"(a) signatures: {sig['per_core_docs_s']:,.0f} docs/s per core, "
        f"{sig['parallel_docs_s']:,.0f} docs/s in {sig['parallel_workers']} processes",
        flush=True,
    )

    with tempfile.TemporaryDirectory(prefix="bench-dedup-") as tmp:
        ours = run_ours(c, settings, Path(tmp), truth)
    print(
        f"(b) run_dedup: {ours['counts']['seconds']:.1f}s, recall {ours['recall']:.4f}, "
        f"precision {ours['precision']:.4f}, peak RSS {ours['peak_rss_bytes'] / 2**30:.2f} GB",
        flush=True,
    )

    ds_docs = min(args.datasketch_docs or args.docs, args.docs)
    ds = run_datasketch(c, ds_docs, settings, truth)
    print(
        f"(c) datasketch on {ds_docs} docs: {ds['total_docs_s']:,.0f} docs/s, recall "
        f"{ds['recall']:.4f}, precision {ds['precision']:.4f}",
        flush=True,
    )

    n = args.docs
    dedup_s = ours["counts"]["seconds"]
    ds_total_s = ds_docs / ds["total_docs_s"]
    subset = "" if ds_docs == n else f" ({ds_docs} docs)"
    rows = [
        (
            "signatures docs/s, 1 core (ours: comments, tokens, shingles, MinHash)",
            f"{sig['per_core_docs_s']:,.0f}",
            f"{ds['bulk_docs_s']:,.0f} (MinHash.bulk only)",
            f"{sig['per_core_docs_s'] / ds['bulk_docs_s']:.1f}x",
            "",
        ),
        (
            f"signatures docs/s, {sig['parallel_workers']} processes",
            f"{sig['parallel_docs_s']:,.0f}",
            "",
            "",
            f">= {TARGETS['signatures_docs_s']:,}",
        ),
        (
            f"dedup docs/s end to end{subset and ' (datasketch: bulk + LSH CPU)'}",
            f"{n / dedup_s:,.0f} ({dedup_s:.1f}s wall)",
            f"{ds['total_docs_s']:,.0f} ({ds_total_s:.1f}s){subset}",
            f"{(n / dedup_s) / ds['total_docs_s']:.1f}x",
            "",
        ),
        ("recall (planted pairs)", f"{ours['recall']:.4f}", f"{ds['recall']:.4f}", "", ">= 0.95"),
        (
            f"recall, heavily edited pairs with J >= {settings.threshold}",
            f"{ours['hard_recall']:.4f}",
            f"{ds['hard_recall']:.4f}",
            "",
            "",
        ),
        (
            f"merged anyway, heavily edited pairs with J < {settings.threshold}",
            f"{ours['hard_merged_below']:.4f}",
            f"{ds['hard_merged_below']:.4f}",
            "",
            "",
        ),
        (
            "precision (same-cluster pairs)",
            f"{ours['precision']:.4f}",
            f"{ds['precision']:.4f}",
            "",
            ">= 0.95",
        ),
        (
            "peak RSS GB, all processes (ours: run_dedup's process and workers)",
            f"{ours['peak_rss_bytes'] / 2**30:.2f}",
            f"{ds['peak_rss_bytes'] / 2**30:.2f}",
            "",
            f"< {TARGETS['peak_rss_gb']:.0f}",
        ),
        (
            "rerun, nothing changed: rows / s",
            f"{ours['rerun']['rows_written']} / {ours['rerun']['seconds']:.1f}",
            "",
            "",
            "0 rows",
        ),
    ]
    print()
    print(table(rows))
    print(
        f"\nour stages (s): {ours['counts']['stage_seconds']}; bands x rows ours "
        f"{settings.bands}x{settings.rows}, datasketch "
        f"{ds['bands_rows'][0]}x{ds['bands_rows'][1]}; "
        f"load average (1 min) {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after "
        f"on {os.cpu_count()} cores"
    )
    result = {
        "docs": n,
        "seed": args.seed,
        "scheduler": args.scheduler,
        "settings": settings.to_params(),
        "corpus": {
            "avg_lines": lines,
            "avg_bytes": size,
            "planted": len(c.planted),
            "planted_jaccard": {
                "min": float(planted_j.min()),
                "p05": float(np.quantile(planted_j, 0.05)),
                "median": float(np.median(planted_j)),
            },
            "hard": len(c.hard),
            "hard_jaccard": {
                "p05": float(np.quantile(hard_j, 0.05)),
                "median": float(np.median(hard_j)),
                "p95": float(np.quantile(hard_j, 0.95)),
                "above_threshold": int((hard_j >= settings.threshold).sum()),
            },
            "generate_s": gen_s,
        },
        "signatures": sig,
        "ours": ours,
        "datasketch": ds,
        "targets": TARGETS,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_avg_1m": [load_before[0], os.getloadavg()[0]],
        },
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=1, default=float) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
