"""A small Verilog / SystemVerilog lexer and structure finder, enough to place edits.

Not a full parser: it finds modules, port lists, declarations, continuous assigns and
`always` blocks with their statements, and records token spans. Operators edit the original
text at those spans, so comments, strings and layout outside the edit stay as written, and
nothing inside a comment or string is ever touched (they are not tokens here).

An `always` block or module item it cannot read is skipped, not guessed at: an operator
then finds fewer sites, never a wrong one.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import NamedTuple

_KEYWORD_TEXT = """
    always always_comb always_ff always_latch and assert assign assume automatic begin bit
    buf bufif0 bufif1 byte case casex casez cmos const cover deassign default defparam
    disable do edge else end endcase endfunction endgenerate endinterface endmodule
    endpackage endtask enum event final for force foreach forever fork function generate
    genvar if iff import initial inout input inside int integer interface join join_any
    join_none localparam logic longint macromodule modport module nand negedge nmos nor not
    notif0 notif1 or output package packed parameter pmos posedge priority pull0 pull1
    pulldown pullup rcmos real realtime reg release repeat return rnmos rpmos rtran rtranif0
    rtranif1 scalared shortint signed specify specparam static string struct supply0 supply1
    task time tran tranif0 tranif1 tri tri0 tri1 triand trior trireg typedef union unique
    unique0 unsigned var vectored void wait wand while wire wor xnor xor
"""
KEYWORDS = frozenset(_KEYWORD_TEXT.split())
DIRECTIONS = frozenset({"input", "output", "inout"})
NET_TYPES = frozenset({"wire", "tri", "tri0", "tri1", "wand", "wor", "triand", "trior",
                       "supply0", "supply1", "uwire"})  # fmt: skip
VAR_TYPES = frozenset({"reg", "logic", "integer", "bit", "byte", "int", "shortint", "longint",
                       "time", "real", "realtime", "var", "genvar"})  # fmt: skip
DECL_WORDS = DIRECTIONS | NET_TYPES | VAR_TYPES | {"signed", "unsigned", "const", "static"}
EDGES = frozenset({"posedge", "negedge"})
ALWAYS = frozenset({"always", "always_comb", "always_ff", "always_latch"})
ASSIGN_OPS = frozenset({"=", "<=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=",
                        ">>=", "<<<=", ">>>="})  # fmt: skip
OPENERS = {"(": ")", "[": "]", "{": "}", "'{": "}"}
CLOSERS = frozenset(OPENERS.values())

# Binding strength of binary operators (higher binds tighter), IEEE 1800 table 11-2.
PRECEDENCE = {
    "**": 12,
    "*": 11, "/": 11, "%": 11,
    "+": 10, "-": 10,
    "<<": 9, ">>": 9, "<<<": 9, ">>>": 9,
    "<": 8, "<=": 8, ">": 8, ">=": 8,
    "==": 7, "!=": 7, "===": 7, "!==": 7, "==?": 7, "!=?": 7,
    "&": 6,
    "^": 5, "~^": 5, "^~": 5,
    "|": 4,
    "&&": 3,
    "||": 2,
}  # fmt: skip

_OP_TEXT = """<<<= >>>= <<= >>= === !== ==? !=? <<< >>> -> :: +: -: ** == != <= >= && || << >> ~& ~|
    ~^ ^~ ++ -- += -= *= /= %= &= |= ^= '{ + - * / % < > = ! ~ & | ^ ? : ; , . ( ) [ ] { }
    @ # '"""
_OPS = sorted(_OP_TEXT.split(), key=len, reverse=True)
_DIRECTIVE_WORDS = (
    "define|undef|undefineall|timescale|include|ifdef|ifndef|elsif|else|endif|"
    "default_nettype|resetall|celldefine|endcelldefine|line|pragma|begin_keywords|end_keywords"
)
_TOKEN = re.compile(
    r"(?P<ws>\s+)"
    r"|(?P<comment>//[^\n]*|/\*.*?\*/)"
    r'|(?P<string>"(?:\\.|[^"\\\n])*")'
    rf"|(?P<directive>`(?:{_DIRECTIVE_WORDS})\b(?:\\\n|[^\n])*)"
    r"|(?P<macro>`[A-Za-z_]\w*)"
    # A based literal keeps every letter so a malformed one (8'hFG) is still one token.
    r"|(?P<number>(?:\d[\d_]*\s*)?'[sS]?[bBoOdDhH]\s*[0-9a-zA-Z?_]+"
    r"|'[01xXzZ](?![\w'])"
    r"|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?)"
    r"|(?P<sysid>\$[A-Za-z_][\w$]*)"
    r"|(?P<ident>[A-Za-z_][\w$]*|\\\S+)"
    r"|(?P<op>" + "|".join(map(re.escape, _OPS)) + r")"
    r"|(?P<other>.)",
    re.S,
)
BASED = re.compile(
    r"^(?P<size>\d[\d_]*)?\s*'(?P<signed>[sS]?)(?P<base>[bBoOdDhH])\s*(?P<digits>[0-9a-zA-Z?_]+)$"
)
RADIX = {"b": 2, "o": 8, "d": 10, "h": 16}


class ParseError(ValueError):
    """The text is not Verilog this reader understands at the position given."""


class Tok(NamedTuple):
    kind: str  # id kw number sysid macro string op other
    text: str
    start: int  # character offsets into the source
    end: int


def lex(source: str) -> tuple[list[Tok], list[Tok]]:
    """Code tokens, and the comments and directive lines (kept apart, never edited)."""
    code: list[Tok] = []
    aside: list[Tok] = []
    for m in _TOKEN.finditer(source):
        kind = m.lastgroup or "other"
        if kind == "ws":
            continue
        text = m.group()
        if kind in ("comment", "directive"):
            aside.append(Tok(kind, text, m.start(), m.end()))
            continue
        if kind == "ident":
            kind = "kw" if text in KEYWORDS else "id"
        code.append(Tok(kind, text, m.start(), m.end()))
    return code, aside


@dataclass(frozen=True)
class Span:
    """Tokens [start, end) of one expression; `ctx` says where it sits."""

    start: int
    end: int
    ctx: str  # rhs | cond | label | lhs | param | init | case


@dataclass
class Stmt:
    kind: str  # block if case loop assign other null timing decl
    start: int
    end: int  # exclusive
    children: list[Stmt] = field(default_factory=list)
    paren: tuple[int, int] | None = None  # ( and ) of an if / case / loop header
    else_tok: int | None = None
    op: int | None = None  # the assignment operator of an `assign` statement
    items: list[CaseItem] = field(default_factory=list)

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


@dataclass
class CaseItem:
    start: int  # first label token, or `default`
    colon: int | None  # None for `default` without a colon
    body: Stmt
    default: bool


@dataclass
class Always:
    kw: int
    event: tuple[int, int] | None  # tokens [`@`, end of the event control)
    star: bool
    edges: list[tuple[int, int]]  # (posedge/negedge token, signal token)
    body: Stmt

    def is_comb(self, toks: list[Tok]) -> bool:
        kw = toks[self.kw].text
        return kw == "always_comb" or (kw == "always" and self.event is not None and not self.edges)

    def is_clocked(self, toks: list[Tok]) -> bool:
        return toks[self.kw].text in ("always", "always_ff") and bool(self.edges)


@dataclass
class ContAssign:
    kw: int  # `assign`
    lhs: tuple[int, int]
    op: int
    rhs: tuple[int, int]
    semi: int


@dataclass
class Decl:
    start: int  # first keyword (or type name) token
    end: int  # exclusive, past the `;` (or the port item's last token in a header)
    direction: str | None
    var: bool  # a variable (reg/logic/...), not a net
    names: list[int]  # name tokens
    ranges: list[tuple[int, int]]  # packed ranges: `[` and `]` tokens
    in_header: bool = False


@dataclass
class Port:
    name: str
    tok: int  # name token in the module header
    item: tuple[int, int]  # the header item's tokens [start, end)
    has_prefix: bool  # the item starts with its own direction / type
    direction: str | None = None


@dataclass
class Module:
    name: str
    start: int  # `module` token
    end: int  # `endmodule` token
    ports: list[Port] = field(default_factory=list)
    ansi: bool = True
    decls: list[Decl] = field(default_factory=list)
    consts: set[str] = field(default_factory=set)  # parameters, localparams, enum members
    # The constants declared together (one localparam statement, one enum): a state
    # machine's state names are one such group, its output codes another.
    const_groups: list[set[str]] = field(default_factory=list)
    types: set[str] = field(default_factory=set)
    functions: set[str] = field(default_factory=set)
    always: list[Always] = field(default_factory=list)
    assigns: list[ContAssign] = field(default_factory=list)
    instances: list[tuple[int, int]] = field(default_factory=list)  # token spans
    instantiates: set[str] = field(default_factory=set)
    spans: list[Span] = field(default_factory=list)

    def port(self, name: str) -> Port | None:
        return next((p for p in self.ports if p.name == name), None)


@dataclass
class Source:
    text: str
    toks: list[Tok]
    aside: list[Tok]
    modules: list[Module]

    def text_of(self, i: int, j: int) -> str:
        """The source text from token i to token j-1, with whatever lies between them."""
        if j <= i:
            return ""
        return self.text[self.toks[i].start : self.toks[j - 1].end]

    def idents(self) -> set[str]:
        return {t.text for t in self.toks if t.kind == "id"}

    def tops(self) -> list[Module]:
        """Modules no other module in the file instantiates: the ones a testbench sees."""
        used = set().union(*(m.instantiates for m in self.modules)) if self.modules else set()
        return [m for m in self.modules if m.name not in used] or list(self.modules)


@functools.lru_cache(maxsize=256)
def analyze(source: str) -> Source:
    """Read `source` once; every operator on the same text shares the result (read-only)."""
    toks, aside = lex(source)
    src = Source(source, toks, aside, [])
    reader = _Reader(toks)
    i = 0
    while i < len(toks):
        if toks[i].text in ("module", "macromodule"):
            try:
                mod = reader.module(i)
            except ParseError:
                mod = None
            if mod is not None:
                src.modules.append(mod)
                i = mod.end + 1
                continue
        i += 1
    return src


class _Reader:
    def __init__(self, toks: list[Tok]) -> None:
        self.toks = toks
        # Types and enum members declared outside any module (before it, or in a package)
        # are visible inside every module of the file.
        self.types: set[str] = set()
        self.consts: set[str] = set()
        self.const_groups: list[set[str]] = []
        for i, t in enumerate(toks):
            if t.text == "typedef":
                try:
                    semi = self.find_top(i + 1, {";"})
                except ParseError:
                    continue
                scratch = Module("", i, i)
                self.enum_members(i, semi, scratch)
                self.consts |= scratch.consts
                self.const_groups += scratch.const_groups
                if toks[semi - 1].kind == "id":
                    self.types.add(toks[semi - 1].text)

    # -- token helpers -------------------------------------------------------------

    def text(self, i: int) -> str:
        return self.toks[i].text if 0 <= i < len(self.toks) else ""

    def expect(self, i: int, text: str) -> int:
        if self.text(i) != text:
            raise ParseError(f"expected {text!r} at token {i}, found {self.text(i)!r}")
        return i

    def match(self, i: int) -> int:
        return match_forward(self.toks, i)

    def find_top(self, i: int, targets: frozenset[str] | set[str], stop: int | None = None) -> int:
        """First token in `targets` at bracket depth 0 from i; block keywords end the search."""
        depth = 0
        end = len(self.toks) if stop is None else stop
        for j in range(i, end):
            t = self.toks[j].text
            if depth == 0 and t in targets:
                return j
            if t in OPENERS:
                depth += 1
            elif t in CLOSERS:
                depth -= 1
                if depth < 0:
                    raise ParseError(f"unbalanced {t!r} at token {j}")
            elif depth == 0 and self.toks[j].kind == "kw" and t in _HARD_STOPS:
                raise ParseError(f"reached {t!r} looking for {sorted(targets)}")
        raise ParseError(f"no {sorted(targets)} after token {i}")

    def label(self, i: int) -> int:
        """Skip an optional `: name` block label."""
        if self.text(i) == ":" and i + 1 < len(self.toks) and self.toks[i + 1].kind == "id":
            return i + 2
        return i

    # -- modules ---------------------------------------------------------------------

    def module(self, i: int) -> Module:
        j = i + 1
        if self.text(j) in ("automatic", "static"):
            j += 1
        if self.toks[j].kind != "id":
            raise ParseError("module without a name")
        mod = Module(name=self.text(j), start=i, end=i)
        mod.types |= self.types
        mod.consts |= self.consts
        mod.const_groups += self.const_groups
        j += 1
        while self.text(j) == "import":
            j = self.find_top(j, {";"}) + 1
        if self.text(j) == "#":
            close = self.match(self.expect(j + 1, "("))
            self.params(j + 2, close, mod, header=True)
            j = close + 1
        if self.text(j) == "(":
            close = self.match(j)
            self.header_ports(j + 1, close, mod)
            j = close + 1
        j = self.expect(j, ";") + 1
        mod.end = self.find_end(j, "endmodule")
        self.body(j, mod.end, mod)
        return mod

    def find_end(self, i: int, word: str) -> int:
        for j in range(i, len(self.toks)):
            if self.toks[j].text == word:
                return j
            if self.toks[j].text in ("module", "macromodule") and word == "endmodule":
                break
        raise ParseError(f"no {word} after token {i}")

    def split_top(self, i: int, j: int) -> list[tuple[int, int]]:
        """Comma-separated items of tokens [i, j) at bracket depth 0."""
        items, start, depth = [], i, 0
        for k in range(i, j):
            t = self.toks[k].text
            if t in OPENERS:
                depth += 1
            elif t in CLOSERS:
                depth -= 1
            elif t == "," and depth == 0:
                items.append((start, k))
                start = k + 1
        if start < j:
            items.append((start, j))
        return items

    def header_ports(self, i: int, j: int, mod: Module) -> None:
        items = self.split_top(i, j)
        if not items:
            return
        mod.ansi = self.text(items[0][0]) in DIRECTIONS or self.text(items[0][0]) in DECL_WORDS
        direction: str | None = None
        var = False
        ranges: list[tuple[int, int]] = []
        for s, e in items:
            if not mod.ansi:
                if e - s == 1 and self.toks[s].kind == "id":
                    mod.ports.append(Port(self.text(s), s, (s, e), has_prefix=False))
                continue
            name_tok, prefix_ranges, words = self.declarator(s, e)
            has_prefix = name_tok > s
            if has_prefix:
                if words & DIRECTIONS:
                    direction = next(w for w in ("input", "output", "inout") if w in words)
                var = bool(words & VAR_TYPES) or (
                    direction == "output" and bool(words - DECL_WORDS)  # a user type
                )
                ranges = prefix_ranges
            port = Port(self.text(name_tok), name_tok, (s, e), has_prefix, direction)
            mod.ports.append(port)
            mod.decls.append(Decl(s, e, direction, var, [name_tok], list(ranges), in_header=True))

    def declarator(self, s: int, e: int) -> tuple[int, list[tuple[int, int]], set[str]]:
        """(name token, packed ranges before it, words before it) of one declaration item."""
        cut = e
        for k in range(s, e):  # stop at a default value
            if self.text(k) == "=":
                cut = k
                break
        k = cut - 1
        while self.text(k) == "]":  # unpacked dimensions after the name
            k = self._match_back(k) - 1
        if k < s or self.toks[k].kind != "id":
            raise ParseError(f"no declared name in tokens {s}..{e}")
        ranges, words = [], set()
        m = s
        while m < k:
            if self.text(m) == "[":
                close = self.match(m)
                ranges.append((m, close))
                m = close + 1
            else:
                words.add(self.text(m))
                m += 1
        return k, ranges, words

    def _match_back(self, j: int) -> int:
        return match_backward(self.toks, j)

    def params(self, i: int, j: int, mod: Module, *, header: bool) -> None:
        """`parameter`/`localparam` items in tokens [i, j): names become constants."""
        group: set[str] = set()
        for s, e in self.split_top(i, j):
            eq = next((k for k in range(s, e) if self.text(k) == "="), None)
            if eq is None:
                continue
            k = eq - 1
            while self.text(k) == "]":
                k = self._match_back(k) - 1
            if k >= s and self.toks[k].kind == "id":
                group.add(self.text(k))
            if not header:
                mod.spans.append(Span(eq + 1, e, "param"))
        mod.consts |= group
        mod.const_groups.append(group)

    def body(self, i: int, end: int, mod: Module) -> None:
        while i < end:
            try:
                i = self.item(i, end, mod)
            except ParseError:
                i = self.resync(i + 1, end)

    def resync(self, i: int, end: int) -> int:
        """After an unreadable item, continue at the next item keyword."""
        for k in range(i, end):
            if self.text(k) in _ITEM_STARTS:
                return k
        return end

    def item(self, i: int, end: int, mod: Module) -> int:
        t = self.toks[i]
        w = t.text
        if w == "assign":
            return self.cont_assign(i, mod)
        if w in ALWAYS:
            return self.always(i, mod)
        if w in ("initial", "final"):
            return self.stmt(i + 1).end
        if w in ("function", "task"):
            close = self.find_end(i, "end" + w)
            name = self._routine_name(i, close)
            if name:
                mod.functions.add(name)
            return close + 1
        if w in ("parameter", "localparam"):
            semi = self.find_top(i, {";"})
            k = i + 1
            while self.text(k) in DECL_WORDS or self.text(k) == "[":
                k = self.match(k) + 1 if self.text(k) == "[" else k + 1
            self.params(k, semi, mod, header=False)
            return semi + 1
        if w == "typedef":
            semi = self.find_top(i, {";"})
            self.enum_members(i, semi, mod)
            if self.toks[semi - 1].kind == "id":
                mod.types.add(self.text(semi - 1))
            return semi + 1
        if w == "enum":
            semi = self.find_top(i, {";"})
            close = self.enum_members(i, semi, mod)
            mod.decls.append(self.decl_names(i, close + 1, semi, mod, None, True, []))
            return semi + 1
        if w in DECL_WORDS or (t.kind == "id" and w in mod.types):
            return self.decl(i, mod)
        if w in ("generate", "endgenerate", "begin", "end", "else"):
            return self.label(i + 1)
        if w in ("if", "for", "case") and self.text(i + 1) == "(":
            return self.match(i + 1) + 1  # a generate construct: its items are read in turn
        if w == "endcase":
            return i + 1
        if t.kind == "id" and (self.toks[i + 1].kind == "id" or self.text(i + 1) == "#"):
            semi = self.find_top(i, {";"})
            mod.instances.append((i, semi + 1))
            mod.instantiates.add(w)
            return semi + 1
        return self.find_top(i, {";"}) + 1

    def _routine_name(self, i: int, close: int) -> str | None:
        stop = next((k for k in range(i, close) if self.text(k) in (";", "(")), close)
        names = [k for k in range(i + 1, stop) if self.toks[k].kind == "id"]
        return self.text(names[-1]) if names else None

    def enum_members(self, i: int, semi: int, mod: Module) -> int:
        lb = next((k for k in range(i, semi) if self.text(k) == "{"), None)
        if lb is None:
            return i
        rb = self.match(lb)
        group = {self.text(s) for s, _e in self.split_top(lb + 1, rb) if self.toks[s].kind == "id"}
        mod.consts |= group
        mod.const_groups.append(group)
        return rb

    def decl(self, i: int, mod: Module) -> int:
        semi = self.find_top(i, {";"})
        k, words, ranges = i, set(), []
        while k < semi and (
            self.text(k) in DECL_WORDS or self.text(k) == "[" or self.text(k) in mod.types
        ):
            if self.text(k) == "[":
                close = self.match(k)
                ranges.append((k, close))
                k = close + 1
            else:
                words.add(self.text(k))
                k += 1
        if self.text(k) == "#":  # a net delay: `wire #1 w;`
            k += 2
        direction = next((w for w in ("input", "output", "inout") if w in words), None)
        var = bool(words & VAR_TYPES) or bool(words & mod.types)
        mod.decls.append(self.decl_names(i, k, semi, mod, direction, var, ranges))
        if direction and not mod.ansi:
            for name_tok in mod.decls[-1].names:
                port = mod.port(self.text(name_tok))
                if port is not None:
                    port.direction = direction
        return semi + 1

    def decl_names(self, i, k, semi, mod, direction, var, ranges) -> Decl:
        names = []
        for s, e in self.split_top(k, semi):
            if self.toks[s].kind == "id":
                names.append(s)
            eq = next((m for m in range(s, e) if self.text(m) == "="), None)
            if eq is not None:
                mod.spans.append(Span(eq + 1, e, "init"))
        return Decl(i, semi + 1, direction, var, names, ranges)

    def cont_assign(self, i: int, mod: Module) -> int:
        semi = self.find_top(i + 1, {";"})
        j = i + 1
        if self.text(j) == "#":
            j = self.match(j + 1) + 1 if self.text(j + 1) == "(" else j + 2
        for s, e in self.split_top(j, semi):
            eq = self.find_top(s, {"="}, stop=e)
            mod.assigns.append(ContAssign(i, (s, eq), eq, (eq + 1, e), semi))
            mod.spans += [Span(s, eq, "lhs"), Span(eq + 1, e, "rhs")]
        return semi + 1

    def always(self, i: int, mod: Module) -> int:
        j = i + 1
        event, star, edges = None, False, []
        if self.text(j) == "@":
            if self.text(j + 1) == "*":
                event, star, j = (j, j + 2), True, j + 2
            elif self.text(j + 1) == "(":
                close = self.match(j + 1)
                event = (j, close + 1)
                inner = [self.text(k) for k in range(j + 2, close)]
                star = inner == ["*"]
                edges = [(k, k + 1) for k in range(j + 2, close) if self.text(k) in EDGES]
                j = close + 1
            else:
                event, j = (j, j + 2), j + 2
        elif self.text(i) in ("always", "always_ff"):
            raise ParseError("always without an event control")
        body = self.stmt(j)
        mod.always.append(Always(i, event, star, edges, body))
        for st in body.walk():
            self.stmt_spans(st, mod)
        return body.end

    def stmt_spans(self, st: Stmt, mod: Module) -> None:
        if st.kind == "assign" and st.op is not None:
            mod.spans += [Span(st.start, st.op, "lhs"), Span(st.op + 1, st.end - 1, "rhs")]
        elif st.kind == "if" and st.paren:
            mod.spans.append(Span(st.paren[0] + 1, st.paren[1], "cond"))
        elif st.kind == "case" and st.paren:
            mod.spans.append(Span(st.paren[0] + 1, st.paren[1], "case"))
            for it in st.items:
                if not it.default and it.colon is not None:
                    labels = self.split_top(it.start, it.colon)
                    mod.spans += [Span(s, e, "label") for s, e in labels]
        elif st.kind == "loop" and st.paren and self.text(st.start) == "for":
            semis = [k for k in range(st.paren[0] + 1, st.paren[1]) if self.text(k) == ";"]
            if len(semis) == 2:  # only the condition: a broken step would hang the sim
                mod.spans.append(Span(semis[0] + 1, semis[1], "cond"))
        elif st.kind == "loop" and st.paren and self.text(st.start) == "while":
            mod.spans.append(Span(st.paren[0] + 1, st.paren[1], "cond"))

    # -- statements ------------------------------------------------------------------

    def stmt(self, i: int) -> Stmt:
        t = self.text(i)
        if t in ("begin", "fork"):
            closers = ("end",) if t == "begin" else ("join", "join_any", "join_none")
            j = self.label(i + 1)
            kids = []
            while self.text(j) not in closers:
                if j >= len(self.toks) or self.text(j) in _HARD_STOPS:
                    raise ParseError(f"unterminated {t} at token {i}")
                kid = self.stmt(j)
                kids.append(kid)
                j = kid.end
            return Stmt("block", i, self.label(j + 1), kids)
        if t in ("unique", "priority", "unique0"):
            inner = self.stmt(i + 1)
            inner.start = i
            return inner
        if t == "if":
            lp = self.expect(i + 1, "(")
            rp = self.match(lp)
            then = self.stmt(rp + 1)
            if self.text(then.end) == "else":
                other = self.stmt(then.end + 1)
                return Stmt("if", i, other.end, [then, other], (lp, rp), else_tok=then.end)
            return Stmt("if", i, then.end, [then], (lp, rp))
        if t in ("case", "casez", "casex"):
            return self.case(i)
        if t in ("for", "while", "repeat", "wait", "foreach"):
            lp = self.expect(i + 1, "(")
            rp = self.match(lp)
            if t == "wait" and self.text(rp + 1) == ";":
                return Stmt("timing", i, rp + 2)
            body = self.stmt(rp + 1)
            return Stmt("loop", i, body.end, [body], (lp, rp))
        if t == "forever":
            body = self.stmt(i + 1)
            return Stmt("loop", i, body.end, [body])
        if t == "do":
            body = self.stmt(i + 1)
            lp = self.expect(self.expect(body.end, "while") + 1, "(")
            rp = self.match(lp)
            return Stmt("loop", i, self.expect(rp + 1, ";") + 1, [body], (lp, rp))
        if t in ("#", "@"):
            j = i + 1
            if self.text(j) == "(":
                j = self.match(j) + 1
            else:
                j += 1
            if self.text(j) == ";":
                return Stmt("timing", i, j + 1)
            body = self.stmt(j)
            return Stmt("timing", i, body.end, [body])
        if t == ";":
            return Stmt("null", i, i + 1)
        if t in _HARD_STOPS or t in ("else", "end", "endcase"):
            raise ParseError(f"unexpected {t!r} at token {i}")
        semi = self.find_top(i, {";"})
        if t in DECL_WORDS:
            return Stmt("decl", i, semi + 1)
        op = next(
            (k for k in depth0(self.toks, i, semi) if self.text(k) in ASSIGN_OPS),
            None,
        )
        if op is not None and op > i:
            return Stmt("assign", i, semi + 1, op=op)
        return Stmt("other", i, semi + 1)

    def case(self, i: int) -> Stmt:
        lp = self.expect(i + 1, "(")
        rp = self.match(lp)
        j = rp + 1
        if self.text(j) == "inside":
            j += 1
        items: list[CaseItem] = []
        while self.text(j) != "endcase":
            if j >= len(self.toks) or self.text(j) in _HARD_STOPS:
                raise ParseError(f"unterminated case at token {i}")
            if self.text(j) == "default":
                k = j + 1
                colon = None
                if self.text(k) == ":":
                    colon, k = k, k + 1
                body = self.stmt(k)
                items.append(CaseItem(j, colon, body, default=True))
            else:
                colon = self.find_top(j, {":"})
                body = self.stmt(colon + 1)
                items.append(CaseItem(j, colon, body, default=False))
            j = body.end
        return Stmt("case", i, j + 1, [it.body for it in items], (lp, rp), items=items)


_HARD_STOPS = frozenset(
    {"endmodule", "module", "endfunction", "endtask", "always", "always_ff", "always_comb",
     "always_latch", "initial", "assign", "endgenerate"}
)  # fmt: skip
_ITEM_STARTS = _HARD_STOPS - {"endmodule", "module"} | {
    "wire", "reg", "logic", "localparam", "parameter", "function", "task", "endmodule",
}  # fmt: skip


# -- small helpers the operators share ------------------------------------------------


def match_forward(toks: list[Tok], i: int) -> int:
    """Index of the bracket closing the one at i."""
    closer = OPENERS.get(toks[i].text) if 0 <= i < len(toks) else None
    if closer is None:
        raise ParseError(f"no bracket at token {i}")
    stack = [closer]
    for j in range(i + 1, len(toks)):
        t = toks[j].text
        if t in OPENERS:
            stack.append(OPENERS[t])
        elif t in CLOSERS:
            if t != stack.pop():
                raise ParseError(f"unbalanced {t!r} at token {j}")
            if not stack:
                return j
    raise ParseError(f"unclosed {toks[i].text!r} at token {i}")


def match_backward(toks: list[Tok], j: int) -> int:
    """Index of the bracket opening the one closed at j."""
    depth = 0
    for k in range(j, -1, -1):
        t = toks[k].text
        if t in CLOSERS:
            depth += 1
        elif t in OPENERS:
            depth -= 1
            if depth == 0:
                return k
    raise ParseError(f"unbalanced {toks[j].text!r} at token {j}")


def splice(source: str, edits: list[tuple[int, int, str]]) -> str:
    """Apply character edits (start, end, replacement); they must not overlap."""
    out, pos = [], 0
    for start, end, text in sorted(edits):
        if start < pos:
            raise ValueError("overlapping edits")
        out += [source[pos:start], text]
        pos = end
    out.append(source[pos:])
    return "".join(out)


def line_extent(source: str, start: int, end: int) -> tuple[int, int]:
    """Widen [start, end) to whole lines (with the newline) when nothing else is on them
    but whitespace or a trailing comment, so deleting code does not leave a blank line."""
    ls = source.rfind("\n", 0, start) + 1
    le = source.find("\n", end)
    le = len(source) if le < 0 else le
    before, after = source[ls:start], source[end:le]
    if before.strip() or (after.strip() and not after.strip().startswith("//")):
        return start, end
    return ls, min(le + 1, len(source))


def is_operand_end(tok: Tok) -> bool:
    return tok.kind in ("id", "number", "macro", "string") or tok.text in (")", "]", "}")


def literal_value(text: str) -> tuple[str | None, str, str, int, str] | None:
    """(size, signed flag, base letter as written, value, digits) of a literal without x/z."""
    m = BASED.match(text)
    if m:
        digits = m.group("digits").replace("_", "")
        radix = RADIX[m.group("base").lower()]
        try:
            value = int(digits, radix)
        except ValueError:
            return None  # x, z, ? or already malformed
        return m.group("size"), m.group("signed"), m.group("base"), value, digits
    if re.fullmatch(r"\d[\d_]*", text):
        return None, "", "", int(text.replace("_", "")), text.replace("_", "")
    return None


def is_binary(toks: list[Tok], k: int) -> bool:
    """True when the operator at k joins two operands (`a - b`), not a unary one (`-b`)."""
    return toks[k].text in PRECEDENCE and k > 0 and is_operand_end(toks[k - 1])


def primary_end(toks: list[Tok], i: int, limit: int) -> int | None:
    """End (exclusive) of the operand starting at i: a name with selects, a number, a call,
    a parenthesised group or a concatenation; None if something else starts there."""
    if i >= limit:
        return None
    t = toks[i]
    j: int
    if t.kind in ("number", "macro", "string"):
        j = i + 1
    elif t.kind == "sysid":
        j = match_forward(toks, i + 1) + 1 if i + 1 < limit and toks[i + 1].text == "(" else i + 1
    elif t.kind == "id":
        j = i + 1
        if j < limit and toks[j].text == "(":
            j = match_forward(toks, j) + 1
        while j < limit and toks[j].text in ("[", ".", "::"):
            if toks[j].text == "[":
                j = match_forward(toks, j) + 1
            elif j + 1 < limit and toks[j + 1].kind == "id":
                j += 2
            else:
                return None
    elif t.text in ("(", "{", "'{"):
        j = match_forward(toks, i) + 1
    else:
        return None
    return j if j <= limit else None


def primary_start(toks: list[Tok], j: int, floor: int) -> int | None:
    """Start of the operand whose last token is j (the mirror of `primary_end`)."""
    if j < floor:
        return None
    t = toks[j]
    if t.kind in ("number", "macro", "string", "sysid", "id"):
        k = j
    elif t.text == ")":
        k = match_backward(toks, j)
        if k - 1 >= floor and toks[k - 1].kind in ("id", "sysid"):
            k -= 1  # a call
    elif t.text == "}":
        k = match_backward(toks, j)
    elif t.text == "]":
        k = match_backward(toks, j)
        while k - 1 >= floor and toks[k - 1].text == "]":
            k = match_backward(toks, k - 1)
        if k - 1 < floor or toks[k - 1].kind != "id":
            return None
        k -= 1
    else:
        return None
    while k - 2 >= floor and toks[k - 1].text in (".", "::") and toks[k - 2].kind == "id":
        k -= 2
    return k if k >= floor else None


def depth0(toks: list[Tok], i: int, j: int) -> list[int]:
    """Indices in [i, j) that sit at bracket depth 0 relative to i."""
    out, depth = [], 0
    for k in range(i, j):
        t = toks[k].text
        if t in CLOSERS:
            depth -= 1
        if depth == 0 and t not in CLOSERS:
            out.append(k)
        if t in OPENERS:
            depth += 1
    return out
