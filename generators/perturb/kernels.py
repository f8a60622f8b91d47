"""Offline candidates for GPU-kernel tasks (`cuda`, `triton`): the reference, rewrites of
it, and the bugs kernel writers actually make.

A kernel reference is a Python module. CUDA code sits in the module-level string
`CUDA_SRC` (extern "C" __global__ kernels, launched from `forward` through `cuda_kernel`);
Triton kernels are `@triton.jit` functions launched as `kernel[grid](...)`. The Python
side (launches, grids, strides, Triton kernels) is read with `ast`, so every edit lands on
an exact source span; the CUDA side is read with regexes over CUDA_SRC with its comments
and string literals masked out. Each operator edits one site (chosen with the rng when the
idiom occurs several times), keeps the rest of the text as written, and returns None when
the idiom is absent or the edit would change nothing.
"""

from __future__ import annotations

import ast
import builtins
import functools
import io
import itertools
import random
import re
import tokenize
from bisect import bisect_right
from collections.abc import Container, Iterable
from dataclasses import dataclass, field

from generators.perturb.operators import Apply, Mutation, OperatorGenerator, Rewrite, check_table
from verifiers import pyast
from verifiers.taxonomy import API, FUNCTIONAL, PERFORMANCE, RESOURCE, SYNTAX

Edit = tuple[int, int, str]  # (start, end, replacement) over the module text


def _splice(src: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits (any order)."""
    out = src
    last = len(src) + 1
    for start, end, repl in sorted(set(edits), key=lambda e: (e[0], e[1]), reverse=True):
        if end > last:
            raise ValueError("overlapping edits")
        out = out[:start] + repl + out[end:]
        last = start
    return out


def _changed(fn: Apply) -> Apply:
    """An operator that never hands back its input unchanged (nor crashes on odd text)."""

    def apply(source: str, rng: random.Random) -> str | None:
        try:
            out = fn(source, rng)
        except (SyntaxError, ValueError, IndexError):
            return None
        return out if out is not None and out != source else None

    apply.__name__ = fn.__name__
    apply.__doc__ = fn.__doc__
    return apply


def _pick(rng: random.Random, sites: list):
    return rng.choice(sites) if sites else None


# --- the Python side: ast with exact source spans -----------------------------------------


class _Py:
    """A parsed module with node -> text offsets (ast columns are UTF-8 byte offsets)."""

    def __init__(self, src: str) -> None:
        self.src = src
        self.tree = pyast.parse(src)
        self.lines = re.findall(r"[^\n]*\n|[^\n]+$", src)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node

    def off(self, lineno: int, col: int) -> int:
        line = self.lines[lineno - 1] if lineno - 1 < len(self.lines) else ""
        return self.starts[lineno - 1] + len(line.encode()[:col].decode(errors="ignore"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.off(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.off(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    def text(self, node: ast.AST) -> str:
        s, e = self.span(node)
        return self.src[s:e]

    def function_of(self, node: ast.AST) -> ast.FunctionDef | None:
        cur = self.parent.get(node)
        while cur is not None and not isinstance(cur, ast.FunctionDef):
            cur = self.parent.get(cur)
        return cur


# Every operator of a generator reads the same reference: parse it once (the parsed forms
# are shared between operators, so nothing may change them after construction).
_PARSED = 16


@functools.lru_cache(maxsize=_PARSED)
def _py(src: str) -> _Py | None:
    try:
        return _Py(src)
    except SyntaxError:
        return None


def _is_call(node: ast.AST, module: str, names: Iterable[str] | None = None) -> bool:
    """`module.<name>(...)`, e.g. tl.load(...) or triton.cdiv(...)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == module
        and (names is None or node.func.attr in names)
    )


def _is_neg_inf(node: ast.AST) -> bool:
    """-float("inf"), float("-inf"), -math.inf, -INF-style literals."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = node.operand
        if (
            isinstance(inner, ast.Call)
            and isinstance(inner.func, ast.Name)
            and inner.func.id == "float"
            and len(inner.args) == 1
            and isinstance(inner.args[0], ast.Constant)
            and str(inner.args[0].value).lower() in ("inf", "infinity")
        ):
            return True
        return isinstance(inner, ast.Attribute) and inner.attr == "inf"
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "float"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and str(node.args[0].value).lower() in ("-inf", "-infinity")
    )


def _atomic(node: ast.AST) -> bool:
    """Safe to splice next to an operator without parentheses."""
    return isinstance(node, ast.Name | ast.Constant | ast.Attribute | ast.Subscript | ast.Call)


def _paren(py: _Py, node: ast.AST) -> str:
    text = py.text(node)
    return text if _atomic(node) else f"({text})"


@functools.lru_cache(maxsize=_PARSED)
def _identifiers(py: _Py) -> frozenset[str]:
    names = set(dir(builtins))
    for node in ast.walk(py.tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
    return frozenset(names)


def _typo(name: str, taken: Container[str]) -> str | None:
    """A near-miss of `name` that is defined nowhere: n_cols -> ncols, n -> N, x_ptr ->
    xptr, out -> outs."""
    options = []
    if "_" in name.strip("_"):
        options.append(name.replace("_", ""))
    if len(name) <= 2 and name.swapcase() != name:
        options.append(name.swapcase())
    if not name.endswith("s"):
        options.append(name + "s")
    return next((o for o in options if o not in taken and o.isidentifier()), None)


# --- launches (both domains) ---------------------------------------------------------------


@dataclass
class _Launch:
    kernel: str
    call: ast.Call
    grid: ast.expr | None  # the grid expression the launch uses (a literal or a resolved name)


def _resolve(py: _Py, expr: ast.expr | None, at: ast.AST) -> ast.expr | None:
    """A grid given by name: the nearest earlier `name = ...` in the same function."""
    if not isinstance(expr, ast.Name):
        return expr
    fn = py.function_of(at)
    if fn is None:
        return None
    best = None
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == expr.id
            and node.lineno < at.lineno  # type: ignore[attr-defined]
            and (best is None or node.lineno > best.lineno)
        ):
            best = node
    return best.value if best is not None else None


def _triton_launches(py: _Py, kernels: dict[str, ast.FunctionDef]) -> list[_Launch]:
    out = []
    for node in ast.walk(py.tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Subscript)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in kernels
        ):
            out.append(_Launch(node.func.value.id, node, _resolve(py, node.func.slice, node)))
    return sorted(out, key=lambda lc: py.span(lc.call))


def _cuda_launchers(py: _Py) -> dict[str, str]:
    """`self.k = cuda_kernel("name")` / `k = cuda_kernel("name")`: launcher -> kernel."""
    out = {}
    for node in ast.walk(py.tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "cuda_kernel"
            and node.value.args
            and isinstance(node.value.args[0], ast.Constant)
            and isinstance(node.value.args[0].value, str)
        ):
            target = node.targets[0]
            key = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
            if key:
                out[key] = node.value.args[0].value
    return out


def _cuda_launches(py: _Py) -> list[_Launch]:
    launchers = _cuda_launchers(py)
    out = []
    for node in ast.walk(py.tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        key = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
        if key not in launchers:
            continue
        grid = next((kw.value for kw in node.keywords if kw.arg == "grid"), None)
        out.append(_Launch(launchers[key], node, _resolve(py, grid, node)))
    return sorted(out, key=lambda lc: py.span(lc.call))


def _grid_nodes(py: _Py, launches: list[_Launch]) -> list[ast.expr]:
    seen, out = set(), []
    for lc in launches:
        if lc.grid is not None and py.span(lc.grid) not in seen:
            seen.add(py.span(lc.grid))
            out.append(lc.grid)
    return out


def _one_d_grid_edits(py: _Py, launches: list[_Launch], kernel: str) -> list[Edit] | None:
    """(G,) -> (1, G) for every launch of `kernel`; None unless all of them are 1-D
    literal tuples that no other kernel's launch shares."""
    mine = [lc for lc in launches if lc.kernel == kernel]
    if not mine:
        return None
    edits = []
    for lc in mine:
        g = lc.grid
        if not (isinstance(g, ast.Tuple) and len(g.elts) == 1):
            return None
        if any(o.grid is g for o in launches if o.kernel != kernel):
            return None
        s, e = py.span(g)
        edits.append((s, e, f"(1, {py.text(g.elts[0])})"))
    return edits


def _stride_edits(py: _Py, launches: list[_Launch], rng: random.Random) -> list[Edit] | None:
    """One tensor of one launch: .stride(0) <-> .stride(1) (or the lone one flipped)."""
    groups: dict[tuple[int, str], list[ast.Constant]] = {}
    for i, lc in enumerate(launches):
        for node in ast.walk(lc.call):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "stride"
                and len(node.args) == 1
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in (0, 1)
            ):
                groups.setdefault((i, py.text(node.func.value)), []).append(node.args[0])
    key = _pick(rng, sorted(groups))
    if key is None:
        return None
    edits = []
    for const in groups[key]:
        s, e = py.span(const)
        edits.append((s, e, "1" if const.value == 0 else "0"))
    return edits


# --- the CUDA side: CUDA_SRC with comments masked -------------------------------------------

_CUDA_SRC_RE = re.compile(r"^CUDA_SRC\s*=\s*[rR]?(\"\"\"|''')", re.M)
_C_IGNORED_RE = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|^[ \t]*#[^\n]*", re.S | re.M
)
_C_FUNC_RE = re.compile(r"\b(__global__|__device__)\b[^;{}()]*?\b([A-Za-z_]\w*)\s*\(")
_C_INT_TYPES = re.compile(r"\b(int|long|short|unsigned|size_t|int64_t|int32_t|uint32_t)\b")


@dataclass
class _CFunc:
    kind: str  # __global__ | __device__
    name: str
    params: list[tuple[str, str]]  # (type, name)
    body: tuple[int, int]  # inside the braces, CUDA-text offsets

    def int_params(self) -> set[str]:
        return {n for t, n in self.params if "*" not in t and _C_INT_TYPES.search(t)}


@dataclass
class _Cuda:
    """CUDA_SRC of a reference: its text, where it sits in the module, its functions."""

    src: str
    start: int
    end: int
    text: str = field(init=False)
    ignored: list[tuple[int, int]] = field(init=False)
    funcs: list[_CFunc] = field(init=False)

    def __post_init__(self) -> None:
        self.text = self.src[self.start : self.end]
        self.ignored = [m.span() for m in _C_IGNORED_RE.finditer(self.text)]
        self._starts = [s for s, _ in self.ignored]
        self.funcs = self._functions()

    def masked(self, pos: int) -> bool:
        i = bisect_right(self._starts, pos) - 1
        return i >= 0 and self.ignored[i][0] <= pos < self.ignored[i][1]

    def code(self, pattern: re.Pattern[str], lo: int = 0, hi: int | None = None):
        """Matches of `pattern` in [lo, hi) that start outside comments and literals."""
        hi = len(self.text) if hi is None else hi
        return [m for m in pattern.finditer(self.text, lo, hi) if not self.masked(m.start())]

    def match(self, pos: int, open_ch: str, close_ch: str) -> int:
        """Index of the bracket closing the one at `pos` (comments skipped)."""
        depth = 0
        i = pos
        while i < len(self.text):
            if self.masked(i):
                j = bisect_right(self._starts, i) - 1
                i = self.ignored[j][1]
                continue
            c = self.text[i]
            if c == open_ch:
                depth += 1
            elif c == close_ch:
                depth -= 1
                if depth == 0:
                    return i
            i += 1
        raise ValueError("unbalanced brackets in CUDA_SRC")

    def _functions(self) -> list[_CFunc]:
        out = []
        for m in self.code(_C_FUNC_RE):
            lp = m.end() - 1
            rp = self.match(lp, "(", ")")
            rest = self.text[rp + 1 :]
            k = len(rest) - len(rest.lstrip())
            if not rest[k:].startswith("{"):
                continue  # a declaration
            lb = rp + 1 + k
            rb = self.match(lb, "{", "}")
            params = []
            for part in _split_top(self.text[lp + 1 : rp]):
                pm = re.search(r"([A-Za-z_]\w*)\s*(\[[^\]]*\]\s*)*$", part.strip())
                if pm:
                    params.append((part.strip()[: pm.start()].strip(), pm.group(1)))
            out.append(_CFunc(m.group(1), m.group(2), params, (lb + 1, rb)))
        return out

    def kernels(self) -> list[_CFunc]:
        return [f for f in self.funcs if f.kind == "__global__"]

    def module(self, edits: Iterable[Edit]) -> str:
        """The module with `edits` (CUDA-text offsets) applied inside CUDA_SRC."""
        new = _splice(self.text, edits)
        if '"""' in new or "'''" in new:
            raise ValueError("edit would close the CUDA_SRC literal")
        return self.src[: self.start] + new + self.src[self.end :]

    def module_offsets(self, edits: Iterable[Edit]) -> list[Edit]:
        return [(s + self.start, e + self.start, r) for s, e, r in edits]


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for c in text:
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return parts


@functools.lru_cache(maxsize=_PARSED)
def _cuda(src: str) -> _Cuda | None:
    m = _CUDA_SRC_RE.search(src)
    if not m:
        return None
    end = src.find(m.group(1), m.end())
    if end < 0:
        return None
    try:
        return _Cuda(src, m.end(), end)
    except ValueError:
        return None


def _line_span(text: str, pos: int) -> tuple[int, int]:
    """The whole line holding `pos`, newline included."""
    s = text.rfind("\n", 0, pos) + 1
    e = text.find("\n", pos)
    return s, (len(text) if e < 0 else e + 1)


# --- CUDA mutations -------------------------------------------------------------------------

_RETURN_GUARD = re.compile(
    r"^[ \t]*if\s*\(\s*([\w.]+)\s*>=?\s*([A-Za-z_]\w*)\s*\)\s*return\s*;[ \t]*\n", re.M
)
_IF = re.compile(r"\bif\s*\(")
_BOUND_TERM = re.compile(r"^\s*[\w.]+\s*<=?\s*([A-Za-z_]\w*)\s*$")  # i < n
_NONNEG_TERM = re.compile(r"^\s*[\w.]+\s*>=\s*0\s*$")  # idx >= 0 (a halo's lower edge)


def _bounds(terms: list[str], ints: set[str]) -> list[str]:
    """The terms of a conjunction that bound an index by an integer parameter (or by 0);
    empty unless at least one compares with a parameter."""
    upper = [t for t in terms if (b := _BOUND_TERM.match(t)) and b.group(1) in ints]
    return [t for t in terms if t in upper or _NONNEG_TERM.match(t)] if upper else []


def _stores_through(cu: _Cuda, k: _CFunc, pos: int) -> bool:
    """The statement (or block) starting at `pos` assigns through a pointer parameter
    of `k` that is not const: a store."""
    rest = cu.text[pos:]
    lead = len(rest) - len(rest.lstrip())
    if rest[lead:].startswith("{"):
        end = cu.match(pos + lead, "{", "}")
    else:
        semi = cu.text.find(";", pos)
        end = len(cu.text) if semi < 0 else semi
    stmt = cu.text[pos:end]
    out = [n for t, n in k.params if "*" in t and "const" not in t]
    return any(re.search(rf"\b{re.escape(n)}\s*\[[^;]*?\]\s*=(?!=)", stmt) for n in out)


_FOR_COND = re.compile(r"\bfor\s*\([^;()]*;([^;]*);")


def _loop_bound_edits(cu: _Cuda, k: _CFunc, bound: str) -> list[Edit]:
    """`x < bound &&` (or `&& x < bound`) deleted from the conditions of `for` loops in
    kernel `k` that have another term to keep."""
    edits = []
    for m in cu.code(_FOR_COND, *k.body):
        lo, hi = m.span(1)
        terms = cu.text[lo:hi].split("&&")
        keep = [t for t in terms if not ((b := _BOUND_TERM.match(t)) and b.group(1) == bound)]
        if keep and len(keep) < len(terms):
            edits.append((lo, hi, " " + " && ".join(t.strip() for t in keep)))
    return edits


@_changed
def cuda_tail_guard_dropped(src: str, rng: random.Random) -> str | None:
    """`if (i >= n) return;` deleted, or the bounds terms of an `if (r < M && c < N)`.
    A guard over a store is chosen where the kernel has one: a guard over a load alone
    (a tile read past the edge, then stored under its own guard) leaves every output as it
    was, and only a memory checker sees the stray read."""
    cu = _cuda(src)
    if cu is None:
        return None
    sites: list[list[Edit]] = []
    stores: list[list[Edit]] = []
    for k in cu.kernels():
        ints = k.int_params()
        for m in cu.code(_RETURN_GUARD, *k.body):
            if m.group(2) in ints:
                # the same bound in a loop of the tail (`j < n && j < i + VEC`) goes too:
                # with it the early exit was redundant and dropping it changed nothing
                loops = _loop_bound_edits(cu, k, m.group(2))
                stores.append([(m.start(), m.end(), ""), *loops])
        for m in cu.code(_IF, *k.body):
            lp = m.end() - 1
            rp = cu.match(lp, "(", ")")
            cond = cu.text[lp + 1 : rp]
            terms = cond.split("&&")
            bound = _bounds(terms, ints)
            after = cu.text[rp + 1 :]
            if "||" in cond or not bound or after.lstrip().startswith("return"):
                continue  # early exits are handled above
            rest = [t.strip() for t in terms if t not in bound]
            into = stores if _stores_through(cu, k, rp + 1) else sites
            if rest:
                into.append([(lp + 1, rp, " && ".join(rest))])
                continue
            # drop `if (...)`: the statement or block it guarded stays
            ls, le = _line_span(cu.text, m.start())
            if not cu.text[ls : m.start()].strip() and not cu.text[rp + 1 : le].strip():
                into.append([(ls, le, "")])  # the `if (...)` had a line to itself
            else:
                gap = len(after) - len(after.lstrip(" \t"))
                into.append([(m.start(), rp + 1 + gap, "")])
    edits = _pick(rng, stores or sites)
    return cu.module(edits) if edits else None


_CEIL_DIV = re.compile(
    r"\(\s*([\w.]+(?:\s*\*\s*[\w.]+)*)\s*\+\s*([\w.]+)\s*-\s*1\s*\)\s*//\s*([\w.]+)"
    r"|\(\s*([\w.]+(?:\s*\*\s*[\w.]+)*)\s*\+\s*(\d+)\s*\)\s*//\s*(\d+)"
)


@_changed
def cuda_grid_off_by_one(src: str, rng: random.Random) -> str | None:
    """`(n + B - 1) // B` -> `n // B` in a grid: the tail block is never launched."""
    cu = _cuda(src)
    lo, hi = (cu.start, cu.end) if cu else (0, 0)
    sites = []
    for m in _CEIL_DIV.finditer(src):
        if lo <= m.start() < hi:
            continue
        ls, le = _line_span(src, m.start())
        if "grid" not in src[ls:le]:
            continue
        if m.group(1) is not None and m.group(2) == m.group(3):
            sites.append((m.start(), m.end(), f"{m.group(1)} // {m.group(3)}"))
        elif m.group(4) is not None and int(m.group(5)) + 1 == int(m.group(6)):
            sites.append((m.start(), m.end(), f"{m.group(4)} // {m.group(6)}"))
    site = _pick(rng, sites)
    return _splice(src, [site]) if site else None


_BLOCK_X = re.compile(r"\b(blockIdx|gridDim)\.x\b")
_BLOCK_YZ = re.compile(r"\b(blockIdx|gridDim)\.[yz]\b")
_BLOCK_ANY = re.compile(r"\b(blockIdx|gridDim)\.[xyz]\b")


@_changed
def cuda_grid_past_limit(src: str, rng: random.Random) -> str | None:
    """A 1-D launch moved to grid y: `grid=(G,)` -> `grid=(1, G)`, blockIdx.x ->
    blockIdx.y in the kernel. Identical results until G > 65535, where gridDim.y's
    limit refuses the launch."""
    cu, py = _cuda(src), _py(src)
    if cu is None or py is None:
        return None
    if any(cu.code(_BLOCK_ANY, *f.body) for f in cu.funcs if f.kind == "__device__"):
        return None  # a helper reads the block index: moving it is not local
    launches = _cuda_launches(py)
    sites = []
    for k in cu.kernels():
        uses = cu.code(_BLOCK_X, *k.body)
        if not uses or cu.code(_BLOCK_YZ, *k.body):
            continue
        grid_edits = _one_d_grid_edits(py, launches, k.name)
        if grid_edits:
            sites.append((k, uses, grid_edits))
    site = _pick(rng, sites)
    if site is None:
        return None
    _, uses, grid_edits = site
    inner = [(m.start(), m.end(), f"{m.group(1)}.y") for m in uses]
    return _splice(src, cu.module_offsets(inner) + grid_edits)


# grid y and z of every CUDA device (x reaches 2^31 - 1)
GRID_YZ_LIMIT = 65535


class _Launches:
    """Stand-ins for a module's kernels that record each launch's grid and run nothing."""

    def __init__(self) -> None:
        self.grids: list[tuple[int, ...]] = []

    def record(self, grid, meta: dict) -> None:
        g = grid(meta) if callable(grid) else grid
        g = tuple(g) if isinstance(g, (tuple, list)) else (g,)
        self.grids.append(tuple(int(d) for d in g))

    def cuda_kernel(self, name: str):
        def launch(*_a, grid=(1,), **_k):
            self.record(grid, {})

        return launch

    def triton(self, jit):
        import inspect

        params = inspect.signature(getattr(jit, "fn", jit)).parameters
        launches = self

        class Launcher:
            def __getitem__(self, grid):
                def launch(*args, **kwargs):
                    meta = dict(zip(params, args, strict=False))
                    meta.update(kwargs)
                    launches.record(grid, meta)

                return launch

        return Launcher()


def timing_grids(task, code: str) -> list[tuple[int, ...]] | None:
    """The grids `code`'s forward launches at the task's timing shapes: forward runs on
    meta tensors (nothing allocated) with its kernels replaced by recorders. None when
    that cannot be told (no torch here, or a forward that needs real data). Runs the
    catalog's own (mutated) reference, never a candidate's code."""
    try:
        import torch

        from verifiers.kernels.runner import load_module, problem_module
    except ImportError:
        return None
    rec = _Launches()
    try:
        problem = problem_module(task.harness["problem"], None, "grids")
        mod = load_module(
            "crucible_grids", code, "reference.py", {"cuda_kernel": rec.cuda_kernel}, register=False
        )
        for name, obj in list(vars(mod).items()):
            if type(obj).__name__ in ("JITFunction", "InterpretedFunction", "Autotuner"):
                setattr(mod, name, rec.triton(obj))
        entry = task.interface.get("entry", "ModelNew")
        with torch.device("meta"), torch.no_grad():
            inputs = problem.get_inputs()
            getattr(mod, entry)(*problem.get_init_inputs())(*inputs)
    except Exception:
        return None
    return rec.grids


def _grid_past_yz_limit(task, code: str) -> bool:
    """The mutated launch (grid y or z) needs more than 65535 blocks at the timing
    shapes: there it is refused; below, the program is correct at the task's sizes."""
    grids = timing_grids(task, code)
    return bool(grids) and any(d > GRID_YZ_LIMIT for g in grids for d in g[1:3])


_SYNC = re.compile(r"__syncthreads\s*\(\s*\)\s*;")


@_changed
def cuda_missing_syncthreads(src: str, rng: random.Random) -> str | None:
    """One `__syncthreads();` deleted: a shared-memory race."""
    cu = _cuda(src)
    if cu is None:
        return None
    m = _pick(rng, cu.code(_SYNC))
    if m is None:
        return None
    ls, le = _line_span(cu.text, m.start())
    line = cu.text[ls:le]
    rest = (line[: m.start() - ls] + line[m.end() - ls :]).strip()
    if not rest or rest.startswith(("//", "/*")):
        return cu.module([(ls, le, "")])
    gap = len(cu.text[m.end() :]) - len(cu.text[m.end() :].lstrip(" \t"))
    return cu.module([(m.start(), m.end() + gap, "")])


_NEG_INF_C = re.compile(r"-\s*(INFINITY|FLT_MAX|CUDART_INF_F|HUGE_VALF)\b")
_ZERO_INIT = re.compile(
    r"(?<![\w.\]>])([A-Za-z_]\w*)((?:\[\w+\])*)\s*=\s*(0\.0f|0\.f|0\.0)(?=\s*[;,])"
)


def _accumulated(cu: _Cuda, f: _CFunc, name: str) -> bool:
    acc = re.compile(rf"(?<![\w.]){re.escape(name)}\s*(?:\[[^\]]*\]\s*)*\+=")
    return bool(cu.code(acc, *f.body))


@_changed
def cuda_wrong_reduction_identity(src: str, rng: random.Random) -> str | None:
    """A sum accumulator started at 1.0f, or a max identity -INFINITY written 0.0f. The
    sums come first: a max started at 0 only differs on rows whose entries are all
    negative, and softmax-style code subtracts it again, so on random data it shows
    nowhere; it is the choice only where a kernel has no sum."""
    cu = _cuda(src)
    if cu is None:
        return None
    sums = [
        (m.start(3), m.end(3), "1.0f")
        for f in cu.funcs
        for m in cu.code(_ZERO_INIT, *f.body)
        if _accumulated(cu, f, m.group(1))
    ]
    maxes = [(m.start(), m.end(), "0.0f") for m in cu.code(_NEG_INF_C)]
    site = _pick(rng, sums or maxes)
    return cu.module([site]) if site else None


_FLOAT_DECL = re.compile(r"\bfloat\s+(\w+\s*=\s*0\.0f\s*(?:,\s*\w+\s*=\s*0\.0f\s*)*);")
_WMMA_FLOAT_ACC = re.compile(
    r"(wmma::fragment\s*<\s*wmma::accumulator\s*(?:,\s*\d+\s*){3},\s*)float(\s*>)"
)
_STORE_MATRIX = re.compile(r"wmma::store_matrix_sync\s*\(\s*&?\s*([A-Za-z_]\w*)")


@_changed
def cuda_fp16_accumulation(src: str, rng: random.Random) -> str | None:
    """In a kernel reading __half: a float accumulator made __half (scalar sums, or the
    WMMA accumulator fragments with their shared staging tile), so sums round to 11 bits."""
    cu = _cuda(src)
    if cu is None:
        return None
    sites: list[list[Edit]] = []
    for k in cu.kernels():
        if not any("__half" in t for t, _ in k.params):
            continue
        for m in cu.code(_FLOAT_DECL, *k.body):
            names = re.findall(r"(\w+)\s*=", m.group(1))
            if any(_accumulated(cu, k, n) for n in names):
                decl = re.sub(r"=\s*0\.0f", "= __float2half(0.0f)", m.group(1))
                sites.append([(m.start(), m.end(), f"__half {decl};")])
        frags = cu.code(_WMMA_FLOAT_ACC, *k.body)
        staged = {m.group(1) for m in cu.code(_STORE_MATRIX, *k.body)}
        if frags and staged:
            edits = [(m.start(), m.end(), f"{m.group(1)}__half{m.group(2)}") for m in frags]
            for name in staged:
                decl = re.compile(rf"(__shared__[^;]*?)\bfloat(\s+{re.escape(name)}\s*\[)")
                for d in cu.code(decl, *k.body):
                    edits.append((d.start(), d.end(), f"{d.group(1)}__half{d.group(2)}"))
                reads = re.compile(rf"(?<![&\w]){re.escape(name)}(?:\[[^\[\]]*\])+")
                for r in cu.code(reads, *k.body):
                    before = cu.text[max(0, r.start() - 40) : r.start()]
                    if re.search(r"(__half|float)\s*$", before):
                        continue  # the declaration
                    edits.append((r.start(), r.end(), f"__half2float({r.group(0)})"))
            sites.append(edits)
    edits = _pick(rng, sites)
    return cu.module(edits) if edits else None


_INDEX = re.compile(
    r"\[\s*(\(\s*(?:long long|int64_t|size_t)\s*\)\s*)?([A-Za-z_]\w*)\s*\*\s*([A-Za-z_]\w*)"
    r"\s*\+\s*([A-Za-z_]\w*)\s*\]"
)


@_changed
def cuda_wrong_stride(src: str, rng: random.Random) -> str | None:
    """.stride(0) / .stride(1) of one tensor swapped in a launch, or `[row * N + col]`
    indexed as `[col * N + row]`."""
    cu, py = _cuda(src), _py(src)
    if cu is None or py is None:
        return None
    sites: list[list[Edit]] = []
    stride = _stride_edits(py, _cuda_launches(py), rng)
    if stride:
        sites.append(stride)
    for k in cu.kernels():
        ints = k.int_params()
        for m in cu.code(_INDEX, *k.body):
            if m.group(3) in ints and m.group(2) != m.group(4):
                cast = m.group(1) or ""
                new = f"[{cast}{m.group(4)} * {m.group(3)} + {m.group(2)}]"
                sites.append(cu.module_offsets([(m.start(), m.end(), new)]))
    edits = _pick(rng, sites)
    return _splice(src, edits) if edits else None


_FLAT_INDEX = re.compile(
    r"(\(\s*(?:long long|int64_t|size_t|unsigned(?: int)?)\s*\)\s*)?"
    r"blockIdx\.x\s*\*\s*blockDim\.x\s*\+\s*threadIdx\.x"
)


@_changed
def cuda_uncoalesced(src: str, rng: random.Random) -> str | None:
    """`blockIdx.x * blockDim.x + threadIdx.x` -> `threadIdx.x * gridDim.x + blockIdx.x`:
    the same set of indices, but neighbouring threads now touch addresses a grid apart."""
    cu = _cuda(src)
    if cu is None:
        return None
    m = _pick(rng, cu.code(_FLAT_INDEX))
    if m is None:
        return None
    return cu.module(
        [(m.start(), m.end(), f"{m.group(1) or ''}threadIdx.x * gridDim.x + blockIdx.x")]
    )


_STMT_END = re.compile(r";(?=[ \t]*(?://[^\n]*|/\*[^\n]*?\*/)?[ \t]*\n)")


@_changed
def cuda_missing_semicolon(src: str, rng: random.Random) -> str | None:
    """A statement without its `;`: nvcc stops at the next line."""
    cu = _cuda(src)
    if cu is None:
        return None
    sites = [m for f in cu.funcs for m in cu.code(_STMT_END, *f.body)]
    m = _pick(rng, sites)
    return cu.module([(m.start(), m.end(), "")]) if m else None


@_changed
def cuda_undefined_identifier(src: str, rng: random.Random) -> str | None:
    """One use of a kernel parameter misspelt (n_cols -> ncols, N -> n): undefined."""
    cu = _cuda(src)
    if cu is None:
        return None
    taken = set(re.findall(r"[A-Za-z_]\w*", cu.text))
    sites = []
    for k in cu.kernels():
        for _, name in k.params:
            typo = _typo(name, taken)
            use = re.compile(rf"(?<![\w.>]){re.escape(name)}\b")
            if typo:
                sites += [(m.start(), m.end(), typo) for m in cu.code(use, *k.body)]
    site = _pick(rng, sites)
    return cu.module([site]) if site else None


# --- Triton mutations -----------------------------------------------------------------------


def _jit_kernels(py: _Py) -> dict[str, ast.FunctionDef]:
    out = {}
    for node in ast.walk(py.tree):
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                target = d.func if isinstance(d, ast.Call) else d
                if ast.unparse(target) in ("triton.jit", "jit"):
                    out[node.name] = node
    return out


def _params(fn: ast.FunctionDef) -> list[str]:
    return [a.arg for a in fn.args.args + fn.args.kwonlyargs]


@functools.lru_cache(maxsize=_PARSED)
def _triton(src: str) -> tuple[_Py, dict[str, ast.FunctionDef]] | None:
    py = _py(src)
    if py is None:
        return None
    kernels = _jit_kernels(py)
    return (py, kernels) if kernels else None


def _sorted_nodes(py: _Py, nodes: Iterable[ast.AST]) -> list:
    return sorted(nodes, key=lambda n: py.span(n))


def _kernel_calls(py: _Py, kernels: dict[str, ast.FunctionDef], names: Iterable[str]):
    names = set(names)
    return _sorted_nodes(
        py,
        (node for fn in kernels.values() for node in ast.walk(fn) if _is_call(node, "tl", names)),
    )


def _drop_keywords(py: _Py, call: ast.Call, drop: set[str]) -> list[Edit]:
    """Delete keyword arguments with the comma before each."""
    args = _sorted_nodes(py, [*call.args, *call.keywords])
    edits = []
    for i, a in enumerate(args):
        if isinstance(a, ast.keyword) and a.arg in drop and i > 0:
            edits.append((py.span(args[i - 1])[1], py.span(a)[1], ""))
    return edits


# not the scans: tl.cumsum carries tail garbage only into lanes the store masks off
_REDUCTIONS = ("sum", "max", "min", "dot", "argmax", "argmin", "reduce", "xor_sum")


def _tainted(fn: ast.FunctionDef, source: ast.AST, clean: bool = False) -> set[str]:
    """Names in `fn` that may hold a value derived from `source` after its statements run
    in order (loop bodies twice); a plain assignment of a clean value clears a name.
    (`clean` as in `_reaches`.)"""
    names: set[str] = set()

    def run(body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Assign | ast.AugAssign):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                ids = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
                if _reaches(stmt.value, source, names, clean):
                    names.update(ids)
                elif isinstance(stmt, ast.Assign):
                    names.difference_update(ids)
            elif isinstance(stmt, ast.For | ast.While):
                run(stmt.body)
                run(stmt.body)
            elif isinstance(stmt, ast.If):
                before = set(names)
                run(stmt.body)
                after_body = set(names)
                names.clear()
                names.update(before)
                run(stmt.orelse)
                names.update(after_body)
            elif isinstance(stmt, ast.With):
                run(stmt.body)

    run(fn.body)
    return names


def _reaches(expr: ast.AST, source: ast.AST, names: set[str], clean: bool = False) -> bool:
    """Does `expr` use `source` or a name derived from it? With `clean`, values passed
    through a max / min (a 0 in place of -inf changes no max of data with a positive
    entry) or re-masked by tl.where(cond, x, constant) do not count."""
    if expr is source or (isinstance(expr, ast.Name) and expr.id in names):
        return True
    if clean and (
        _is_call(expr, "tl", ("max", "maximum", "min", "minimum"))
        or (
            _is_call(expr, "tl", ("where",))
            and len(expr.args) == 3  # type: ignore[attr-defined]
            and isinstance(expr.args[2], ast.Constant)  # type: ignore[attr-defined]
        )
    ):
        return False
    return any(_reaches(c, source, names, clean) for c in ast.iter_child_nodes(expr))


def _feeds_sum(fn: ast.FunctionDef, source: ast.AST) -> bool:
    """Do `source`'s masked-off lanes reach a tl.sum / tl.dot unmasked?"""
    names = _tainted(fn, source, clean=True)
    return any(
        _is_call(node, "tl", ("sum", "dot"))
        and any(_reaches(a, source, names, True) for a in node.args)  # type: ignore[attr-defined]
        for node in ast.walk(fn)
    )


def _reduction_groups(fn: ast.FunctionDef, loads: list[ast.Call]) -> list[list[ast.Call]]:
    """For each reduction (tl.sum, tl.max, tl.dot, ...) the masked loads feeding it."""
    taint = [(c, _tainted(fn, c)) for c in loads]
    groups: dict[tuple[int, ...], list[ast.Call]] = {}
    for node in ast.walk(fn):
        if _is_call(node, "tl", _REDUCTIONS):
            args = node.args  # type: ignore[attr-defined]
            feeding = [c for c, names in taint if any(_reaches(a, c, names) for a in args)]
            if feeding:
                groups.setdefault(tuple(id(c) for c in feeding), feeding)
    return list(groups.values())


@_changed
def triton_tail_mask_dropped(src: str, rng: random.Random) -> str | None:
    """`mask=` left off one masked store: the tail lanes write past the output (the red
    zones see it). A kernel with no masked store loses the masks (and `other=`) of the
    loads feeding one reduction: the tail lanes read past the row and their garbage enters
    the result (all of them: with one operand of a product still zero-filled, garbage x 0
    hides the bug). A load's mask is never dropped alone: its lanes past the end are the
    ones a masked store drops, or a `where` masks, so no output shows the stray read (on
    the H200, 7 of 12 such candidates passed); only a memory checker would see it."""
    t = _triton(src)
    if t is None:
        return None
    py, kernels = t
    groups: list[list[ast.Call]] = []
    stores: list[ast.Call] = []
    for _, fn in sorted(kernels.items()):
        masked = [
            c
            for c in _kernel_calls(py, {fn.name: fn}, ("load", "store", "atomic_add"))
            if any(kw.arg == "mask" for kw in c.keywords)
        ]
        stores += [c for c in masked if c.func.attr in ("store", "atomic_add")]
        groups += _reduction_groups(fn, [c for c in masked if c.func.attr == "load"])
    chosen = [c for c in [_pick(rng, stores)] if c is not None] or _pick(rng, groups) or []
    edits = [e for c in chosen for e in _drop_keywords(py, c, {"mask", "other"})]
    return _splice(src, edits) if edits else None


@_changed
def triton_grid_off_by_one(src: str, rng: random.Random) -> str | None:
    """`triton.cdiv(n, B)` -> `n // B` in a launch grid: the tail block never runs."""
    t = _triton(src)
    if t is None:
        return None
    py, kernels = t
    sites = []
    for grid in _grid_nodes(py, _triton_launches(py, kernels)):
        for node in ast.walk(grid):
            if _is_call(node, "triton", ("cdiv",)) and len(node.args) == 2:
                a, b = node.args
                new = f"{_paren(py, a)} // {_paren(py, b)}"
                if py.parent.get(node) is not grid:
                    new = f"({new})"
                sites.append((*py.span(node), new))
    site = _pick(rng, sites)
    return _splice(src, [site]) if site else None


def _program_id_edits(py: _Py, fn: ast.FunctionDef, axis: int, to: int) -> list[Edit]:
    edits = []
    for node in ast.walk(fn):
        if _is_call(node, "tl", ("program_id", "num_programs")):
            arg = (
                node.args[0]
                if node.args
                else next((kw.value for kw in node.keywords if kw.arg == "axis"), None)
            )
            if isinstance(arg, ast.Constant) and arg.value == axis:
                edits.append((*py.span(arg), str(to)))
    return edits


@_changed
def triton_grid_past_limit(src: str, rng: random.Random) -> str | None:
    """A 1-D grid moved to axis 1: `(G,)` -> `(1, G)` and tl.program_id(0) ->
    tl.program_id(1). Identical results until G > 65535, the limit of grid axis 1."""
    t = _triton(src)
    if t is None:
        return None
    py, kernels = t
    launches = _triton_launches(py, kernels)
    sites = []
    for name, fn in sorted(kernels.items()):
        if _program_id_edits(py, fn, 1, 0):
            continue  # already uses axis 1
        inner = _program_id_edits(py, fn, 0, 1)
        grid = _one_d_grid_edits(py, launches, name)
        if inner and grid:
            sites.append(inner + grid)
    edits = _pick(rng, sites)
    return _splice(src, edits) if edits else None


def _accumulators(fn: ast.FunctionDef) -> dict[str, tuple[ast.Assign, ast.Call]]:
    """`name = tl.zeros(...)` (optionally `+ ...`) later updated with `name += ...`."""
    inits: dict[str, tuple[ast.Assign, ast.Call]] = {}
    summed = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            tgt, val = node.targets[0], node.value
            zeros = val.left if isinstance(val, ast.BinOp) else val
            if isinstance(tgt, ast.Name) and _is_call(zeros, "tl", ("zeros",)):
                inits.setdefault(tgt.id, (node, zeros))  # type: ignore[arg-type]
        elif (
            isinstance(node, ast.AugAssign)
            and isinstance(node.op, ast.Add)
            and isinstance(node.target, ast.Name)
        ):
            summed.add(node.target.id)
    return {k: v for k, v in inits.items() if k in summed}


@_changed
def triton_wrong_reduction_identity(src: str, rng: random.Random) -> str | None:
    """A max identity -inf written 0.0 (`other=` of a load, the fill of a tl.where), or a
    tl.zeros sum accumulator started at 1. Sites where the change can show are preferred:
    accumulators, and -inf fills that reach a sum unmasked (a 0 that only meets a max, or
    is masked again, leaves results on random data as they were)."""
    t = _triton(src)
    if t is None:
        return None
    py, kernels = t
    sites: list[tuple[Edit, bool]] = []
    for fn in kernels.values():
        for call in _kernel_calls(py, {fn.name: fn}, ("load",)):
            for kw in call.keywords:
                if kw.arg == "other" and _is_neg_inf(kw.value):
                    sites.append(((*py.span(kw.value), "0.0"), _feeds_sum(fn, call)))
        for call in _kernel_calls(py, {fn.name: fn}, ("where",)):
            if len(call.args) == 3 and _is_neg_inf(call.args[2]):
                sites.append(((*py.span(call.args[2]), "0.0"), _feeds_sum(fn, call)))
        for _, zeros in _accumulators(fn).values():
            end = py.span(zeros)[1]
            sites.append(((end, end, " + 1.0"), True))
    sites.sort()
    site = _pick(rng, [e for e, shows in sites if shows] or [e for e, _ in sites])
    return _splice(src, [site]) if site else None


def _is_to(node: ast.AST, dtype: str) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "to"
        and len(node.args) == 1
        and ast.unparse(node.args[0]) == dtype
    )


@_changed
def triton_fp16_accumulation(src: str, rng: random.Random) -> str | None:
    """In an fp16 kernel, the float32 accumulator declared tl.float16 and its updates
    rounded to fp16 (the float32 upcast dropped, or the dot product cast down)."""
    t = _triton(src)
    if t is None:
        return None
    py, kernels = t
    sites: list[list[Edit]] = []
    for fn in kernels.values():
        if "tl.float16" not in py.text(fn) and "tl.bfloat16" not in py.text(fn):
            continue
        for name, (_, zeros) in sorted(_accumulators(fn).items()):
            dtype = next((kw.value for kw in zeros.keywords if kw.arg == "dtype"), None)
            if dtype is None or ast.unparse(dtype) != "tl.float32":
                continue
            edits = [(*py.span(dtype), "tl.float16")]
            for node in ast.walk(fn):
                if (
                    isinstance(node, ast.AugAssign)
                    and isinstance(node.target, ast.Name)
                    and node.target.id == name
                ):
                    v = node.value
                    if _is_to(v, "tl.float32"):
                        new = py.text(v.func.value)  # type: ignore[attr-defined]
                    else:
                        new = f"{_paren(py, v)}.to(tl.float16)"
                    edits.append((*py.span(v), new))
            sites.append(edits)
    edits = _pick(rng, sites)
    return _splice(src, edits) if edits else None


@_changed
def triton_wrong_stride(src: str, rng: random.Random) -> str | None:
    """.stride(0) / .stride(1) of one tensor swapped in one launch (a lone .stride(0)
    becomes .stride(1))."""
    t = _triton(src)
    if t is None:
        return None
    py, kernels = t
    edits = _stride_edits(py, _triton_launches(py, kernels), rng)
    return _splice(src, edits) if edits else None


def _program_ids(fn: ast.FunctionDef) -> dict[str, int]:
    """Variables holding tl.program_id(axis) directly."""
    out = {}
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and _is_call(node.value, "tl", ("program_id",))
            and node.value.args  # type: ignore[attr-defined]
            and isinstance(node.value.args[0], ast.Constant)  # type: ignore[attr-defined]
        ):
            out[node.targets[0].id] = node.value.args[0].value  # type: ignore[attr-defined]
    return out


@_changed
def triton_uncoalesced(src: str, rng: random.Random) -> str | None:
    """`pid * BLOCK + tl.arange(0, BLOCK)` -> `tl.arange(0, BLOCK) * tl.num_programs(0) +
    pid`: the same offsets over the grid, but each program's lanes are a grid apart."""
    t = _triton(src)
    if t is None:
        return None
    py, kernels = t
    sites = []
    for fn in kernels.values():
        pids = _program_ids(fn)
        for node in ast.walk(fn):
            if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
                continue
            mul, ar = node.left, node.right
            if (
                isinstance(mul, ast.BinOp)
                and isinstance(mul.op, ast.Mult)
                and isinstance(mul.left, ast.Name)
                and mul.left.id in pids
                and _is_call(ar, "tl", ("arange",))
                and len(ar.args) == 2  # type: ignore[attr-defined]
                and ast.unparse(ar.args[0]) == "0"  # type: ignore[attr-defined]
                and ast.unparse(ar.args[1]) == ast.unparse(mul.right)  # type: ignore[attr-defined]
            ):
                axis = pids[mul.left.id]
                new = f"{py.text(ar)} * tl.num_programs({axis}) + {mul.left.id}"
                sites.append((*py.span(node), new))
    site = _pick(rng, sites)
    return _splice(src, [site]) if site else None


# tl functions and the names other APIs taught people to write instead (none exist in tl)
WRONG_API: dict[str, str] = {
    "exp": "expf",
    "log": "logf",
    "sqrt": "sqrtf",
    "rsqrt": "rsqrtf",
    "maximum": "max_elementwise",
    "minimum": "min_elementwise",
    "sum": "reduce_sum",
    "max": "amax",
    "dot": "matmul",
    "where": "select",
    "cdiv": "ceil_div",
    "cumsum": "cumulative_sum",
    "program_id": "block_id",
    "num_programs": "num_blocks",
    "atomic_add": "atomicAdd",
    "sigmoid": "logistic",
    "full": "fill",
}


@_changed
def triton_wrong_api(src: str, rng: random.Random) -> str | None:
    """One tl.<fn> call spelt as another API has it (tl.exp -> tl.expf, tl.dot ->
    tl.matmul, tl.program_id -> tl.block_id): no such attribute."""
    t = _triton(src)
    if t is None:
        return None
    py, kernels = t
    call = _pick(rng, _kernel_calls(py, kernels, WRONG_API))
    if call is None:
        return None
    s, e = py.span(call.func)
    return _splice(src, [(s, e, f"tl.{WRONG_API[call.func.attr]}")])


@_changed
def triton_undefined_identifier(src: str, rng: random.Random) -> str | None:
    """One use of a kernel parameter misspelt (n_cols -> ncols, N -> n): a NameError."""
    t = _triton(src)
    if t is None:
        return None
    py, kernels = t
    taken = _identifiers(py)
    sites = []
    for fn in kernels.values():
        typos = {p: t for p in _params(fn) if (t := _typo(p, taken))}
        for stmt in fn.body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name) and node.id in typos:
                    sites.append((*py.span(node), typos[node.id]))
    site = _pick(rng, sorted(sites))
    return _splice(src, [site]) if site else None


@_changed
def triton_missing_colon(src: str, rng: random.Random) -> str | None:
    """The `:` ending a def / for / if header of a kernel left out: a Python syntax error."""
    t = _triton(src)
    if t is None:
        return None
    py, kernels = t
    lines = set()
    for fn in kernels.values():
        lines.update(range(fn.lineno, fn.end_lineno + 1))  # type: ignore[operator]
    toks = [
        tok
        for tok in tokenize.generate_tokens(io.StringIO(src).readline)
        if tok.type not in (tokenize.COMMENT, tokenize.NL)
    ]
    sites = [
        tok
        for tok, nxt in itertools.pairwise(toks)
        if tok.type == tokenize.OP
        and tok.string == ":"
        and nxt.type == tokenize.NEWLINE
        and tok.start[0] in lines
    ]
    tok = _pick(rng, sites)
    if tok is None:
        return None
    pos = py.starts[tok.start[0] - 1] + tok.start[1]  # tokenize columns are characters
    return _splice(src, [(pos, pos + 1, "")])


# --- rewrites -------------------------------------------------------------------------------


def _new_kernel_name(name: str, taken: Container[str], rng: random.Random) -> str | None:
    stem = name[: -len("_kernel")] if name.endswith("_kernel") else name
    options = [f"{stem}_fwd_kernel", f"{name}_v2", f"k_{stem}", f"{stem}_impl"]
    return _pick(rng, [o for o in options if o not in taken and o != name])


@_changed
def cuda_rename_kernel(src: str, rng: random.Random) -> str | None:
    """One __global__ kernel renamed in CUDA_SRC and in its cuda_kernel("...") lookup."""
    cu = _cuda(src)
    if cu is None:
        return None
    k = _pick(rng, cu.kernels())
    if k is None:
        return None
    new = _new_kernel_name(k.name, set(re.findall(r"[A-Za-z_]\w*", src)), rng)
    if new is None:
        return None
    word = re.compile(rf"\b{re.escape(k.name)}\b")
    inner = [(m.start(), m.end(), new) for m in word.finditer(cu.text)]
    outer = [
        (m.start(2), m.end(2), new)
        for m in re.finditer(rf"cuda_kernel\(\s*([\"'])({re.escape(k.name)})\1", src)
    ]
    if not outer:
        return None
    return _splice(src, cu.module_offsets(inner) + outer)


@_changed
def triton_rename_kernel(src: str, rng: random.Random) -> str | None:
    """One @triton.jit kernel renamed at its definition and every launch."""
    t = _triton(src)
    if t is None:
        return None
    py, kernels = t
    name = _pick(rng, sorted(kernels))
    new = _new_kernel_name(name, _identifiers(py), rng)
    if new is None:
        return None
    edits = []
    for node in ast.walk(py.tree):
        if isinstance(node, ast.Name) and node.id == name:
            edits.append((*py.span(node), new))
        elif isinstance(node, ast.FunctionDef) and node.name == name:
            s = py.off(node.lineno, node.col_offset)
            m = re.compile(rf"def\s+({re.escape(name)})\b").search(src, s)
            if m:
                edits.append((m.start(1), m.end(1), new))
    return _splice(src, edits)


_WARPS = {1: 2, 2: 4, 4: 8, 8: 4, 16: 8, 32: 16}


@_changed
def triton_num_warps(src: str, rng: random.Random) -> str | None:
    """A literal `num_warps=` of one launch changed (4 <-> 8): the same program, another
    number of warps sharing each block."""
    t = _triton(src)
    if t is None:
        return None
    py, kernels = t
    sites = []
    for lc in _triton_launches(py, kernels):
        for kw in lc.call.keywords:
            value = kw.value
            if kw.arg == "num_warps" and isinstance(value, ast.Constant) and value.value in _WARPS:
                sites.append((*py.span(value), str(_WARPS[value.value])))
    site = _pick(rng, sites)
    return _splice(src, [site]) if site else None


# --- tables ---------------------------------------------------------------------------------

CUDA_REWRITES: tuple[Rewrite, ...] = (
    Rewrite("rename_kernel", "a __global__ kernel renamed consistently in CUDA_SRC and its "
            "cuda_kernel lookup; names carry no meaning for the launch", cuda_rename_kernel),
)  # fmt: skip

CUDA_MUTATIONS: tuple[Mutation, ...] = (
    Mutation("tail_guard_dropped", "the bounds guard (`if (i >= n) return;`, `if (r < M && "
             "c < N)`) left out: the tail threads read and write past the tensor",
             FUNCTIONAL, cuda_tail_guard_dropped),
    Mutation("grid_off_by_one", "the grid computed as n // B instead of ceil(n / B): the "
             "last partial block is never launched", FUNCTIONAL, cuda_grid_off_by_one),
    Mutation("grid_past_limit", "a 1-D launch on grid y (blockIdx.y): fine for small "
             "problems, refused once it needs more than 65535 blocks (offered only where "
             "the timing shapes need more)", RESOURCE, cuda_grid_past_limit,
             _grid_past_yz_limit),
    Mutation("missing_syncthreads", "a __syncthreads() forgotten between writing and "
             "reading shared memory: a race", FUNCTIONAL, cuda_missing_syncthreads),
    Mutation("wrong_reduction_identity", "a max reduction started at 0 instead of -inf, or "
             "a sum started at 1", FUNCTIONAL, cuda_wrong_reduction_identity),
    Mutation("fp16_accumulation", "a sum over __half inputs accumulated in __half instead "
             "of float", FUNCTIONAL, cuda_fp16_accumulation),
    Mutation("wrong_stride", "row and column strides swapped (x.stride(1) for x.stride(0), "
             "col * N + row for row * N + col)", FUNCTIONAL, cuda_wrong_stride),
    Mutation("uncoalesced", "thread-major indexing (threadIdx.x * gridDim.x + blockIdx.x): "
             "correct but every warp access is scattered", PERFORMANCE, cuda_uncoalesced),
    Mutation("missing_semicolon", "a statement without its `;`", SYNTAX,
             cuda_missing_semicolon),
    Mutation("undefined_identifier", "a kernel parameter misspelt at one use (ncols for "
             "n_cols)", API, cuda_undefined_identifier),
)  # fmt: skip

TRITON_REWRITES: tuple[Rewrite, ...] = (
    Rewrite("rename_kernel", "a @triton.jit kernel renamed at its definition and every "
            "launch", triton_rename_kernel),
    Rewrite("num_warps", "a literal num_warps of one launch changed (4 <-> 8): the same "
            "block program run by more or fewer warps", triton_num_warps),
)  # fmt: skip

TRITON_MUTATIONS: tuple[Mutation, ...] = (
    Mutation("tail_mask_dropped", "`mask=` left off a tl.load / tl.store: the tail block "
             "reads and writes past the tensor", FUNCTIONAL, triton_tail_mask_dropped),
    Mutation("grid_off_by_one", "the grid computed as n // BLOCK instead of "
             "triton.cdiv(n, BLOCK): the last partial block never runs", FUNCTIONAL,
             triton_grid_off_by_one),
    Mutation("grid_past_limit", "a 1-D grid put on axis 1 (tl.program_id(1)): fine for "
             "small problems, refused past 65535 programs (offered only where the timing "
             "shapes need more)", RESOURCE, triton_grid_past_limit, _grid_past_yz_limit),
    Mutation("wrong_reduction_identity", "masked lanes filled with 0.0 instead of -inf "
             "before a max, or a sum accumulator started at 1", FUNCTIONAL,
             triton_wrong_reduction_identity),
    Mutation("fp16_accumulation", "an fp16 kernel accumulating in tl.float16 instead of "
             "tl.float32", FUNCTIONAL, triton_fp16_accumulation),
    Mutation("wrong_stride", "x.stride(1) passed where x.stride(0) belongs (or the two "
             "swapped)", FUNCTIONAL, triton_wrong_stride),
    Mutation("uncoalesced", "program-major offsets (tl.arange(0, B) * tl.num_programs(0) + "
             "pid): correct but every load is strided", PERFORMANCE, triton_uncoalesced),
    Mutation("wrong_api", "a tl function under a name from CUDA / NumPy / PyTorch "
             "(tl.expf, tl.matmul, tl.block_id)", API, triton_wrong_api),
    Mutation("missing_colon", "a kernel's def / for / if header without its `:`", SYNTAX,
             triton_missing_colon),
    Mutation("undefined_identifier", "a kernel parameter misspelt at one use (ncols for "
             "n_cols)", API, triton_undefined_identifier),
)  # fmt: skip

for _table in (CUDA_REWRITES, CUDA_MUTATIONS, TRITON_REWRITES, TRITON_MUTATIONS):
    check_table(_table)


class CudaPerturbGenerator(OperatorGenerator):
    name = "perturb:cuda"
    domain = "cuda"
    rewrites = CUDA_REWRITES
    mutations = CUDA_MUTATIONS


class TritonPerturbGenerator(OperatorGenerator):
    name = "perturb:triton"
    domain = "triton"
    rewrites = TRITON_REWRITES
    mutations = TRITON_MUTATIONS
