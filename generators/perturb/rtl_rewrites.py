"""RTL rewrites: variants of the reference that behave identically.

Each one changes only constructs whose behaviour it provably keeps, and returns None when
the design has none of them.
"""

from __future__ import annotations

import random
import re

from generators.perturb.rtl_sites import (
    Edit,
    binary_sites,
    block_reads,
    block_writes,
    calls,
    driver_counts,
    has_timing,
    rename_in_module,
    replace_range,
    replace_tok,
    swap_edits,
    ternary,
)
from generators.perturb.verilog import (
    CLOSERS,
    DIRECTIONS,
    KEYWORDS,
    OPENERS,
    Always,
    Module,
    Source,
    analyze,
    depth0,
    lex,
    match_backward,
    match_forward,
    splice,
)

_RENAME_STYLES = (("", "_r"), ("", "_q"), ("", "_int"), ("r_", ""), ("", "_reg"), ("", "_s"))


def rename_internal(source: str, rng: random.Random) -> str | None:
    s = analyze(source)
    prefix, suffix = rng.choice(_RENAME_STYLES)
    taken = s.idents() | KEYWORDS
    edits: list[Edit] = []
    for m in s.modules:
        ports = {p.name for p in m.ports}
        mapping: dict[str, str] = {}
        for d in m.decls:
            if d.in_header or d.direction is not None:
                continue
            for n in d.names:
                name = s.toks[n].text
                new = f"{prefix}{name}{suffix}"
                if name in ports or name in m.consts or name in mapping or new in taken:
                    continue
                mapping[name] = new
                taken.add(new)
        edits += rename_in_module(s, m, mapping)
    return splice(source, edits) if edits else None


_OPENS = frozenset({"begin", "case", "casez", "casex", "fork", "function", "task",
                    "generate"})  # fmt: skip
_CLOSES = frozenset({"end", "endcase", "join", "join_any", "join_none", "endmodule",
                     "endfunction", "endtask", "endgenerate"})  # fmt: skip
_HEADS = frozenset({"if", "for", "while", "repeat", "@", "foreach"})


def reformat(source: str, rng: random.Random) -> str | None:
    """Drop comments and re-indent. Only whitespace between tokens on different lines and
    comments change, so the token stream (what the compiler reads) is the same."""
    s = analyze(source)
    unit = rng.choice(("  ", "    ", "\t"))
    edits = []
    for t in s.aside:
        if t.kind != "comment":
            continue
        # A comment with no whitespace on either side is what separates two tokens.
        glued = (
            t.start > 0
            and t.end < len(source)
            and not (source[t.start - 1].isspace() or source[t.end].isspace())
        )
        edits.append((t.start, t.end, " " if glued else ""))
    text = splice(source, edits)
    toks, aside = lex(text)  # tokens only: a one-off text need not be parsed or cached
    directives = [(t.start, t.end) for t in aside if t.kind == "directive"]
    line_starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    first_tok: dict[int, int] = {}
    last_tok: dict[int, int] = {}
    line = 0
    for k, t in enumerate(toks):
        while line + 1 < len(line_starts) and line_starts[line + 1] <= t.start:
            line += 1
        first_tok.setdefault(line, k)
        last_tok[line] = k
    depth, paren, hang, header = 0, 0, False, False
    out = []
    for ln, raw in enumerate(text.split("\n")):
        start = line_starts[ln]
        body = raw.strip()
        if any(a < start <= b for a, b in directives):  # a continued `define line
            out.append(raw.rstrip())
            continue
        if ln not in first_tok:
            out.append(body)
            continue
        k0, k1 = first_tok[ln], last_tok[ln]
        lead = toks[k0].text
        level = depth + paren - (lead in _CLOSES) - (lead in (")", "]", "}"))
        level += hang and lead != "begin"
        out.append(unit * max(level, 0) + body if body else "")
        for k in range(k0, k1 + 1):
            w = toks[k].text
            if w in ("module", "macromodule"):
                header = True  # the body starts after the header's `;`
            elif header and w == ";" and paren == 0:
                header, depth = False, depth + 1
            elif toks[k].kind == "kw" and w in _OPENS:
                depth += 1
            elif toks[k].kind == "kw" and w in _CLOSES:
                depth -= 1
            elif w in OPENERS:
                paren += 1
            elif w in CLOSERS:
                paren -= 1
        hang = _opens_hanging_line(toks, k1)
    result = re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n") + "\n"
    return result


def _opens_hanging_line(toks, k: int) -> bool:
    """Does the line ending at token k leave a single statement for the next line
    (`if (...)`, `else`, `always @(...)`, `case` label)?"""
    w = toks[k].text
    if w in ("else", "always", "always_comb", "always_ff", "always_latch", "forever", ":"):
        return w != ":" or toks[k - 1].text not in ("end", "begin")
    if w == "*" and k > 0 and toks[k - 1].text == "@":
        return True
    if w == ")":
        lp = match_backward(toks, k)
        return lp > 0 and toks[lp - 1].text in _HEADS
    return False


def sv_always(source: str, rng: random.Random) -> str | None:
    """`always @*` -> `always_comb`, `always @(posedge ...)` -> `always_ff`, where it
    provably changes nothing: the block has no delays or event controls, calls nothing,
    is the only driver of what it writes, and (for always_comb, whose sensitivity leaves
    out what the block writes) reads none of what it writes. always_comb also runs once
    at time 0; @* waits for the first input change, which a testbench makes at time 0."""
    s = analyze(source)
    edits: list[Edit] = []
    for m in s.modules:
        writers = driver_counts(s, m)
        for a in m.always:
            if s.toks[a.kw].text != "always" or a.event is None or has_timing(s, a):
                continue
            if any(st.kind == "other" for st in a.body.walk()):
                continue  # task calls, x++: writes this reader does not track
            if calls(s, a.body.start, a.body.end):
                continue
            writes = block_writes(s, a)
            if any(writers[v] > 1 for v in writes):
                continue
            if a.star and not writes & set(block_reads(s, m, a)):
                edits.append(replace_range(s, a.kw, a.event[1], "always_comb"))
            elif a.edges and _only_edges(s, a):
                edits.append(replace_tok(s, a.kw, "always_ff"))
    return splice(source, edits) if edits else None


def _only_edges(s: Source, a: Always) -> bool:
    assert a.event is not None
    inner = range(a.event[0] + 2, a.event[1] - 1)
    edge_toks = {k for e in a.edges for k in e}
    return all(k in edge_toks or s.toks[k].text in ("or", ",") for k in inner)


_COMMUTATIVE = frozenset({"+", "*", "&", "|", "^", "==", "!=", "===", "!==", "&&", "||"})


def commute(source: str, rng: random.Random) -> str | None:
    """Swap the operands of commutative operators. Verilog sizes and signs both operands
    of these the same way whatever their order, and the 4-state truth tables (x and z
    included) are symmetric, so the value is bit-identical. Calls are left alone: their
    evaluation order could matter."""
    s = analyze(source)
    edits: list[Edit] = []
    taken_until = -1
    for left, k, right, _end in sorted(binary_sites(s, _COMMUTATIVE)):
        if left <= taken_until:
            continue  # nested in (or shares an operand with) a site already swapped
        if s.text_of(left, k) == s.text_of(k + 1, right):
            continue
        if calls(s, left, k) or calls(s, k + 1, right):
            continue
        edits += swap_edits(s, (left, k), (k + 1, right))
        taken_until = right - 1
    return splice(source, edits) if edits else None


def ternary_to_always(source: str, rng: random.Random) -> str | None:
    """`assign y = c ? a : b;` -> `always @* if (c) y = a; else y = b;` with y made a
    `reg`. The same multiplexer for every known select; only an x/z select differs (the
    ternary merges the arms bit by bit, `if` takes the else branch), which is also where
    synthesis and simulation of the original already disagree."""
    s = analyze(source)
    edits: list[Edit] = []
    for m in s.modules:
        writers = driver_counts(s, m)
        in_instances = {
            s.toks[k].text for a, b in m.instances for k in range(a, b) if s.toks[k].kind == "id"
        }
        for c in m.assigns:
            if c.lhs[1] - c.lhs[0] != 1 or c.rhs[1] != c.semi:
                continue
            y = s.toks[c.lhs[0]].text
            if writers[y] != 1 or y in in_instances:
                continue
            chain = _if_chain(s, c.rhs[0], c.rhs[1])
            decl_edit = _make_variable(s, m, y)
            if chain is None or decl_edit is None:
                continue
            indent = _indent_of(source, s.toks[c.kw].start)
            lines = [f"{indent}always @* begin"]
            for i, (cond, value) in enumerate(chain):
                pad = indent + "    "
                if cond is None:
                    lines.append(f"{pad}else {y} = {value};")
                else:
                    lines.append(f"{pad}{'else if' if i else 'if'} ({cond}) {y} = {value};")
            lines.append(f"{indent}end")
            start = s.toks[c.kw].start - len(indent)
            edits += [(start, s.toks[c.semi].end, "\n".join(lines)), decl_edit]
    return splice(source, edits) if edits else None


def _if_chain(s: Source, i: int, j: int) -> list[tuple[str | None, str]] | None:
    """`c1 ? a : c2 ? b : d` as [(c1, a), (c2, b), (None, d)]; None unless the whole
    expression [i, j) is a ternary."""
    chain: list[tuple[str | None, str]] = []
    while True:
        qs = [k for k in depth0(s.toks, i, j) if s.toks[k].text == "?"]
        if not qs:
            if not chain:
                return None
            chain.append((None, s.text_of(i, j)))
            return chain
        t = ternary(s, qs[0], j)
        if t is None or t[2] != j:
            return None
        q, colon, _stop = t
        cond = s.text_of(i, q)
        if s.toks[i].text == "(" and match_forward(s.toks, i) == q - 1:
            cond = s.text_of(i + 1, q - 1)
        chain.append((cond, s.text_of(q + 1, colon)))
        i = colon + 1


def _make_variable(s: Source, m: Module, y: str) -> Edit | None:
    """The edit that declares `y` a variable (`reg`); an empty edit if it already is one;
    None when its declaration is shared with other names (changing it would change them)."""
    decls = [d for d in m.decls if any(s.toks[n].text == y for n in d.names)]
    if not decls:
        return None
    if any(d.var for d in decls):
        return (0, 0, "")
    for d in decls:
        name = next(n for n in d.names if s.toks[n].text == y)
        if len(d.names) != 1 or any(s.toks[k].text == "=" for k in range(name, d.end)):
            return None
        if d.in_header:
            port = m.port(y)
            nxt = m.ports[m.ports.index(port) + 1] if port and port is not m.ports[-1] else None
            if port is None or not port.has_prefix or (nxt is not None and not nxt.has_prefix):
                return None
    for d in decls:
        for k in range(d.start, d.names[0]):
            if s.toks[k].text == "wire":
                return replace_tok(s, k, "reg")
    for d in decls:
        for k in range(d.start, d.names[0]):
            if s.toks[k].text in DIRECTIONS:
                return s.toks[k].end, s.toks[k].end, " reg"
    return None


def _indent_of(source: str, pos: int) -> str:
    """The whitespace before `pos` on its line ("" when code precedes it there)."""
    ls = source.rfind("\n", 0, pos) + 1
    return source[ls:pos] if not source[ls:pos].strip() else ""
