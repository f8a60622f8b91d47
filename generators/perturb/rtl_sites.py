"""Where RTL operators can act: expression spans, always blocks, operand extents.

Shared by the mutations and the rewrites; everything here reads a `verilog.Source` and
returns token indices or character edits, never text decisions of its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from generators.perturb.verilog import (
    CLOSERS,
    OPENERS,
    PRECEDENCE,
    Always,
    Module,
    Source,
    Span,
    Stmt,
    depth0,
    is_binary,
    line_extent,
    primary_end,
    primary_start,
)

Edit = tuple[int, int, str]
EXPR = frozenset({"rhs", "cond", "init"})  # expressions whose value the design computes


def spans(s: Source, ctxs: frozenset[str] | set[str]) -> Iterator[tuple[Module, Span]]:
    for m in s.modules:
        for sp in m.spans:
            if sp.ctx in ctxs:
                yield m, sp


def span_tokens(s: Source, ctxs: frozenset[str] | set[str]) -> list[int]:
    return sorted({k for _m, sp in spans(s, ctxs) for k in range(sp.start, sp.end)})


def always_blocks(s: Source, kind: str) -> Iterator[tuple[Module, Always]]:
    for m in s.modules:
        for a in m.always:
            if (kind == "comb" and a.is_comb(s.toks)) or (
                kind == "clocked" and a.is_clocked(s.toks)
            ):
                yield m, a


def assigns(a: Always) -> list[Stmt]:
    return [st for st in a.body.walk() if st.kind == "assign"]


def replace_tok(s: Source, k: int, text: str) -> Edit:
    return s.toks[k].start, s.toks[k].end, text


def replace_range(s: Source, i: int, j: int, text: str) -> Edit:
    """Replace the text of tokens [i, j)."""
    return s.toks[i].start, s.toks[j - 1].end, text


def delete_stmt(s: Source, i: int, j: int) -> Edit:
    start, end = line_extent(s.text, s.toks[i].start, s.toks[j - 1].end)
    return start, end, ""


def lhs_vars(s: Source, i: int, j: int) -> list[str]:
    """Variables an assignment's left side writes: names outside any index brackets."""
    out, depth = [], 0
    for k in range(i, j):
        t = s.toks[k]
        if t.text == "[":
            depth += 1
        elif t.text == "]":
            depth -= 1
        elif depth == 0 and t.kind == "id" and (k == 0 or s.toks[k - 1].text not in (".", "::")):
            out.append(t.text)
    return out


def block_reads(s: Source, m: Module, a: Always) -> list[str]:
    """Names an always block reads, in first-use order: right sides, conditions, case
    expressions and labels, and the indices of what it writes."""
    seen: dict[str, None] = {}
    for sp in m.spans:
        if not a.kw < sp.start < a.body.end:
            continue
        depth = 0
        for k in range(sp.start, sp.end):
            t = s.toks[k]
            depth += t.text == "["
            depth -= t.text == "]"
            if t.kind == "id" and (sp.ctx != "lhs" or depth > 0):
                seen.setdefault(t.text, None)
    return list(seen)


def block_writes(s: Source, a: Always) -> set[str]:
    """Names an always block assigns, loop variables of its `for` headers included."""
    names = {v for st in assigns(a) for v in lhs_vars(s, st.start, st.op)}
    for st in a.body.walk():
        if st.kind == "loop" and st.paren and s.toks[st.start].text == "for":
            init = depth0(s.toks, st.paren[0] + 1, st.paren[1])
            eq = next((k for k in init if s.toks[k].text in ("=", ";")), None)
            if eq is not None and s.toks[eq].text == "=":
                names.update(lhs_vars(s, st.paren[0] + 1, eq))
    return names


def driver_counts(s: Source, m: Module) -> Counter[str]:
    """How many processes (always blocks, continuous assigns) drive each name."""
    count: Counter[str] = Counter()
    for a in m.always:
        count.update(block_writes(s, a))
    for c in m.assigns:
        count.update(set(lhs_vars(s, *c.lhs)))
    return count


def declared(s: Source, m: Module) -> set[str]:
    return {p.name for p in m.ports} | {s.toks[n].text for d in m.decls for n in d.names}


def has_timing(s: Source, a: Always) -> bool:
    toks = s.toks[a.body.start : a.body.end]
    return any(t.text in ("#", "@", "wait", "fork") for t in toks)


def calls(s: Source, i: int, j: int) -> bool:
    """Does tokens [i, j) call a function or system function (whose effects we cannot see)?"""
    return any(
        s.toks[k].kind == "sysid"
        or (s.toks[k].kind == "id" and k + 1 < j and s.toks[k + 1].text == "(")
        for k in range(i, j)
    )


def binary_sites(s: Source, ops: frozenset[str]) -> list[tuple[int, int, int, int]]:
    """(left start, operator, right end, span end) for binary operators whose operands are
    simple operands and whose neighbours bind less tightly, so exchanging the two operand
    texts exchanges exactly the operator's operands and nothing else."""
    sites = []
    for _m, sp in spans(s, EXPR):
        for k in range(sp.start, sp.end):
            op = s.toks[k].text
            if op not in ops or not is_binary(s.toks, k):
                continue
            left = primary_start(s.toks, k - 1, sp.start)
            right = primary_end(s.toks, k + 1, sp.end)
            if left is None or right is None:
                continue
            if not _loose_left(s, left, sp.start, PRECEDENCE[op]):
                continue
            if not _loose_right(s, right, sp.end, PRECEDENCE[op]):
                continue
            sites.append((left, k, right, sp.end))
    return sites


def _loose_left(s: Source, left: int, floor: int, prec: int) -> bool:
    if left == floor:
        return True
    t = s.toks[left - 1].text
    if t in ("(", "[", "{", "'{", ",", "?", ":"):
        return True
    return is_binary(s.toks, left - 1) and PRECEDENCE[t] < prec


def _loose_right(s: Source, right: int, limit: int, prec: int) -> bool:
    if right == limit:
        return True
    t = s.toks[right].text
    if t in (")", "]", "}", ",", "?", ":", ";"):
        return True
    # Equal precedence is safe on the right: these operators associate to the left.
    return is_binary(s.toks, right) and PRECEDENCE[t] <= prec


def swap_edits(s: Source, a: tuple[int, int], b: tuple[int, int]) -> list[Edit]:
    ta, tb = s.text_of(*a), s.text_of(*b)
    return [replace_range(s, *a, tb), replace_range(s, *b, ta)]


def ternary(s: Source, q: int, end: int) -> tuple[int, int, int] | None:
    """For the `?` at q inside an expression ending at `end`: (colon, false-arm end)."""
    nest, colon = 0, None
    for k in depth0(s.toks, q + 1, end):
        t = s.toks[k].text
        if t == "?":
            nest += 1
        elif t == ":":
            if nest == 0:
                colon = k
                break
            nest -= 1
    if colon is None:
        return None
    nest, stop = 0, end
    depth = 0
    for k in range(colon + 1, end):
        t = s.toks[k].text
        if t in OPENERS:
            depth += 1
        elif t in CLOSERS:
            depth -= 1
            if depth < 0:
                stop = k
                break
        elif depth == 0 and t == "?":
            nest += 1
        elif depth == 0 and t == ":":
            if nest == 0:
                stop = k
                break
            nest -= 1
        elif depth == 0 and t == ",":
            stop = k
            break
    if colon == q + 1 or stop == colon + 1:
        return None
    return q, colon, stop


def rename_in_module(s: Source, m: Module, mapping: dict[str, str]) -> list[Edit]:
    """Whole-name renames inside one module; `.name` (a submodule's port in a named
    connection, a hierarchical member) belongs to someone else and is left alone."""
    return [
        replace_tok(s, k, mapping[s.toks[k].text])
        for k in range(m.start, m.end)
        if s.toks[k].kind == "id"
        and s.toks[k].text in mapping
        and s.toks[k - 1].text not in (".", "::")
    ]
