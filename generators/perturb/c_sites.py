"""C tokens and the places C operators act: a small lexer that keeps every token's span, so
operators edit the reference text in place and comments, string literals and layout stay as
the author wrote them.

Only what C operators need: tokens (identifiers, numbers, strings and character
constants, comments, punctuators), which of them sit on a preprocessor line, brace depth,
function definitions with their bodies, and statement extents.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

Edit = tuple[int, int, str]

_TOKEN = re.compile(
    r"""
    (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<str>"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?)
  | (?P<number>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.])*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<punct>\.\.\.|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!=<>]=|\#\#|[^\s\w])
  | (?P<space>\s+)
    """,
    re.S | re.X,
)
_PP_LINE = re.compile(r"^[ \t]*#(?:[^\n\\]|\\.)*", re.M | re.S)

KEYWORDS = frozenset(
    [
        "auto",
        "break",
        "case",
        "char",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "register",
        "restrict",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "while",
        "_Bool",
        "bool",
        "__asm__",
        "asm",
    ]
)
TYPES = frozenset(
    [
        "char",
        "short",
        "int",
        "long",
        "float",
        "double",
        "signed",
        "unsigned",
        "_Bool",
        "bool",
        "size_t",
        "uint8_t",
        "uint16_t",
        "uint32_t",
        "uint64_t",
        "int8_t",
        "int16_t",
        "int32_t",
        "int64_t",
        "uintptr_t",
        "intptr_t",
        "ptrdiff_t",
    ]
)
# binary operators by precedence (higher binds tighter)
PRECEDENCE = {
    "*": 10, "/": 10, "%": 10, "+": 9, "-": 9, "<<": 8, ">>": 8, "<": 7, "<=": 7, ">": 7,
    ">=": 7, "==": 6, "!=": 6, "&": 5, "^": 4, "|": 3, "&&": 2, "||": 1,
}  # fmt: skip
ASSIGN_OPS = frozenset(["=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="])
OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {")": "(", "]": "[", "}": "{"}


@dataclass(frozen=True)
class Tok:
    kind: str  # id number str comment punct
    text: str
    start: int
    end: int
    pp: bool  # on a preprocessor line


@dataclass
class Function:
    name: int  # token index of the defined name
    params: tuple[int, int]  # token indices of ( and )
    body: tuple[int, int]  # token indices of { and }


@dataclass
class Source:
    text: str
    toks: list[Tok]  # code tokens only: no comments
    comments: list[Tok]
    depth: list[int] = field(default_factory=list)  # brace depth before each token
    functions: list[Function] = field(default_factory=list)

    def text_of(self, i: int, j: int) -> str:
        """The text of tokens [i, j)."""
        return self.text[self.toks[i].start : self.toks[j - 1].end]

    def code(self, k: int) -> bool:
        """Is token k ordinary code (not a preprocessor line)?"""
        return not self.toks[k].pp

    def function_at(self, k: int) -> Function | None:
        for f in self.functions:
            if f.body[0] < k < f.body[1]:
                return f
        return None

    def name_of(self, f: Function) -> str:
        return self.toks[f.name].text


def lex(text: str) -> tuple[list[Tok], list[Tok]]:
    pp_spans = [(m.start(), m.end()) for m in _PP_LINE.finditer(text)]
    code, comments = [], []
    pos, n, pi = 0, len(text), 0
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:  # cannot happen: punct matches any non-space character
            pos += 1
            continue
        kind = m.lastgroup or "punct"
        if kind != "space":
            while pi < len(pp_spans) and pp_spans[pi][1] <= m.start():
                pi += 1
            pp = pi < len(pp_spans) and pp_spans[pi][0] <= m.start() < pp_spans[pi][1]
            tok = Tok(kind, m.group(), m.start(), m.end(), pp)
            (comments if kind == "comment" else code).append(tok)
        pos = m.end()
    return code, comments


def analyze(text: str) -> Source:
    toks, comments = lex(text)
    s = Source(text, toks, comments)
    d = 0
    for t in toks:
        s.depth.append(d)
        if t.pp:
            continue
        if t.text == "{":
            d += 1
        elif t.text == "}":
            d = max(0, d - 1)
    s.functions = _functions(s)
    return s


def match_forward(s: Source, k: int) -> int | None:
    """The index of the closer matching the opener at k."""
    want, depth = OPENERS[s.toks[k].text], 0
    for j in range(k, len(s.toks)):
        t = s.toks[j]
        if t.pp != s.toks[k].pp:
            continue
        if t.text in OPENERS:
            depth += 1
        elif t.text in CLOSERS:
            depth -= 1
            if depth == 0:
                return j if t.text == want else None
    return None


def match_backward(s: Source, k: int) -> int | None:
    depth = 0
    for j in range(k, -1, -1):
        t = s.toks[j]
        if t.pp != s.toks[k].pp:
            continue
        if t.text in CLOSERS:
            depth += 1
        elif t.text in OPENERS:
            depth -= 1
            if depth == 0:
                return j
    return None


def _functions(s: Source) -> list[Function]:
    out = []
    toks = s.toks
    for k, t in enumerate(toks):
        if t.pp or t.text != "{" or s.depth[k] != 0 or k < 3 or toks[k - 1].text != ")":
            continue
        lp = match_backward(s, k - 1)
        if lp is None or lp < 1 or toks[lp - 1].kind != "id" or toks[lp - 1].text in KEYWORDS:
            continue
        rb = match_forward(s, k)
        if rb is None:
            continue
        out.append(Function(lp - 1, (lp, k - 1), (k, rb)))
    return out


def is_binary(s: Source, k: int) -> bool:
    """Is the operator token at k binary (it follows an operand)?"""
    if k == 0 or s.toks[k].text not in PRECEDENCE:
        return False
    prev = s.toks[k - 1]
    return (prev.kind in ("id", "number", "str") and prev.text not in KEYWORDS) or prev.text in (
        ")",
        "]",
        "++",
        "--",
    )


def stmt_start(s: Source, k: int) -> int:
    """The first token of the statement holding token k (after the previous `;`, `{`, `}`
    at the same nesting)."""
    j = k
    while j > 0:
        t = s.toks[j - 1]
        if t.pp:
            break
        if t.text in (";", "{", "}"):
            break
        if t.text in CLOSERS:
            o = match_backward(s, j - 1)
            if o is None:
                break
            j = o
            continue
        if t.text in ("(", "["):
            break
        j -= 1
    return j


def stmt_end(s: Source, k: int) -> int | None:
    """The index of the `;` ending the statement holding token k."""
    j = k
    while j < len(s.toks):
        t = s.toks[j]
        if t.pp:
            return None
        if t.text == ";":
            return j
        if t.text in OPENERS:
            c = match_forward(s, j)
            if c is None:
                return None
            j = c + 1
            continue
        if t.text in CLOSERS:
            return None
        j += 1
    return None


def statements(s: Source) -> list[tuple[int, int]]:
    """(first token, `;`) of every simple statement inside a function body: ones that start
    right after `;`, `{` or `}` (so deleting one never leaves an `if` without a body)."""
    out = []
    for f in s.functions:
        k = f.body[0] + 1
        while k < f.body[1]:
            t = s.toks[k]
            if t.text in ("if", "for", "while", "switch") and s.toks[k + 1].text == "(":
                close = match_forward(s, k + 1)  # the header holds no statements
                k = close + 1 if close is not None else k + 1
                continue
            if t.pp or t.text in ("{", "}", ";") or s.toks[k - 1].text not in (";", "{", "}"):
                k += 1
                continue
            if t.text in ("do", "else", "case", "default"):
                k += 1
                continue
            e = stmt_end(s, k)
            if e is None or e > f.body[1]:
                k += 1
                continue
            out.append((k, e))
            k = e + 1
    return out


def splice(text: str, edits: list[Edit]) -> str:
    out, pos = [], 0
    for start, end, new in sorted(edits):
        if start < pos:
            raise ValueError("overlapping edits")
        out.append(text[pos:start])
        out.append(new)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def replace_tok(s: Source, k: int, new: str) -> Edit:
    return s.toks[k].start, s.toks[k].end, new


def replace_range(s: Source, i: int, j: int, new: str) -> Edit:
    """Replace the text of tokens [i, j)."""
    return s.toks[i].start, s.toks[j - 1].end, new


def delete_stmt(s: Source, i: int, j: int) -> Edit:
    """Delete tokens [i, j] (j the `;`), the whole line when nothing else is on it."""
    text = s.text
    start, end = s.toks[i].start, s.toks[j].end
    ls = text.rfind("\n", 0, start) + 1
    le = text.find("\n", end)
    le = len(text) if le < 0 else le
    if not text[ls:start].strip() and not text[end:le].strip():
        return ls, min(le + 1, len(text)), ""
    return start, end, ""


def is_call(s: Source, k: int) -> bool:
    """Is the identifier at k called (and not defined or declared)?"""
    t = s.toks[k]
    if t.kind != "id" or k + 1 >= len(s.toks) or s.toks[k + 1].text != "(":
        return False
    if any(f.name == k for f in s.functions):
        return False
    prev = s.toks[k - 1].text if k else ";"
    # a prototype: `type name(`
    return not (s.depth[k] == 0 and (prev in TYPES or prev in ("void", "*") or prev[:1].isupper()))


def call_args(s: Source, k: int) -> list[tuple[int, int]] | None:
    """Token ranges [i, j) of the arguments of the call whose name is at k."""
    lp = k + 1
    rp = match_forward(s, lp)
    if rp is None:
        return None
    args, start, depth = [], lp + 1, 0
    for j in range(lp + 1, rp):
        t = s.toks[j].text
        if t in OPENERS:
            depth += 1
        elif t in CLOSERS:
            depth -= 1
        elif t == "," and depth == 0:
            args.append((start, j))
            start = j + 1
    if start < rp:
        args.append((start, rp))
    return args


def int_value(text: str) -> tuple[int, str, str] | None:
    """(value, prefix-and-digits style, suffix) of an integer literal, or None."""
    m = re.fullmatch(r"(0[xX][0-9A-Fa-f]+|[1-9][0-9]*|0)([uUlL]*)", text)
    if m is None:
        return None
    body, suffix = m.groups()
    base = 16 if body[:2].lower() == "0x" else 10
    return int(body, base), body, suffix


def format_int(value: int, like: str) -> str:
    """`value` written as the literal `like` is (base, digit case, suffix)."""
    parsed = int_value(like)
    if parsed is None:
        return str(value)
    _v, body, suffix = parsed
    if body[:2].lower() == "0x":
        digits = f"{value:x}"
        if any(c.isupper() for c in body[2:]):
            digits = digits.upper()
        return body[:2] + digits.zfill(len(body) - 2) + suffix
    return f"{value}{suffix}"
