"""RTL mutations: each imitates one bug that models writing Verilog make.

`apply(source, rng) -> source | None`: the same rng state always picks the same site, and
None means the design has no place for this bug.
"""

from __future__ import annotations

import itertools
import random
import re

from generators.perturb.rtl_sites import (
    EXPR,
    Edit,
    always_blocks,
    assigns,
    binary_sites,
    block_reads,
    block_writes,
    declared,
    delete_stmt,
    lhs_vars,
    rename_in_module,
    replace_range,
    replace_tok,
    span_tokens,
    spans,
    swap_edits,
    ternary,
)
from generators.perturb.verilog import (
    BASED,
    KEYWORDS,
    PRECEDENCE,
    Always,
    Module,
    Source,
    Stmt,
    analyze,
    depth0,
    is_binary,
    line_extent,
    literal_value,
    match_forward,
    primary_end,
    splice,
)

_RESET = re.compile(r"(?i)rst|reset|clr|clear")
_STATE = re.compile(r"(?i)state|(^|_)st($|_)|(^|_)(cs|ps|fsm)($|_)")


def _assignment_kind(kind: str, old: str, new: str):
    """Every `old` assignment of one (rng-chosen) block of `kind` becomes `new`: a model
    with the wrong habit applies it to the whole block, not to one line. Blocks whose
    change shows go first: one that reads a variable after assigning it, or assigns one
    that another block of the same kind reads (a race at the shared edge). Elsewhere the
    change is a style fault that still simulates correctly (lint flags it)."""

    def apply(source: str, rng: random.Random) -> str | None:
        s = analyze(source)
        blocks, telling = [], []
        for m in s.modules:
            peers = [a for mod, a in always_blocks(s, kind) if mod is m]
            for a in peers:
                ops = [st for st in assigns(a) if s.toks[st.op].text == old]
                if not ops:
                    continue
                blocks.append(ops)
                elsewhere = {v for b in peers if b is not a for v in block_reads(s, m, b)}
                if elsewhere & block_writes(s, a) or any(_read_later(s, m, a, st) for st in ops):
                    telling.append(ops)
        if not blocks:
            return None
        chosen = rng.choice(telling or blocks)
        return splice(source, [replace_tok(s, st.op, new) for st in chosen])

    return apply


def _read_later(s: Source, m: Module, a: Always, st: Stmt) -> bool:
    """Is something `st` assigns read further down the same block?"""
    written = set(lhs_vars(s, st.start, st.op))
    return any(
        s.toks[k].kind == "id" and s.toks[k].text in written
        for sp in m.spans
        if sp.ctx != "lhs" and st.end <= sp.start < a.body.end
        for k in range(sp.start, sp.end)
    )


nonblocking_to_blocking = _assignment_kind("clocked", "<=", "=")
blocking_to_nonblocking = _assignment_kind("comb", "=", "<=")


def _bump_literal(text: str, delta: int) -> str | None:
    """`text` with its value moved by `delta` (or by -delta where that would not fit),
    written in the same base, width and digit style."""
    parsed = literal_value(text)
    if parsed is None:
        return None
    size, _signed, base, value, digits = parsed
    bits = int(size.replace("_", "")) if size else (32 if base else None)
    for d in (delta, -delta):
        new = value + d
        if new >= 0 and (bits is None or new < 2**bits):
            break
    else:
        return None
    if not base:
        return str(new)
    radix = base.lower()
    body = {"b": f"{new:b}", "o": f"{new:o}", "d": str(new), "h": f"{new:x}"}[radix]
    if radix != "d":
        body = body.zfill(len(digits))
    if radix == "h" and any(c.isupper() for c in digits):
        body = body.upper()
    m = BASED.match(text)
    assert m is not None  # literal_value parsed it as based
    return text[: m.start("digits")] + body


def off_by_one(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = [
        k
        for k in span_tokens(s, EXPR | {"label", "param"})
        if s.toks[k].kind == "number" and literal_value(s.toks[k].text) is not None
    ]
    if not sites:
        return None
    k = rng.choice(sites)
    new = _bump_literal(s.toks[k].text, rng.choice((1, -1)))
    return None if new is None else splice(source, [replace_tok(s, k, new)])


def _ranges(s: Source, *, ports: bool) -> list[tuple[int, int]]:
    found = set()
    for m in s.modules:
        port_names = {p.name for p in m.ports}
        for d in m.decls:
            is_port = d.direction is not None or any(s.toks[n].text in port_names for n in d.names)
            if is_port == ports:
                found.update(d.ranges)
    return sorted(found)


def _resize(s: Source, lb: int, rb: int, rng: random.Random) -> Edit | None:
    """Move the far bound of `[hi:lo]` (the one that is not 0) one bit in or out."""
    colons = [k for k in depth0(s.toks, lb + 1, rb) if s.toks[k].text == ":"]
    if len(colons) != 1:
        return None
    hi, lo = (lb + 1, colons[0]), (colons[0] + 1, rb)

    def is_zero(span: tuple[int, int]) -> bool:
        parsed = literal_value(s.toks[span[0]].text) if span[1] - span[0] == 1 else None
        return parsed is not None and parsed[3] == 0

    far = hi if is_zero(lo) else lo if is_zero(hi) else None
    if far is None:
        return None
    grow = rng.random() < 0.5
    toks = s.toks[far[0] : far[1]]
    texts = [t.text for t in toks]
    if len(toks) == 1 and toks[0].kind == "number":
        value = literal_value(toks[0].text)
        if value is None or value[2]:
            return None
        new = value[3] + 1 if grow or value[3] == 0 else value[3] - 1
        return replace_tok(s, far[0], str(new))
    if len(toks) == 1 and toks[0].kind in ("id", "macro"):
        return replace_tok(s, far[0], f"{toks[0].text}{'+' if grow else '-'}1")
    if len(toks) == 3 and texts[1] == "-" and toks[2].kind == "number" and texts[2].isdigit():
        k = int(texts[2])
        if grow and k == 1:  # `W-1` grows to `W`
            return s.toks[far[0]].end, s.toks[far[0] + 2].end, ""
        return replace_tok(s, far[0] + 2, str(k - 1 if grow else k + 1))
    return None


def resize_range(*, ports: bool):
    def apply(source: str, rng: random.Random) -> str | None:
        s = analyze(source)
        sites = _ranges(s, ports=ports)
        rng.shuffle(sites)
        for lb, rb in sites:
            edit = _resize(s, lb, rb, rng)
            if edit is not None:
                return splice(source, [edit])
        return None

    return apply


def drop_reset(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = []
    for _m, a in always_blocks(s, "clocked"):
        body = a.body
        tops = [body] if body.kind == "if" else body.children if body.kind == "block" else []
        for st in tops:
            if st.kind != "if" or st.else_tok is None or st.paren is None:
                continue
            names = {s.toks[k].text for k in range(*st.paren) if s.toks[k].kind == "id"}
            if any(_RESET.search(n) for n in names):
                sites.append((a, st, names))
    if not sites:
        return None
    a, st, names = rng.choice(sites)
    other = st.children[1]
    keep = (other.start, other.end)
    if other.kind == "block" and other.children and a.body is not st:
        keep = (other.children[0].start, other.children[-1].end)  # no begin/end in begin/end
    edits = [replace_range(s, st.start, st.end, s.text_of(*keep))]
    # An asynchronous reset also leaves the sensitivity list: the model forgot it entirely.
    edges = a.edges
    for r, (edge, sig) in enumerate(edges):
        if s.toks[sig].text in names and len(edges) > 1:
            if r > 0:
                edits.append((s.toks[edges[r - 1][1]].end, s.toks[sig].end, ""))
            else:
                edits.append((s.toks[edge].start, s.toks[edges[1][0]].start, ""))
            break
    return splice(source, edits)


_INVERSE = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">",
            "===": "!==", "!==": "==="}  # fmt: skip


def invert_condition(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    ifs = [st for m in s.modules for a in m.always for st in a.body.walk() if st.kind == "if"]
    if not ifs:
        return None
    st = rng.choice(ifs)
    assert st.paren is not None
    lp, rp = st.paren
    top = depth0(s.toks, lp + 1, rp)
    ops = [k for k in top if is_binary(s.toks, k)]
    cmps = [k for k in ops if s.toks[k].text in _INVERSE]
    inner = s.text_of(lp + 1, rp)
    if (
        len(cmps) == 1
        and all(
            PRECEDENCE[s.toks[k].text] > PRECEDENCE[s.toks[cmps[0]].text]
            for k in ops
            if k != cmps[0]
        )
        and "?" not in {s.toks[k].text for k in top}
    ):
        return splice(source, [replace_tok(s, cmps[0], _INVERSE[s.toks[cmps[0]].text])])
    first = s.toks[lp + 1].text
    if first in ("!", "~") and primary_end(s.toks, lp + 2, rp) == rp:
        return splice(source, [(s.toks[lp + 1].start, s.toks[lp + 2].start, "")])
    if primary_end(s.toks, lp + 1, rp) == rp:
        return splice(source, [replace_range(s, lp + 1, rp, "!" + inner)])
    return splice(source, [replace_range(s, lp + 1, rp, f"!({inner})")])


def swap_ternary(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = []
    for _m, sp in spans(s, EXPR):
        for k in range(sp.start, sp.end):
            if s.toks[k].text == "?":
                t = ternary(s, k, sp.end)
                if t and s.text_of(k + 1, t[1]) != s.text_of(t[1] + 1, t[2]):
                    sites.append(t)
    if not sites:
        return None
    q, colon, stop = rng.choice(sites)
    return splice(source, swap_edits(s, (q + 1, colon), (colon + 1, stop)))


_ALIASES = {
    "clk": ("clock", "clk_i", "i_clk"), "clock": ("clk", "clk_in"),
    "rst": ("reset", "rst_i", "i_rst"), "reset": ("rst", "reset_i"),
    "rst_n": ("rstn", "reset_n", "resetn", "nrst"), "rstn": ("rst_n", "reset_n"),
    "reset_n": ("rst_n", "rstn"), "areset": ("arst", "rst"), "en": ("enable", "ena"),
    "enable": ("en",), "ena": ("en", "enable"), "load": ("ld", "load_en"),
    "sel": ("select", "s"), "din": ("data_in", "d_in"), "data_in": ("din", "data_i"),
    "dout": ("data_out", "d_out"), "data_out": ("dout", "data_o"), "d": ("din", "data"),
    "q": ("dout", "data_out"), "a": ("in_a", "a_in"), "b": ("in_b", "b_in"),
    "y": ("out", "result"), "out": ("dout", "result"), "in": ("din", "data_in"),
    "sum": ("s", "result"), "cin": ("carry_in", "ci"), "cout": ("carry_out", "co"),
    "count": ("cnt", "counter"), "cnt": ("count",), "valid": ("vld", "valid_o"),
    "ready": ("rdy",), "addr": ("address",), "wr_en": ("we", "write_en"),
    "rd_en": ("re", "read_en"), "we": ("wr_en",), "data": ("din", "data_in"),
}  # fmt: skip


_OUTPUTISH = re.compile(r"out|result|^q$|^o_|_o$")
_INPUTISH = re.compile(r"(^|_)(in|din|i)($|_)")


def _port_alias(name: str, direction: str | None, taken: set[str]) -> list[str]:
    """Names a model plausibly gives this port instead: common synonyms and the
    `i_`/`_i` / `o_`/`_o` conventions."""
    out = list(_ALIASES.get(name, ()))
    if name.endswith("_in"):
        out.append(name[:-3] + "_i")
    if name.endswith("_out"):
        out.append(name[:-4] + "_o")
    if direction == "input":
        out += [f"i_{name}", f"{name}_i"]
    elif direction == "output":
        out += [f"o_{name}", f"{name}_o"]
    wrong_way = {"input": _OUTPUTISH, "output": _INPUTISH}.get(direction or "")
    return [
        n
        for n in dict.fromkeys(out)
        if n not in taken and n not in KEYWORDS and not (wrong_way and wrong_way.search(n))
    ]


def rename_port(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    taken = s.idents()
    sites = [
        (m, p, alias)
        for m in s.tops()
        for p in m.ports
        for alias in _port_alias(p.name, p.direction, taken)[:2]
    ]
    if not sites:
        return None
    m, p, alias = rng.choice(sites)
    return splice(source, rename_in_module(s, m, {p.name: alias}))


def missing_port(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = [(m, i) for m in s.tops() for i in range(len(m.ports))]
    if not sites:
        return None
    m, i = rng.choice(sites)
    p, toks = m.ports[i], s.toks
    nxt = m.ports[i + 1] if i + 1 < len(m.ports) else None
    if nxt is not None and p.has_prefix and not nxt.has_prefix:
        edit = (toks[p.tok].start, toks[nxt.item[0]].start, "")  # the next name keeps the type
    elif i > 0:  # from the end of the previous port: its comma now separates the next one
        edit = (toks[m.ports[i - 1].item[1] - 1].end, toks[p.item[1] - 1].end, "")
    elif nxt is not None:
        edit = (toks[p.item[0]].start, toks[nxt.item[0]].start, "")
    else:
        edit = replace_range(s, p.item[0], p.item[1], "")
    return splice(source, [edit])


_BAD_DIGIT = {"b": "2", "o": "8", "d": "A", "h": "G"}


def malformed_literal(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = [
        k
        for m in s.modules
        for k in range(m.start, m.end)
        if s.toks[k].kind == "number"
        and BASED.match(s.toks[k].text)
        and literal_value(s.toks[k].text) is not None
    ]
    # A stray digit in binary or hex is the common slip; a letter in decimal is rarer.
    sites = [k for k in sites if literal_value(s.toks[k].text)[2].lower() != "d"] or sites
    if not sites:
        return None
    k = rng.choice(sites)
    text = s.toks[k].text
    m = BASED.match(text)
    assert m is not None
    positions = [m.start("digits") + i for i, c in enumerate(m.group("digits")) if c != "_"]
    pos = rng.choice(positions)
    bad = _BAD_DIGIT[m.group("base").lower()]
    if m.group("base").islower() and not any(c.isupper() for c in m.group("digits")):
        bad = bad.lower()
    return splice(source, [replace_tok(s, k, text[:pos] + bad + text[pos + 1 :])])


def missing_end(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = [k for k, t in enumerate(s.toks) if t.text == "end" and t.kind == "kw"]
    if not sites:
        return None
    k = rng.choice(sites)
    labelled = k + 2 < len(s.toks) and s.toks[k + 1].text == ":" and s.toks[k + 2].kind == "id"
    last = k + 2 if labelled else k
    start, end = line_extent(source, s.toks[k].start, s.toks[last].end)
    if start == s.toks[k].start:  # code before it on the line: take the space before too
        start = len(source[:start].rstrip(" \t"))
    return splice(source, [(start, end, "")])


def _fsm_sites(s: Source) -> list[tuple[int, list[str]]]:
    """(token of a next-state value, the state names) for assignments inside a `case` over
    a state: one whose labels are named constants, or whose selector is called *state*."""
    sites = []
    for m in s.modules:
        for a in m.always:
            for st in a.body.walk():
                if st.kind != "case" or st.paren is None:
                    continue
                labels = [
                    s.toks[lo].text
                    for it in st.items
                    if not it.default and it.colon is not None
                    for lo, hi in _split(s, it.start, it.colon)
                    if hi - lo == 1
                ]
                labels = list(dict.fromkeys(labels))
                selector = s.text_of(st.paren[0] + 1, st.paren[1])
                named = len(labels) >= 2 and all(lb in m.consts for lb in labels)
                if not (named or (len(labels) >= 2 and _STATE.search(selector))):
                    continue
                # States reached only through `default:` are declared with the others.
                names = list(labels)
                for group in m.const_groups:
                    if group & set(labels):
                        names += sorted(group - set(names))
                # A state name that is a whole value (`next = S1`, an arm of
                # `din ? S1 : S0`), not an operand of a test like `state == S1`.
                sites += [
                    (k, names)
                    for sub in st.walk()
                    if sub.kind == "assign" and sub.op is not None
                    for k in range(sub.op + 1, sub.end - 1)
                    if s.toks[k].text in names
                    and s.toks[k - 1].text in (s.toks[sub.op].text, "?", ":", "(")
                    and s.toks[k + 1].text in (";", ":", ")")
                ]
    return sites


def wrong_fsm_transition(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = _fsm_sites(s)
    if not sites:
        return None
    k, labels = rng.choice(sorted(set((k, tuple(lb)) for k, lb in sites)))
    others = [lb for lb in labels if lb != s.toks[k].text]
    return splice(source, [replace_tok(s, k, rng.choice(others))])


def latch_inference(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites: list[Edit] = []
    for _m, a in always_blocks(s, "comb"):
        body = a.body
        tops = body.children if body.kind == "block" else [body]
        guarded: set[str] = set()
        for idx, st in enumerate(tops):
            if st.kind != "assign":
                continue
            names = set(lhs_vars(s, st.start, st.op))
            guarded |= names
            later = [
                v
                for other in tops[idx + 1 :]
                if other.kind in ("if", "case")
                for sub in _assigns_in(other)
                for v in lhs_vars(s, sub.start, sub.op)
            ]
            if names & set(later):
                sites.append(delete_stmt(s, st.start, st.end))  # the default assignment
        for st in body.walk():
            if st.kind == "case":
                for it in st.items:
                    if it.default and not _writes(s, it.body) <= guarded:
                        sites.append(delete_stmt(s, it.start, it.body.end))
            elif st.kind == "if" and st.else_tok is not None:
                then, other = st.children
                if not _writes(s, other) <= guarded:
                    sites.append((s.toks[then.end - 1].end, s.toks[other.end - 1].end, ""))
    if not sites:
        return None
    return splice(source, [rng.choice(sites)])


def _assigns_in(st: Stmt) -> list[Stmt]:
    return [sub for sub in st.walk() if sub.kind == "assign"]


def _writes(s: Source, st: Stmt) -> set[str]:
    return {v for sub in _assigns_in(st) for v in lhs_vars(s, sub.start, sub.op)}


_WRONG_OP = {"+": "-", "-": "+", "&": "|", "|": "&", "&&": "||", "||": "&&", "==": "!=",
             "!=": "==", "<": "<=", "<=": "<", ">": ">=", ">=": ">", "<<": ">>", ">>": "<<",
             "^": "|"}  # fmt: skip


def wrong_operator(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = [
        k
        for k in span_tokens(s, EXPR)
        if s.toks[k].text in _WRONG_OP
        and (is_binary(s.toks, k) or s.toks[k].text in ("&", "|", "^"))
    ]
    if not sites:
        return None
    k = rng.choice(sites)
    return splice(source, [replace_tok(s, k, _WRONG_OP[s.toks[k].text])])


_NON_COMMUTATIVE = frozenset({"-", "<", "<=", ">", ">=", "<<", ">>", ">>>", "/", "%"})


def swap_operands(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = [
        (left, k, right)
        for left, k, right, _end in binary_sites(s, _NON_COMMUTATIVE)
        if s.text_of(left, k) != s.text_of(k + 1, right)
    ]
    if not sites:
        return None
    left, k, right = rng.choice(sites)
    return splice(source, swap_edits(s, (left, k), (k + 1, right)))


def concat_order(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = []
    for k in span_tokens(s, EXPR | {"lhs"}):
        if s.toks[k].text != "{":
            continue
        rb = match_forward(s.toks, k)
        first = primary_end(s.toks, k + 1, rb)
        if first is not None and first < rb and s.toks[first].text == "{":
            continue  # a replication {N{x}}
        items = _split(s, k + 1, rb)
        for a, b in itertools.pairwise(items):
            if s.text_of(*a) != s.text_of(*b):
                sites.append((a, b))
    if not sites:
        return None
    a, b = rng.choice(sites)
    return splice(source, swap_edits(s, a, b))


def _split(s: Source, i: int, j: int) -> list[tuple[int, int]]:
    commas = [k for k in depth0(s.toks, i, j) if s.toks[k].text == ","]
    bounds = [i - 1, *commas, j]
    return [(a + 1, b) for a, b in itertools.pairwise(bounds) if b > a + 1]


def wrong_edge(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    edges = [e for m in s.modules for a in m.always for e, _sig in a.edges]
    if not edges:
        return None
    k = rng.choice(edges)
    return splice(
        source, [replace_tok(s, k, "negedge" if s.toks[k].text == "posedge" else "posedge")]
    )


def stuck_output(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = []
    for m in s.tops():
        outputs = {p.name for p in m.ports if p.direction == "output"}
        for c in m.assigns:
            lit = literal_value(s.text_of(*c.rhs).strip())
            if s.toks[c.lhs[0]].text in outputs and (lit is None or lit[3] != 0):
                sites.append(c)
    if not sites:
        return None
    c = rng.choice(sites)
    return splice(source, [replace_range(s, *c.rhs, "0")])


def missing_semicolon(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = []
    for m in s.modules:
        sites += [c.semi for c in m.assigns]
        sites += [d.end - 1 for d in m.decls if not d.in_header]
        for a in m.always:
            sites += [st.end - 1 for st in a.body.walk() if st.kind in ("assign", "other", "decl")]
    sites = sorted({k for k in sites if s.toks[k].text == ";"})
    if not sites:
        return None
    k = rng.choice(sites)
    return splice(source, [replace_tok(s, k, "")])


def _typos(name: str, taken: set[str]) -> list[str]:
    """Near-miss spellings of a signal name that a model might use by mistake."""
    out = []
    parts = name.split("_")
    if len(parts) > 1:
        out += ["".join(parts), "_".join(reversed(parts))]
    vowelless = name[0] + re.sub(r"[aeiou]", "", name[1:])
    if len(name) >= 4 and 2 <= len(vowelless) < len(name):
        out.append(vowelless)
    out += [f"{name}_reg", f"{name}_r"]
    return [n for n in dict.fromkeys(out) if n != name and n not in taken and n not in KEYWORDS]


def undeclared_identifier(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    taken = s.idents()
    sites = []
    for m, sp in spans(s, {"rhs", "cond"}):
        names = declared(s, m)
        for k in range(sp.start, sp.end):
            t = s.toks[k]
            if t.kind == "id" and t.text in names and s.toks[k - 1].text not in (".", "::"):
                sites += [(k, typo) for typo in _typos(t.text, taken)[:2]]
    if not sites:
        return None
    k, typo = rng.choice(sites)
    return splice(source, [replace_tok(s, k, typo)])


def incomplete_sensitivity(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    sites = []
    for m, a in always_blocks(s, "comb"):
        if not (a.star or s.toks[a.kw].text == "always_comb"):
            continue
        skip = block_writes(s, a) | m.consts | m.functions | m.types
        reads = [n for n in block_reads(s, m, a) if n not in skip and n in declared(s, m)]
        if len(reads) >= 2:
            sites.append((a, reads))
    if not sites:
        return None
    a, reads = rng.choice(sites)
    dropped = rng.choice(reads)
    event = "@(" + " or ".join(n for n in reads if n != dropped) + ")"
    if a.event is None:  # always_comb
        return splice(source, [replace_tok(s, a.kw, "always " + event)])
    return splice(source, [replace_range(s, *a.event, event)])
