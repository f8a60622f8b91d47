"""Offline candidates for ascendc tasks: the reference, rewrites of it that keep its meaning
(and still lower), and the defects AscendKernelGen's failure analysis finds in
model-written AscendC, one defect per candidate.

pyasc tasks (one Python file in pyasc's DSL). The failure classes, each named in the
generator (`perturb:<class>_<what>`), with what the verifier here makes of it on
tasks/ascendc/add (gates extract, lower, static; compile, precision and speedup need an NPU
node):

- API signature / overload (`api_*`): a wrong argument count to a vector op or
  `data_copy`, an API that does not exist (`asc.vadd`, `asc.add_vectors`): pyasc's
  dispatcher or the module refuses it, `compile_error` `api_signature` at the DSL line;
- types and casts (`type_*`): a tensor allocated or dequeued with another dtype than its
  operands, a float where an int count is expected: `compile_error` `type_cast`;
- scope and lifetime (`scope_*`): a misspelt local is `compile_error` `scope_lifetime`; a
  tensor used after `free_tensor` lowers (pyasc does not track a tensor's lifetime):
  wrong only on the NPU;
- memory objects (`memory_*`): an input queue declared at `VECOUT`, a queue whose
  `init_buffer` is gone: both lower (pyasc checks neither), wrong only on the NPU;
- compiles but wrong (`wrong_*`): a tile offset one tile off, `sub` for `add`, the last
  tile skipped, the block offset off by one block: all lower and pass the static checks,
  and would fail precision on an NPU (the DPO negatives that teach most, once an NPU node
  has judged them: here their verdict ends at `compile` as `infra_error` / `no_cann`, which
  is never a negative).

C++ tasks (NPUKernelBench's layout; on Host+Device the files joined by `parts.join`, each
after its `// file:` line). Perturbations on the text: a `WaitFlag` removed
(`sync_removed`: `sync_unpaired`), an `EnQue` or a `FreeTensor` dropped (`queue_unbalanced`),
an AscendC API renamed to one that does not exist (`api_hallucinated`: bisheng's error on an
NPU node), a tiling field's type changed in the tiling header only (`tiling_type_mismatch`:
`tiling_mismatch`), an aclnn / ATen call put in the kernel (`framework_fallback`:
`torch_fallback`).

Every edit is a small text change at a site a regex or Python's tokenizer found; what has
no site returns None (the operator is not applicable to that task).
"""

from __future__ import annotations

import ast
import io
import itertools
import keyword
import random
import re
import tokenize
from collections.abc import Callable

from generators.perturb.operators import Mutation, OperatorGenerator, Rewrite, check_table
from verifiers import pyast
from verifiers.ascendc import parts
from verifiers.taxonomy import API, FUNCTIONAL, SYNTAX

# --- pyasc sites ----------------------------------------------------------------------------

# vector ops of pyasc's DSL that take (dst, src0, src1, count) / (dst, src, count)
BINARY_OPS = ("add", "sub", "mul", "div", "max", "min", "and_", "or_")
UNARY_OPS = ("exp", "ln", "abs", "relu", "sqrt", "rsqrt", "reciprocal", "not_")
# the op a model writes for the one meant (the functional swap), and the names it invents
SWAPS = {"add": "sub", "sub": "add", "mul": "div", "div": "mul", "max": "min", "min": "max",
         "exp": "ln", "ln": "exp", "sqrt": "rsqrt", "rsqrt": "sqrt"}  # fmt: skip
HALLUCINATED = {
    "add": ("vadd", "add_vectors", "vector_add"),
    "sub": ("vsub", "sub_vectors", "subtract"),
    "mul": ("vmul", "multiply", "mul_vectors"),
    "div": ("vdiv", "divide"),
    "data_copy": ("copy", "data_copy_gm2ub", "memcpy"),
    "exp": ("vexp", "exponential"),
    "max": ("vmax", "maximum"),
    "min": ("vmin", "minimum"),
}
_CALL = re.compile(r"\basc\.(\w+)\(")


def _calls(source: str, names: tuple[str, ...] | None = None) -> list[tuple[int, int, str]]:
    """(start of `asc.`, index past the closing paren, op name) of every asc.<op>(...) call
    on one line whose op is in `names` (all when None)."""
    out = []
    for m in _CALL.finditer(source):
        if names is not None and m[1] not in names:
            continue
        end = _close(source, m.end() - 1)
        if end is not None:
            out.append((m.start(), end, m[1]))
    return out


def _close(text: str, i: int) -> int | None:
    """Index past the paren matching text[i] == '(' (None when unbalanced on its line)."""
    depth = 0
    for j in range(i, len(text)):
        c = text[j]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        elif c == "\n":
            return None
    return None


def _args(call: str) -> list[str]:
    """The top-level arguments of `name(a, b[c:], f(d, e))`."""
    inner = call[call.index("(") + 1 : -1]
    out, depth, cur = [], 0, ""
    for c in inner:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def _with_args(source: str, start: int, end: int, args: list[str]) -> str:
    call = source[start:end]
    head = call[: call.index("(")]
    return source[:start] + f"{head}({', '.join(args)})" + source[end:]


def _changed(source: str, new: str | None) -> str | None:
    return None if new is None or new == source else new


def _sub_one(
    source: str,
    rng: random.Random,
    pattern: re.Pattern,
    repl: Callable[[re.Match], str],
    group: int = 0,
) -> str | None:
    """A pyasc source with one match of `pattern` (its `group`), drawn by `rng`, replaced by
    `repl(match)`; None where there is none."""
    if not _pyasc(source):
        return None
    sites = list(pattern.finditer(source))
    if not sites:
        return None
    m = rng.choice(sites)
    return source[: m.start(group)] + repl(m) + source[m.end(group) :]


def _pyasc(source: str) -> bool:
    return re.search(r"^\s*@asc\.jit", source, re.M) is not None


# --- pyasc mutations: API signature / overload -------------------------------------------------


def api_arg_count(source: str, rng: random.Random) -> str | None:
    """A vector op or data_copy called with one argument too few (the count forgotten) or
    one too many (a count given twice)."""
    if not _pyasc(source):
        return None
    sites = [s for s in _calls(source, (*BINARY_OPS, *UNARY_OPS, "data_copy"))]
    sites = [s for s in sites if len(_args(source[s[0] : s[1]])) >= 3]
    if not sites:
        return None
    start, end, _ = rng.choice(sites)
    args = _args(source[start:end])
    args = args[:-1] if rng.random() < 0.5 else [*args, args[-1]]
    return _changed(source, _with_args(source, start, end, args))


def api_hallucinated(source: str, rng: random.Random) -> str | None:
    """An API pyasc does not have, named as models name them (asc.vadd, asc.add_vectors)."""
    if not _pyasc(source):
        return None
    sites = _calls(source, tuple(HALLUCINATED))
    if not sites:
        return None
    start, _end, op = rng.choice(sites)
    name = rng.choice(HALLUCINATED[op])
    return source[:start] + f"asc.{name}" + source[start + len(f"asc.{op}") :]


# --- pyasc mutations: types and casts ----------------------------------------------------------

_TENSOR_OF = re.compile(
    r"^(\s*)(\w+)\s*=\s*(\w+)\.(alloc_tensor|deque)\(([^()\n]*(?:\([^()\n]*\))?[^()\n]*)\)", re.M
)


def type_wrong_dtype(source: str, rng: random.Random) -> str | None:
    """A local tensor an op computes on, allocated or dequeued with another dtype than its
    operands (an int dtype among float ones): the op's operands disagree."""
    if not _pyasc(source):
        return None
    operands = set()
    for start, end, _ in _calls(source, (*BINARY_OPS, *UNARY_OPS)):
        operands |= {a for a in _args(source[start:end]) if a.isidentifier()}
    sites = [m for m in _TENSOR_OF.finditer(source) if m[2] in operands]
    if not sites:
        return None
    m = rng.choice(sites)
    dtype = "asc.float32" if "int" in m[5] else "asc.int32"
    return source[: m.start(5)] + dtype + source[m.end(5) :]


def type_float_count(source: str, rng: random.Random) -> str | None:
    """A float where an int count is expected: true division in a count (`tile / 2` for
    `tile // 2`), or a count written as a float."""
    if not _pyasc(source):
        return None
    sites = []
    for start, end, _ in _calls(source, (*BINARY_OPS, *UNARY_OPS, "data_copy")):
        args = _args(source[start:end])
        if len(args) >= 3 and not args[-1].startswith(("asc.", "[")):
            sites.append((start, end, args))
    if not sites:
        return None
    start, end, args = rng.choice(sites)
    last = args[-1]
    args[-1] = last.replace("//", "/") if "//" in last else f"{last} / 1"
    return _changed(source, _with_args(source, start, end, args))


# --- pyasc mutations: scope and lifetime -------------------------------------------------------


def _locals(source: str) -> list[str]:
    """Names assigned inside @asc.jit functions (not their parameters)."""
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return []
    names: list[str] = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Name)
                and isinstance(node.ctx, ast.Store)
                and node.id not in names
            ):
                names.append(node.id)
    return names


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(source).readline))


def _rename(source: str, renames: dict[str, str], only_loads_after: int | None = None) -> str:
    """`source` with NAME tokens renamed (never an attribute after `.`, nor a keyword
    argument's name); with `only_loads_after`, one occurrence only: the first use at or
    after that offset in lines."""
    toks = _tokens(source)
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    edits = []
    for k, t in enumerate(toks):
        if t.type != tokenize.NAME or t.string not in renames:
            continue
        prev = toks[k - 1].string if k else ""
        nxt = toks[k + 1].string if k + 1 < len(toks) else ""
        if prev == "." or (nxt == "=" and _in_call(toks, k)):
            continue
        at = offsets[t.start[0] - 1] + t.start[1]
        if only_loads_after is not None:
            if t.start[0] < only_loads_after or nxt == "=":
                continue
            edits = [(at, at + len(t.string), renames[t.string])]
            break
        edits.append((at, at + len(t.string), renames[t.string]))
    out = source
    for a, b, new in reversed(edits):
        out = out[:a] + new + out[b:]
    return out


def _in_call(toks: list[tokenize.TokenInfo], k: int) -> bool:
    depth = 0
    for t in reversed(toks[:k]):
        if t.string in ")]}":
            depth += 1
        elif t.string in "([{":
            if depth == 0:
                return t.string == "("
            depth -= 1
        elif t.type == tokenize.NEWLINE:
            return False
    return False


def scope_undefined_name(source: str, rng: random.Random) -> str | None:
    """One use of a local misspelt (yv for yw, a name never assigned): not in scope."""
    if not _pyasc(source):
        return None
    names = [n for n in _locals(source) if len(n) >= 2]
    if not names:
        return None
    name = rng.choice(names)
    typo = name[:-1] + ("w" if name[-1] != "w" else "v")
    if typo in _locals(source) or keyword.iskeyword(typo):
        typo = name + "_"
    first = next(
        (i + 1 for i, ln in enumerate(source.splitlines()) if re.match(rf"\s*{name}\s*=", ln)),
        None,
    )
    if first is None:
        return None
    return _changed(source, _rename(source, {name: typo}, only_loads_after=first + 1))


_FREE = re.compile(r"^([ \t]*)\w+\.free_tensor\((\w+)\)[ \t]*\n", re.M)


def scope_use_after_free(source: str, rng: random.Random) -> str | None:
    """A tensor freed back to its queue before the op that still reads it."""
    if not _pyasc(source):
        return None
    sites = []
    for m in _FREE.finditer(source):
        before = source[: m.start()]
        # the last statement before the free that uses the tensor (the indent the same)
        uses = [
            u
            for u in re.finditer(rf"^{m[1]}(?!\s)[^\n]*\b{m[2]}\b[^\n]*\n", before, re.M)
            if not re.match(rf"\s*{m[2]}\s*=", u[0])
        ]
        if uses:
            sites.append((m, uses[-1]))
    if not sites:
        return None
    m, use = rng.choice(sites)
    without = source[: m.start()] + source[m.end() :]
    return without[: use.start()] + m[0] + without[use.start() :]


# --- pyasc mutations: memory objects -----------------------------------------------------------

_VECIN = re.compile(r"asc\.TQue\(\s*asc\.TPosition\.VECIN\b")
_INIT = re.compile(r"^[ \t]*\w+\.init_buffer\([^\n]*\)[ \t]*\n", re.M)


def memory_queue_position(source: str, rng: random.Random) -> str | None:
    """An input queue declared at VECOUT: the copy-in and the vector unit no longer hand
    the tensor over through the queue's sync."""
    return _sub_one(source, rng, _VECIN, lambda m: m[0].replace("VECIN", "VECOUT"))


def memory_missing_init_buffer(source: str, rng: random.Random) -> str | None:
    """A queue used without its init_buffer: its tensors live nowhere in the unified
    buffer."""
    return _sub_one(source, rng, _INIT, lambda m: "")


# --- pyasc mutations: compiles but wrong -------------------------------------------------------

_SLICE = re.compile(r"\[(\w+) \* (\w+):\]")
_RANGE = re.compile(r"\bfor (\w+) in range\(([^()\n]*(?:\([^()\n]*\))?[^()\n]*)\):")
_BLOCK = re.compile(r"asc\.get_block_idx\(\) \* (\w+)")


def wrong_tile_offset(source: str, rng: random.Random) -> str | None:
    """One copy's tile offset a tile off: `xg[(i + 1) * tile:]` for `xg[i * tile:]`."""
    return _sub_one(source, rng, _SLICE, lambda m: f"[({m[1]} + 1) * {m[2]}:]")


def wrong_op(source: str, rng: random.Random) -> str | None:
    """The neighbouring op for the one meant (sub for add, rsqrt for sqrt)."""
    if not _pyasc(source):
        return None
    sites = _calls(source, tuple(SWAPS))
    if not sites:
        return None
    start, _end, op = rng.choice(sites)
    return source[:start] + f"asc.{SWAPS[op]}" + source[start + len(f"asc.{op}") :]


def wrong_missing_last_tile(source: str, rng: random.Random) -> str | None:
    """The tile loop one trip short: the last tile of each core's block never computed."""
    return _sub_one(source, rng, _RANGE, lambda m: f"{m[2]} - 1", group=2)


def wrong_block_offset(source: str, rng: random.Random) -> str | None:
    """Core k starts at block k + 1: every core computes its neighbour's block, the last
    one past the end, the first block never."""
    return _sub_one(source, rng, _BLOCK, lambda m: f"(asc.get_block_idx() + 1) * {m[1]}")


# --- pyasc rewrites ----------------------------------------------------------------------------


def rename_locals(source: str, rng: random.Random) -> str | None:
    """Every local of the kernel renamed consistently (xl -> x_local_k): the same kernel."""
    if not _pyasc(source):
        return None
    names = _locals(source)
    if not names:
        return None
    tag = rng.choice(("t", "v", "buf", "loc"))
    taken = set(re.findall(r"\w+", source))
    renames = {}
    for n in names:
        new = f"{n}_{tag}"
        while new in taken:
            new += "_"
        renames[n] = new
    return _changed(source, _rename(source, renames))


def _stmt_names(stmt: ast.stmt) -> tuple[set[str], set[str]]:
    """(names a simple statement writes, names it reads): a call's receiver and an asc op's
    first argument (its destination) count as written."""
    written, read = set(), set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name):
            (written if isinstance(node.ctx, ast.Store) else read).add(node.id)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        f = stmt.value.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            if f.value.id == "asc":
                if stmt.value.args:
                    first = stmt.value.args[0]
                    base = first.value if isinstance(first, ast.Subscript) else first
                    if isinstance(base, ast.Name):
                        written.add(base.id)
            else:
                written.add(f.value.id)
    if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
        f = stmt.value.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id != "asc":
            written.add(f.value.id)  # q.alloc_tensor(...) / q.deque(...) change the queue
    read.discard("asc")
    return written, read


def reorder_independent(source: str, rng: random.Random) -> str | None:
    """Two adjacent one-line statements that touch nothing of each other's swapped (two
    copies into different tensors, two queues' enque): the same kernel."""
    if not _pyasc(source):
        return None
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return None
    pairs = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list) or isinstance(node, ast.Module):
            continue
        for a, b in itertools.pairwise(body):
            if not all(
                isinstance(s, ast.Assign | ast.Expr) and s.lineno == s.end_lineno for s in (a, b)
            ):
                continue
            wa, ra = _stmt_names(a)
            wb, rb = _stmt_names(b)
            if wa & (wb | rb) or wb & ra:
                continue
            pairs.append((a.lineno, b.lineno))
    if not pairs:
        return None
    la, lb = rng.choice(pairs)
    lines = source.split("\n")
    lines[la - 1], lines[lb - 1] = lines[lb - 1], lines[la - 1]
    return _changed(source, "\n".join(lines))


_CONST = re.compile(r"^([A-Z][A-Z0-9_]*)\s*=\s*(-?\d+)\s*\n", re.M)


def fold_constants(source: str, rng: random.Random) -> str | None:
    """Module constants (BUFFERS = 2) written as their values where used, their
    definitions dropped: the same kernel (pyasc sees the same literals)."""
    if not _pyasc(source):
        return None
    consts = {m[1]: m[2] for m in _CONST.finditer(source)}
    if not consts:
        return None
    out = _CONST.sub("", source)
    out = _rename(out, consts)
    return _changed(source, re.sub(r"\n{4,}", "\n\n\n", out))


# --- C++ mutations -----------------------------------------------------------------------------

_WAIT = re.compile(r"^[ \t]*(?:AscendC::)?WaitFlag\s*<[^>\n]*>\s*\([^\n]*\)\s*;[ \t]*\n", re.M)
_ENQUE = re.compile(r"^[ \t]*[\w.\->\[\]]+\.EnQue(?:<[^>\n]*>)?\([^\n]*\)\s*;[ \t]*\n", re.M)
_FREET = re.compile(r"^[ \t]*[\w.\->\[\]]+\.FreeTensor\([^\n]*\)\s*;[ \t]*\n", re.M)
CPP_HALLUCINATED = {
    "Add": ("VAdd", "AddVectors", "VectorAdd"),
    "Sub": ("VSub", "Subtract"),
    "Mul": ("VMul", "Multiply"),
    "Div": ("VDiv", "Divide"),
    "DataCopy": ("DataCopyAsync", "MemCopy", "Copy"),
    "Exp": ("VExp",),
    "Muls": ("MulScalar",),
    "Adds": ("AddScalar",),
}
_CPP_API = re.compile(r"\bAscendC::(" + "|".join(CPP_HALLUCINATED) + r")\s*(?=[<(])")
_FIELD = re.compile(r"\bTILING_DATA_FIELD_DEF\s*\(\s*(u?int(?:8|16|32|64)_t|float|half)\s*,")
_OTHER_TYPE = {"uint32_t": "uint64_t", "int32_t": "int64_t", "uint64_t": "uint32_t",
               "int64_t": "int32_t", "float": "double", "uint16_t": "uint32_t",
               "int16_t": "int32_t", "uint8_t": "uint16_t", "int8_t": "int16_t",
               "half": "float"}  # fmt: skip
_KERNEL_OPEN = r'extern\s+"C"\s+__global__\s+__aicore__\s+void\s+\w+\s*\([^)]*\)\s*\{[ \t]*\n'
FALLBACKS = (
    "    at::Tensor fallback = at::add(at::empty({1}), at::empty({1}));\n",
    "    aclnnAdd(nullptr, nullptr, nullptr, nullptr);\n",
    "    torch::Tensor fallback = torch::zeros({1});\n",
)


def _is_cpp(source: str) -> bool:
    return re.search(r"\b__aicore__\b", source) is not None and not _pyasc(source)


class _CppFiles:
    """A C++ candidate's files as its text marks them (`// file: <path>` lines, as
    `parts.join` writes them; an unmarked text is the kernel file alone), the kernel the
    one defining the `__global__ __aicore__` entry, the tiling header the one named so."""

    def __init__(self, source: str) -> None:
        self.source = source
        marks = list(parts.MARKER.finditer(source))
        self.marked = bool(marks)
        if not marks:
            self.files = {"kernel": source}
        else:
            self.files = {
                m[1]: source[m.end() : nxt.start() if nxt else len(source)].strip("\n") + "\n"
                for m, nxt in zip(marks, [*marks[1:], None], strict=True)
            }
        self.kernel = next((f for f, t in self.files.items() if re.search(_KERNEL_OPEN, t)), None)
        self.tiling = next((f for f in self.files if "tiling" in f.rsplit("/", 1)[-1]), None)

    def put(self, name: str, text: str) -> str | None:
        if not self.marked:
            return _changed(self.source, text)
        files = dict(self.files)
        files[name] = text
        return _changed(self.source, parts.join(files))


def _delete_line(source: str, pattern: re.Pattern, rng: random.Random) -> str | None:
    if not _is_cpp(source):
        return None
    c = _CppFiles(source)
    if c.kernel is None:
        return None
    text = c.files[c.kernel]
    sites = list(pattern.finditer(text))
    if not sites:
        return None
    m = rng.choice(sites)
    return c.put(c.kernel, text[: m.start()] + text[m.end() :])


def cpp_sync_removed(source: str, rng: random.Random) -> str | None:
    """A WaitFlag removed from the kernel: its SetFlag is waited on by nobody."""
    return _delete_line(source, _WAIT, rng)


def cpp_enque_dropped(source: str, rng: random.Random) -> str | None:
    """An EnQue dropped: the DeQue after it waits on a tensor never handed over."""
    return _delete_line(source, _ENQUE, rng)


def cpp_free_dropped(source: str, rng: random.Random) -> str | None:
    """A FreeTensor dropped: the queue runs out of buffers after its depth."""
    return _delete_line(source, _FREET, rng)


def cpp_api_hallucinated(source: str, rng: random.Random) -> str | None:
    """An AscendC API that does not exist, named as models name them (AscendC::VAdd)."""
    if not _is_cpp(source):
        return None
    c = _CppFiles(source)
    if c.kernel is None:
        return None
    text = c.files[c.kernel]
    sites = list(_CPP_API.finditer(text))
    if not sites:
        return None
    m = rng.choice(sites)
    new = rng.choice(CPP_HALLUCINATED[m[1]])
    return c.put(c.kernel, text[: m.start(1)] + new + text[m.end(1) :])


def cpp_tiling_type_mismatch(source: str, rng: random.Random) -> str | None:
    """A tiling field's type changed in the tiling header only (uint32_t -> uint64_t): the
    kernel's own struct reads the host's bytes with the old layout."""
    if not _is_cpp(source):
        return None
    c = _CppFiles(source)
    if c.tiling is None or c.tiling == c.kernel:
        return None
    text = c.files[c.tiling]
    sites = list(_FIELD.finditer(text))
    if not sites:
        return None
    m = rng.choice(sites)
    return c.put(c.tiling, text[: m.start(1)] + _OTHER_TYPE[m[1]] + text[m.end(1) :])


def cpp_framework_fallback(source: str, rng: random.Random) -> str | None:
    """An ATen / aclnn / torch call put at the top of the kernel's body."""
    if not _is_cpp(source):
        return None
    c = _CppFiles(source)
    if c.kernel is None:
        return None
    text = c.files[c.kernel]
    m = re.search(_KERNEL_OPEN, text)
    if m is None:
        return None
    return c.put(c.kernel, text[: m.end()] + rng.choice(FALLBACKS) + text[m.end() :])


REWRITES: tuple[Rewrite, ...] = (
    Rewrite("rename_locals", "the kernel's locals renamed consistently: the same kernel",
            rename_locals),
    Rewrite("reorder_independent", "two adjacent statements that share nothing swapped: the "
            "same kernel", reorder_independent),
    Rewrite("fold_constants", "module constants written as their values: pyasc sees the same "
            "literals", fold_constants),
)  # fmt: skip

MUTATIONS: tuple[Mutation, ...] = (
    Mutation("api_arg_count", "a vector op or data_copy with an argument too few or too many",
             API, api_arg_count),
    Mutation("api_hallucinated", "an API pyasc does not have (asc.vadd, asc.add_vectors)", API,
             api_hallucinated),
    Mutation("type_wrong_dtype", "a tensor allocated or dequeued with another dtype than the "
             "op's other operands", SYNTAX, type_wrong_dtype),
    Mutation("type_float_count", "a float where an int count is expected (true division)",
             SYNTAX, type_float_count),
    Mutation("scope_undefined_name", "a local misspelt at one use: not in scope", SYNTAX,
             scope_undefined_name),
    Mutation("scope_use_after_free", "a tensor freed before the op that reads it (lowers: "
             "wrong on the NPU)", FUNCTIONAL, scope_use_after_free),
    Mutation("memory_queue_position", "an input queue declared at VECOUT (lowers: wrong on "
             "the NPU)", FUNCTIONAL, memory_queue_position),
    Mutation("memory_missing_init_buffer", "a queue without its init_buffer (lowers: wrong "
             "on the NPU)", FUNCTIONAL, memory_missing_init_buffer),
    Mutation("wrong_tile_offset", "a copy's tile offset one tile off", FUNCTIONAL,
             wrong_tile_offset),
    Mutation("wrong_op", "the neighbouring op (sub for add)", FUNCTIONAL, wrong_op),
    Mutation("wrong_missing_last_tile", "the tile loop one trip short", FUNCTIONAL,
             wrong_missing_last_tile),
    Mutation("wrong_block_offset", "each core's block offset one block off", FUNCTIONAL,
             wrong_block_offset),
    # C++ (NPUKernelBench's layout)
    Mutation("cpp_sync_removed", "a WaitFlag removed: its SetFlag is never waited on",
             FUNCTIONAL, cpp_sync_removed),
    Mutation("cpp_enque_dropped", "an EnQue dropped: its DeQue waits on nothing", FUNCTIONAL,
             cpp_enque_dropped),
    Mutation("cpp_free_dropped", "a FreeTensor dropped: the queue runs out of buffers",
             FUNCTIONAL, cpp_free_dropped),
    Mutation("cpp_api_hallucinated", "an AscendC API that does not exist (AscendC::VAdd)",
             API, cpp_api_hallucinated),
    Mutation("cpp_tiling_type_mismatch", "a tiling field's type changed in the tiling header "
             "only: the kernel reads other bytes", FUNCTIONAL, cpp_tiling_type_mismatch),
    Mutation("cpp_framework_fallback", "an ATen / aclnn / torch call in the kernel",
             FUNCTIONAL, cpp_framework_fallback),
)  # fmt: skip


check_table(REWRITES)
check_table(MUTATIONS)


class AscendcPerturbGenerator(OperatorGenerator):
    """Reference, rewrites, mutations. One table for both forms: an operator finds no site
    in the other form's text (the pyasc ones need `@asc.jit`, the C++ ones an
    `__aicore__` kernel), so a task gets only its own form's candidates."""

    name = "perturb:ascendc"
    domain = "ascendc"
    rewrites = REWRITES
    mutations = MUTATIONS
